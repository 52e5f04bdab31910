#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_coord_record.py -- the fleet's coordinator recorded in the store
(docs/coordinators.md, "One coordinator per store"), with real servers:
a server whose store is down at start issues no snowflake ID until its
coordinator has been checked against the store's record, then does; a
second server given another coordinator on that store is refused.
"""
import json
import os
import shutil
import signal
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check, wait_for  # noqa: E402


def snowflake(s):
    st, _, b = s.request("GET", "/v1/snowflake")
    return st, b.decode()


def test_store_down_at_start():
    pg, uri = ft.postgres_later()
    tmp = tempfile.mkdtemp(prefix="frond-coordrec-")
    servers = []
    try:
        a = ft.Server(store=uri, extra=[
            "--coordinator", "lease+sqlite://%s/a.db" % tmp,
            "--format.u", "uuid7", "--format.d", "base62"])
        servers.append(a)
        st, body = snowflake(a)
        check(st == 503 and json.loads(body)["error"]["code"] == "STORE"
              and "not checked" in body,
              "snowflake before the check: %d %s" % (st, body))
        # A format of snowflake IDs waits too; uuid7's own random
        # generator does not.
        st, _, b = a.request("GET", "/v1/format/d")
        check(st == 503 and b"not checked" in b,
              "base62 before the check: %d %r" % (st, b))
        st, _, b = a.request("GET", "/v1/format/u")
        check(st == 200, "uuid7 before the check: %d %r" % (st, b))
        st, _, b = a.request("GET", "/readyz?kind=snowflake")
        check(st == 503 and b"checked against the store" in b,
              "readyz before the check: %d %r" % (st, b))
        pg.start()
        wait_for("snowflake IDs after the check",
                 lambda: snowflake(a)[0] == 200, 60)
        st, _, b = a.request("GET", "/readyz?kind=snowflake")
        check(st == 200, "readyz after the check: %d %r" % (st, b))
        # Another coordinator on the same store: refused before its first
        # ID (frond next claims as a server does; it makes no lease file).
        open(os.path.join(tmp, "b.db"), "w").close()
        r = ft.run(["next", "--store", uri, "--coordinator",
                    "lease+sqlite://%s/b.db" % tmp], cwd=tmp)
        check(r.returncode == 1 and "COORDINATOR_MISMATCH" in r.stderr and
              "a.db" in r.stderr and "b.db" in r.stderr and not r.stdout,
              "frond next on another coordinator: %d %s%s" %
              (r.returncode, r.stdout, r.stderr))
        ids = [int(x) for x in json.loads(
            a.request("GET", "/v1/snowflake?count=100")[2])["ids"]]
        check(len(set(ids)) == 100, "IDs after the refusal: %r" % ids[:5])
    finally:
        for s in servers:
            s.stop()
        pg.close()
        shutil.rmtree(tmp, ignore_errors=True)


def records(tmp):
    db = sqlite3.connect(os.path.join(tmp, "store.db"))
    try:
        return db.execute("SELECT count(*) FROM frond_meta WHERE name LIKE "
                          "'coord.record.%'").fetchone()[0]
    finally:
        db.close()


def ids_of(s, n):
    st, _, b = s.request("GET", "/v1/snowflake?count=%d" % n)
    if st != 200:
        return st, b.decode()[:300]
    return st, [int(x) for x in json.loads(b)["ids"]]


def test_change_retires_a_paused_node():
    """A server of OLD paused past its lease (listed not live, so the
    change goes ahead) wakes after `frond node coordinator --set NEW
    --from OLD`: the change retired OLD first, so its next fence write
    and its regain fail; it issues nothing beside NEW's node 0."""
    tmp = tempfile.mkdtemp(prefix="frond-coordrec-")
    store = "sqlite://%s/store.db" % tmp
    paused_change(tmp, store, "lease+%s?lease_ms=3000" % store)


@ft.with_server("zookeeper")
def test_change_retires_a_paused_zk_node(zk):
    """The same with OLD on ZooKeeper, the server paused past its
    session."""
    tmp = tempfile.mkdtemp(prefix="frond-coordrec-")
    paused_change(tmp, "sqlite://%s/store.db" % tmp, zk.uri())


def paused_change(tmp, store, old_c):
    new_c = "lease+sqlite://%s/new.db" % tmp
    open(os.path.join(tmp, "new.db"), "w").close()
    servers = []
    try:
        old = ft.Server(store=store, extra=["--coordinator", old_c])
        servers.append(old)
        check(ids_of(old, 5)[0] == 200, "old server issues")
        os.kill(old.proc.pid, signal.SIGSTOP)

        def not_live():
            r = ft.run(["node", "list", "--json", "--coordinator", old_c],
                       cwd=tmp)
            return r.returncode == 0 and '"live": false' in r.stdout.replace(
                '"live":false', '"live": false')
        wait_for("the paused node listed not live", not_live, 60)
        r = ft.run(["node", "coordinator", "--store", store, "--set", new_c,
                    "--from", old_c], cwd=tmp)
        check(r.returncode == 0 and "set " in r.stdout,
              "change: %d %s %s" % (r.returncode, r.stdout, r.stderr))
        new = ft.Server(store=store, extra=["--coordinator", new_c])
        servers.append(new)
        os.kill(old.proc.pid, signal.SIGCONT)
        a, b, refused = set(), set(), None
        deadline = time.monotonic() + 30
        for _ in range(3000):
            if time.monotonic() > deadline:
                break
            st, v = ids_of(old, 1000)
            if st == 200:
                a.update(v)
            else:
                refused = v
            st, v = ids_of(new, 1000)
            # NEW's nodes wait for the clock to pass the floor.
            check(st == 200 or "CLOCK_BEHIND" in v,
                  "new server: %d %s" % (st, v))
            if st == 200:
                b.update(v)
            if refused is not None and len(b) > 20000:
                break
        print("old issued %d, new %d, duplicates %d, refused: %s" % (
            len(a), len(b), len(a & b), refused))
        check(not (a & b), "%d duplicates" % len(a & b))
        check(refused is not None, "the old server never refused")
        # It stays refused: no regain under the retired coordinator.
        st, v = ids_of(old, 10)
        check(st != 200, "old server after the change: %d %s" % (st, v))
        # A rerun that changes nothing records nothing.
        n = records(tmp)
        r = ft.run(["node", "coordinator", "--store", store, "--set", new_c,
                    "--from", old_c], cwd=tmp)
        check(r.returncode == 0 and r.stdout.startswith("unchanged "),
              "rerun: %d %s %s" % (r.returncode, r.stdout, r.stderr))
        check(records(tmp) == n, "a rerun appended %d" % (records(tmp) - n))
    finally:
        for s in servers:
            try:
                os.kill(s.proc.pid, signal.SIGCONT)
            except OSError:
                pass
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_static_node_checked_as_itself():
    """static:N on a store is a lease pinned to node N: recorded and
    checked as N..N, not as the lease's whole range."""
    tmp = tempfile.mkdtemp(prefix="frond-coordrec-")
    store = "sqlite://%s/store.db" % tmp
    open(os.path.join(tmp, "a.db"), "w").close()
    try:
        r = ft.run(["next", "--store", store, "--coordinator",
                    "lease+sqlite://%s/a.db?nodes=0-99" % tmp], cwd=tmp)
        check(r.returncode == 0, "fleet 0..99: %s" % r.stderr)
        r = ft.run(["next", "--store", store, "--coordinator", "static:700"],
                   cwd=tmp)
        check(r.returncode == 0 and r.stdout.strip(),
              "static:700: %d %s %s" % (r.returncode, r.stdout, r.stderr))
        r = ft.run(["next", "--store", store, "--coordinator", "static:5"],
                   cwd=tmp)
        check(r.returncode == 1 and "COORDINATOR_MISMATCH" in r.stderr,
              "static:5: %d %s %s" % (r.returncode, r.stdout, r.stderr))
        r = ft.run(["node", "coordinator", "--store", store], cwd=tmp)
        check(r.returncode == 0 and "node IDs 700..700" in r.stdout and
              "node IDs 0..99" in r.stdout, r.stdout + r.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_bad_identity_refuses_the_start():
    """A malformed coordinator.id never heals by itself: the start is
    refused, naming the value, instead of a server answering 503."""
    tmp = tempfile.mkdtemp(prefix="frond-coordrec-")
    db = sqlite3.connect(os.path.join(tmp, "l.db"))
    db.execute("CREATE TABLE frond_meta (name VARCHAR(64) PRIMARY KEY, "
               "value VARCHAR(256) NOT NULL)")
    db.execute("INSERT INTO frond_meta VALUES ('coordinator.id', "
               "'not-an-identity')")
    db.commit()
    db.close()
    try:
        # Before, the start went on and answered 503 forever: the run
        # timing out fails the test.
        r = ft.run(["serve", "--listen", "127.0.0.1:%d" % ft.free_port(),
                    "--resp-listen", "off", "--data-dir", tmp,
                    "--store", "sqlite://%s/store.db" % tmp,
                    "--coordinator", "lease+sqlite://%s/l.db" % tmp],
                   cwd=tmp, timeout=60)
        out = r.stdout + r.stderr
        check(r.returncode != 0 and "COORDINATOR_MISMATCH" in out and
              "not-an-identity" in out, "%d %s" % (r.returncode, out[-600:]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_lost_coordinator_adopted():
    """A lease database recreated answers with a new identity: starts are
    refused saying its data was lost; --set L --from L adopts the new
    identity with a floor above any lost fence; a rerun appends nothing."""
    tmp = tempfile.mkdtemp(prefix="frond-coordrec-")
    store = "sqlite://%s/store.db" % tmp
    lease = os.path.join(tmp, "l.db")
    coord = "lease+sqlite://%s" % lease
    other = os.path.join(tmp, "x.db")
    open(lease, "w").close()
    open(other, "w").close()
    try:
        r = ft.run(["next", "--store", store, "--coordinator", coord],
                   cwd=tmp)
        check(r.returncode == 0, r.stderr)
        first = int(r.stdout.split()[0])
        os.remove(lease)
        open(lease, "w").close()
        r = ft.run(["next", "--store", store, "--coordinator", coord],
                   cwd=tmp)
        check(r.returncode == 1 and "COORDINATOR_MISMATCH" in r.stderr and
              "lost or replaced" in r.stderr, r.stderr)
        r = ft.run(["node", "coordinator", "--store", store, "--set",
                    "lease+sqlite://%s" % other, "--from", coord],
                   cwd=tmp)
        check(r.returncode == 1 and "Adopt it first" in r.stderr, r.stderr)
        n = records(tmp)
        r = ft.run(["node", "coordinator", "--store", store, "--set", coord,
                    "--from", coord], cwd=tmp)
        check(r.returncode == 0 and r.stdout.startswith("set "),
              "adopt: %d %s %s" % (r.returncode, r.stdout, r.stderr))
        floor = int(r.stdout.split("floor ")[1].split()[0])
        check(floor > time.time() * 1000, "floor %d not ahead" % floor)
        check(records(tmp) == n + 1, "one entry for the adoption")
        r = ft.run(["node", "coordinator", "--store", store, "--set", coord,
                    "--from", coord], cwd=tmp)
        check(r.returncode == 0 and r.stdout.startswith("unchanged "),
              "rerun: %s %s" % (r.stdout, r.stderr))
        check(records(tmp) == n + 1, "a rerun appends nothing")
        # Above the floor: refused (CLOCK_BEHIND) until the clock is near.
        got = []

        def issued():
            r = ft.run(["next", "--store", store, "--coordinator", coord],
                       cwd=tmp)
            check(r.returncode == 0 or "CLOCK_BEHIND" in r.stderr, r.stderr)
            got.append(r)
            return r.returncode == 0
        wait_for("an ID above the floor", issued, 60)
        r = got[-1]
        r2 = ft.run(["decode", r.stdout.split()[0]], cwd=tmp)
        check(r2.returncode == 0 and
              json.loads(r2.stdout)["unix_ms"] > floor and
              int(r.stdout.split()[0]) > first,
              "after adoption: %s %s %s" % (r.stdout, r2.stdout, r.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    ft.main([test_store_down_at_start, test_change_retires_a_paused_node,
             test_change_retires_a_paused_zk_node,
             test_static_node_checked_as_itself,
             test_bad_identity_refuses_the_start,
             test_lost_coordinator_adopted])
