#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
What a Redis transaction may hold in a server, in bytes and in time: an
EXEC whose commands ask for far more than a connection's output bound,
sent by a client that does not read, is answered in parts (the output
stays near its high-water mark, other connections are served, and the
whole answer arrives once the client reads).
"""
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from respclient import Resp, RespError, encode  # noqa: E402

MIB = 1 << 20
# A UUID as a bulk string: "$36\r\n" + 36 bytes + "\r\n".
UUID_REPLY = 5 + 36 + 2
PER_UUIDS = 100000


def buffer_bytes(s):
    """frond_connection_buffer_bytes: what open connections hold in read
    and answer buffers."""
    status, body = ft.http_get(s.port, "/metrics")
    check(status == 200, "/metrics: %d" % status)
    m = re.search(r"^frond_connection_buffer_bytes (\d+)", body, re.M)
    check(m, "no frond_connection_buffer_bytes in /metrics")
    return int(m.group(1))


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not cond():
        check(time.monotonic() < deadline, "%s: not within %d s"
              % (what, timeout))
        time.sleep(0.02)


def test_exec_answered_in_parts():
    """MULTI + 30 x ID.UUID v4 100000 + EXEC (about 130 MB of answer, from
    a 1 KB request) from a client that does not read: the server holds
    its output near the 4 MiB high-water mark instead of building the
    whole answer, another connection is served meanwhile, and once the
    client reads, every byte of the answer comes, in order."""
    k = 30
    s = ft.Server(resp=True, threads=1)
    try:
        c = socket.create_connection(("127.0.0.1", s.resp_port), timeout=60)
        req = encode("MULTI") + encode("ID.UUID", "v4", PER_UUIDS) * k + \
            encode("EXEC")
        c.sendall(req)
        # The answer backs up: the output reaches its high-water mark.
        wait_for(lambda: buffer_bytes(s) >= 4 * MIB, 120,
                 "the EXEC's output backing up")
        # The loop is free: another connection is served at once.
        other = Resp(s.resp_port, timeout=60)
        check(other.command("PING") == "PONG", "PING while EXEC waits")
        check(isinstance(other.command("INCR", "x"), (int, RespError)),
              "INCR while EXEC waits")
        other.close()
        held = buffer_bytes(s)
        check(held < 48 * MIB, "the connections hold %.1f MiB while the "
              "client does not read (%.1f MiB of answer asked for)"
              % (held / MIB, k * PER_UUIDS * UUID_REPLY / MIB))
        # The client reads: every byte of the answer arrives.
        one = b"*%d\r\n" % PER_UUIDS
        want = len(b"+OK\r\n") + k * len(b"+QUEUED\r\n") + \
            len(b"*%d\r\n" % k) + k * (len(one) + PER_UUIDS * UUID_REPLY)
        got = bytearray()
        c.settimeout(120)
        while len(got) < want:
            chunk = c.recv(1 << 20)
            check(chunk, "closed after %d of %d bytes: %r" % (len(got), want, bytes(got[-300:])))
            got += chunk
        check(len(got) == want, "%d bytes, expected %d" % (len(got), want))
        head = b"+OK\r\n" + b"+QUEUED\r\n" * k + b"*%d\r\n" % k
        check(got.startswith(head + one), "the answer's head: %r"
              % bytes(got[:200]))
        check(got.count(one) == k and got.count(b"$36\r\n") == k * PER_UUIDS,
              "%d arrays, %d UUIDs" % (got.count(one),
                                       got.count(b"$36\r\n")))
        last = bytes(got[-PER_UUIDS * UUID_REPLY:])
        uuids = {last[i + 5:i + 41] for i in range(0, len(last), UUID_REPLY)}
        check(len(uuids) == PER_UUIDS, "the last array: %d distinct UUIDs"
              % len(uuids))
        # The connection goes on as usual, its transaction over.
        c.sendall(encode("PING") + encode("EXEC"))
        rest = b""
        while rest.count(b"\r\n") < 2:
            chunk = c.recv(4096)
            check(chunk, "closed after EXEC")
            rest += chunk
        check(rest == b"+PONG\r\n-ERR EXEC without MULTI\r\n", "%r" % rest)
        c.close()
        wait_for(lambda: buffer_bytes(s) < MIB, 30, "buffers freed")
        # A client that reads as it goes gets the same, parts written as
        # soon as they are made, and what it pipelined behind EXEC after.
        c = socket.create_connection(("127.0.0.1", s.resp_port), timeout=120)
        c.sendall(req + encode("PING"))
        want += len(b"+PONG\r\n")
        got = bytearray()
        while len(got) < want:
            chunk = c.recv(1 << 20)
            check(chunk, "closed after %d of %d bytes" % (len(got), want))
            got += chunk
        check(len(got) == want and got.startswith(head + one) and
              got.endswith(b"\r\n+PONG\r\n") and
              got.count(b"$36\r\n") == k * PER_UUIDS, "a reading client: "
              "%d bytes of %d" % (len(got), want))
        c.close()
    finally:
        s.stop()
        s.close()


if __name__ == "__main__":
    ft.need(ft.FROND_BIN, "frond (build it first)")
    ft.main([test_exec_answered_in_parts])
