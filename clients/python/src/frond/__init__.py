# SPDX-License-Identifier: Apache-2.0
"""
frond -- the Python client of Frond, the unique-ID service.

    import frond
    client = frond.Client(["http://127.0.0.1:8080", "http://10.0.0.2:8080"])
    client.next()                 # a snowflake ID
    orders = client.tag("orders")
    orders.next()                 # a segment ID, from a range leased here

Standard library only. Thread-safe; frond.AsyncClient for asyncio.
Errors are frond.FrondError, carrying Frond's stable code.
"""
from frond._aio import AsyncClient, AsyncSegment
from frond._client import DEFAULT_SERVERS, Client, FrondError, __version__
from frond._segment import Segment

__all__ = ["Client", "AsyncClient", "Segment", "AsyncSegment",
           "FrondError", "DEFAULT_SERVERS", "__version__"]
