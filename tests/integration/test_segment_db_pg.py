#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The SQL layer (src/store/db.h) against a real PostgreSQL (scripts/pg.sh,
in a temp dir, stopped after), driven through db_tool: URI errors, the
refusals retrying cannot fix (STORE_PERMANENT, by SQLSTATE), typed
parameters and NULLs, the dialect's tokens, RETURNING and its emulation,
the session settings, a backend terminated under an idle connection (the
next statement reconnects; inside a transaction nothing does), and an
answer lost on the wire after the server committed (reported as an
error, never sent again), through a TCP proxy that can cut one answer.
"""
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from db_common import (Tool, WireProxy, dropped_connection,  # noqa: E402
                       lost_answers, now_and_if_absent)

PG = None


def backend_gone(pid, timeout=30):
    """Wait until PostgreSQL has no backend pid any more."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if PG.sql("SELECT count(*) FROM pg_stat_activity WHERE pid = %d"
                  % pid).strip() == "0":
            return
        time.sleep(0.05)
    raise ft.Failure("backend %d still there after %ds" % (pid, timeout))


def terminate(pid):
    ft.check(PG.sql("SELECT pg_terminate_backend(%d)" % pid).strip() == "t",
             "pg_terminate_backend(%d) failed" % pid)
    backend_gone(pid)


class Proxy(WireProxy):
    """The wire proxy (db_common.WireProxy) for PostgreSQL's protocol: it
    acts on the next query ('Q') or execute ('E'); a cut answer is
    complete at the server's ReadyForQuery ('Z')."""

    @staticmethod
    def _messages(buf, typed):
        """Split complete messages off buf: ([types], rest). The
        connection's first message (the startup) has no type byte."""
        types = []
        while True:
            head = 5 if typed else 4
            if len(buf) < head:
                return types, buf
            n = struct.unpack("!I", buf[head - 4:head])[0]
            if len(buf) < head - 4 + n:
                return types, buf
            types.append(buf[0:1] if typed else b"")
            buf = buf[head - 4 + n:]
            typed = True

    def split(self, buf, started):
        return self._messages(buf, started)

    def matches(self, message, what):
        return message in (b"Q", b"E")

    def answered(self, buf):
        types, rest = self._messages(buf, True)
        return b"Z" in types, rest


def proxied(proxy):
    return ("postgresql://postgres@127.0.0.1:%d/postgres?sslmode=disable"
            "&gssencmode=disable" % proxy.port)


def test_uri_errors():
    t = Tool()
    try:
        t.err("open", "postgresql://[::1/db", code="STORE_URI")
        t.err("open", "postgresql://h/db?no_such_option=1", code="STORE_URI")
        t.err("open", "sqlite://host/x.db", code="STORE_URI")
        t.err("open", "mysql://h/", code="STORE_URI")
        # Nothing listens there: a store error with libpq's words, which
        # retrying may fix.
        port = ft.free_port()
        line = t.err("open", "postgresql://postgres@127.0.0.1:%d/postgres"
                     % port, code="STORE")
        ft.check("postgresql: connect: " in line, line)
        t.ok("open", PG.uri)
    finally:
        t.close()


def test_permanent_refusals():
    """What retrying cannot fix is STORE_PERMANENT, by the server's
    SQLSTATE (read from libpq's verbose words at connect): a wrong
    password (28P01), no such role (28000), no such database (3D000), no
    CONNECT privilege (42501); the words stay libpq's, without LOCATION
    lines and without the password. A server starting up (57P03) is not
    permanent."""
    host = PG.uri.split("@", 1)[1].rsplit("/", 1)[0]
    PG.sql("CREATE ROLE frond_pw LOGIN PASSWORD 'right'")
    PG.sql("CREATE ROLE frond_np LOGIN")
    PG.sql("CREATE DATABASE closed")
    PG.sql("REVOKE CONNECT ON DATABASE closed FROM PUBLIC")
    hba = os.path.join(PG.dir, "data", "pg_hba.conf")
    with open(hba) as f:
        old = f.read()
    with open(hba, "w") as f:
        f.write("host all frond_pw 127.0.0.1/32 scram-sha-256\n" + old)
    PG.sql("SELECT pg_reload_conf()")
    t = Tool()
    try:
        for uri, state in (
                ("postgresql://frond_pw:wrong@%s/postgres" % host, "28P01"),
                ("postgresql://nobody@%s/postgres" % host, "28000"),
                ("postgresql://postgres@%s/no_such_db" % host, "3D000"),
                ("postgresql://frond_np@%s/closed" % host, "42501")):
            line = t.err("open", uri, code="STORE_PERMANENT")
            ft.check(state in line and "LOCATION" not in line and
                     "wrong" not in line, line)
        # The right password works: the refusal above was the password's.
        t.ok("open", "postgresql://frond_pw:right@%s/postgres" % host)
        # After the connect, the session's words are the default ones.
        line = t.err("exec", "SELECT 1/0")
        ft.check("(SQLSTATE 22012)" in line and "22012:" not in line, line)
    finally:
        t.close()


def test_params_and_nulls():
    t = Tool()
    try:
        t.ok("open", PG.uri)
        t.ok("exec", "CREATE TABLE p (k bigint PRIMARY KEY, s text, "
             "n bigint)")
        odd = "it's \"$1\" {now_ms} \u00e9 \\ \t tab"
        out = t.ok("exec", "INSERT INTO p VALUES ($1, $2, $3)",
                   "i:-9223372036854775808", "t:" + odd, "n")
        ft.check(out[0] == "ok changes=1 rows=0", out[0])
        t.ok("exec", "INSERT INTO p VALUES ($1, $2, $3)",
             "i:9223372036854775807", "t:", "i:-7")
        rows = t.rows("exec", "SELECT k, s, n FROM p ORDER BY k")
        ft.check(rows == [["-9223372036854775808", odd, None],
                          ["9223372036854775807", "", "-7"]], repr(rows))
        # A parameter reused, and typed bigint beyond int4.
        rows = t.rows("exec", "SELECT $1 + 1, $1 * 2 = $2",
                      "i:5000000000", "i:10000000000")
        ft.check(rows == [["5000000001", "t"]], repr(rows))
        # NULL in a typed context; a NULL parameter of a nullable column.
        rows = t.rows("exec", "SELECT coalesce($1, 3) + 1", "n")
        ft.check(rows == [["4"]], repr(rows))
        out = t.ok("exec", "UPDATE p SET s = $2 WHERE k = $1",
                   "i:9223372036854775807", "n")
        ft.check(out[0] == "ok changes=1 rows=0", out[0])
        ft.check(t.rows("exec", "SELECT count(*) FROM p WHERE s IS NULL")
                 == [["1"]], "NULL not stored")
        # A SELECT reports no changes, however many rows it returns.
        ft.check(t.ok("exec", "SELECT k FROM p")[0] ==
                 "ok changes=0 rows=2", "changes of a SELECT")
        line = t.err("exec", "INSERT INTO p VALUES ($1, $2, $3)",
                     "i:9223372036854775807", "t:x", "n", cls="unique")
        ft.check("postgresql: insert: duplicate key" in line
                 and "(SQLSTATE 23505)" in line, line)
        line = t.err("exec", "SELECT * FROM nope", cls="error")
        ft.check("does not exist" in line, line)
        t.ok("exec", "DROP TABLE p")
    finally:
        t.close()


def test_tokens_and_returning():
    t = Tool()
    try:
        now_and_if_absent(t, PG.uri, "text")
        for mode in ("returning", "emulated"):
            if mode == "emulated":
                t.ok("noreturning")
            v0 = int(t.rows("exec", "SELECT v FROM r WHERE k = $1",
                            "t:a")[0][0])
            out = t.ok("wr", "UPDATE r SET v = v + $2 WHERE k = $1",
                       "v, k", "SELECT v, k FROM r WHERE k = $1",
                       "t:a", "i:10")
            ft.check(out == ["ok changes=1 rows=1",
                             "row\t%d\ta" % (v0 + 10)], "%s: %r" % (mode, out))
            out = t.ok("wr", "UPDATE r SET v = v + $2 WHERE k = $1",
                       "v", "SELECT v FROM r WHERE k = $1", "t:zz", "i:10")
            ft.check(out == ["ok changes=0 rows=0"], "%s: %r" % (mode, out))
        # Bytewise order, whatever the database's collation.
        t.ok("exec", "INSERT INTO r VALUES ('B', 0), ('b', 0)")
        keys = [r[0] for r in t.rows("exec", "SELECT k FROM r ORDER BY "
                                     "{binary:k}")]
        ft.check(keys == ["B", "a", "b"], repr(keys))
        t.ok("exec", "DROP TABLE r")
    finally:
        t.close()


def test_session_settings():
    t = Tool()
    try:
        t.ok("open", PG.uri, "300")
        ft.check(t.rows("exec", "SELECT current_setting('application_name'),"
                        " current_setting('statement_timeout'), current_"
                        "setting('idle_in_transaction_session_timeout')")
                 == [["frond", "300ms", "300ms"]], "session settings")
        line = t.err("exec", "SELECT pg_sleep(5)", cls="error")
        ft.check("statement timeout" in line, line)
        # The URI's options reach libpq; they cannot drop the timeout.
        t.ok("open", PG.uri + "?application_name=other&options="
             "-c%20statement_timeout%3D0", "300")
        ft.check(t.rows("exec", "SELECT current_setting('application_name'),"
                        " current_setting('statement_timeout')")
                 == [["other", "300ms"]], "URI options")
    finally:
        t.close()


def pid(t):
    return int(t.rows("exec", "SELECT pg_backend_pid()")[0][0])


def test_terminated_backend():
    """pg_terminate_backend under a connection (db_common's scenario)."""
    t = Tool()
    try:
        dropped_connection(
            t, PG.uri, pid, terminate,
            lambda t: [int(b) for b in PG.sql(
                "SELECT pid FROM pg_stat_activity WHERE application_name = "
                "'frond' AND pid <> %d" % pid(t)).split()])
    finally:
        t.close()


def test_lost_answers():
    """Answers lost after the commit (db_common's scenario)."""
    proxy = Proxy(int(PG.uri.split(":")[2].split("/")[0]))
    t = Tool()
    try:
        lost_answers(t, PG, proxy, proxied(proxy), proxy.arm, proxy.arm,
                     proxy.arm)
    finally:
        t.close()
        proxy.close()


def test_store_order():
    t = Tool()
    try:
        t.ok("store", PG.uri)
        for tag in ("b", "B", "a"):
            t.ok("tag", "order-" + tag, "10", "1")
        tags = [x for x in t.ok("list")[0].split("\t")[1:]
                if x.startswith("order-")]
        ft.check(tags == ["order-B", "order-a", "order-b"], repr(tags))
    finally:
        t.close()


def main():
    global PG
    PG = ft.Postgres()
    try:
        ft.main([test_uri_errors, test_permanent_refusals,
                 test_params_and_nulls,
                 test_tokens_and_returning, test_session_settings,
                 test_terminated_backend, test_lost_answers,
                 test_store_order])
    finally:
        PG.close()


if __name__ == "__main__":
    main()
