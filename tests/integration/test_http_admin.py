#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_http_admin.py -- store calls against a store that stalls: the admin
endpoints, and the look-up of a tag the allocator does not know.

A trigger on leaf_alloc makes every INSERT (POST /v1/tags) wait for an
advisory lock that the test holds, so a tag creation stays in flight for as
long as the test wants; a table lock held by the test does the same to the
look-up of an unknown tag. No sleep decides an outcome. With one event-loop
thread, everything else that loop serves (health, IDs over HTTP and the
Redis protocol, other connections) must still be answered meanwhile; a
client that goes away before the answer must not hurt the server; a drain
waits for the call to finish; pipelined requests behind it keep their
order.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from respclient import Resp, encode  # noqa: E402

LOCK = 4242
STALL = """
CREATE OR REPLACE FUNCTION frond_test_stall() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(%d);
  RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS frond_test_stall ON leaf_alloc;
CREATE TRIGGER frond_test_stall BEFORE INSERT ON leaf_alloc
  FOR EACH ROW EXECUTE FUNCTION frond_test_stall();
""" % LOCK


def session(pg, sql):
    """A psql session of its own that has been sent sql and stays open."""
    p = subprocess.Popen(["psql", "-X", "-q", "-d", pg.uri],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, text=True)
    p.stdin.write(sql)
    p.stdin.flush()
    return p


class Stall:
    """Holds the advisory lock in a psql session of its own until
    release(): INSERTs into leaf_alloc wait for it meanwhile."""

    def __init__(self, pg):
        self.pg = pg
        self.p = session(pg, "SELECT pg_advisory_lock(%d);\n" % LOCK)
        self.wait_for("SELECT count(*) FROM pg_locks WHERE locktype = "
                      "'advisory' AND granted AND objid = %d" % LOCK,
                      "the test's psql to take the lock")

    def wait_for(self, sql, what, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if int(self.pg.sql(sql).strip() or 0) > 0:
                return
            time.sleep(0.05)
        raise ft.Failure("waited %ds for %s" % (timeout, what))

    def wait_blocked(self):
        """Until an INSERT waits for the lock: a call is in flight."""
        self.wait_for("SELECT count(*) FROM pg_stat_activity WHERE "
                      "wait_event_type = 'Lock' AND wait_event = 'advisory'",
                      "a tag creation to wait in PostgreSQL")

    def release(self):
        if self.p.poll() is None:
            self.p.stdin.write("SELECT pg_advisory_unlock(%d);\n\\q\n" % LOCK)
            self.p.stdin.close()
            self.p.wait(timeout=30)


class TableLock:
    """Holds leaf_alloc locked in a transaction of its own (in which it
    creates the tag `fresh`) until release() commits: every other use of
    the table waits meanwhile."""

    def __init__(self, pg):
        self.pg = pg
        self.p = session(pg, "BEGIN;\nLOCK TABLE leaf_alloc IN ACCESS "
                         "EXCLUSIVE MODE;\nINSERT INTO leaf_alloc (biz_tag, "
                         "max_id, step) VALUES ('fresh', 1, 10);\n")
        Stall.wait_for(self, "SELECT count(*) FROM pg_locks WHERE relation = "
                       "'leaf_alloc'::regclass AND mode = "
                       "'AccessExclusiveLock' AND granted",
                       "the test's psql to lock leaf_alloc")

    def wait_blocked(self):
        Stall.wait_for(self, "SELECT count(*) FROM pg_stat_activity WHERE "
                       "wait_event_type = 'Lock' AND wait_event = 'relation'",
                       "a look-up to wait in PostgreSQL")

    def release(self):
        if self.p.poll() is None:
            self.p.stdin.write("COMMIT;\n\\q\n")
            self.p.stdin.close()
            self.p.wait(timeout=30)


AUTH = "Bearer t0ken"


def post_tag(name):
    body = json.dumps({"tag": name, "step": 10}).encode()
    return (b"POST /v1/tags HTTP/1.1\r\nHost: a\r\nAuthorization: %s\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (AUTH.encode(), len(body), body))


def read_answers(sock, n, timeout):
    """n HTTP answers from sock, or fewer when it closes or times out."""
    sock.settimeout(timeout)
    data = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            rs = ft.split_responses(data)
            if len(rs) >= n:
                return rs
        except ft.Failure:
            pass
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
    try:
        return ft.split_responses(data)
    except ft.Failure:
        return []


def start(pg, extra=()):
    pg.sql("DROP TABLE IF EXISTS leaf_alloc")
    s = ft.Server(store=pg.uri, threads=1, resp=True, tags={"orders": 100},
                  extra=["--admin-token", AUTH.split()[1]] + list(extra))
    pg.sql(STALL)
    return s


def test_loop_serves_while_admin_waits(pg):
    """A tag creation that waits on the store leaves the only event loop
    free: health, snowflake and segment IDs over HTTP, and RESP commands
    are answered while it waits. A request pipelined behind the creation
    on its connection is answered after it, in order."""
    s = start(pg)
    stall = Stall(pg)
    c = None
    try:
        c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        c.sendall(post_tag("slow") +
                  b"GET /v1/tags/slow HTTP/1.1\r\nHost: a\r\nAuthorization: %s"
                  b"\r\n\r\n"
                  % AUTH.encode())
        stall.wait_blocked()
        for path in ("/livez", "/api/snowflake/get/x",
                     "/api/segment/get/orders", "/v1/snowflake?count=3"):
            o = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            o.sendall(b"GET %s HTTP/1.1\r\nHost: a\r\nConnection: close"
                      b"\r\nAuthorization: %s\r\n\r\n" % (path.encode(), AUTH.encode()))
            rs = read_answers(o, 1, 5)
            o.close()
            check(len(rs) == 1 and rs[0][0] == 200,
                  "GET %s was not answered while a tag creation waited on "
                  "the store: %r" % (path, rs))
        r = Resp(s.resp_port, timeout=5)
        try:
            check(r.command("AUTH", AUTH.split()[1]) == "OK", "RESP AUTH")
            n = r.command("INCR", "orders")
            check(isinstance(n, int), "RESP INCR: %r" % n)
        except socket.timeout:
            raise ft.Failure("RESP was not answered while a tag creation "
                             "waited on the store")
        finally:
            r.close()
        stall.release()
        rs = read_answers(c, 2, 20)
        check(len(rs) == 2, "answers on the admin connection: %r" % rs)
        check(rs[0][0] == 201 and json.loads(rs[0][2])["tag"] == "slow",
              "creation: %r" % (rs[0],))
        check(rs[1][0] == 200 and json.loads(rs[1][2])["tag"] == "slow",
              "the request pipelined behind it: %r" % (rs[1],))
        st, _, b = s.request("GET", "/api/segment/get/slow")
        check(st == 200 and b == b"1", (st, b))
    finally:
        stall.release()
        if c is not None:
            c.close()
        s.close()


def test_unknown_tag_lookup_off_the_loop(pg):
    """A tag the allocator does not know is looked up in the store: while
    that look-up waits, the loop serves everything else, tags in its
    buffers included; once the store answers, the tag (created meanwhile,
    elsewhere) works at once, over HTTP and RESP."""
    s = start(pg)
    lock = None
    c = None
    try:
        st, _, b = s.request("GET", "/api/segment/get/orders")
        check(st == 200 and b == b"1", (st, b))
        lock = TableLock(pg)
        c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        c.sendall(b"GET /api/segment/get/fresh HTTP/1.1\r\nHost: a\r\n"
                  b"Authorization: %s\r\n\r\n" % AUTH.encode())
        r = Resp(s.resp_port, timeout=10)
        r.command("AUTH", AUTH.split()[1])
        r.send(encode("INCR", "fresh"))
        lock.wait_blocked()
        for path, want in (("/livez", b"ok\n"), ("/api/segment/get/orders",
                                                 b"2")):
            o = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            o.sendall(b"GET %s HTTP/1.1\r\nHost: a\r\nConnection: close"
                      b"\r\nAuthorization: %s\r\n\r\n" % (path.encode(), AUTH.encode()))
            rs = read_answers(o, 1, 5)
            o.close()
            check(len(rs) == 1 and rs[0][0] == 200 and rs[0][2] == want,
                  "GET %s was not answered while a look-up waited on the "
                  "store: %r" % (path, rs))
        lock.release()
        rs = read_answers(c, 1, 20)
        check(len(rs) == 1 and rs[0][0] == 200 and rs[0][2] in (b"1", b"2"),
              "the unknown tag after the look-up: %r" % rs)
        n = r.reply()
        check(n in (1, 2) and n != int(rs[0][2]), "RESP INCR fresh: %r" % n)
        r.close()
    finally:
        if lock is not None:
            lock.release()
        if c is not None:
            c.close()
        s.close()


def test_client_gone_while_admin_waits(pg):
    """Clients that close or reset their connection while their tag
    creation waits: the creation completes, the server keeps serving
    (the sanitizer build aborts on any use of a freed connection)."""
    s = start(pg)
    stall = Stall(pg)
    try:
        gone = []
        for i, reset in enumerate((False, True)):
            g = socket.create_connection(("127.0.0.1", s.port), timeout=10)
            g.sendall(post_tag("gone%d" % i))
            gone.append((g, reset))
        stall.wait_blocked()
        for g, reset in gone:
            if reset:  # RST instead of FIN
                g.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                             b"\x01\x00\x00\x00\x00\x00\x00\x00")
            g.close()
        time.sleep(0.3)  # let the loop see both closes before the answers
        check(s.request("GET", "/livez")[0] == 200, "not serving")
        stall.release()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            st, _, b = s.request("GET", "/v1/tags")
            names = [t["tag"] for t in json.loads(b)["tags"]]
            if "gone0" in names and "gone1" in names:
                break
            time.sleep(0.1)
        check("gone0" in names and "gone1" in names,
              "creations did not complete: %r" % names)
        check(s.alive(), "server died: %s" % s.output()[-2000:])
        check(s.request("GET", "/livez")[0] == 200, "not serving")
        check(s.stop() == 0, "exit status: %s" % s.output()[-2000:])
    finally:
        stall.release()
        s.close()


def test_drain_waits_for_admin(pg):
    """SIGTERM while a tag creation waits on the store: the server stops
    accepting but answers the creation once the store does (with
    Connection: close), then exits 0."""
    s = start(pg, ["--drain-timeout-ms", "60000"])
    stall = Stall(pg)
    try:
        c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        c.sendall(post_tag("late"))
        stall.wait_blocked()
        s.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the listener is closed
            try:
                socket.create_connection(("127.0.0.1", s.port),
                                         timeout=1).close()
                time.sleep(0.05)
            except OSError:
                break
        check(s.alive(), "exited with a tag creation in flight")
        stall.release()
        rs = read_answers(c, 1, 20)
        check(len(rs) == 1 and rs[0][0] == 201, "creation: %r" % rs)
        check(rs[0][1].get("connection") == "close", rs[0][1])
        c.close()
        rc = s.proc.wait(timeout=20)
        check(rc == 0, "exit status %d: %s" % (rc, s.output()[-2000:]))
        check(pg.sql("SELECT count(*) FROM leaf_alloc WHERE biz_tag = "
                     "'late'").strip() == "1", "the creation was lost")
    finally:
        stall.release()
        s.close()


def bind(test, pg):
    def run():
        test(pg)
    run.__name__ = test.__name__
    return run


def main():
    pg = ft.Postgres()
    try:
        tests = [test_loop_serves_while_admin_waits,
                 test_unknown_tag_lookup_off_the_loop,
                 test_client_gone_while_admin_waits,
                 test_drain_waits_for_admin]
        ft.main([bind(t, pg) for t in tests])
    finally:
        pg.close()


if __name__ == "__main__":
    main()
