#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_coord_checks.py -- what a coordinator checks before a node may issue:
its identity (advertise), its clock against the fleet's, and the fleet's
layout; and the procedure that changes the layout, and what a change
stopped halfway leaves.

ZooKeeper and PostgreSQL are started per test on loopback in temp dirs;
clocks are shifted with libfaketime (Debian package faketime).
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import serve, wait_serving  # noqa: E402
from coord_common import (Tool, lease_mariadb, lease_postgres,  # noqa: E402
                          zk_tool)

with_zk = ft.with_server("zookeeper")

NEW = "time=40,node=12,seq=11"


def test_advertise():
    """--advertise, FROND_ADVERTISE and the config file's advertise are
    the identity the coordinator records; a bad value is refused."""
    d = ft.tempdir("frond-adv-")
    uri = "lease+sqlite://%s/lease.db" % d
    procs = []
    try:
        with open(os.path.join(d, "log"), "a") as log:
            p1 = serve(["--coordinator", uri, "--advertise", "10.9.8.7:1234"],
                       d, ft.free_port(), log)
            procs.append(p1)
            env_port = ft.free_port()
            env = dict(os.environ, FROND_ADVERTISE="node-b.example:81")
            p2 = subprocess.Popen(
                [ft.FROND_BIN, "serve", "--listen", "127.0.0.1:%d" % env_port,
                 "--resp-listen", "off", "--store", "none", "--data-dir", d,
                 "--coordinator", uri], cwd=d, env=env, stdout=log,
                stderr=subprocess.STDOUT)
            procs.append(p2)
            conf = os.path.join(d, "frond.conf")
            with open(conf, "w") as f:
                f.write("advertise = [fd00::3]:82\n")
            p3 = serve(["--coordinator", uri, "--config", conf], d,
                       ft.free_port(), log)
            procs.append(p3)
            for p in procs:
                ft.check(p.poll() is None or p.returncode == 0,
                         "a server exited")
            time.sleep(0.5)
        deadline = time.monotonic() + 30
        owners = set()
        while time.monotonic() < deadline and len(owners) < 3:
            r = ft.run(["node", "list", "--coordinator", uri, "--json"])
            ft.check(r.returncode == 0, "node list: %s" % r.stderr)
            owners = {e["owner"] for e in json.loads(r.stdout) if e["live"]}
            time.sleep(0.2)
        ft.check(owners == {"10.9.8.7:1234", "node-b.example:81",
                            "[fd00::3]:82"}, "owners: %s" % owners)
        caches = sorted(f for f in os.listdir(d) if f.endswith(".cache"))
        ft.check(len(caches) == 3 and
                 any("10.9.8.7_1234" in c for c in caches),
                 "one cache per identity: %s" % caches)
        for bad in ("10.9.8.7", "10.9.8.7:0", "a b:80", "h:99999"):
            r = ft.run(["serve", "--listen", "127.0.0.1:%d" % ft.free_port(),
                        "--resp-listen", "off", "--store", "none",
                        "--data-dir", d, "--coordinator", uri,
                        "--advertise", bad], cwd=d, timeout=30)
            ft.check(r.returncode != 0 and "advertise" in r.stderr and
                     "INVAL" in r.stderr,
                     "bad advertise %r: %d %s" % (bad, r.returncode, r.stderr))
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(20)
        shutil.rmtree(d, ignore_errors=True)


def test_static_beyond_loopback_warns():
    """A server beyond loopback on a static node ID registered nowhere
    (store = none) says in a warning what uniqueness then rests on; with a
    store (the node ID leased there), or on loopback, it does not."""
    d = ft.tempdir("frond-warn-")
    try:
        for listen, store, warns in (("0.0.0.0", "none", True),
                                     ("0.0.0.0", None, False),
                                     ("127.0.0.1", "none", False)):
            port = ft.free_port()
            args = [ft.FROND_BIN, "serve", "--listen", "%s:%d" % (listen, port),
                    "--resp-listen", "off", "--admin-token", "t" * 32,
                    "--data-dir", d]
            if store:
                args += ["--store", store]
            log = os.path.join(d, "log-%d" % port)
            with open(log, "w") as f:
                p = subprocess.Popen(args, cwd=d, stdout=f,
                                     stderr=subprocess.STDOUT)
            try:
                ft.check(wait_serving(p, port, 30, "t" * 32) is not None,
                         "%s, store %s: no ID" % (listen, store))
            finally:
                p.terminate()
                p.wait(30)
            with open(log) as f:
                text = f.read()
            said = "registered nowhere" in text
            ft.check(said == warns, "%s, store %s: warning %s:\n%s"
                     % (listen, store, said, text))
            if warns:
                ft.check("beyond loopback" in text and "node ID 0" in text
                         and "store = none" in text, text)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@with_zk
def test_zk_clock_offset_refused(zk):
    """A node whose clock is 10 s off the other live nodes' is refused,
    with both times; one within the bound starts and reports its offset."""
    ft.need("faketime", "faketime")
    a = Tool(zk.uri(), ip="10.6.0.1")
    b = Tool(zk.uri(), ip="10.6.0.2")
    try:
        ft.check(a.ok and b.ok, "A, B: %s %s" % (a.first, b.first))
        c = Tool(zk.uri(), ip="10.6.0.3", faketime="+10s")
        msg = " ".join(c.first)
        ft.check(c.first[:2] == ["err", "CLOCK_OFFSET"],
                 "10 s ahead: %s" % msg)
        ft.check("median of 2 other live nodes" in msg and
                 msg.count("T") >= 2, "names both times: %s" % msg)
        d = Tool(zk.uri(), ip="10.6.0.4", faketime="+0.2s")
        ft.check(d.ok, "200 ms is within the default bound: %s" % d.first)
        s = d.cmd("stats").split()
        off = int(s[s.index("offset") + 1])
        ft.check(s[s.index("checked") + 1] == "1" and 50 <= off <= 600,
                 "measured offset %d ms, want about 200: %s" % (off, s))
        d.close()
        # Alone, the node compares with ZooKeeper's own clock.
        a.close()
        b.close()
        e = Tool(zk.uri(), ip="10.6.0.5", faketime="-10s")
        ft.check(e.first[:2] == ["err", "CLOCK_OFFSET"] and
                 "ZooKeeper" in " ".join(e.first),
                 "alone, 10 s behind: %s" % e.first)
        f = Tool(zk.uri("frond", "max_clock_offset_ms=0"), ip="10.6.0.5",
                 faketime="-10s")
        ft.check(f.ok, "check off: %s" % f.first)
        f.close()
    finally:
        for t in (a, b):
            if t.ok and t.p.poll() is None:
                t.close()


def clock_offset_refused(make):
    """The lease compares with the database's clock."""
    ft.need("faketime", "faketime")
    db = make()
    try:
        a = Tool(db.uri(), port=1, faketime="+10s")
        msg = " ".join(a.first)
        ft.check(a.first[:2] == ["err", "CLOCK_OFFSET"] and
                 "the database reads" in msg, "10 s ahead: %s" % msg)
        b = Tool(db.uri(), port=2)
        ft.check(b.ok, "the real clock starts: %s" % b.first)
        s = b.cmd("stats").split()
        ft.check(abs(int(s[s.index("offset") + 1])) < 500, "offset: %s" % s)
        b.close()
    finally:
        db.cleanup()


def test_pg_clock_offset_refused():
    clock_offset_refused(lease_postgres)


def test_mysql_clock_offset_refused():
    clock_offset_refused(lease_mariadb)


@with_zk
def test_zk_layout_mismatch_refused(zk):
    a = Tool(zk.uri(), ip="10.8.0.1")
    try:
        ft.check(a.ok, "A: %s" % a.first)
        b = Tool(zk.uri(), ip="10.8.0.2", layout="twitter")
        msg = " ".join(b.first)
        ft.check(b.first[:2] == ["err", "LAYOUT_MISMATCH"] and
                 "'twitter'" in msg and "'frond'" in msg and
                 "'frond' would be locked out until" in msg,
                 "another layout: %s" % msg)
    finally:
        a.close()


def node_layout(uri, *args):
    return ft.run(["node", "layout", "--coordinator", uri] + list(args))


def layout_change(uri, make_tool):
    """Refused while a node holds an ID; then recorded with a floor; the
    old layout can no longer start; the new one starts above every ID the
    old one issued."""
    a = make_tool(None)
    ft.check(a.ok, "A: %s" % a.first)
    r = a.cmd("next 5000").split()
    ft.check(r[0] == "ids", "burst: %s" % r)
    last_old = int(r[2])
    r = node_layout(uri)
    ft.check(r.returncode == 0 and "layout time=41,node=10,seq=12" in
             r.stdout, "recorded: %s %s" % (r.stdout, r.stderr))
    r = node_layout(uri, "--set", NEW)
    ft.check(r.returncode == 1 and "NODE_IN_USE" in r.stderr,
             "refused while A runs: %d %s" % (r.returncode, r.stderr))
    ft.check(a.next()[0] > last_old, "A still issues after the refusal")
    a.close()
    r = node_layout(uri, "--set", NEW)
    ft.check(r.returncode == 0, "set: %s" % r.stderr)
    floor = int(r.stdout.split("floor ")[1].split()[0])
    ft.check(floor >= last_old, "floor %d below the last old ID %d"
             % (floor, last_old))
    old = make_tool(None)
    ft.check(old.first[:2] == ["err", "LAYOUT_MISMATCH"],
             "old layout after the change: %s" % old.first)
    new = make_tool(NEW)
    try:
        ft.check(new.ok, "new layout: %s" % new.first)
        first = new.next()[0]
        ft.check(first > floor and first > last_old,
                 "first new ID %d not above the floor %d" % (first, floor))
    finally:
        new.close()
    # A layout whose IDs pass the floor only years from now is refused
    # at once, naming both layouts: no node could start under it.
    odd = "time=50,node=8,seq=5"
    r = node_layout(uri, "--set", odd)
    ft.check(r.returncode == 1 and "LAYOUT_MISMATCH" in r.stderr and
             NEW in r.stderr and odd in r.stderr,
             "floor out of reach: %d %s" % (r.returncode, r.stderr))


@with_zk
def test_zk_layout_change(zk):
    uri = zk.uri("relayout")
    layout_change(uri, lambda layout: Tool(uri, ip="10.8.1.1", layout=layout))


def test_sqlite_layout_change():
    d = ft.tempdir("frond-relayout-")
    try:
        uri = "lease+sqlite://%s/lease.db?lease_ms=3000&report_ms=200" % d
        layout_change(uri, lambda layout: Tool(uri, port=5, layout=layout))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def server_layout_change(make):
    db = make()
    try:
        uri = db.uri("lease_ms=3000&report_ms=200")
        layout_change(uri, lambda layout: Tool(uri, port=5, layout=layout))
    finally:
        db.cleanup()


def test_pg_layout_change():
    server_layout_change(lease_postgres)


def test_mysql_layout_change():
    server_layout_change(lease_mariadb)


def layout_unfinished(uri, make_tool, mark):
    """A `frond node layout --set` stopped between its two steps leaves
    its mark (mark() writes it as such a process leaves it): every start
    refuses, saying how to finish or undo the change; `frond node layout`
    shows it; --set with the old layout undoes it (the old layout starts
    again, above what it issued); a mark left again is finished by --set
    with the new layout."""
    a = make_tool(None)
    ft.check(a.ok, "A: %s" % a.first)
    r = a.cmd("next 2000").split()
    ft.check(r[0] == "ids", "burst: %s" % r)
    last = int(r[2])
    a.close()
    r = node_layout(uri)
    ft.check(r.returncode == 0, "layout: %s" % r.stderr)
    old = r.stdout.split()[1]
    mark()
    b = make_tool(None)
    msg = " ".join(b.first)
    ft.check(b.first[:2] == ["err", "COORD"] and "not finished" in msg and
             "frond node layout --set %s" % old in msg,
             "a start under a change left unfinished: %s" % msg)
    r = node_layout(uri)
    ft.check(r.returncode == 0 and "changing from %s" % old in r.stdout,
             "frond node layout does not show the change: %s %s"
             % (r.stdout, r.stderr))
    r = node_layout(uri, "--set", old)
    ft.check(r.returncode == 0 and "changing" not in r.stdout,
             "undo: %s %s" % (r.stdout, r.stderr))
    c = make_tool(None)
    try:
        ft.check(c.ok, "the old layout after the undo: %s" % c.first)
        ft.check(c.next()[0] > last, "an ID after the undo not above %d"
                 % last)
        r = c.cmd("next 2000").split()
        last = int(r[2])
    finally:
        c.close()
    mark()
    r = node_layout(uri, "--set", NEW)
    ft.check(r.returncode == 0, "finishing with --set %s: %s" % (NEW, r.stderr))
    floor = int(r.stdout.split("floor ")[1].split()[0])
    ft.check(floor >= last, "floor %d below the last old ID %d"
             % (floor, last))
    new = make_tool(NEW)
    try:
        ft.check(new.ok, "new layout: %s" % new.first)
        ft.check(new.next()[0] > floor, "first new ID not above the floor")
    finally:
        new.close()


def sql_mark(run):
    """The mark a `--set` stopped after its first step leaves in
    frond_meta."""
    run("UPDATE frond_meta SET value = CONCAT('changing:', value) "
        "WHERE name = 'layout'")


@with_zk
def test_zk_layout_unfinished(zk):
    uri = zk.uri("unfinished")
    node = "/snowflake/unfinished/layout"

    def mark():
        data = zk_tool(zk, "get", node)
        ft.check("state=ready" in data, "layout record: %r" % data)
        zk_tool(zk, "set", node, data.replace("state=ready",
                                              "state=changing"))
    layout_unfinished(uri, lambda layout: Tool(uri, ip="10.8.2.1",
                                               layout=layout), mark)


def test_sqlite_layout_unfinished():
    import sqlite3
    d = ft.tempdir("frond-relayout-")
    path = os.path.join(d, "lease.db")

    def run(sql):
        db = sqlite3.connect(path)
        db.execute(sql.replace("CONCAT('changing:', value)",
                               "'changing:' || value"))
        db.commit()
        db.close()
    try:
        uri = "lease+sqlite://%s?lease_ms=3000&report_ms=200" % path
        layout_unfinished(uri, lambda layout: Tool(uri, port=5, layout=layout),
                          lambda: sql_mark(run))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_pg_layout_unfinished():
    db = lease_postgres()
    try:
        uri = db.uri("lease_ms=3000&report_ms=200")
        layout_unfinished(uri, lambda layout: Tool(uri, port=5, layout=layout),
                          lambda: sql_mark(db.db.sql))
    finally:
        db.cleanup()


def test_mysql_layout_unfinished():
    db = lease_mariadb()
    try:
        uri = db.uri("lease_ms=3000&report_ms=200")
        layout_unfinished(uri, lambda layout: Tool(uri, port=5, layout=layout),
                          lambda: sql_mark(db.db.sql))
    finally:
        db.cleanup()


if __name__ == "__main__":
    ft.need(ft.tool("coord_tool"), "(build the tests)")
    ft.main([test_advertise,
             test_static_beyond_loopback_warns,
             test_zk_layout_mismatch_refused,
             test_zk_layout_change,
             test_sqlite_layout_change,
             test_pg_layout_change,
             test_mysql_layout_change,
             test_zk_layout_unfinished,
             test_sqlite_layout_unfinished,
             test_pg_layout_unfinished,
             test_mysql_layout_unfinished,
             test_zk_clock_offset_refused,
             test_pg_clock_offset_refused,
             test_mysql_clock_offset_refused])
