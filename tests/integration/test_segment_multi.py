#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
A multi: store (several independent databases handing out disjoint IDs):
two SQLite files under 2 processes; then PostgreSQL, MariaDB and a SQLite
file (PostgreSQL and MariaDB started by scripts/ in temp dirs) under 2
processes x 2 threads with MariaDB stopped mid-run and started again: IDs
keep coming from the two others while it is down (each records the
other's blocks: a store of two stops while one is down), all serve again
after, no ID twice. A node listing the same databases in another order is
refused (STORE_MEMBER) on both setups.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import test_segment_sqlite as seg  # noqa: E402

STEP = 500


class Uri:
    def __init__(self, uri):
        self.uri = uri


def members_of(ids, n, step=STEP):
    """How many IDs each member served (block (id-1)//step, modulo n)."""
    count = [0] * n
    for i in ids:
        count[(i - 1) // step % n] += 1
    return count


def no_duplicates(loads, tag_index=0):
    every = []
    for ld in loads:
        for ids in ld.ids(tag_index):
            every.extend(ids)
    every.sort()
    dups = [every[i] for i in range(1, len(every))
            if every[i] == every[i - 1]]
    ft.check(not dups, "%d IDs issued twice in %d (the first: %d)"
             % (len(dups), len(every), dups[0] if dups else 0))
    ft.check(every and every[0] >= 1, "no IDs, or one below 1")
    return every


def row_moves(my, since, timeout=60):
    """Wait until MariaDB's row of tag m is past since (the member serves
    again once its backoff, at most 8 s, has passed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = int(my.sql("SELECT max_id FROM leaf_alloc "
                         "WHERE biz_tag = 'm'").split()[0])
        if now > since:
            return now
        time.sleep(0.5)
    raise ft.Failure("MariaDB did not serve again within %ds" % timeout)


def create(uri, tag):
    r = ft.run(["tag", "create", tag, "--step", str(STEP), "--store", uri])
    ft.check(r.returncode == 0, "tag create: " + r.stderr)


def refused_swapped(first, second):
    r = ft.run(["tag", "list", "--store", "multi:%s|%s" % (second, first)])
    ft.check(r.returncode != 0 and "STORE_MEMBER" in r.stderr
             and "same order" in r.stderr,
             "swapped order not refused: %d %s" % (r.returncode, r.stderr))


def test_two_sqlite_files():
    """2 processes x 2 threads, 40,000 IDs each: none twice, both members
    serve; swapped order and a member as a plain store are refused."""
    d = ft.tempdir("frond-multi-")
    loads = []
    try:
        a, b = ("sqlite://" + os.path.join(d, n) for n in ("a.db", "b.db"))
        uri = "multi:%s|%s" % (a, b)
        create(uri, "m")
        loads = [seg.Load(Uri(uri), os.path.join(d, "p%d" % i), ["m"],
                          "-t", "2", "-n", "20000", "-w", "3000")
                 for i in range(2)]
        for ld in loads:
            ld.finish()
        every = no_duplicates(loads)
        ft.check(len(every) == 80000, "%d IDs" % len(every))
        share = members_of(every, 2)
        ft.check(min(share) > 0, "one member served nothing: %r" % share)
        refused_swapped(a, b)
        r = ft.run(["tag", "list", "--store", a])
        ft.check(r.returncode != 0 and "STORE_MEMBER" in r.stderr,
                 "a member opened as a plain store: " + r.stderr)
    finally:
        for ld in loads:
            ld.kill()
        shutil.rmtree(d, ignore_errors=True)


def test_pg_and_mariadb_one_down():
    """PostgreSQL + MariaDB + SQLite; MariaDB stopped under load and started
    again: IDs keep coming while it is down (PostgreSQL and SQLite record
    each other's blocks), it serves again after, no ID twice."""
    pg, my = ft.Postgres(), None
    d = ft.tempdir("frond-multi-")
    loads = []
    try:
        my = ft.MariaDB()
        third = "sqlite://" + os.path.join(d, "c.db")
        uri = "multi:%s|%s|%s" % (pg.uri, my.uri, third)
        create(uri, "m")
        refused_swapped(pg.uri, my.uri)
        # About 10,000 IDs/s per process, 500-ID blocks.
        loads = [seg.Load(Uri(uri), os.path.join(d, "p%d" % i), ["m"],
                          "-t", "2", "-n", "0", "-k", "-p", "50",
                          "-r", "300")
                 for i in range(2)]
        for ld in loads:
            ld.wait_for(lambda l: l.startswith("count ")
                        and int(l.split()[1]) >= 5000, 60, "5000 IDs")
        my.stop()
        down_at = [ld.count for ld in loads]
        for ld, c in zip(loads, down_at):
            ld.wait_for(lambda l, c=c: l.startswith("count ")
                        and int(l.split()[1]) >= c + 20000, 60,
                        "20,000 IDs with MariaDB down")
        time.sleep(1)
        my.start()
        back_row = int(my.sql("SELECT max_id FROM leaf_alloc "
                              "WHERE biz_tag = 'm'").split()[0])
        row_moves(my, back_row)
        up_at = [ld.count for ld in loads]
        for ld, c in zip(loads, up_at):
            ld.wait_for(lambda l, c=c: l.startswith("count ")
                        and int(l.split()[1]) >= c + 20000, 90,
                        "20,000 IDs after MariaDB came back")
        for ld in loads:
            ld.p.send_signal(signal.SIGTERM)
            ld.finish(timeout=30)
        every = no_duplicates(loads)
        err = "".join(ld.err for ld in loads)
        ft.check("multi: member 1 (" in err and ") failed" in err,
                 "MariaDB's failure not logged: " + err[-800:])
        ft.check(") works again" in err,
                 "MariaDB not back in the log: " + err[-800:])
        share = members_of(every, 3)
        ft.check(min(share) > 0, "one member served nothing: %r" % share)
        print("multi: %d IDs, PostgreSQL %d, MariaDB %d, SQLite %d, 0 "
              "duplicates" % (len(every), share[0], share[1], share[2]))
    finally:
        for ld in loads:
            ld.kill()
        pg.close()
        if my is not None:
            my.close()
        shutil.rmtree(d, ignore_errors=True)


def test_admin_api_and_refused_start():
    """A server on a multi: store: tags created, read, listed and deleted
    over the admin API, the step's change refused, IDs on both paths, the
    members' health in /metrics; a server listing the members in the
    other order does not start."""
    d = ft.tempdir("frond-multi-")
    srv = None
    try:
        a, b = ("sqlite://" + os.path.join(d, n) for n in ("a.db", "b.db"))
        # No database of a multi: store can hand out node IDs for all:
        # without a coordinator named the server does not start.
        r = subprocess.run([ft.FROND_BIN, "serve", "--listen",
                            "127.0.0.1:%d" % ft.free_port(), "--store",
                            "multi:%s|%s" % (a, b), "--resp-listen", "off",
                            "--data-dir", d], capture_output=True,
                           text=True, timeout=60)
        ft.check(r.returncode == 1 and "INVAL: coordinator auto" in r.stderr,
                 "multi: store without a coordinator: %d %s"
                 % (r.returncode, r.stderr[-800:]))
        nodes = ["--coordinator", "lease+sqlite://%s/nodes.db" % d]
        srv = ft.Server(store="multi:%s|%s" % (a, b), extra=nodes)
        st, _, body = srv.request("POST", "/v1/tags",
                                  json.dumps({"tag": "x", "step": 100}))
        ft.check(st == 201, "create: %d %r" % (st, body))
        got = []
        for _ in range(3):
            st, _, body = srv.request("GET", "/v1/segment/x?count=150")
            ft.check(st == 200, "next: %d %r" % (st, body))
            got += [int(i) for i in json.loads(body)["ids"]]
        st, _, body = srv.request("GET", "/api/segment/get/x")
        ft.check(st == 200 and body.isdigit(), "Leaf path: %d %r"
                 % (st, body))
        got.append(int(body))
        ft.check(len(set(got)) == len(got), "an ID twice: %r" % got)
        # 451 IDs of 100-ID blocks: both members served.
        ft.check(min(members_of(got, 2, 100)) > 0, "one member only: %r"
                 % got[:20])
        st, _, body = srv.request("PATCH", "/v1/tags/x",
                                  json.dumps({"step": 50}))
        ft.check(st == 400 and b"INVAL" in body, "set-step: %d %r"
                 % (st, body))
        st, _, body = srv.request("GET", "/v1/tags")
        ft.check(st == 200 and json.loads(body)["tags"][0]["tag"] == "x",
                 "list: %d %r" % (st, body))
        st, _, body = srv.request("GET", "/metrics")
        ft.check(b'frond_store_member_up{member="0"} 1' in body and
                 b'frond_store_member_up{member="1"} 1' in body,
                 "no member health in /metrics")
        st, _, body = srv.request("DELETE", "/v1/tags/x")
        ft.check(st in (200, 204), "delete: %d %r" % (st, body))
        st, _, body = srv.request("GET", "/v1/tags/x")
        ft.check(st == 404, "deleted tag: %d %r" % (st, body))
        ft.check(srv.stop() == 0, "server: " + srv.output()[-2000:])
        srv = None
        r = subprocess.run([ft.FROND_BIN, "serve", "--listen",
                            "127.0.0.1:%d" % ft.free_port(), "--store",
                            "multi:%s|%s" % (b, a), "--resp-listen", "off",
                            "--data-dir", d] + nodes, capture_output=True,
                           text=True, timeout=60)
        ft.check(r.returncode != 0 and "STORE_MEMBER" in r.stderr,
                 "a server with the members swapped started: %d %s"
                 % (r.returncode, r.stderr[-800:]))
    finally:
        if srv is not None:
            srv.close()
        shutil.rmtree(d, ignore_errors=True)


class Proxy:
    """The chaos suite's TCP proxy (tests/chaos/netproxy.py), one route."""

    def __init__(self, target):
        self.p = subprocess.Popen(
            [sys.executable, os.path.join(ft.FROND_SRC, "tests", "chaos",
                                          "netproxy.py"),
             "--route", "db=" + target], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        self.ports = json.loads(self.p.stdout.readline())

    def set(self, mode):
        s = socket.create_connection(("127.0.0.1", self.ports["control"]),
                                     timeout=10)
        s.sendall(("db %s\n" % mode).encode())
        answer = s.makefile().readline().strip()
        s.close()
        ft.check(answer == "ok", "netproxy %s: %s" % (mode, answer))

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()


def test_silent_member():
    """MariaDB behind a proxy that stops forwarding (a partition: the
    server neither answers nor closes): the two SQLite members serve on,
    each attempt on the silent one bounded; after the partition heals, all
    serve; no ID twice."""
    my, proxy, ld = None, None, None
    d = ft.tempdir("frond-multi-")
    try:
        my = ft.MariaDB()
        proxy = Proxy("127.0.0.1:%d" % my.port)
        via = my.uri.replace(":%d/" % my.port,
                             ":%d/" % proxy.ports["db"])
        uri = "multi:sqlite://%s|%s|sqlite://%s" % (
            os.path.join(d, "a.db"), via, os.path.join(d, "c.db"))
        create(uri, "m")
        ld = seg.Load(Uri(uri), os.path.join(d, "p"), ["m"], "-t", "2",
                      "-n", "0", "-k", "-p", "50", "-r", "300")
        ld.wait_for(lambda l: l.startswith("count ")
                    and int(l.split()[1]) >= 5000, 60, "5000 IDs")
        proxy.set("blackhole")
        c = ld.count
        ld.wait_for(lambda l: l.startswith("count ")
                    and int(l.split()[1]) >= c + 20000, 90,
                    "20,000 IDs with MariaDB silent")
        proxy.set("pass")
        back = int(my.sql("SELECT max_id FROM leaf_alloc "
                          "WHERE biz_tag = 'm'").split()[0])
        row_moves(my, back)
        c = ld.count
        ld.wait_for(lambda l: l.startswith("count ")
                    and int(l.split()[1]) >= c + 20000, 90,
                    "20,000 IDs after the partition healed")
        ld.p.send_signal(signal.SIGTERM)
        ld.finish(timeout=30)
        every = no_duplicates([ld])
        ft.check("member 1 (mysql) failed" in ld.err,
                 "the silent member's failure not logged: " + ld.err[-800:])
        ft.check(") works again" in ld.err,
                 "the member not back in the log: " + ld.err[-800:])
        print("silent member: %d IDs, SQLite %d, MariaDB %d, SQLite %d, 0 "
              "duplicates" % ((len(every),) + tuple(members_of(every, 3))))
    finally:
        if ld is not None:
            ld.kill()
        if proxy is not None:
            proxy.close()
        if my is not None:
            my.close()
        shutil.rmtree(d, ignore_errors=True)


def next_ids(uri, tag, n):
    r = ft.run(["next", "--segment", tag, "--count", str(n), "--store", uri])
    ft.check(r.returncode == 0, "next: " + r.stderr)
    return [int(x) for x in r.stdout.split()], r.stderr


def test_member_restored_and_repaired():
    """PostgreSQL + MariaDB; MariaDB's rows put back as they were earlier
    (a restore from an older backup): refused with STORE_MEMBER_STALE at
    its first allocation, PostgreSQL serves meanwhile; `frond tag
    repair-member 1` takes it back; then a tag re-created with another
    step, and a range larger than a block refused. No ID twice."""
    pg, my = ft.Postgres(), None
    try:
        my = ft.MariaDB()
        uri = "multi:%s|%s" % (pg.uri, my.uri)
        create(uri, "m")
        every, _ = next_ids(uri, "m", 3000)
        my.sql("CREATE TABLE saved AS SELECT * FROM leaf_alloc")
        more, _ = next_ids(uri, "m", 3000)
        every += more
        my.sql("DELETE FROM leaf_alloc; INSERT INTO leaf_alloc "
               "SELECT * FROM saved")
        more, err = next_ids(uri, "m", 3000)
        every += more
        ft.check("STORE_MEMBER_STALE" in err and "member 1" in err,
                 "the restored member was not refused: " + err[-600:])
        ft.check(members_of(more, 2)[1] == 0, "MariaDB served while "
                 "refused: %r" % members_of(more, 2))
        r = ft.run(["tag", "repair-member", "1", "--store", uri])
        ft.check(r.returncode == 0 and "tag m: moved from" in r.stdout,
                 "repair: %s %s" % (r.stdout, r.stderr))
        more, err = next_ids(uri, "m", 3000)
        every += more
        ft.check(min(members_of(more, 2)) > 0, "after the repair: %r"
                 % members_of(more, 2))
        ft.check("STALE" not in err, "still refused: " + err[-600:])
        # Deleted and created again with another step: served at once.
        for args in (["tag", "delete", "m"], ["tag", "create", "m", "--step",
                                              "300"]):
            r = ft.run(args + ["--store", uri])
            ft.check(r.returncode == 0, "%s: %s" % (args, r.stderr))
        more, _ = next_ids(uri, "m", 3000)
        ft.check(min(more) > max(every), "the re-created tag starts below")
        every += more
        r = ft.run(["next", "--segment", "m", "--count", "1", "--store", uri])
        ft.check(r.returncode == 0, r.stderr)
        ft.check(len(set(every)) == len(every), "%d IDs twice"
                 % (len(every) - len(set(every))))
        print("multi: %d IDs over a restore and a repair, 0 duplicates"
              % len(every))
    finally:
        pg.close()
        if my is not None:
            my.close()


def test_range_over_block():
    """A server on a multi: store refuses a range larger than a block at
    once (COUNT_INVALID), and the tag keeps serving."""
    d = ft.tempdir("frond-multi-")
    uri = "multi:sqlite:%s/a.db|sqlite:%s/b.db" % (d, d)
    create(uri, "r")
    # A multi: store hands out no node IDs: the lease is named beside it.
    s = ft.Server(store=uri,
                  extra=["--coordinator", "lease+sqlite:///%s/n.db" % d])
    try:
        st, _, b = s.request("GET", "/v1/segment/r/range?count=%d"
                             % (STEP + 1))
        ft.check(st == 400 and b"COUNT_INVALID" in b and str(STEP).encode()
                 in b, "range over a block: %d %r" % (st, b))
        for _ in range(3 * STEP // 100):
            st, _, b = s.request("GET", "/v1/segment/r?count=100")
            ft.check(st == 200, "after the range: %d %r" % (st, b))
        st, _, b = s.request("GET", "/v1/segment/r/range?count=%d" % STEP)
        ft.check(st == 200, "a range of one block: %d %r" % (st, b))
    finally:
        s.stop()
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def converted(single, copy_made, multi):
    """A single database issues IDs, an older copy of it is made, it issues
    more; the two become a multi: store: nothing the single database
    issued comes again (the copy's rows are moved above it as it joins,
    on the engine's own SQL)."""
    create(single, "c")
    every, _ = next_ids(single, "c", 2000)
    copy_made()
    more, _ = next_ids(single, "c", 8000)
    every += more
    r = ft.run(["tag", "create", "c", "--step", str(STEP), "--store", multi])
    ft.check(r.returncode == 0 or "TAG_EXISTS" in r.stderr,
             "tag create: " + r.stderr)
    more, err = next_ids(multi, "c", 6000)
    ft.check(min(members_of(more, 2)) > 0, "one member only: %r"
             % members_of(more, 2))
    ft.check("joins with tag \"c\"" in r.stderr + err,
             "no row moved: " + (r.stderr + err)[-600:])
    every += more
    ft.check(len(set(every)) == len(every), "%d IDs twice"
             % (len(every) - len(set(every))))
    return len(every)


def test_conversion_with_an_older_copy():
    """A PostgreSQL database and a copy of it made earlier (CREATE
    DATABASE ... TEMPLATE), then a MariaDB database and its copy, each pair
    made the members of a multi: store."""
    pg, my = ft.Postgres(), None
    try:
        base = pg.uri.rsplit("/", 1)[0]
        pg.sql("CREATE DATABASE a")
        n = converted(base + "/a",
                      lambda: pg.sql("CREATE DATABASE b TEMPLATE a"),
                      "multi:%s/a|%s/b" % (base, base))
        my = ft.MariaDB()
        mbase = my.uri.rsplit("/", 1)[0]

        def copy():
            my.sql("CREATE DATABASE b")
            for t in ("leaf_alloc", "frond_tag_floor", "frond_multi"):
                my.sql("CREATE TABLE b.%s LIKE frond.%s; INSERT INTO b.%s "
                       "SELECT * FROM frond.%s" % (t, t, t, t))
        n += converted(my.uri, copy, "multi:%s|%s/b" % (my.uri, mbase))
        print("converted with an older copy: %d IDs, 0 twice" % n)
    finally:
        pg.close()
        if my is not None:
            my.close()


if __name__ == "__main__":
    ft.main([test_two_sqlite_files, test_admin_api_and_refused_start,
             test_pg_and_mariadb_one_down, test_silent_member,
             test_member_restored_and_repaired, test_range_over_block,
             test_conversion_with_an_older_copy])
