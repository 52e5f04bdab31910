#!/usr/bin/env python3
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
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from test_segment_db_pg import Tool  # noqa: E402

MY = None

COM_QUERY, COM_STMT_EXECUTE = 0x03, 0x17


class Proxy:
    """A TCP proxy to MariaDB that reads the protocol's packet framing
    enough to act on one command. arm(kind, text): the next command of
    that kind (COM_QUERY whose text contains `text`, or any
    COM_STMT_EXECUTE) is passed on, and its answer is
      "cut":  held back until the server has sent it, then both sockets
              are closed: the server has finished (committed), the client
              never learns it;
      "hold": swallowed, the connection left open: a silent server."""

    def __init__(self, port):
        self.target = port
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.port = self.ls.getsockname()[1]
        self.armed = None
        self.done = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, kind, mode="cut", text=b""):
        self.done.clear()
        self.armed = (kind, mode, text)

    def uri(self, extra=""):
        return "mysql://root@127.0.0.1:%d/frond%s" % (self.port, extra)

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            s = socket.create_connection(("127.0.0.1", self.target))
            pair = {"mode": None}
            threading.Thread(target=self._c2s, args=(c, s, pair),
                             daemon=True).start()
            threading.Thread(target=self._s2c, args=(s, c, pair),
                             daemon=True).start()

    def _matches(self, payload):
        kind, mode, text = self.armed
        if kind == "query":
            return payload[:1] == bytes([COM_QUERY]) and text in payload
        return payload[:1] == bytes([COM_STMT_EXECUTE])

    def _c2s(self, c, s, pair):
        buf = b""
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                buf += data
                while len(buf) >= 4:
                    n = int.from_bytes(buf[:3], "little")
                    if len(buf) < 4 + n:
                        break
                    seq, payload = buf[3], buf[4:4 + n]
                    buf = buf[4 + n:]
                    if seq == 0 and self.armed and self._matches(payload):
                        pair["mode"] = self.armed[1]
                        self.armed = None
                s.sendall(data)
        except OSError:
            pass
        for x in (c, s):
            x.close()

    def _s2c(self, s, c, pair):
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    break
                if pair["mode"] is None:
                    c.sendall(data)
                    continue
                if pair["mode"] == "cut":
                    time.sleep(0.2)  # the rest of the answer, swallowed
                    break
                # hold: swallow everything, say nothing
        except OSError:
            pass
        if pair["mode"] is not None:
            self.done.set()
        for x in (c, s):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            x.close()

    def close(self):
        self.ls.close()


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
        line = t.err("open", "mysql://app:wrong@127.0.0.1:%d/frond" % MY.port,
                     code="STORE")
        ft.check("Access denied" in line and "wrong" not in line, line)
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
        t.ok("open", MY.uri)
        now = int(t.rows("exec", "SELECT {now_ms}")[0][0])
        ft.check(abs(now - time.time() * 1000) < 600000,
                 "{now_ms} is %d" % now)
        t.ok("exec", "CREATE TABLE r (k varchar(20) PRIMARY KEY, v bigint)")
        ins = "INSERT INTO r VALUES ($1, $2) {if_absent:k}"
        ft.check(t.ok("exec", ins, "t:a", "i:100")[0].startswith(
            "ok changes=1"), "first insert")
        ft.check(t.ok("exec", ins, "t:a", "i:5")[0].startswith(
            "ok changes=0"), "insert-if-absent inserted twice")
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
    """KILL under an idle connection: the next statement reconnects and
    runs. Inside a transaction it fails instead, the rollback is accepted,
    and the statement after it reconnects."""
    t = Tool()
    try:
        t.ok("open", MY.uri)
        c1 = conn_id(t)
        kill(c1)
        c2 = conn_id(t)
        ft.check(c2 != c1, "same connection after KILL")
        t.ok("begin")
        kill(c2)
        line = t.err("exec", "SELECT 1", cls="error")
        ft.check("did not commit" in line, line)
        t.err("commit", cls="error")
        t.ok("rollback")
        ft.check(conn_id(t) not in (c1, c2), "no new connection")
        # A transaction begun after a KILL starts on a new connection;
        # its statements are prepared again there.
        c3 = conn_id(t)
        kill(c3)
        t.ok("begin")
        ft.check(conn_id(t) != c3, "transaction on the killed connection")
        t.ok("commit")
        # The segment store: the allocation after a KILL succeeds.
        t.ok("store", MY.uri)
        t.ok("tag", "reconnect", "100", "1")
        ft.check(t.ok("alloc", "reconnect", "0")[0] == "ok 101 100", "alloc")
        for cid in MY.sql("SELECT id FROM information_schema.processlist "
                          "WHERE user = 'root' AND db = 'frond' AND id <> %d "
                          "AND command = 'Sleep'" % conn_id(t)).split():
            kill(int(cid))
        ft.check(t.ok("alloc", "reconnect", "0")[0] == "ok 201 100",
                 "alloc after the store's connection was killed")
        # A restart of the server between two allocations.
        MY.stop()
        MY.start()
        ft.check(t.ok("alloc", "reconnect", "0")[0] == "ok 301 100",
                 "alloc after a server restart")
    finally:
        t.close()


def test_lost_answers():
    """The server commits, the answer is lost on the wire: the layer
    reports it (class lost) and never sends the statement again; a lost
    allocation is a gap, never served twice."""
    proxy = Proxy(MY.port)
    t = Tool()
    try:
        MY.sql("CREATE TABLE lost (k int PRIMARY KEY, v bigint); "
               "INSERT INTO lost VALUES (1, 0)")
        t.ok("open", proxy.uri())
        t.ok("begin")
        t.ok("exec", "UPDATE lost SET v = v + 1 WHERE k = 1")
        proxy.arm("query", text=b"COMMIT")
        line = t.err("commit", cls="lost")
        ft.check(proxy.done.wait(10), "the proxy cut nothing")
        ft.check("may or may not have committed" in line, line)
        ft.check(MY.sql("SELECT v FROM lost").strip() == "1",
                 "the transaction did not commit on the server")
        ft.check(t.rows("exec", "SELECT v FROM lost WHERE k = 1") ==
                 [["1"]], "after the lost commit")
        # A lone write (its own transaction).
        proxy.arm("execute")
        line = t.err("exec", "UPDATE lost SET v = v + 1 WHERE k = 1",
                     cls="lost")
        ft.check("may or may not have taken effect" in line, line)
        ft.check(MY.sql("SELECT v FROM lost").strip() == "2",
                 "the lone write did not commit on the server")
        t.ok("exec", "SELECT 1")
        ft.check(MY.sql("SELECT v FROM lost").strip() == "2",
                 "the write was sent again")
        # An allocation (UPDATE, SELECT, COMMIT): COMMIT's answer lost.
        t.ok("store", proxy.uri())
        t.ok("tag", "lost", "10", "1")
        ft.check(t.ok("alloc", "lost", "0")[0] == "ok 11 10", "alloc")
        proxy.arm("query", text=b"COMMIT")
        line = t.err("alloc", "lost", "0")
        ft.check("mysql: " in line and "may or may not" in line, line)
        ft.check(MY.sql("SELECT max_id FROM leaf_alloc WHERE biz_tag = "
                        "'lost'").strip() == "21", "the lost allocation")
        ft.check(t.ok("alloc", "lost", "0")[0] == "ok 31 10",
                 "the allocation after a lost one")
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
        proxy.arm("execute", mode="hold")
        t0 = time.monotonic()
        line = t.err("exec", "INSERT INTO quiet VALUES ($1)", "i:1",
                     cls="lost")
        took = time.monotonic() - t0
        ft.check("no answer within 700 ms" in line, line)
        ft.check(0.6 < took < 5, "gave up after %.2fs" % took)
        # A shorter deadline for one statement, then the default again.
        t.ok("answer", "300")
        proxy.arm("execute", mode="hold")
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
