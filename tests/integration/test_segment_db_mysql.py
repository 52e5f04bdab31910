#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The SQL layer (src/store/db.h) against a real MariaDB (scripts/mariadb.sh,
in a temp dir, stopped after), driven through db_tool: the URI (TCP, unix
socket, percent-encoded password, TLS refused where there is none),
typed parameters and NULLs, the dialect's tokens and the RETURNING
emulation, the session settings, a connection KILLed under an idle
connection (the next statement reconnects; inside a transaction nothing
does), answers lost on the wire after the server committed (an error,
never sent again: an allocation leaves a gap, never a duplicate), a
silent server (the answer deadline), and a MyISAM table refused.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from db_common import (Tool, WireProxy, dropped_connection,  # noqa: E402
                       lost_answers, now_and_if_absent)

MY = None

COM_QUERY, COM_STMT_EXECUTE = 0x03, 0x17


class Proxy(WireProxy):
    """The wire proxy (db_common.WireProxy) for MariaDB's packets. It acts
    on a command's first packet: arm(mode, kind="query", text=...) a
    COM_QUERY whose text contains `text`, arm(mode, kind="execute") any
    COM_STMT_EXECUTE. A cut answer is taken as complete 0.2 s after its
    first bytes."""

    def uri(self, extra=""):
        return "mysql://root@127.0.0.1:%d/frond%s" % (self.port, extra)

    def split(self, buf, started):
        """Complete packets off buf: ([(seq, payload)], rest)."""
        packets = []
        while len(buf) >= 4:
            n = int.from_bytes(buf[:3], "little")
            if len(buf) < 4 + n:
                break
            packets.append((buf[3], buf[4:4 + n]))
            buf = buf[4 + n:]
        return packets, buf

    def matches(self, packet, what):
        seq, payload = packet
        if seq != 0:
            return False
        if what.get("kind") == "query":
            return (payload[:1] == bytes([COM_QUERY]) and
                    what.get("text", b"") in payload)
        return payload[:1] == bytes([COM_STMT_EXECUTE])

    def answered(self, buf):
        time.sleep(0.2)  # the rest of the answer, swallowed
        return True, b""


def conn_id(t):
    return int(t.rows("exec", "SELECT CONNECTION_ID()")[0][0])


def kill(cid):
    MY.sql("KILL %d" % cid)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if MY.sql("SELECT COUNT(*) FROM information_schema.processlist "
                  "WHERE id = %d" % cid).strip() == "0":
            return
        time.sleep(0.05)
    raise ft.Failure("connection %d still there after KILL" % cid)


def test_uris_and_logins():
    MY.sql("CREATE USER IF NOT EXISTS 'app'@'127.0.0.1' IDENTIFIED BY "
           "'p@ss:w/rd%'; GRANT ALL ON frond.* TO 'app'@'127.0.0.1'")
    t = Tool()
    try:
        for bad in ("mysql://h/", "mysql://h/db?nope=1", "mysql://h:0/db",
                    "mysql://u:p%zz@h/db"):
            t.err("open", bad, code="STORE_URI")
        port = ft.free_port()
        line = t.err("open", "mysql://root@127.0.0.1:%d/frond" % port,
                     code="STORE")
        ft.check("mysql: connect: " in line, line)
        # What retrying cannot fix: permanent, by the error number.
        line = t.err("open", "mysql://app:wrong@127.0.0.1:%d/frond" % MY.port,
                     code="STORE_PERMANENT")
        ft.check("Access denied" in line and "wrong" not in line and
                 "error 1045" in line, line)
        line = t.err("open", "mysql://root@127.0.0.1:%d/no_such_db" % MY.port,
                     code="STORE_PERMANENT")
        ft.check("error 1049" in line, line)
        line = t.err("open", "mysql://nobody@127.0.0.1:%d/frond" % MY.port,
                     code="STORE_PERMANENT")
        ft.check("Access denied" in line, line)
        # The password percent-encoded, over TCP.
        out = t.ok("open", "mariadb://app:p%40ss%3Aw%2Frd%25@127.0.0.1:" +
                   str(MY.port) + "/frond")
        ft.check(out == ["ok mysql"], out)
        ft.check(t.rows("exec", "SELECT CURRENT_USER()") ==
                 [["app@127.0.0.1"]], "user")
        # The unix socket: no host, root@localhost.
        t.ok("open", "mysql://root@/frond?socket=%s" % MY.socket)
        ft.check(t.rows("exec", "SELECT CURRENT_USER()") ==
                 [["root@localhost"]], "user over the socket")
        # socket= wins over a host and port: nothing listens on port 1.
        t.ok("open", "mysql://root@127.0.0.1:1/frond?socket=%s" % MY.socket)
        ft.check(t.rows("exec", "SELECT CURRENT_USER()") ==
                 [["root@localhost"]], "socket with a host")
        # No TLS on this server: required is refused, preferred goes plain.
        line = t.err("open", MY.uri + "?ssl-mode=REQUIRED", code="STORE")
        ft.check("SSL" in line or "TLS" in line, line)
        t.ok("open", MY.uri + "?ssl-mode=preferred&connect_timeout=3")
        t.ok("open", MY.uri + "?ssl-mode=DISABLED")
    finally:
        t.close()


def test_params_and_nulls():
    t = Tool()
    try:
        t.ok("open", MY.uri)
        t.ok("exec", "CREATE TABLE p (k bigint PRIMARY KEY, s text, "
             "n bigint)")
        odd = "it's \"$1\" {now_ms} \u00e9 \\ \t tab \U0001F600"
        out = t.ok("exec", "INSERT INTO p VALUES ($1, $2, $3)",
                   "i:-9223372036854775808", "t:" + odd, "n")
        ft.check(out[0] == "ok changes=1 rows=0", out[0])
        t.ok("exec", "INSERT INTO p VALUES ($1, $2, $3)",
             "i:9223372036854775807", "t:" + "x" * 1000, "i:-7")
        rows = t.rows("exec", "SELECT k, s, n FROM p ORDER BY k")
        ft.check(rows == [["-9223372036854775808", odd, None],
                          ["9223372036854775807", "x" * 1000, "-7"]],
                 repr(rows))
        # A parameter reused; positional binding in occurrence order.
        rows = t.rows("exec", "SELECT $2 - $1, $1 + 1, $1 * 2 = $2",
                      "i:5000000000", "i:10000000000")
        ft.check(rows == [["5000000000", "5000000001", "1"]], repr(rows))
        rows = t.rows("exec", "SELECT coalesce($1, 3) + 1", "n")
        ft.check(rows == [["4"]], repr(rows))
        # An UPDATE to the same value counts the row (CLIENT_FOUND_ROWS).
        out = t.ok("exec", "UPDATE p SET n = n WHERE k = $1", "i:-7")
        ft.check(out[0] == "ok changes=0 rows=0", out[0])
        out = t.ok("exec", "UPDATE p SET n = n WHERE k = $1",
                   "i:9223372036854775807")
        ft.check(out[0] == "ok changes=1 rows=0", out[0])
        ft.check(t.ok("exec", "SELECT k FROM p")[0] ==
                 "ok changes=0 rows=2", "changes of a SELECT")
        line = t.err("exec", "INSERT INTO p VALUES ($1, $2, $3)",
                     "i:9223372036854775807", "t:x", "n", cls="unique")
        ft.check("mysql: insert: Duplicate entry" in line
                 and "error 1062" in line, line)
        # Strict: out of range fails, never clips.
        t.ok("exec", "CREATE TABLE q (v int)")
        t.err("exec", "INSERT INTO q VALUES ($1)", "i:5000000000",
              cls="error")
        # Standard strings: '\\' is a backslash, || concatenates.
        ft.check(t.rows("exec", "SELECT 'a\\b' || 'c'") == [["a\\bc"]],
                 "sql_mode")
        t.err("exec", "SELECT * FROM nope", cls="error")
        t.ok("exec", "DROP TABLE p")
        t.ok("exec", "DROP TABLE q")
    finally:
        t.close()


def test_tokens_and_emulation():
    t = Tool()
    try:
        ins = now_and_if_absent(t, MY.uri, "varchar(20)")
        # Inside a transaction the duplicate leaves it usable.
        t.ok("begin")
        ft.check(t.ok("exec", ins, "t:a", "i:6")[0].startswith(
            "ok changes=0"), "in a transaction")
        t.ok("exec", ins, "t:c", "i:7")
        t.ok("commit")
        ft.check(t.rows("exec", "SELECT k, v FROM r ORDER BY k") ==
                 [["a", "100"], ["c", "7"]], "rows after the transaction")
        out = t.ok("wr", "UPDATE r SET v = v + $2 WHERE k = $1", "v, k",
                   "SELECT v, k FROM r WHERE k = $1", "t:a", "i:10")
        ft.check(out == ["ok changes=1 rows=1", "row\t110\ta"], out)
        out = t.ok("wr", "UPDATE r SET v = v + $2 WHERE k = $1", "v",
                   "SELECT v FROM r WHERE k = $1", "t:zz", "i:10")
        ft.check(out == ["ok changes=0 rows=0"], out)
        # Bytewise order, whatever the collation (case-insensitive here).
        t.ok("exec", "INSERT INTO r VALUES ('B', 0), ('b2', 0)")
        keys = [r[0] for r in t.rows("exec", "SELECT k FROM r ORDER BY "
                                     "{binary:k}")]
        ft.check(keys == ["B", "a", "b2", "c"], repr(keys))
        t.ok("begin")
        ft.check(t.rows("exec", "SELECT v FROM r WHERE k = $1{for_update}",
                        "t:c") == [["7"]], "for_update")
        t.ok("commit")
        t.ok("exec", "DROP TABLE r")
    finally:
        t.close()


def test_session_settings():
    t = Tool()
    holder = None
    try:
        t.ok("open", MY.uri, "1000")
        rows = t.rows("exec", "SELECT @@tx_isolation, @@time_zone, "
                      "@@innodb_lock_wait_timeout, @@max_statement_time, "
                      "@@autocommit")
        ft.check(rows == [["READ-COMMITTED", "+00:00", "1", "1.000000",
                           "1"]], repr(rows))
        mode = t.rows("exec", "SELECT @@sql_mode")[0][0].split(",")
        for m in ("ANSI_QUOTES", "PIPES_AS_CONCAT", "NO_BACKSLASH_ESCAPES",
                  "STRICT_ALL_TABLES"):
            ft.check(m in mode, "sql_mode %s" % mode)
        t0 = time.monotonic()
        line = t.err("exec", "SELECT SLEEP(5)", cls="error")
        ft.check("1969" in line and time.monotonic() - t0 < 4.5,
                 "statement timeout: %s" % line)
        # A row lock held elsewhere: the lock wait ends with an error.
        MY.sql("CREATE TABLE IF NOT EXISTS lk (k int PRIMARY KEY, v int); "
               "INSERT IGNORE INTO lk VALUES (1, 0)")
        holder = MY.connect()
        holder.cursor().execute("SELECT v FROM lk WHERE k = 1 FOR UPDATE")
        t0 = time.monotonic()
        line = t.err("exec", "UPDATE lk SET v = v + 1 WHERE k = 1",
                     cls="error")
        ft.check(time.monotonic() - t0 < 10, "the lock wait was not bounded")
        ft.check("1205" in line or "1969" in line, line)
    finally:
        if holder:
            holder.rollback()
            holder.close()
        t.close()


def test_killed_connection():
    """KILL under a connection (db_common's scenario), then a restart of
    the server between two allocations."""
    t = Tool()
    try:
        dropped_connection(
            t, MY.uri, conn_id, kill,
            lambda t: [int(c) for c in MY.sql(
                "SELECT id FROM information_schema.processlist WHERE user = "
                "'root' AND db = 'frond' AND id <> %d AND command = 'Sleep'"
                % conn_id(t)).split()])
        MY.stop()
        MY.start()
        ft.check(t.ok("alloc", "reconnect", "0")[0] == "ok 301 100",
                 "alloc after a server restart")
    finally:
        t.close()


def test_lost_answers():
    """Answers lost after the commit (db_common's scenario). An allocation
    is UPDATE, SELECT, COMMIT: its COMMIT's answer is the one lost."""
    proxy = Proxy(MY.port)
    t = Tool()
    try:
        def commit():
            proxy.arm(kind="query", text=b"COMMIT")
        lost_answers(t, MY, proxy, proxy.uri(), commit,
                     lambda: proxy.arm(kind="execute"), commit)
    finally:
        t.close()
        proxy.close()


def test_silent_server():
    """The server says nothing after a statement: the answer deadline
    closes the connection (class lost) in its time, and the next
    statement runs on a new connection."""
    proxy = Proxy(MY.port)
    t = Tool()
    try:
        MY.sql("CREATE TABLE IF NOT EXISTS quiet (k int PRIMARY KEY)")
        t.ok("open", proxy.uri(), "10000", "2000", "700")
        t.ok("exec", "SELECT 1")
        proxy.arm("hold", kind="execute")
        t0 = time.monotonic()
        line = t.err("exec", "INSERT INTO quiet VALUES ($1)", "i:1",
                     cls="lost")
        took = time.monotonic() - t0
        ft.check("no answer within 700 ms" in line, line)
        ft.check(0.6 < took < 5, "gave up after %.2fs" % took)
        # A shorter deadline for one statement, then the default again.
        t.ok("answer", "300")
        proxy.arm("hold", kind="execute")
        t0 = time.monotonic()
        line = t.err("exec", "SELECT 2 FROM DUAL WHERE $1 = 1", "i:1",
                     cls="lost")
        ft.check("no answer within 300 ms" in line and
                 time.monotonic() - t0 < 3, line)
        t.ok("answer", "0")
        ft.check(t.rows("exec", "SELECT 3") == [["3"]], "after a silence")
    finally:
        t.close()
        proxy.close()


def test_tables():
    """leaf_alloc is made by Leaf's own DDL; a MyISAM table is refused;
    tags in bytewise order."""
    t = Tool()
    try:
        MY.sql("DROP TABLE IF EXISTS leaf_alloc")
        t.ok("store", MY.uri)
        ddl = MY.sql("SHOW CREATE TABLE leaf_alloc")
        for part in ("`biz_tag` varchar(128) NOT NULL DEFAULT ''",
                     "`max_id` bigint(20) NOT NULL DEFAULT 1",
                     "`step` int(11) NOT NULL",
                     "`description` varchar(256) DEFAULT NULL",
                     "ON UPDATE current_timestamp()",
                     "PRIMARY KEY (`biz_tag`)", "ENGINE=InnoDB"):
            ft.check(part in ddl, "%s not in %s" % (part, ddl))
        for tag in ("b", "B2", "a"):
            t.ok("tag", "order-" + tag, "10", "1")
        tags = [x for x in t.ok("list")[0].split("\t")[1:]
                if x.startswith("order-")]
        ft.check(tags == ["order-B2", "order-a", "order-b"], repr(tags))
        MY.sql("ALTER TABLE leaf_alloc ENGINE=MyISAM")
        line = t.err("store", MY.uri, code="STORE")
        ft.check("MyISAM" in line and "ENGINE=InnoDB" in line, line)
        MY.sql("ALTER TABLE leaf_alloc ENGINE=InnoDB")
        t.ok("store", MY.uri)
    finally:
        t.close()


def main():
    global MY
    MY = ft.MariaDB()
    try:
        ft.main([test_uris_and_logins, test_params_and_nulls,
                 test_tokens_and_emulation, test_session_settings,
                 test_killed_connection, test_lost_answers,
                 test_silent_server, test_tables])
    finally:
        MY.close()


if __name__ == "__main__":
    main()
