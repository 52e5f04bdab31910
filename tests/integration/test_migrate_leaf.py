#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_migrate_leaf.py -- docs/migrating-from-leaf.md, step by step, on a
real MariaDB (scripts/mariadb.sh): a Leaf deployment switched to Frond in
place, Leaf and Frond nodes sharing one table during the switch.

1. Leaf's database as Leaf leaves it: the database `leaf`, Leaf's own
   script (scripts/leaf_alloc.sql) verbatim, the row of Leaf's README and
   a busier tag, and a Leaf node that has been allocating (leafnode.py:
   Leaf's statements through PyMySQL, its dynamic step included).
2. Two `frond serve` nodes started on the same table while two Leaf
   nodes keep allocating; clients fetch over Leaf's HTTP path.
3. Every answer is Leaf's (a bare decimal, text/plain; Leaf's error text
   for an unknown tag); no ID twice; each Frond node's IDs increase; none
   below what Leaf had issued before the switch; none inside a Leaf
   segment; Leaf's segments never overlap.
4. Frond leaves Leaf's table as it found it (same DDL), lists Leaf's
   rows, and a Leaf node started after Frond (a switch back) allocates
   above everything Frond served.
"""
import http.client
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import leafnode  # noqa: E402

TAG, BUSY = "leaf-segment-test", "orders"
REQUESTS = 3000  # per Frond node and tag


def fetch(server, tag, n, out, errors):
    """n requests on one keep-alive connection over Leaf's path."""
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        for _ in range(n):
            c.request("GET", "/api/segment/get/" + tag)
            r = c.getresponse()
            body = r.read()
            ctype = r.getheader("Content-Type", "")
            if (r.status != 200 or not body.isdigit() or
                    not ctype.startswith("text/plain")):
                errors.append((r.status, ctype, body))
                return
            out.append(int(body))
    except Exception as e:  # reported by the caller
        errors.append(repr(e))
    finally:
        c.close()


def leaf_loop(my, tag, count):
    """A Leaf node in its own process; its segments, one per line."""
    return subprocess.Popen(
        [sys.executable, os.path.join(os.path.dirname(__file__),
                                      "leafnode.py"),
         "127.0.0.1", str(my.port), "leaf", tag, str(count), "100"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def segments_of(p):
    out, err = p.communicate(timeout=120)
    ft.check(p.returncode == 0, "Leaf node failed: %s" % err)
    return [tuple(int(x) for x in line.split()) for line in out.split("\n")
            if line.strip()]


def inside_any(ids, segs):
    """The first ID of sorted ids inside a segment of segs, or None."""
    import bisect
    for lo, hi in segs:
        j = bisect.bisect_left(ids, lo)
        if j < len(ids) and ids[j] < hi:
            return ids[j], (lo, hi)
    return None


def test_switch_in_place():
    my = ft.MariaDB()
    servers = []
    try:
        my.sql("CREATE DATABASE leaf")
        conn = my.connect(database="leaf")
        cur = conn.cursor()
        for stmt in leafnode.DDL.split(";"):
            if stmt.strip():
                cur.execute(stmt)
        cur.execute(leafnode.README_ROW)
        cur.execute("insert into leaf_alloc(biz_tag, max_id, step, "
                    "description) values('%s', 1, 100, 'orders')" % BUSY)
        conn.commit()
        ddl_before = my.sql("USE leaf; SHOW CREATE TABLE leaf_alloc")
        # Leaf has been running: segments handed out before the switch.
        leaf = leafnode.LeafNode(conn)
        first = {TAG: [leaf.next_segment(TAG) for _ in range(3)],
                 BUSY: [leaf.next_segment(BUSY) for _ in range(5)]}
        before = first[TAG] + first[BUSY]

        store = "mysql://root@127.0.0.1:%d/leaf" % my.port
        r = ft.run(["tag", "list", "--store", store])
        ft.check(r.returncode == 0 and TAG in r.stdout and BUSY in r.stdout,
                 "frond tag list on Leaf's table: %s %s"
                 % (r.stdout, r.stderr))
        # Frond nodes start beside Leaf's, and Leaf keeps allocating while
        # they serve (started once they are up: a slow start must not let
        # Leaf's loop end before Frond serves anything).
        # A loaded machine can take longer than the default 50 ms for an
        # allocation: the test is about the mix, not the wait.
        servers = [ft.Server(store=store, extra=["--layout", "twitter",
                                                 "--segment-wait-ms", "10000"])
                   for _ in range(2)]
        leaf_procs = [leaf_loop(my, BUSY, 25), leaf_loop(my, TAG, 10)]
        ids = {(s, t): [] for s in range(2) for t in (TAG, BUSY)}
        errors = []
        mid = []
        for half in range(2):
            threads = [threading.Thread(target=fetch, args=(
                servers[s], t, REQUESTS // 2, ids[(s, t)], errors))
                for (s, t) in ids]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            if half == 0:
                # One Leaf allocation certainly between Frond's two halves
                # (the loops above may, on a loaded machine, run wholly
                # before or after the fetches).
                mid = [leaf.next_segment(BUSY) for _ in range(3)]
        # A third node started after those allocations: its IDs lie above
        # them whatever the two nodes' buffers still held (their steps grow
        # with the pace, and on a loaded machine their second halves may
        # have come wholly from segments taken before Leaf's).
        late = ft.Server(store=store, extra=["--layout", "twitter",
                                             "--segment-wait-ms", "10000"])
        servers.append(late)
        late_ids = {t: [] for t in (TAG, BUSY)}
        for t in late_ids:
            fetch(late, t, 10, late_ids[t], errors)
        during = {BUSY: segments_of(leaf_procs[0]) + mid,
                  TAG: segments_of(leaf_procs[1])}
        ft.check(not errors, "answers that are not Leaf's: %s" % errors[:3])

        st, h, body = servers[0].request("GET", "/api/segment/get/nope")
        ft.check(st == 500 and body == b"Result{id=-2, status=EXCEPTION}",
                 "unknown tag: %d %r" % (st, body))
        top = {}
        for tag in (TAG, BUSY):
            leaf_segs = sorted(first[tag] + during[tag])
            for a, b in zip(leaf_segs, leaf_segs[1:]):
                ft.check(a[1] <= b[0], "%s: Leaf segments overlap: %r %r"
                         % (tag, a, b))
            every = []
            for srv in range(2):
                got = ids[(srv, tag)]
                ft.check(len(got) == REQUESTS, "node %d %s: %d IDs"
                         % (srv, tag, len(got)))
                ft.check(all(x < y for x, y in zip(got, got[1:])),
                         "node %d %s: not increasing" % (srv, tag))
                low = max(hi for _, hi in first[tag])
                ft.check(min(got) >= low, "node %d %s: ID %d below what Leaf "
                         "issued before the switch (%d)"
                         % (srv, tag, min(got), low))
                every += got
            ft.check(len(late_ids[tag]) == 10 and
                     min(late_ids[tag]) >= low, "the node started last: %r"
                     % late_ids[tag])
            every += late_ids[tag]
            every.sort()
            dup = len(every) - len(set(every))
            ft.check(dup == 0, "%s: %d IDs served twice" % (tag, dup))
            hit = inside_any(every, leaf_segs)
            ft.check(hit is None, "%s: Frond served %s inside Leaf's segment"
                     " %s" % ((tag,) + hit) if hit else "")
            top[tag] = every[-1]
            # The switch was a real mix: Leaf allocated while Frond served
            # (the busy tag's small step makes both load often).
            ft.check(tag != BUSY or
                     any(every[0] < lo < every[-1] for lo, _ in during[tag]),
                     "%s: no Leaf segment between Frond's first and last "
                     "IDs" % tag)
            print("%s: Frond %d IDs, Leaf %d segments, 0 duplicates, 0 "
                  "overlaps" % (tag, len(every), len(leaf_segs)), flush=True)

        for s in servers:
            ft.check(s.stop() == 0, "server: %s" % s.output()[-2000:])
        ft.check(my.sql("USE leaf; SHOW CREATE TABLE leaf_alloc") ==
                 ddl_before, "Frond changed Leaf's table")
        # Back to Leaf: its next segments lie above everything served.
        for tag in (TAG, BUSY):
            lo, _ = leaf.next_segment(tag)
            ft.check(lo > top[tag], "%s: Leaf after Frond starts at %d, not "
                     "above %d" % (tag, lo, top[tag]))
        conn.close()
    finally:
        for s in servers:
            s.close()
        my.close()


if __name__ == "__main__":
    ft.main([test_switch_in_place])
