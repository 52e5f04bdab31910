#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
A tag's bound (`frond tag create --max N`) and stride (`--increment K
--offset R`) on SQLite, PostgreSQL, MariaDB and a multi: store.

Bounds: no ID above N is ever issued, the last range is cut at N, past it
`frond next --segment` answers SEGMENT_EXHAUSTED naming the tag and its
max; lowering the max below what the tag may have issued is refused
(TAG_FLOOR) and changes nothing; raising it lets the tag go on, above
every ID issued before; a deleted and re-created tag has the bound it is
created with.

Strides: every ID R modulo K, in order, unique, across processes and a
delete and re-create; on a running server every path that issues single
IDs or batches honours it, and every path that leases a range (HTTP,
RESP, the C `frond://` store) is refused with INVAL, never handing out a
number of another residue.
"""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from respclient import Resp, RespError  # noqa: E402


def frond(*args):
    return ft.run(list(args))


def ok(*args):
    r = frond(*args)
    ft.check(r.returncode == 0, "frond %s: %s" % (" ".join(args[:3]),
                                                   r.stderr))
    return r.stdout


def refused(r, code, *words):
    text = r.stdout + r.stderr
    ft.check(r.returncode == 1 and code in text and all(w in text
                                                        for w in words),
             "expected %s %s, got %d: %s" % (code, words, r.returncode, text))


def bounds(store, step):
    ok("tag", "create", "b", "--step", str(step), "--max", "25", "--store",
       store)
    ft.check("max          25" in ok("tag", "get", "b", "--store", store),
             "tag get does not show the max")
    seen = []
    # One process takes IDs until the tag runs out: every one at most 25.
    r = frond("next", "--segment", "b", "--count", "1", "--store", store)
    while r.returncode == 0 and len(seen) < 100:
        seen += [int(x) for x in r.stdout.split()]
        r = frond("next", "--segment", "b", "--count", "1", "--store", store)
    refused(r, "SEGMENT_EXHAUSTED", 'tag "b"', "max 25")
    ft.check(seen and max(seen) <= 25, "IDs above the max: %s" % seen)
    ft.check(len(set(seen)) == len(seen), "an ID twice: %s" % seen)
    # Lowering below what may have been issued: refused, nothing changes.
    refused(frond("tag", "set-max", "b", "3", "--store", store),
            "TAG_FLOOR", "max 3")
    ft.check("max          25" in ok("tag", "get", "b", "--store", store),
             "a refused set-max changed the max")
    refused(frond("next", "--segment", "b", "--store", store),
            "SEGMENT_EXHAUSTED")
    # Raising: on above everything issued, and still bounded.
    top = json.loads(ok("tag", "get", "b", "--json", "--store",
                        store))["max_id"]
    ok("tag", "set-max", "b", str(top + 2 * step), "--store", store)
    more = [int(x) for x in ok("next", "--segment", "b", "--count", "3",
                                "--store", store).split()]
    ft.check(min(more) > max(seen) and max(more) <= top + 2 * step,
             "after raising: %s (before: %s)" % (more, seen))
    # Deleted and created again without a max: unbounded, above the floor.
    ok("tag", "delete", "b", "--store", store)
    ok("tag", "create", "b", "--step", str(step), "--store", store)
    ft.check("max          none" in ok("tag", "get", "b", "--store", store),
             "a re-created tag kept the old max")
    again = [int(x) for x in ok("next", "--segment", "b", "--count", "3",
                                 "--store", store).split()]
    ft.check(min(again) > max(more), "re-created: %s" % again)
    # A max below the start is refused before anything is created.
    refused(frond("tag", "create", "c", "--start", "50", "--max", "10",
                  "--store", store), "INVAL")


def test_server_paths():
    """Every path of a running server issues only IDs at or below the max
    and then answers SEGMENT_EXHAUSTED (HTTP 409, Leaf's path 500 with the
    code in Frond-Error, RESP -SEGMENT_EXHAUSTED), naming tag and max."""
    s = ft.Server(resp=True)
    every = []

    def send(method, path, body=None):
        return s.request(method, path, None if body is None
                         else json.dumps(body).encode())

    try:
        st, _, b = send("POST", "/v1/tags", {"tag": "o", "step": 10,
                                                  "max": 40})
        ft.check(st == 201 and json.loads(b)["max"] == 40,
                 "POST: %d %r" % (st, b))
        st, _, b = send("PATCH", "/v1/tags/o", {"max": 2 ** 70})
        ft.check(st == 400, "a max past int64: %d %r" % (st, b))
        st, _, b = send("GET", "/v1/segment/o?count=7")
        ft.check(st == 200, "%d %r" % (st, b))
        every += [int(x) for x in json.loads(b)["ids"]]
        st, _, b = send("GET", "/api/segment/get/o")
        ft.check(st == 200, "%d %r" % (st, b))
        every.append(int(b))
        st, _, b = send("GET", "/v1/segment/o/range?count=5")
        ft.check(st == 200, "%d %r" % (st, b))
        r = json.loads(b)
        every += list(range(int(r["start"]), int(r["end"])))
        st, _, b = send("GET", "/metrics")
        left = [ln for ln in b.decode().splitlines()
                if ln.startswith('frond_segment_remaining{tag="o"}')]
        ft.check(len(left) == 1 and int(left[0].split()[1]) == 40 - max(every) and
                 b'frond_segment_max{tag="o"} 40' in b,
                 "the gauges: %r, issued up to %d" % (left, max(every)))
        c = Resp(s.resp_port)
        every.append(c.command("INCR", "o"))
        every += [int(x) for x in c.command("ID.NEXT", "o", "3")]
        # A range that would pass the max is refused whole.
        st, _, b = send("GET", "/v1/segment/o/range?count=30")
        ft.check(st == 409 and b"SEGMENT_EXHAUSTED" in b, "%d %r" % (st, b))
        # What is left, one at a time, then the refusal on every path.
        for _ in range(60):
            st, _, b = send("GET", "/v1/segment/o")
            if st != 200:
                break
            every += [int(x) for x in json.loads(b)["ids"]]
        ft.check(st == 409 and b"SEGMENT_EXHAUSTED" in b and b"max 40" in b,
                 "%d %r" % (st, b))
        st, h, b = send("GET", "/api/segment/get/o")
        ft.check(st == 500 and h.get("frond-error") == "SEGMENT_EXHAUSTED",
                 "Leaf's path: %d %r %r" % (st, h, b))
        st, _, b = send("GET", "/v1/segment/o/range?count=1")
        ft.check(st == 409 and b"SEGMENT_EXHAUSTED" in b, "%d %r" % (st, b))
        for cmd in (("INCR", "o"), ("INCRBY", "o", "2"), ("ID.NEXT", "o"),
                    ("ID.RANGE", "o", "1")):
            got = c.command(*cmd)
            ft.check(isinstance(got, RespError) and
                     str(got).startswith("SEGMENT_EXHAUSTED tag \"o\"") and
                     "max 40" in str(got), "%s: %r" % (cmd, got))
        ft.check(max(every) <= 40, "above the max: %s" % sorted(every))
        ft.check(len(set(every)) == len(every), "twice: %s" % sorted(every))
        # Lowering below the issued IDs: 409 TAG_FLOOR; raising: on again.
        st, _, b = send("PATCH", "/v1/tags/o", {"max": 20})
        ft.check(st == 409 and b"TAG_FLOOR" in b, "%d %r" % (st, b))
        st, _, b = send("PATCH", "/v1/tags/o", {"max": 1000})
        ft.check(st == 200 and json.loads(b)["max"] == 1000,
                 "%d %r" % (st, b))
        got = None
        for _ in range(100):  # the loader's backoff passes on its own
            st, _, b = send("GET", "/v1/segment/o")
            if st == 200:
                got = int(json.loads(b)["ids"][0])
                break
        ft.check(got is not None and max(every) < got <= 1000,
                 "after raising: %d %r" % (st, b))
        c.close()
    finally:
        s.stop()
        s.close()


def ids(store, tag, n):
    return [int(x) for x in ok("next", "--segment", tag, "--count", str(n),
                               "--store", store).split()]


def strides(store, step, ordered=True):
    """ordered: one database (a multi: store promises no order across its
    members' blocks)."""
    out = ok("tag", "create", "s", "--step", str(step), "--increment", "3",
             "--offset", "2", "--store", store)
    ft.check("first ID 2" in out and "2 modulo 3" in out, "create: %r" % out)
    got = json.loads(ok("tag", "get", "s", "--json", "--store", store))
    ft.check(got["increment"] == 3 and got["offset"] == 2 and
             got["max"] is None, "get: %r" % got)
    every = []
    for _ in range(3):  # three processes, each a batch across segments
        batch = ids(store, "s", 25)
        ft.check(not ordered or all(b - a == 3 for a, b in
                                    zip(batch, batch[1:])),
                 "not every third number: %s" % batch)
        every += batch
    ft.check(min(every) == 2 and all(x % 3 == 2 for x in every),
             "another residue: %s" % every)
    ft.check(len(set(every)) == len(every) and
             (not ordered or every == sorted(every)),
             "repeated or out of order: %s" % every)
    # A step below the increment cannot hold an ID: refused.
    refused(frond("tag", "set-step", "s", "2", "--store", store), "INVAL",
            "increment 3")
    # Deleted and created again plainly: above everything, every number.
    ok("tag", "delete", "s", "--store", store)
    ok("tag", "create", "s", "--step", str(step), "--store", store)
    after = ids(store, "s", 5)
    ft.check(min(after) > max(every) and (not ordered or after == list(
        range(after[0], after[0] + 5))), "re-created: %s" % after)
    # Bounded and strided: the last ID is the last of the residue <= max.
    ok("tag", "create", "sb", "--step", str(step), "--increment", "4",
       "--offset", "1", "--max", "30", "--store", store)
    got = []
    r = frond("next", "--segment", "sb", "--store", store)
    while r.returncode == 0 and len(got) < 20:
        got += [int(x) for x in r.stdout.split()]
        r = frond("next", "--segment", "sb", "--store", store)
    refused(r, "SEGMENT_EXHAUSTED", "max 30")
    ft.check(got and max(got) <= 29 and all(x % 4 == 1 for x in got) and
             len(set(got)) == len(got), "bounded stride: %s" % got)


def test_sqlite():
    d = ft.tempdir()
    bounds("sqlite:%s/b.db" % d, 10)
    strides("sqlite:%s/b.db" % d, 10)


def test_multi():
    d = ft.tempdir()
    store = "multi:sqlite:%s/m1.db|sqlite:%s/m2.db" % (d, d)
    bounds(store, 10)
    strides(store, 10, ordered=False)
    # A member replaced by an empty database and repaired gets the tag's
    # bound and stride back with its row: the members agree again.
    for sfx in ("", "-wal", "-shm"):
        if os.path.exists(os.path.join(d, "m2.db" + sfx)):
            os.remove(os.path.join(d, "m2.db" + sfx))
    ok("tag", "repair-member", "1", "--store", store)
    got = json.loads(ok("tag", "get", "sb", "--json", "--store", store))
    ft.check(got["increment"] == 4 and got["offset"] == 1 and
             got["max"] == 30, "after the repair: %r" % got)
    # The members must agree: one that records another stride is named.
    con = sqlite3.connect(os.path.join(d, "m2.db"))
    with con:
        con.execute("UPDATE frond_tag_seq SET residue = 0 WHERE biz_tag = "
                    "'sb'")
    con.close()
    refused(frond("tag", "get", "sb", "--store", store), "STORE_MEMBER",
            "member 0", "member 1", "offset 1", "offset 0")
    refused(frond("next", "--segment", "sb", "--store", store),
            "STORE_MEMBER")
    half_written(d, store)


def half_written(d, store):
    """A set-max that reached one member only (the other was away): the
    members disagree and every read refuses, naming both; the remedy the
    docs give, set-max again with every member up, works and the tag goes
    on below the new max."""
    ok("tag", "create", "h", "--step", "10", "--max", "1000", "--store",
       store)
    first = ids(store, "h", 3)
    con = sqlite3.connect(os.path.join(d, "m2.db"))
    with con:
        con.execute("UPDATE frond_tag_seq SET max_value = 500 WHERE biz_tag "
                    "= 'h'")
    con.close()
    refused(frond("tag", "get", "h", "--store", store), "STORE_MEMBER",
            "max 1000", "max 500")
    refused(frond("next", "--segment", "h", "--store", store),
            "STORE_MEMBER")
    ok("tag", "set-max", "h", "800", "--store", store)
    got = json.loads(ok("tag", "get", "h", "--json", "--store", store))
    ft.check(got["max"] == 800, "after set-max again: %r" % got)
    more = ids(store, "h", 30)
    ft.check(max(more) <= 800 and not set(more) & set(first) and
             len(set(more)) == len(more), "after the repair: %s" % more)
    # Lowered below what a member handed out: refused on that member,
    # nothing above the max issued afterwards.
    refused(frond("tag", "set-max", "h", "2", "--store", store),
            "TAG_FLOOR")
    got = json.loads(ok("tag", "get", "h", "--json", "--store", store))
    ft.check(got["max"] == 800, "a refused set-max changed it: %r" % got)


def test_pg():
    pg = ft.Postgres()
    try:
        bounds(pg.uri, 10)
        strides(pg.uri, 10)
    finally:
        pg.close()


def test_mariadb():
    db = ft.MariaDB()
    try:
        bounds(db.uri, 10)
        strides(db.uri, 10)
    finally:
        db.close()


def test_server_strides():
    """Singles and batches of a strided tag on every path; every range
    lease refused with INVAL: HTTP, RESP and the C frond:// store."""
    s = ft.Server(resp=True)
    try:
        st, _, b = s.request("POST", "/v1/tags", json.dumps(
            {"tag": "odd", "step": 10, "increment": 2, "offset": 1}).encode())
        r = json.loads(b)
        ft.check(st == 201 and r["increment"] == 2 and r["offset"] == 1,
                 "POST: %d %r" % (st, b))
        got = []
        st, _, b = s.request("GET", "/v1/segment/odd?count=15")
        ft.check(st == 200, "%d %r" % (st, b))
        got += [int(x) for x in json.loads(b)["ids"]]
        st, _, b = s.request("GET", "/api/segment/get/odd")
        got.append(int(b))
        c = Resp(s.resp_port)
        got.append(c.command("INCR", "odd"))
        got.append(c.command("INCRBY", "odd", "1"))  # redis-py's incr()
        got += [int(x) for x in c.command("ID.NEXT", "odd", "7")]
        ft.check(all(x % 2 == 1 for x in got) and len(set(got)) == len(got)
                 and got == sorted(got), "IDs: %s" % got)
        st, _, b = s.request("GET", "/v1/segment/odd/range?count=4")
        ft.check(st == 400 and b"INVAL" in b and b"step by 2" in b,
                 "range: %d %r" % (st, b))
        for cmd in (("INCRBY", "odd", "3"), ("ID.RANGE", "odd", "3")):
            e = c.command(*cmd)
            ft.check(isinstance(e, RespError) and str(e).startswith("INVAL"),
                     "%s: %r" % (cmd, e))
        c.close()
        # The C client leases ranges: refused, never a number of another
        # residue.
        r = frond("next", "--segment", "odd", "--count", "3", "--store",
                  "frond://127.0.0.1:%d" % s.port)
        refused(r, "INVAL", "step by 2")
    finally:
        s.stop()
        s.close()


def test_seq_format_inherits():
    """A seq: format's period rows count as their base tag does: a base
    strided 2/1 with max 30 gives each period's numbers odd and at most
    29, then SEGMENT_EXHAUSTED (HTTP 409), never an even one or one above
    the max."""
    d = ft.tempdir()
    store = "sqlite:///%s/f.db" % d
    ok("tag", "create", "ob", "--step", "10", "--increment", "2",
       "--offset", "1", "--max", "30", "--store", store)
    s = ft.Server(store=store, extra=["--format.ob", "seq:tag=ob,digits=4"])
    try:
        got, st, b = [], 200, b""
        while len(got) < 40:
            st, _, b = s.request("GET", "/v1/format/ob?count=1")
            if st != 200:
                break
            got += [int(x[-4:]) for x in json.loads(b)["ids"]]
        ft.check(st == 409 and b"SEGMENT_EXHAUSTED" in b and b"max 30" in b,
                 "after %s: %d %r" % (got, st, b))
        ft.check(got == list(range(1, 30, 2)), "period numbers: %s" % got)
        row = [t for t in json.loads(ok("tag", "list", "--json", "--store",
                                        store)) if t["tag"] != "ob"]
        ft.check(len(row) == 1 and row[0]["max"] == 30 and
                 row[0]["increment"] == 2 and row[0]["offset"] == 1,
                 "the period row: %r" % row)
    finally:
        s.stop()
        s.close()


if __name__ == "__main__":
    ft.main([test_sqlite, test_server_paths, test_server_strides, test_multi,
             test_seq_format_inherits,
             test_pg, test_mariadb])
