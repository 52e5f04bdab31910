#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
A tag's bound (`frond tag create --max N`) on SQLite, PostgreSQL, MariaDB
and a multi: store: no ID above N is ever issued, the last range is cut at
N, past it `frond next --segment` answers SEGMENT_EXHAUSTED naming the tag
and its max; lowering the max below what the tag may have issued is
refused (TAG_FLOOR) and changes nothing; raising it lets the tag go on,
above every ID issued before; a deleted and re-created tag has the bound
it is created with.
"""
import json
import os
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


def test_sqlite():
    d = ft.tempdir()
    bounds("sqlite:%s/b.db" % d, 10)


def test_multi():
    d = ft.tempdir()
    bounds("multi:sqlite:%s/m1.db|sqlite:%s/m2.db" % (d, d), 10)


def test_pg():
    pg = ft.Postgres()
    try:
        bounds(pg.uri, 10)
    finally:
        pg.close()


def test_mariadb():
    db = ft.MariaDB()
    try:
        bounds(db.uri, 10)
    finally:
        db.close()


if __name__ == "__main__":
    ft.main([test_sqlite, test_server_paths, test_multi, test_pg,
             test_mariadb])
