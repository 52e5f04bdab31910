# SPDX-License-Identifier: Apache-2.0
"""
asyncio over the same core: AsyncClient wraps a Client. A segment
handle's next() returns at once while its buffers hold IDs (no thread, no
await of anything but the coroutine itself); a call that waits for a
range awaits the handle's load on the event loop, holding no thread (the
load runs in the handle's own thread), so that any number of waiting
calls leave the loop's executor to the application. The client's other
calls, which need the server, run in the event loop's default executor,
so the loop never blocks on the network.
"""
import asyncio
import functools

from frond._client import Client
from frond._segment import _Wait


class AsyncSegment:
    """A tag's IDs for coroutines: `await seg.next()`."""

    def __init__(self, seg):
        self._seg = seg
        self.name = seg.name

    async def next(self):
        seg = self._seg
        v = seg.try_next()
        if v is not None:
            return v
        loop = asyncio.get_running_loop()
        w = _Wait()
        while True:
            fut = loop.create_future()
            with seg._lock:
                v = seg._step(True, w)  # raises the call's error
                if v is not w:
                    if seg._watchers and (seg._pos < seg._end or
                                          seg._next is not None):
                        # IDs left: the next call waiting takes one (a
                        # call woken before it may never look: its loop
                        # closed, stopped, or the call cancelled).
                        seg._wake_coroutines(1)
                    return v
                seg._watch(loop, fut)
            try:
                await asyncio.wait_for(fut, w.left)
            except asyncio.TimeoutError:
                pass  # its deadline: the next look says TIMEOUT
            except asyncio.CancelledError:
                with seg._lock:
                    if fut not in seg._watchers:
                        # Woken, it will not look: the next call does.
                        seg._wake_coroutines(1)
                raise
            finally:
                with seg._lock:
                    seg._unwatch(fut)

    def stats(self):
        return self._seg.stats()


class AsyncClient:
    """The Client's calls as coroutines; the same arguments as Client.
    `client` is the Client underneath, shared with threads if wanted."""

    def __init__(self, servers=None, **options):
        self.client = Client(servers, **options)
        self._tags = {}

    async def _run(self, fn, *args, **kw):
        return await asyncio.get_running_loop().run_in_executor(
            None, functools.partial(fn, *args, **kw))

    async def next(self):
        return await self._run(self.client.next)

    async def next_batch(self, n):
        return await self._run(self.client.next_batch, n)

    def tag(self, name, **options):
        s = self.client.tag(name, **options)
        a = self._tags.get(name)
        if a is None or a._seg is not s:
            a = self._tags[name] = AsyncSegment(s)
        return a

    async def format(self, name, count=1):
        return await self._run(self.client.format, name, count)

    async def decode(self, s, format=None):
        return await self._run(self.client.decode, s, format)

    def stats(self):
        return self.client.stats()

    async def close(self):
        self.client.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()
