#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
A tag's floor on SQLite, PostgreSQL and MariaDB: a tag deleted and created
again (with `frond tag`, and with the admin API of a running server)
starts above every ID the old one issued; a start below the floor, an
advance backwards and a row loaded by hand below it are refused with
TAG_FLOOR; `frond tag advance` and POST /v1/tags/{tag}/advance move a tag
forward after a restore. On MariaDB, a Leaf node allocating from the same
row the whole time, while Frond deletes and re-creates it, never meets an
ID Frond serves.
"""
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import leafnode  # noqa: E402


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


def ids_of(store, tag, n):
    return [int(x) for x in ok("next", "--segment", tag, "--count", str(n),
                               "--store", store).split()]


def again(*args):
    """ok(), once more when InnoDB ended the transaction as a deadlock
    victim of Leaf's (see test_mariadb_beside_leaf)."""
    for _ in range(3):
        r = frond(*args)
        if r.returncode == 0 or "Deadlock" not in r.stderr:
            break
    ft.check(r.returncode == 0, "frond %s: %s" % (" ".join(args[:3]),
                                                   r.stderr))
    return r.stdout


def max_id(store, tag):
    return json.loads(ok("tag", "get", tag, "--json", "--store",
                         store))["max_id"]


def request(s, method, path, body=None):
    hdrs = {"Content-Type": "application/json"} if body is not None else {}
    st, _, b = s.request(method, path, json.dumps(body).encode()
                         if body is not None else None, hdrs)
    return st, b


LEAF_STEP = 1000000  # Leaf's largest step


def floors(store):
    """The command and a server, one after the other, on one store."""
    every = []
    ok("tag", "create", "f", "--step", "100", "--store", store)
    every += ids_of(store, "f", 350)
    top = max_id(store, "f")
    out = ok("tag", "delete", "f", "--store", store)
    ft.check(str(top) in out, "delete does not say the floor: %r" % out)
    refused(frond("tag", "create", "f", "--start", "1", "--store", store),
            "TAG_FLOOR", str(top))
    refused(frond("tag", "create", "f", "--start", str(top - 1), "--store",
                  store), "TAG_FLOOR", str(top))
    # One Leaf step (the tag's, at least Leaf's largest, 1,000,000) above
    # the floor: a Leaf node reading the new row's last step without
    # allocating takes IDs nobody issued, however far its step grew.
    refused(frond("tag", "create", "f", "--start", str(top + 99), "--store",
                  store), "TAG_FLOOR", str(top))
    refused(frond("tag", "create", "f", "--start", str(top + LEAF_STEP - 1),
                  "--store", store), "TAG_FLOOR", str(top))
    out = ok("tag", "create", "f", "--step", "100", "--store", store)
    ft.check("first ID %d" % (top + LEAF_STEP) in out, "create: %r" % out)
    every += ids_of(store, "f", 350)
    ft.check(min(every[350:]) >= top + LEAF_STEP,
             "the new tag starts less than a Leaf step above its floor")
    # Forward only.
    refused(frond("tag", "advance", "f", "--to", str(top), "--store", store),
            "TAG_FLOOR")
    ok("tag", "advance", "f", "--to", "2000000", "--store", store)
    got = ids_of(store, "f", 10)
    ft.check(got[0] == 2000000, "after an advance to 2000000: %d" % got[0])
    every += got
    # The admin API of a running server.
    s = ft.Server(store=store)
    try:
        st, b = request(s, "GET", "/v1/segment/f?count=100")
        ft.check(st == 200, "%d %r" % (st, b))
        every += [int(x) for x in json.loads(b)["ids"]]
        st, b = request(s, "DELETE", "/v1/tags/f")
        ft.check(st == 204, "DELETE: %d %r" % (st, b))
        st, b = request(s, "POST", "/v1/tags", {"tag": "f", "step": 100,
                                                "start": 7})
        ft.check(st == 409 and b"TAG_FLOOR" in b, "below: %d %r" % (st, b))
        st, b = request(s, "POST", "/v1/tags", {"tag": "f", "step": 100})
        ft.check(st == 201, "POST: %d %r" % (st, b))
        floor = json.loads(b)["max_id"]
        ft.check(floor > max(every), "re-created at %d, below %d"
                 % (floor, max(every)))
        st, b = request(s, "POST", "/v1/tags/f/advance", {"to": floor - 1})
        ft.check(st == 409 and b"TAG_FLOOR" in b, "back: %d %r" % (st, b))
        st, b = request(s, "POST", "/v1/tags/f/advance", {"to": 10 ** 8})
        ft.check(st == 200 and json.loads(b)["max_id"] == 10 ** 8,
                 "advance: %d %r" % (st, b))
        st, b = request(s, "GET", "/v1/segment/f?count=100")
        ft.check(st == 200, "%d %r" % (st, b))
        ids = [int(x) for x in json.loads(b)["ids"]]
        ft.check(ids[0] == 10 ** 8, "after the advance: %d" % ids[0])
        every += ids
    finally:
        s.stop()
        s.close()
    ft.check(len(set(every)) == len(every), "%d IDs twice"
             % (len(every) - len(set(every))))


def test_sqlite():
    d = ft.tempdir()
    floors("sqlite:%s/f.db" % d)


def test_pg():
    pg = ft.Postgres()
    try:
        floors(pg.uri)
        # A row loaded by hand below the floor is refused, and left.
        pg.sql("DELETE FROM leaf_alloc WHERE biz_tag = 'f'; INSERT INTO "
               "leaf_alloc (biz_tag, max_id, step) VALUES ('f', 1, 100)")
        refused(frond("next", "--segment", "f", "--store", pg.uri),
                "TAG_FLOOR", "frond tag advance f")
        ft.check(pg.sql("SELECT max_id FROM leaf_alloc WHERE biz_tag = "
                        "'f'").strip() == "1", "the row moved")
    finally:
        pg.close()


def test_mariadb_beside_leaf():
    """Leaf's DAO allocates from the row the whole time, while Frond
    deletes and re-creates the tag five times and a server serves it."""
    my = ft.MariaDB()
    s = None
    try:
        floors(my.uri)
        ok("tag", "create", "shared", "--step", "50", "--store", my.uri)
        leaf = leafnode.LeafNode(my.connect())
        segs, stop, errs, aborted = [], threading.Event(), [], []
        pymysql = ft.debian_module("pymysql", "python3-pymysql")

        def loop():
            try:
                while not stop.is_set() and len(segs) < 2000:
                    try:
                        segs.append(leaf.alloc("shared"))
                    except LookupError:
                        pass  # between a delete and its create
                    except pymysql.err.OperationalError as e:
                        # InnoDB may end Leaf's transaction as a deadlock
                        # victim of a delete or create of the row: Leaf's
                        # load fails, nothing is served from it, and Leaf
                        # loads again, as here.
                        if e.args[0] != 1213:
                            raise
                        aborted.append(e)
            except Exception as e:  # reported below
                errs.append(repr(e))

        t = threading.Thread(target=loop)
        t.start()
        s = ft.Server(store=my.uri, extra=["--segment-wait-ms", "5000"])
        frond_ids = []
        for _ in range(5):
            st, b = request(s, "GET", "/v1/segment/shared?count=200")
            ft.check(st == 200, "%d %r" % (st, b))
            frond_ids += [int(x) for x in json.loads(b)["ids"]]
            again("tag", "delete", "shared", "--store", my.uri)
            again("tag", "create", "shared", "--step", "50", "--store",
                  my.uri)
            frond_ids += ids_of(my.uri, "shared", 120)
        stop.set()
        t.join(120)
        ft.check(not errs, "Leaf's DAO failed: %s" % errs)
        ft.check(len(segs) > 5, "Leaf allocated only %d times" % len(segs))
        every = list(frond_ids)
        for lo, hi in segs:
            every += range(lo, hi)
        ft.check(len(set(every)) == len(every), "%d IDs twice between Leaf "
                 "and Frond" % (len(every) - len(set(every))))
        ft.check(my.sql("SHOW CREATE TABLE leaf_alloc").count("frond") == 0,
                 "leaf_alloc changed")
    finally:
        if s is not None:
            s.stop()
            s.close()
        my.close()


if __name__ == "__main__":
    ft.main([test_sqlite, test_pg, test_mariadb_beside_leaf])
