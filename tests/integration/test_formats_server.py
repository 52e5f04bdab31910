#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_formats_server.py -- ID formats served by `frond serve`, over HTTP and
the Redis protocol: named formats from the configuration (flags, file and
environment), the built-in UUIDv7, UUIDv4, ULID and ObjectId, batches,
every error code with its status, decoding by shape and by name, and:

- `frond decode` and the server decode every shape to the same fields;
- a sequence's first use of a period (a store write) never holds the
  event loop: with the store locked, other requests on the same loop are
  answered while that one waits;
- what the start refuses, and keys checked while serving, are in
  test_formats_start.py.
"""
import http.client
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from respclient import Resp, RespError  # noqa: E402
from formats_common import (DAILY, FORMATS, KEY1, KEY2, OID,  # noqa: E402
                            ORDERS, ULID, UUID4, UUID7, clean_env, error_of,
                            key_file)


class Setup:
    """A server with the named formats, its keys in a file, a tag for the
    sequences, HTTP and RESP."""

    def __init__(self, threads=2, extra=()):
        self.keydir = ft.tempdir()
        self.keys = key_file(self.keydir, "1:%s\n2:%s\n" % (KEY1, KEY2))
        args = ["--order-key-file", self.keys]
        for name, spec in FORMATS.items():
            args += ["--format.%s" % name, spec]
        self.srv = ft.Server(threads=threads, tags={"orders": 1000}, resp=True,
                             extra=args + list(extra), env=clean_env())
        self.resp = Resp(self.srv.resp_port)

    def get(self, path, want=200):
        st, h, body = self.srv.request("GET", path)
        check(st == want, "GET %s: %d %r, expected %d" % (path, st,
                                                          body[:300], want))
        return json.loads(body) if h.get("content-type") == \
            "application/json" else body.decode()

    def cmd(self, *args):
        return self.resp.command(*args)

    def close(self):
        self.resp.close()
        self.srv.stop()
        self.srv.close()
        shutil.rmtree(self.keydir, ignore_errors=True)


def strs(reply):
    check(isinstance(reply, list), "not an array: %r" % (reply,))
    return [x.decode() for x in reply]


def pairs(reply):
    """A flat RESP field/value array as a dict (bytes values as str)."""
    check(isinstance(reply, list) and len(reply) % 2 == 0,
          "not field/value pairs: %r" % (reply,))
    out = {}
    for k, v in zip(reply[0::2], reply[1::2]):
        out[k.decode()] = v.decode() if isinstance(v, bytes) else v
    return out


# ------------------------------------------------------------- issuing

def test_issue_http_and_resp():
    s = Setup()
    try:
        # Built-ins: shapes, distinct, increasing where promised.
        for kind, pat, ordered in (("uuid7", UUID7, True),
                                   ("uuid4", UUID4, False),
                                   ("ulid", ULID, True),
                                   ("objectid", OID, True)):
            got = s.get("/v1/%s?count=500" % kind)["ids"]
            text = s.get("/v1/%s?count=3&format=text" % kind).split("\n")
            check(text[-1] == "" and len(text) == 4, "text: %r" % text)
            got += text[:3]
            check(all(pat.match(x) for x in got), "%s shapes: %r"
                  % (kind, got[:3]))
            check(len(set(got)) == len(got), "%s repeated" % kind)
            if ordered:
                check(got == sorted(got), "%s not increasing" % kind)
        one = strs(s.cmd("ID.UUID"))
        v4 = strs(s.cmd("ID.UUID", "v4", "5"))
        v7 = strs(s.cmd("ID.UUID", "V7", "2"))
        check(len(one) == 1 and UUID7.match(one[0]), "ID.UUID: %r" % one)
        check(len(v4) == 5 and all(UUID4.match(x) for x in v4), "v4: %r" % v4)
        check(len(v7) == 2 and v7 == sorted(v7) and v7[0] > one[0],
              "v7: %r after %r" % (v7, one))
        check(all(ULID.match(x) for x in strs(s.cmd("ID.ULID", "3"))), "ULID")
        check(all(OID.match(x) for x in strs(s.cmd("ID.OBJECTID", "3"))),
              "OBJECTID")
        # Order numbers: the prefix is Shanghai's date, each decodes to a
        # snowflake ID, and those increase across HTTP and RESP.
        http_orders = s.get("/v1/format/orders?count=300")["ids"]
        resp_orders = strs(s.cmd("ID.ORDER", "orders", "300"))
        more = strs(s.cmd("ID.FORMAT", "orders", "2"))
        ids = []
        for o in http_orders + resp_orders + more:
            check(re.match(r"^\d{8}-\d{21}$", o), "order shape: %r" % o)
            d = s.get("/v1/decode/%s?format=orders" % o)
            check(d["format"] == "order" and d["key_version"] == "1" and
                  d["prefix_date"] == o[:8], "decoded: %r" % d)
            ids.append(int(d["id"]))
        check(ids == sorted(ids) and len(set(ids)) == len(ids),
              "order numbers do not decode to increasing IDs")
        # A daily sequence: consecutive per day, across the protocols.
        a = s.get("/v1/format/daily?count=3")["ids"]
        b = strs(s.cmd("ID.FORMAT", "daily", "120"))
        c = s.get("/v1/format/daily?format=text").split()
        nums = [int(x[8:]) for x in a + b + c]
        check(nums == list(range(1, 125)), "daily numbers: %r" % nums[:10])
        check(len({x[:8] for x in a + b + c}) == 1, "one day: %r" % (a + c))
        # base62 / base32 of snowflake IDs sort like the IDs.
        short = s.get("/v1/format/short?count=100")["ids"]
        check(short == sorted(short) and all(len(x) == 11 for x in short),
              "base62: %r" % short[:3])
        b32 = strs(s.cmd("ID.FORMAT", "b32", "3"))
        check(all(len(x) == 13 for x in b32), "base32: %r" % b32)
        # Counted per format.
        st, _, m = s.srv.request("GET", "/metrics")
        m = m.decode()
        for name, kind, at_least in (("orders", "order", 602),
                                     ("daily", "seq", 124),
                                     ("uuid7", "uuid7", 506)):
            g = re.search(r'frond_format_strings_total\{format="%s",'
                          r'kind="%s"\} (\d+)' % (name, kind), m)
            check(g and int(g.group(1)) >= at_least, "metric %s: %r"
                  % (name, g and g.group(0)))
    finally:
        s.close()


def test_errors():
    s = Setup()
    try:
        for path, st, code in (
                ("/v1/format/nope", 404, "FORMAT_NOT_FOUND"),
                ("/v1/format/orders?count=0", 400, "COUNT_INVALID"),
                ("/v1/format/orders?count=100001", 400, "COUNT_INVALID"),
                ("/v1/format/orders?format=xml", 400, "BAD_REQUEST"),
                ("/v1/uuid7?count=-1", 400, "COUNT_INVALID"),
                ("/v1/decode/xyz", 400, "ID_INVALID"),
                ("/v1/decode/123?format=nope", 404, "FORMAT_NOT_FOUND")):
            check(error_of(s.get(path, st)) == code, "%s: not %s" % (path,
                                                                     code))
        st, h, _ = s.srv.request("POST", "/v1/format/orders")
        check(st == 405 and h.get("allow") == "GET, HEAD", "POST: %d" % st)
        st, h, _ = s.srv.request("DELETE", "/v1/uuid7")
        check(st == 405, "DELETE /v1/uuid7: %d" % st)
        for args, code in ((("ID.FORMAT", "nope"), "FORMAT_NOT_FOUND"),
                           (("ID.ORDER", "daily"), "FORMAT_INVALID"),
                           (("ID.ORDER", "orders", "0"), "COUNT_INVALID"),
                           (("ID.UUID", "v5"), "ERR"),
                           (("ID.UUID", "v4", "x"), "COUNT_INVALID"),
                           (("ID.UUID", "7", "2"), "ERR"),
                           (("ID.ULID", "x"), "COUNT_INVALID"),
                           (("ID.DECODE", "xyz"), "ID_INVALID"),
                           (("ID.DECODE", "1", "nope"), "FORMAT_NOT_FOUND"),
                           (("ID.FORMAT",), "ERR"),
                           (("ID.UUID", "v4", "1", "2"), "ERR"),
                           (("ID.DECODE", "1", "a", "b"), "ERR")):
            r = s.cmd(*args)
            check(isinstance(r, RespError) and r.code == code,
                  "%s: %r, not -%s" % (args, r, code))
        # The connection survives its errors.
        check(s.cmd("PING") == "PONG", "PING after errors")
        # A wrong check digit; a number of a key version the server has
        # no key for (a third key version).
        o = s.get("/v1/format/orders")["ids"][0]
        bad = o[:-1] + str((int(o[-1]) + 1) % 10)
        check(error_of(s.get("/v1/decode/%s?format=orders" % bad, 400)) ==
              "ID_INVALID", "wrong check digit accepted")
        r = s.cmd("ID.DECODE", bad, "orders")
        check(isinstance(r, RespError) and r.code == "ID_INVALID", "%r" % r)
        # Two order formats with the same shape read a string without a
        # name: ambiguous, unless the name is given.
        o2 = s.get("/v1/format/orders2")["ids"][0]
        e = s.get("/v1/decode/" + o, 400)
        check(error_of(e) == "ID_INVALID" and "several" in
              e["error"]["message"], "ambiguous: %r" % e)
        check(s.get("/v1/decode/%s?format=orders2" % o2)["key_version"] == "2",
              "orders2 by name")
    finally:
        s.close()
    # KEY_INVALID: a server holding only key 1 asked to decode a number
    # made under key 2.
    d = ft.tempdir()
    try:
        keys = key_file(d, "1:%s\n" % KEY1)
        srv = ft.Server(threads=1, resp=True, env=clean_env(),
                        extra=["--order-key-file", keys, "--format.orders",
                               ORDERS])
        try:
            e = json.loads(srv.request("GET", "/v1/decode/%s?format=orders"
                                       % o2)[2])
            check(error_of(e) == "KEY_INVALID", "%r" % e)
            st, _, _ = srv.request("GET", "/v1/decode/%s?format=orders" % o2)
            check(st == 400, "KEY_INVALID status %d" % st)
            r = Resp(srv.resp_port)
            e = r.command("ID.DECODE", o2, "orders")
            r.close()
            check(isinstance(e, RespError) and e.code == "KEY_INVALID",
                  "%r" % e)
        finally:
            srv.stop()
            srv.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_sequence_exhausted():
    """A period runs out: 503 / -SEQUENCE_EXHAUSTED, never a wrap."""
    d = ft.tempdir()
    try:
        srv = ft.Server(threads=1, resp=True, tags={"small": 10},
                        env=clean_env(),
                        extra=["--format.small", "seq:tag=small,digits=3"])
        try:
            day = time.strftime("%Y%m%d", time.gmtime())
            r = Resp(srv.resp_port)
            # The period's row, made near the end of its 999 numbers.
            # One segment holds them all: the test does not wait on the
            # loader, which a busy machine may delay past wait_ms.
            st = subprocess.run([ft.FROND_BIN, "tag", "create",
                                 "small:" + day, "--step", "20", "--start",
                                 "990", "--store", srv.store],
                                capture_output=True, text=True, timeout=60)
            check(st.returncode == 0, st.stderr)
            got = strs(r.command("ID.FORMAT", "small", "10"))
            if got[0] != day + "990":  # the day turned: not the row made
                raise ft.Failure("the UTC day changed during the test: %r"
                                 % got)
            check([g[8:] for g in got] == [str(n) for n in range(990, 1000)],
                  "%r" % got)
            e = r.command("ID.FORMAT", "small")
            check(isinstance(e, RespError) and
                  e.code == "SEQUENCE_EXHAUSTED", "%r" % e)
            st, _, body = srv.request("GET", "/v1/format/small")
            check(st == 503 and error_of(json.loads(body)) ==
                  "SEQUENCE_EXHAUSTED", "%d %r" % (st, body))
            r.close()
        finally:
            srv.stop()
            srv.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_sequence_multi_batches():
    """A daily sequence on a multi: store of two databases, from two
    servers, in batches of up to 255 from four clients, to the end of the
    day's numbers, on eight tags: a multi: store interleaves its members'
    blocks, so a batch is not increasing and every number of it is
    checked against the end. Before that, numbers past the end wrapped
    onto the day's first ones.

    One server names member b at a path that does not exist (a typo): its
    multi: store serves from a and c alone, so their blocks reach the end
    while b's still lie below it, and the other server's batches mix
    them."""
    d = ft.tempdir()
    store = "multi:sqlite://%s/a.db|sqlite://%s/b.db|sqlite://%s/c.db" % (
        d, d, d)
    without_b = ("multi:sqlite://%s/a.db|sqlite://%s/gone/b.db|"
                 "sqlite://%s/c.db" % (d, d, d))
    tags = {"t%d" % i: 100 for i in range(8)}
    day = time.strftime("%Y%m%d", time.gmtime())
    # A multi: store hands out no node IDs: the fleet's lease is named.
    args = ["--segment-wait-ms", "20000",
            "--coordinator", "lease+sqlite://%s/nodes.db" % d]
    for t in tags:
        args += ["--format." + t, "seq:tag=%s,digits=4" % t]
    srvs = []

    def frond(*a):
        r = subprocess.run([ft.FROND_BIN] + list(a), capture_output=True,
                           text=True, timeout=120, cwd=d, env=clean_env())
        check(r.returncode == 0, "frond %s: %s" % (a[0], r.stderr))

    def client(srv, name, seed):
        got = []
        c = srv.conn(timeout=60)
        for i in range(400):
            # Batches of 20 to 255: where a batch ends among the members'
            # blocks varies.
            n = 20 + (seed * 7919 + i * 104729) % 236
            st, _, body = srv.request(
                "GET", "/v1/format/%s?count=%d" % (name, n), conn=c)
            if st == 503 and error_of(json.loads(body)) == \
                    "SEQUENCE_EXHAUSTED":
                c.close()
                return got
            check(st == 200, "%s: %d %r" % (name, st, body[:300]))
            got += json.loads(body)["ids"]
        raise ft.Failure("%s: not used up after 400 batches" % name)

    try:
        for t in tags:
            frond("tag", "create", t, "--step", "100", "--store", store)
            # The period's row as the format makes it (blocks of 10), on
            # every member: the server without b cannot make it.
            frond("tag", "create", "%s:%s" % (t, day), "--step", "10",
                  "--store", store)
        srvs.append(ft.Server(store=without_b, env=clean_env(), extra=args))
        srvs.append(ft.Server(store=store, env=clean_env(), extra=args))
        dups = 0
        for t in tags:
            outs = [None] * 4
            ths = [threading.Thread(target=lambda i=i: outs.__setitem__(
                i, client(srvs[i % 2], t, i))) for i in range(4)]
            for th in ths:
                th.start()
            for th in ths:
                th.join(300)
            check(None not in outs, "%s: a client failed" % t)
            got = sum(outs, [])
            if any(x[:8] != day for x in got):  # the day turned meanwhile
                raise ft.Failure("the UTC day changed during the test")
            check(len(got) > 3000, "%s: only %d numbers" % (t, len(got)))
            dups += len(got) - len(set(got))
        check(dups == 0, "%d numbers issued twice" % dups)
    finally:
        for s in srvs:
            s.stop()
            s.close()
        shutil.rmtree(d, ignore_errors=True)


# ----------------------------------------------------- decode agreement

def test_decode_agrees_with_cli():
    """`frond decode` and the server answer the same fields for every
    shape, over HTTP and RESP."""
    s = Setup()
    try:
        cases = []
        for kind in ("uuid7", "uuid4", "ulid", "objectid"):
            cases.append((s.get("/v1/%s" % kind)["ids"][0], None, None))
        cases.append((s.get("/v1/format/short")["ids"][0], None, None))
        cases.append((s.get("/v1/format/b32")["ids"][0], None, None))
        cases.append((s.get("/v1/format/orders")["ids"][0], "orders", ORDERS))
        cases.append((s.get("/v1/format/daily")["ids"][0], "daily", DAILY))
        cases.append((s.get("/v1/format/keyed")["ids"][0], "keyed",
                      FORMATS["keyed"]))
        cases.append(("507f1f77bcf86cd799439011", None, None))
        cases.append(("017F22E2-79B0-7CC3-98C4-DC0C0C07398F", None, None))
        for string, name, spec in cases:
            args = ["decode"]
            if spec:
                args += ["--format", spec, "--key-file", s.keys]
            r = ft.run(args + [string], env=clean_env())
            check(r.returncode == 0, "frond decode %s: %s" % (string,
                                                              r.stderr))
            cli = json.loads(r.stdout)
            path = "/v1/decode/" + string + ("?format=" + name if name
                                              else "")
            http_v = s.get(path)
            check(http_v == cli, "%s: HTTP %r, frond decode %r"
                  % (string, http_v, cli))
            resp_v = pairs(s.cmd("ID.DECODE", string, *([name] if name
                                                        else [])))
            check(resp_v == cli, "%s: RESP %r, frond decode %r"
                  % (string, resp_v, cli))
            check(list(http_v) == list(cli), "%s: field order %r vs %r"
                  % (string, list(http_v), list(cli)))
        # A decimal snowflake ID: one list of fields, in one order, in all
        # three (the server's layout given to frond decode).
        sid = s.get("/v1/snowflake")["ids"][0]
        srv = s.get("/v1/decode/" + sid)
        cli = json.loads(ft.run(["decode", "--layout", srv["layout"], sid],
                                env=clean_env()).stdout)
        resp_v = pairs(s.cmd("ID.DECODE", sid))
        want = ["id", "time", "unix_ms", "time_units", "node", "datacenter",
                "worker", "sequence", "layout"]
        check(list(srv) == want, "decimal: HTTP fields %r" % list(srv))
        check(srv == cli and list(cli) == want,
              "decimal: HTTP %r, frond decode %r" % (srv, cli))
        check(resp_v == cli, "decimal: RESP %r, frond decode %r"
              % (resp_v, cli))
    finally:
        s.close()


def test_reverse_over_http_and_resp():
    """A named reverse=yes format: its strings over HTTP and RESP are the
    63 bits of increasing snowflake IDs reversed, and decode (HTTP, RESP,
    frond decode) to those IDs and their fields."""
    s = Setup(extra=["--format.rev", "decimal:reverse=yes"])
    try:
        def rev(v):
            return int(format(v, "063b")[::-1], 2)
        got = s.get("/v1/format/rev?count=200")["ids"]
        got += strs(s.cmd("ID.FORMAT", "rev", "50"))
        ids = [rev(int(x)) for x in got]
        check(ids == sorted(ids) and len(set(ids)) == len(ids),
              "reversed back, not increasing: %r" % ids[:5])
        check(len({int(x) >> 59 for x in got}) > 8,
              "reverse=yes strings do not spread: %r" % got[:5])
        one = got[-1]
        http_v = s.get("/v1/decode/%s?format=rev" % one)
        resp_v = pairs(s.cmd("ID.DECODE", one, "rev"))
        cli = json.loads(ft.run(["decode", "--format", "decimal:reverse=yes",
                                 "--layout", http_v["layout"], one],
                                env=clean_env()).stdout)
        check(http_v["id"] == str(ids[-1]), "decoded %r, issued %d"
              % (http_v, ids[-1]))
        check(http_v == resp_v == cli, "HTTP %r, RESP %r, frond decode %r"
              % (http_v, resp_v, cli))
    finally:
        s.close()


def test_shard_over_http_and_resp():
    """A named shard=4 format: the caller's key with every request (?key=,
    the third argument of ID.FORMAT) puts every string of that key in one
    shard, the same over HTTP, RESP and frond next --shard-key with the
    same key file; the IDs inside are distinct and increasing; no key, or
    a key for another format, is INVAL."""
    s = Setup(extra=["--format.sh", "decimal:shard=4,key=1",
                     "--format.plain", "decimal"])
    try:
        def shard(x):
            return int(x) >> 59
        inside = []
        for user in ("user-1", "user-2", "user-3", "u" * 128):
            got = s.get("/v1/format/sh?count=20&key=" + user)["ids"]
            got += strs(s.cmd("ID.FORMAT", "sh", "5", user))
            check(len({shard(x) for x in got}) == 1,
                  "%s: several shards %r" % (user[:10], got[:3]))
            r = ft.run(["next", "--store", "none", "--format",
                        "decimal:shard=4,key=1", "--key-file", s.keys,
                        "--shard-key", user], env=clean_env(),
                       cwd=s.keydir)
            check(r.returncode == 0 and shard(r.stdout) == shard(got[0]),
                  "frond next --shard-key %s: %r %r, server's shard %d"
                  % (user[:10], r.stdout, r.stderr, shard(got[0])))
            inside += [int(x) & ((1 << 59) - 1) for x in got]
        check(len(set(inside)) == len(inside), "an ID twice")
        st, _, body = s.srv.request("GET", "/v1/format/sh")
        check(st == 400 and error_of(json.loads(body)) == "INVAL",
              "no key: %d %r" % (st, body))
        st, _, body = s.srv.request("GET", "/v1/format/plain?key=u")
        check(st == 400 and error_of(json.loads(body)) == "INVAL",
              "a key for a plain format: %d %r" % (st, body))
        st, _, body = s.srv.request("GET", "/v1/format/sh?key=" + "u" * 257)
        check(st == 400 and error_of(json.loads(body)) == "INVAL",
              "a key of 257 bytes: %d %r" % (st, body))
        err = s.cmd("ID.FORMAT", "sh", "1")
        check(isinstance(err, RespError) and err.code == "INVAL",
              "ID.FORMAT without a key: %r" % (err,))
    finally:
        s.close()


def test_shard_key_spelled_any_way():
    """A key's bytes choose its shard, not their spelling: ?key= is
    percent-decoded ('+' a space, as a query string means), so a key with
    reserved characters, spaces or UTF-8 lands on the shard RESP and
    frond next --shard-key give it. The limit is the library's 256 bytes,
    counted once decoded, on both fronts; a bad escape is INVAL."""
    from urllib.parse import quote, quote_plus
    s = Setup(extra=["--format.sh", "decimal:shard=4,key=1"])
    try:
        def shard_of(x):
            return int(x) >> 59
        keys = ["user@x.com", "a b", "a+b", "100%", "k/e?y&=#;,",
                "\u65e5\u672c\u8a9e", "caf\u00e9 \u2603", "x" * 256,
                "\u00e9" * 128]
        for key in keys:
            cli = ft.run(["next", "--store", "none", "--format",
                          "decimal:shard=4,key=1", "--key-file", s.keys,
                          "--shard-key", key], env=clean_env(),
                         cwd=s.keydir)
            check(cli.returncode == 0, "frond next %r: %r" % (key, cli.stderr))
            want = shard_of(cli.stdout.strip())
            spellings = {quote(key, safe=""), quote_plus(key, safe="")}
            for sp in spellings:
                got = s.get("/v1/format/sh?count=3&key=" + sp)["ids"]
                check({shard_of(x) for x in got} == {want},
                      "HTTP ?key=%s: shards %r, CLI's %d"
                      % (sp[:40], [shard_of(x) for x in got], want))
            got = strs(s.cmd("ID.FORMAT", "sh", "3", key))
            check({shard_of(x) for x in got} == {want},
                  "RESP %r: shards %r, CLI's %d"
                  % (key[:20], [shard_of(x) for x in got], want))
        for bad in ("%zz", "%4", quote("x" * 257), quote("\u00e9" * 129)):
            st, _, body = s.srv.request("GET", "/v1/format/sh?key=" + bad)
            check(st == 400 and error_of(json.loads(body)) == "INVAL",
                  "?key=%s: %d %r" % (bad[:20], st, body))
        err = s.cmd("ID.FORMAT", "sh", "1", "x" * 257)
        check(isinstance(err, RespError) and err.code == "INVAL",
              "ID.FORMAT with 257 bytes: %r" % (err,))
    finally:
        s.close()


# ------------------------------------------------- off the event loop

def test_period_first_use_off_the_loop():
    """With the store locked, a sequence's first use of a period waits on
    a pool thread; the one event loop answers other requests meanwhile,
    and the waiting request completes once the lock is gone."""
    s = Setup(threads=1)
    lock = None
    try:
        db = s.srv.store[len("sqlite://"):]
        lock = sqlite3.connect(db, isolation_level=None, timeout=30)
        lock.execute("BEGIN IMMEDIATE")  # every other writer waits
        result = {}

        def first_use():
            c = http.client.HTTPConnection("127.0.0.1", s.srv.port,
                                           timeout=60)
            c.request("GET", "/v1/format/daily?count=2")
            r = c.getresponse()
            result["answer"] = (r.status, r.read())
            c.close()

        mconn = s.srv.conn()  # the only other HTTP connection meanwhile

        def accepted():
            m = s.srv.request("GET", "/metrics", conn=mconn)[2].decode()
            return int(re.search(r'^frond_connections_accepted_by_protocol_'
                                 r'total\{protocol="http"\} (\d+)', m,
                                 re.M).group(1))

        before = accepted()
        t = threading.Thread(target=first_use)
        t.start()
        # The request's connection is accepted (its bytes go with it) ...
        deadline = time.monotonic() + 30
        while accepted() <= before and time.monotonic() < deadline:
            time.sleep(0.05)
        check(accepted() > before, "the first use never connected: %r"
              % result)
        time.sleep(0.5)
        # ... and while it waits on the store, the loop serves others.
        for _ in range(20):
            check(len(s.get("/v1/snowflake?count=5")["ids"]) == 5, "snowflake")
            check(UUID7.match(strs(s.cmd("ID.UUID"))[0]), "uuid7")
        check(t.is_alive() and "answer" not in result,
              "the sequence's first use did not wait for the locked store: "
              "%r" % result)
        lock.execute("ROLLBACK")
        t.join(60)
        check(not t.is_alive(), "the request never finished")
        st, body = result["answer"]
        check(st == 200, "first use: %d %r" % (st, body))
        nums = [int(x[8:]) for x in json.loads(body)["ids"]]
        check(nums == [1, 2], "numbers %r" % nums)
    finally:
        if lock is not None:
            lock.close()
        s.close()


if __name__ == "__main__":
    ft.main([test_issue_http_and_resp, test_errors, test_sequence_exhausted,
             test_sequence_multi_batches,
             test_decode_agrees_with_cli, test_reverse_over_http_and_resp,
             test_shard_over_http_and_resp,
             test_shard_key_spelled_any_way,
             test_period_first_use_off_the_loop])
