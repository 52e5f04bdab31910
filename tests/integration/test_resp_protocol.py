#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The Redis protocol front, byte by byte: commands and their replies, error
replies that leave the connection usable, pipelining in order, inline and
multibulk on one connection, AUTH, the limits, hostile input, and that
every other client keeps being served through all of it.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from respclient import (Resp, RespError, RespSet, Verbatim,  # noqa: E402
                        encode)

TAGS = {"order": 1000, "pay": 7, "bulk": 1000000}


def stop(s):
    """SIGTERM: the server drains and exits 0."""
    rc = s.stop()
    check(rc == 0, "frond serve exited %d: %s" % (rc, s.output()[-2000:]))


def is_err(r, code):
    return isinstance(r, RespError) and r.code == code


def ids(reply):
    """An ID.* reply: IDs as bulk strings of digits, as ints."""
    check(isinstance(reply, list) and
          all(isinstance(i, bytes) and i.isdigit() for i in reply),
          "IDs should be bulk strings of digits: %r" % (reply[:3],))
    return [int(i) for i in reply]


def served(port):
    """A fresh client still gets IDs."""
    c = Resp(port)
    try:
        a, b = c.command("INCR", "order"), c.command("INCR", "order")
        check(isinstance(a, int) and b > a, "not served after abuse: %r %r"
              % (a, b))
    finally:
        c.close()


def test_commands():
    s = ft.Server(resp=True, tags=TAGS)
    try:
        c = Resp(s.resp_port)
        check(c.command("PING") == "PONG", "PING")
        check(c.command("PING", "hi") == b"hi", "PING msg")
        check(c.command("ECHO", "x y") == b"x y", "ECHO")
        ids_ = [c.command("INCR", "order") for _ in range(50)]
        ids_ += [c.command("incr", "order") for _ in range(50)]
        check(all(isinstance(i, int) for i in ids_), "INCR: %r" % ids_[:3])
        check(ids_ == sorted(set(ids_)), "INCR not unique and increasing")
        batch = ids(c.command("ID.NEXT", "order", 500))
        check(len(batch) == 500 and batch[0] > ids_[-1] and
              batch == sorted(set(batch)), "ID.NEXT batch")
        one = ids(c.command("id.next", "pay"))
        check(len(one) == 1, "ID.NEXT without count")
        sf = ids(c.command("ID.SNOWFLAKE", 1000))
        check(len(sf) == 1000 and sf == sorted(set(sf)), "ID.SNOWFLAKE")
        check(len(ids(c.command("ID.SNOWFLAKE"))) == 1, "ID.SNOWFLAKE one")
        d = c.command("ID.DECODE", sf[5])
        check(isinstance(d, list) and len(d) == 18, "ID.DECODE shape %r" % d)
        f = dict(zip(d[0::2], d[1::2]))
        check(f[b"id"] == str(sf[5]).encode() and f[b"node"] == 0 and
              abs(f[b"unix_ms"] / 1000 - time.time()) < 60 and
              f[b"time"].endswith(b"Z"), "ID.DECODE fields %r" % f)
        check(sorted(c.command("ID.TAGS")) == [b"bulk", b"order", b"pay"],
              "ID.TAGS")
        # What clients send on connect.
        check(c.command("SELECT", 0) == "OK", "SELECT 0")
        check(is_err(c.command("SELECT", 1), "ERR"), "SELECT 1")
        check(c.command("CLIENT", "SETNAME", "app-1") == "OK", "SETNAME")
        check(c.command("CLIENT", "GETNAME") == b"app-1", "GETNAME")
        check(is_err(c.command("CLIENT", "SETNAME", "a b"), "ERR"), "name")
        check(c.command("CLIENT", "SETINFO", "LIB-NAME", "x") == "OK",
              "SETINFO")
        check(isinstance(c.command("CLIENT", "ID"), int), "CLIENT ID")
        check(b"name=app-1" in c.command("CLIENT", "INFO"), "CLIENT INFO")
        h = c.command("HELLO")
        check(h[h.index(b"proto") + 1] == 2, "HELLO %r" % h)
        check(c.command("HELLO", 2, "SETNAME", "n2")[0] == b"server",
              "HELLO 2")
        check(is_err(c.command("HELLO", 4), "NOPROTO"), "HELLO 4")
        n = c.command("COMMAND", "COUNT")
        check(isinstance(n, int) and n == len(c.command("COMMAND")),
              "COMMAND COUNT")
        check(c.command("COMMAND", "DOCS") == [], "COMMAND DOCS")
        check(c.command("READONLY") == "OK" and
              c.command("READWRITE") == "OK", "READONLY, READWRITE")
        info = c.command("INFO").decode()
        for k in ("# Server", "redis_version:", "# Clients",
                  "connected_clients:", "# Snowflake", "# Segment",
                  "tag_order:issued="):
            check(k in info, "INFO lacks %s" % k)
        check("# Server" not in c.command("INFO", "segment").decode(),
              "INFO section")
        check(c.command("QUIT") == "OK" and c.closed(), "QUIT")
        m = s.request("GET", "/metrics")[2].decode()
        for k in ('frond_resp_commands_total{command="incr",result="ok"} 100',
                  'frond_resp_commands_total{command="select",result='
                  '"error"} 1',
                  'frond_connections_accepted_by_protocol_total{protocol='
                  '"resp"} ', 'frond_connections_by_protocol{protocol='
                  '"http"} 1'):
            check(k in m, "metrics lack %s" % k)
        stop(s)
    finally:
        s.close()


def test_error_replies():
    s = ft.Server(resp=True, tags=TAGS)
    try:
        c = Resp(s.resp_port)
        cases = [
            (("INCR", "nope"), "TAG_NOT_FOUND"),
            (("INCR",), "ERR"),
            (("INCR", "a", "b"), "ERR"),
            (("ID.NEXT", "order", "abc"), "COUNT_INVALID"),
            (("ID.NEXT", "order", 0), "COUNT_INVALID"),
            (("ID.NEXT", "order", -5), "COUNT_INVALID"),
            (("ID.NEXT", "order", 100001), "COUNT_INVALID"),
            (("ID.NEXT", "order", "99999999999999999999999"), "COUNT_INVALID"),
            (("ID.SNOWFLAKE", "1x"), "COUNT_INVALID"),
            (("ID.DECODE", "x"), "ID_INVALID"),
            (("ID.DECODE", -1), "ID_INVALID"),
            (("GET", "k"), "ERR"),
            (("AUTH", "x"), "ERR"),
            (("HELLO", "x"), "ERR"),
            (("CLIENT", "KILL"), "ERR"),
            (("INCR", "x" * 200), "TAG_INVALID"),
        ]
        for args, code in cases:
            r = c.command(*args)
            check(is_err(r, code), "%r: expected -%s, got %r" % (args, code, r))
            # The connection stays usable after every error reply.
            check(isinstance(c.command("INCR", "order"), int),
                  "not usable after %r" % (args,))
        r = c.command("GET", "k")
        check(r.line.startswith("ERR unknown command 'GET'"), r.line)
        r = c.command("INCR")
        check(r.line == "ERR wrong number of arguments for 'incr' command",
              r.line)
        check(len(ids(c.command("ID.NEXT", "bulk", 100000))) == 100000,
              "max_count batch")
        c.close()
        stop(s)
    finally:
        s.close()
    # Without a store, segment commands fail with a code, snowflake works.
    s = ft.Server(resp=True, store="none")
    try:
        c = Resp(s.resp_port)
        check(is_err(c.command("INCR", "order"), "SEGMENT_UNAVAILABLE"),
              "store = none")
        check(len(ids(c.command("ID.SNOWFLAKE", 2))) == 2, "snowflake")
        check(c.command("ID.TAGS") == [], "no tags")
        stop(s)
    finally:
        s.close()
    # A store not reached yet (node IDs not from it): the server starts,
    # segment commands say so, snowflake IDs are served.
    s = ft.Server(resp=True, store="postgresql://127.0.0.1:%d/frond"
                  "?connect_timeout=1" % ft.free_port(),
                  extra=["--coordinator", "static:0?unregistered=1"])
    try:
        c = Resp(s.resp_port)
        r = c.command("INCR", "order")
        check(is_err(r, "SEGMENT_UNAVAILABLE") and "not been reached" in
              r.line, "store down: %r" % r)
        check(len(ids(c.command("ID.SNOWFLAKE", 2))) == 2,
              "snowflake, store down")
        check("store_up:0" in c.command("INFO", "segment").decode(), "INFO")
        stop(s)
    finally:
        s.close()


def test_pipelining():
    # "pay" (step 7) runs through segments fast; on a loaded host the
    # loader can miss the default 50 ms, which is not what this tests.
    s = ft.Server(resp=True, tags=TAGS, extra=["--segment-wait-ms", "5000"])
    try:
        c = Resp(s.resp_port)
        n = 10000
        c.send(b"".join(encode("INCR", "order") for _ in range(n)))
        got = [c.reply() for _ in range(n)]
        check(got == sorted(set(got)) and len(got) == n,
              "pipelined INCR not answered in order")
        # Mixed kinds, each answered in its place.
        batch = []
        for i in range(n):
            batch.append(encode("PING", str(i)) if i % 2 else
                         encode("INCR", "pay"))
        c.send(b"".join(batch))
        last = 0
        for i in range(n):
            r = c.reply()
            if i % 2:
                check(r == str(i).encode(), "reply %d out of order: %r" % (i, r))
            else:
                check(isinstance(r, int) and r > last, "INCR %d: %r" % (i, r))
                last = r
        # Inline and multibulk mixed on one connection, and in one write.
        c.send(b"PING\r\nINCR order\r\n" + encode("ECHO", "a b") +
               b"  id.next   order   3  \r\n" + encode("PING") +
               b"ECHO\tz\n\r\n" + encode("INCR", "order"))
        r = [c.reply() for _ in range(7)]
        r[3] = ids(r[3])
        check(r[0] == "PONG" and isinstance(r[1], int) and r[2] == b"a b" and
              len(r[3]) == 3 and r[3][0] > r[1] and r[4] == "PONG" and
              r[5] == b"z" and r[6] > r[3][2], "inline/multibulk mix: %r" % r)
        # Large batches in a long pipeline: answers come back in order
        # while the server pauses on its own backlog.
        c.send(b"".join(encode("ID.NEXT", "bulk", 100000)
                        for _ in range(30)))
        prev = 0
        for _ in range(30):
            b = ids(c.reply())
            check(len(b) == 100000 and b[0] > prev, "big batch")
            prev = b[-1]
        c.close()
        stop(s)
    finally:
        s.close()


def test_auth():
    s = ft.Server(resp=True, tags=TAGS, extra=["--admin-token", "s3cret"])
    try:
        c = Resp(s.resp_port)
        check(is_err(c.command("INCR", "order"), "NOAUTH"), "NOAUTH")
        check(is_err(c.command("ID.SNOWFLAKE"), "NOAUTH"), "NOAUTH ID")
        check(is_err(c.command("INFO"), "NOAUTH"), "NOAUTH INFO")
        check(c.command("PING") == "PONG", "PING before AUTH")
        check(is_err(c.command("HELLO", 2), "NOAUTH"), "HELLO before AUTH")
        check(is_err(c.command("AUTH", "wrong"), "WRONGPASS"), "wrong token")
        check(is_err(c.command("AUTH", "bob", "s3cret"), "WRONGPASS"), "user")
        check(c.command("AUTH", "s3cret") == "OK", "AUTH")
        check(isinstance(c.command("INCR", "order"), int), "after AUTH")
        c.close()
        c = Resp(s.resp_port)
        check(c.command("AUTH", "default", "s3cret") == "OK", "AUTH default")
        check(isinstance(c.command("INCR", "order"), int), "after AUTH 2")
        c.close()
        c = Resp(s.resp_port)
        h = c.command("HELLO", 2, "AUTH", "default", "s3cret")
        check(isinstance(h, list), "HELLO AUTH: %r" % h)
        check(isinstance(c.command("INCR", "order"), int), "after HELLO AUTH")
        c.close()
        # Before AUTH, commands are bounded as Redis bounds them.
        c = Resp(s.resp_port)
        c.send(encode(*(["PING"] * 11)))
        r = c.reply()
        check(is_err(r, "ERR") and "Protocol error" in r.line and c.closed(),
              "11 args before AUTH: %r" % r)
        c = Resp(s.resp_port)
        c.send(b"*2\r\n$4\r\nAUTH\r\n$20000\r\n")
        check(is_err(c.reply(), "ERR") and c.closed(), "big bulk before AUTH")
        stop(s)
    finally:
        s.close()


def test_bad_input():
    s = ft.Server(resp=True, tags=TAGS, extra=["--header-timeout-ms", "1000",
                                    "--resp-max-args", "16",
                                    "--resp-max-bulk", "1024",
                                    "--resp-max-inline", "2048",
                                    "--resp-max-query", "65536"])
    bad = [
        (b"*-5\r\n*1\r\n$4\r\nPING\r\n", "PONG"),  # negative: empty, skipped
        (b"*99999999999999999999\r\n", "Protocol error"),
        (b"*1\r\n$-3\r\n", "Protocol error"),
        (b"*1\r\n$99999999999999\r\n", "Protocol error"),
        (b"*1\r\n$1025\r\n", "Protocol error"),          # above resp_max_bulk
        (b"*17\r\n", "Protocol error"),                  # above resp_max_args
        (b"*2\r\n$4\r\nINCR\r\n$5\r\norderXX", "Protocol error"),
        (b"*1\r\nPING\r\n", "Protocol error"),
        (b"*x\r\n", "Protocol error"),
        (b"\x00\xff\xfe*\r\n$\x01\x02" * 10 + b"\r\n", "ERR unknown command"),
        (b"x" * 3000, "Protocol error"),                  # inline too long
    ]
    try:
        for data, want in bad:
            c = Resp(s.resp_port)
            c.send(data)
            r = c.reply()
            text = r if isinstance(r, str) else getattr(r, "line", repr(r))
            text = text.decode("utf-8", "replace") \
                if isinstance(text, bytes) else text
            check(want in text, "%r: got %r" % (data[:40], r))
            if want == "Protocol error":
                check(c.closed(), "%r: not closed after a protocol error"
                      % data[:40])
            c.close()
            served(s.resp_port)
        # Binary garbage that is one inline line: an error reply, and the
        # connection keeps working.
        c = Resp(s.resp_port)
        c.send(bytes(range(1, 10)) + b"\xff\xfe\r\n")
        check(is_err(c.reply(), "ERR"), "garbage line")
        check(isinstance(c.command("INCR", "order"), int), "after garbage")
        c.close()
        # Too many inline words.
        c = Resp(s.resp_port)
        c.send(b"PING" + b" a" * 20 + b"\r\n")
        check("Protocol error" in c.reply().line and c.closed(), "inline args")
        # A client that stops mid-command is closed after header_timeout_ms,
        # while another one keeps being served.
        stalled = Resp(s.resp_port)
        stalled.send(b"*2\r\n$4\r\nINCR\r\n$5\r\nord")
        t0 = time.monotonic()
        served(s.resp_port)
        r = stalled.reply()
        check(is_err(r, "ERR") and stalled.closed(), "stalled client: %r" % r)
        check(0.5 < time.monotonic() - t0 < 5, "stalled closed in time")
        # An idle connection (nothing pending) is left open: pools keep
        # them.
        idle = Resp(s.resp_port)
        time.sleep(1.6)
        check(idle.command("PING") == "PONG", "idle connection closed")
        idle.close()
        c = Resp(s.resp_port)
        try:
            c.send(b"PING " * 20000)
        except OSError:
            pass
        check(c.closed(), "over-long inline not closed")
        check(s.alive(), "server died")
        served(s.resp_port)
        stop(s)
    finally:
        s.close()


def test_limits_and_drain():
    s = ft.Server(resp=True, tags=TAGS, extra=["--max-connections", "5",
                                    "--drain-timeout-ms", "3000"])
    try:
        time.sleep(0.5)  # let the start-up probes' connections close
        conns = []
        for _ in range(5):
            conns.append(Resp(s.resp_port))
            time.sleep(0.05)
        for c in conns:
            check(c.command("PING") == "PONG", "below the limit")
        extra = Resp(s.resp_port)
        r = extra.reply()
        check(is_err(r, "ERR") and "max number of clients" in r.line and
              extra.closed(), "above max_connections: %r" % r)
        extra.close()
        conns.pop().close()
        time.sleep(0.3)
        # The query buffer bound (resp_max_query, 1 MiB by default): a
        # command that is legal piece by piece but does not fit.
        c = Resp(s.resp_port)
        try:
            c.send(b"*1024\r\n")
            for _ in range(40):
                c.send(b"$60000\r\n" + b"a" * 60000 + b"\r\n")
        except OSError:
            pass
        r = c.reply()
        check(is_err(r, "ERR") and "query buffer" in r.line and c.closed(),
              "query buffer: %r" % r)
        c.close()
        time.sleep(0.3)
        conns.append(Resp(s.resp_port))
        check(conns[-1].command("PING") == "PONG", "after one left")
        # SIGTERM: idle connections are closed, the server exits 0.
        stop(s)
        for c in conns:
            check(c.closed(), "connection open after drain")
    finally:
        s.close()
    # SIGTERM with a command half received: idle connections close at
    # once, the half command is answered when it completes, then its
    # connection closes and the server exits 0.
    s = ft.Server(resp=True, tags=TAGS, extra=["--drain-timeout-ms", "5000"])
    try:
        idle, busy = Resp(s.resp_port), Resp(s.resp_port)
        check(idle.command("PING") == "PONG", "idle")
        busy.send(b"*2\r\n$4\r\nINCR\r\n$5\r\nor")
        time.sleep(0.2)
        s.proc.send_signal(ft.signal.SIGTERM)
        check(idle.closed(), "idle connection open after SIGTERM")
        time.sleep(0.3)
        busy.send(b"der\r\n")
        check(isinstance(busy.reply(), int), "in-flight command not answered")
        check(busy.closed(), "drained connection left open")
        rc = s.proc.wait(timeout=10)
        check(rc == 0, "exit status %d after drain" % rc)
    finally:
        s.close()
    s = ft.Server(tags=TAGS)
    try:
        check("(resp)" not in s.output() or "off (resp)" in s.output(),
              "resp_listen off")
        stop(s)
    finally:
        s.close()
    # An address beyond loopback needs a token; the same port twice fails.
    d = ft.tempdir()
    r = ft.run(["serve", "--resp-listen", "0.0.0.0:%d" % ft.free_port(),
                "--listen", "127.0.0.1:%d" % ft.free_port(), "--data-dir", d,
                "--store", "none"], cwd=d, timeout=30)
    check(r.returncode != 0 and "admin_token" in r.stderr, r.stderr)
    p = ft.free_port()
    r = ft.run(["serve", "--resp-listen", "127.0.0.1:%d" % p, "--listen",
                "127.0.0.1:%d" % p, "--data-dir", d, "--store", "none"],
               cwd=d, timeout=30)
    check(r.returncode != 0 and "same port" in r.stderr, r.stderr)


def test_resp3():
    """HELLO 3 switches to RESP3: maps, sets, nulls and verbatim strings
    where Redis has them; IDs are bulk strings in both; HELLO 2 and RESET
    go back."""
    s = ft.Server(resp=True, tags=TAGS, extra=["--admin-token", "tok"])
    try:
        c = Resp(s.resp_port)
        # One round trip: protocol, credentials and name, as node-redis 6
        # sends it.
        h = c.command("HELLO", 3, "AUTH", "default", "tok", "SETNAME", "app")
        check(isinstance(h, dict) and h[b"proto"] == 3 and
              h[b"server"] == b"frond" and h[b"modules"] == [],
              "HELLO 3: %r" % h)
        check(c.command("CLIENT", "GETNAME") == b"app", "SETNAME in HELLO")
        check(isinstance(c.command("INCR", "order"), int), "INCR integer")
        sf = ids(c.command("ID.SNOWFLAKE", 5))
        check(len(set(sf)) == 5, "ID.SNOWFLAKE under RESP3")
        d = c.command("ID.DECODE", sf[0])
        check(isinstance(d, dict) and d[b"id"] == str(sf[0]).encode() and
              d[b"node"] == 0 and isinstance(d[b"unix_ms"], int),
              "ID.DECODE map: %r" % d)
        # A formatted ID decodes to a map too.
        u = c.command("ID.UUID")
        check(isinstance(u, list) and len(u) == 1 and
              isinstance(u[0], bytes), "ID.UUID: %r" % u)
        d = c.command("ID.DECODE", u[0])
        check(isinstance(d, dict) and d[b"format"] == b"uuid7",
              "ID.DECODE of a UUID, map: %r" % d)
        check(c.command("CONFIG", "GET", "save") == {}, "CONFIG GET map")
        info = c.command("INFO", "server")
        check(isinstance(info, Verbatim) and
              info.startswith(b"# Server"), "INFO verbatim: %r" % info[:40])
        ci = c.command("CLIENT", "INFO")
        check(isinstance(ci, Verbatim) and b" resp=3 " in ci, ci)
        entry = c.command("COMMAND", "INFO", "incr")[0]
        check(isinstance(entry[2], RespSet) and "write" in entry[2],
              "COMMAND flags: %r" % entry)
        check(c.command("COMMAND", "INFO", "nope") == [None], "null")
        check(is_err(c.command("INCR", "nope"), "TAG_NOT_FOUND"), "error")
        check(is_err(c.command("HELLO", 4), "NOPROTO"), "HELLO 4")
        h = c.command("HELLO", 2)
        check(isinstance(h, list) and h[h.index(b"proto") + 1] == 2,
              "HELLO 2: %r" % h)
        check(c.command("CONFIG", "GET", "save") == [], "back to RESP2")
        check(isinstance(c.command("HELLO", 3), dict), "HELLO 3 again")
        check(c.command("RESET") == "RESET", "RESET")
        check(is_err(c.command("INCR", "order"), "NOAUTH"), "RESET: no auth")
        check(isinstance(c.command("HELLO", 2, "AUTH", "default", "tok"),
                         list), "RESET: RESP2")
        # A refused HELLO changes nothing.
        check(is_err(c.command("HELLO", 3, "AUTH", "default", "no"),
                     "WRONGPASS"), "wrong password")
        check(c.command("CONFIG", "GET", "x") == [], "still RESP2")
        c.close()
        stop(s)
    finally:
        s.close()


def test_http_request_refused():
    """A web page can make a browser send HTTP to the RESP port, with a
    body of commands: the connection is closed at the request line and
    nothing under it runs."""
    s = ft.Server(resp=True, tags=TAGS)
    try:
        before = Resp(s.resp_port).command("INCR", "pay")
        body = b"INCR pay\r\n" * 50 + b"ID.NEXT pay 1000\r\n"
        for head in (b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                     b"Content-Type: text/plain\r\nContent-Length: %d\r\n"
                     b"\r\n" % (s.resp_port, len(body)),
                     b"PUT /x HTTP/1.1\r\nHost: localhost\r\n\r\n",
                     b"Host: localhost\r\n"):
            c = Resp(s.resp_port)
            c.send(head + body)
            check(c.closed(), "HTTP request not closed: %r" % head[:20])
            check(c.buf == b"", "answered: %r" % c.buf[:80])
            c.close()
        after = Resp(s.resp_port).command("INCR", "pay")
        check(after == before + 1, "the body ran: INCR pay went from %d to %d"
              % (before, after))
        m = s.request("GET", "/metrics")[2].decode()
        check("frond_resp_http_refused_total 3" in m, "metric")
        check("HTTP request to the Redis protocol port" in s.output(), "log")
        stop(s)
    finally:
        s.close()


if __name__ == "__main__":
    ft.need(ft.FROND_BIN, "frond (build it first)")
    socket.setdefaulttimeout(20)
    ft.main([test_commands, test_error_replies, test_pipelining, test_auth,
             test_bad_input, test_limits_and_drain, test_resp3,
             test_http_request_refused])
