#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
What a Redis transaction may hold in a server, in bytes and in time: an
EXEC whose commands ask for far more than a connection's output bound,
sent by a client that does not read, is answered in parts (the output
stays near its high-water mark, other connections are served, and the
whole answer arrives once the client reads); a transaction's queue is
bounded in bytes (-QUEUE_FULL, EXECABORT); and a transaction left open is
closed with an error after header_timeout_ms, its queue freed.
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


def test_queue_bytes_bounded():
    """A transaction's queue holds at most 256 KiB of arguments: the
    command past it is refused, EXEC aborts and runs nothing."""
    s = ft.Server(resp=True, tags={"order": 1000})
    try:
        c = Resp(s.resp_port)
        first = c.command("INCR", "order")
        check(c.command("MULTI") == "OK", "MULTI")
        arg = b"x" * 65000
        replies = [c.command("ECHO", arg) for _ in range(6)]
        full = [i for i, r in enumerate(replies)
                if isinstance(r, RespError) and r.code == "QUEUE_FULL"]
        check(full and replies[:full[0]] == ["QUEUED"] * full[0] and
              full[0] * 65000 <= 256 * 1024 < (full[0] + 1) * 65000,
              "6 ECHOs of 65,000 bytes: %r" % [str(r)[:40] for r in replies])
        check(c.command("INCR", "order") == "QUEUED", "queued after")
        r = c.command("EXEC")
        check(isinstance(r, RespError) and r.code == "EXECABORT", "%r" % r)
        # Nothing of it ran: the next ID follows the one before it.
        check(c.command("INCR", "order") == first + 1, "an ID was burnt")
        c.close()
    finally:
        s.stop()
        s.close()


def test_open_transaction_times_out():
    """Connections that open a transaction, queue to its bound and go
    idle are closed with an error after header_timeout_ms, their queues
    freed; a transaction EXECed within it runs."""
    s = ft.Server(resp=True, tags={"order": 1000},
                  extra=["--header-timeout-ms", "1000"])
    try:
        conns = []
        arg = b"x" * 60000
        for _ in range(40):
            c = Resp(s.resp_port, timeout=30)
            c.send(encode("MULTI") + encode("ECHO", arg) * 4)
            got = [c.reply() for _ in range(5)]
            check(got == ["OK"] + ["QUEUED"] * 4, "%r" % got[:2])
            conns.append(c)
        for c in conns:
            check(c.closed(timeout=30), "an open transaction outlived "
                  "header_timeout_ms")
            check(c.buf.startswith(b"-ERR transaction not executed within "
                                   b"1000 ms of MULTI"), "%r" % c.buf[:200])
            c.close()
        # Activity does not extend it: a command queued every 200 ms.
        c = Resp(s.resp_port, timeout=30)
        check(c.command("MULTI") == "OK", "MULTI")
        t0 = time.monotonic()
        closed = False
        while time.monotonic() - t0 < 10:
            c.send(encode("INCR", "order"))
            if c.closed(timeout=0.2):
                closed = True
                break
        check(closed and b"-ERR transaction not executed" in c.buf,
              "a busy open transaction: %r" % c.buf[-200:])
        c.close()
        # Within the bound, and after it on a fresh connection, all is as
        # usual.
        c = Resp(s.resp_port)
        check(c.command("MULTI") == "OK", "MULTI")
        check(c.command("INCR", "order") == "QUEUED", "queued")
        r = c.command("EXEC")
        check(isinstance(r, list) and len(r) == 1 and isinstance(r[0], int),
              "EXEC %r" % r)
        check(not c.closed(timeout=1.5), "closed after EXEC")
        check(c.command("PING") == "PONG", "PING after")
        c.close()
    finally:
        s.stop()
        s.close()


if __name__ == "__main__":
    ft.need(ft.FROND_BIN, "frond (build it first)")
    ft.main([test_exec_answered_in_parts, test_queue_bytes_bounded,
             test_open_transaction_times_out])
