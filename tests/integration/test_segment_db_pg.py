#!/usr/bin/env python3
"""
The SQL layer (src/store/db.h) against a real PostgreSQL (scripts/pg.sh,
in a temp dir, stopped after), driven through db_tool: URI errors, typed
parameters and NULLs, the dialect's tokens, RETURNING and its emulation,
the session settings, a backend terminated under an idle connection (the
next statement reconnects; inside a transaction nothing does), and an
answer lost on the wire after the server committed (reported as an
error, never sent again), through a TCP proxy that can cut one answer.
"""
import os
import queue
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402

PG = None


def unescape(cell):
    out, i = [], 0
    while i < len(cell):
        if cell[i] == "\\" and i + 1 < len(cell):
            out.append({"t": "\t", "n": "\n"}.get(cell[i + 1], cell[i + 1]))
            i += 2
        else:
            out.append(cell[i])
            i += 1
    return "".join(out)


class Tool:
    """A running db_tool: cmd() sends one command and returns its answer
    lines (the first is "ok ..." or "err ...")."""

    def __init__(self):
        self.p = subprocess.Popen([ft.tool("db_tool")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _line(self, timeout):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise ft.Failure("db_tool: no answer within %ds" % timeout)
        if line is None:
            raise ft.Failure("db_tool exited")
        return line

    def cmd(self, *fields, timeout=60):
        esc = [str(f).replace("\\", "\\\\").replace("\t", "\\t")
               .replace("\n", "\\n") for f in fields]
        self.p.stdin.write("\t".join(esc) + "\n")
        self.p.stdin.flush()
        first = self._line(timeout)
        out = [first]
        if first.startswith("ok changes="):
            rows = int(first.split("rows=")[1])
            out += [self._line(timeout) for _ in range(rows)]
        return out

    def ok(self, *fields, **kw):
        out = self.cmd(*fields, **kw)
        ft.check(out[0].startswith("ok"), "%s: %s" % (fields[:2], out[0]))
        return out

    def rows(self, *fields):
        """The rows of a statement, cells as text (None for NULL)."""
        return [[None if c == "\\N" else unescape(c)
                 for c in r.split("\t")[1:]] for r in self.ok(*fields)[1:]]

    def err(self, *fields, code="STORE", cls=None):
        line = self.cmd(*fields)[0]
        ft.check(line.startswith("err %s " % code),
                 "%s: expected %s, got %s" % (fields[:2], code, line))
        if cls is not None:
            ft.check(line.split(" ")[2] == cls,
                     "%s: expected class %s: %s" % (fields[:2], cls, line))
        return line

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
            self.p.wait(timeout=30)
        except Exception:
            self.p.kill()
            self.p.wait()


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


class Proxy:
    """A TCP proxy to PostgreSQL that parses the protocol enough to cut
    one answer: after arm(), the answer to the next query ('Q') or execute
    ('E') is held back until the server's ReadyForQuery, then both
    sockets are closed without passing it on. The server has finished
    (committed) by then; the client never learns it."""

    def __init__(self, port):
        self.target = port
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        self.armed = False
        self.cut = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self):
        self.cut.clear()
        self.armed = True

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            s = socket.create_connection(("127.0.0.1", self.target))
            pair = {"cutting": False}
            threading.Thread(target=self._c2s, args=(c, s, pair),
                             daemon=True).start()
            threading.Thread(target=self._s2c, args=(s, c, pair),
                             daemon=True).start()

    @staticmethod
    def _messages(buf, typed):
        """Split complete messages off buf: ([types], rest)."""
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

    def _c2s(self, c, s, pair):
        buf, started = b"", False
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                buf += data
                types, buf = self._messages(buf, started)
                started = started or bool(types)
                if self.armed and (b"Q" in types or b"E" in types):
                    self.armed = False
                    pair["cutting"] = True  # before the server can answer
                s.sendall(data)
        except OSError:
            pass
        for x in (c, s):
            x.close()

    def _s2c(self, s, c, pair):
        buf = b""
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    break
                if not pair["cutting"]:
                    c.sendall(data)
                    continue
                buf += data
                types, buf = self._messages(buf, True)
                if b"Z" in types:
                    break
        except OSError:
            pass
        if pair["cutting"]:
            self.cut.set()
        for x in (c, s):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            x.close()

    def close(self):
        self.ls.close()


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
        # Nothing listens there: a store error with libpq's words.
        port = ft.free_port()
        line = t.err("open", "postgresql://postgres@127.0.0.1:%d/postgres"
                     % port, code="STORE")
        ft.check("postgresql: connect: " in line, line)
        t.ok("open", PG.uri)
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
        t.ok("open", PG.uri)
        now = int(t.rows("exec", "SELECT {now_ms}")[0][0])
        ft.check(abs(now - time.time() * 1000) < 600000,
                 "{now_ms} is %d" % now)
        t.ok("exec", "CREATE TABLE r (k text PRIMARY KEY, v bigint)")
        ins = "INSERT INTO r VALUES ($1, $2) {if_absent:k}"
        ft.check(t.ok("exec", ins, "t:a", "i:100")[0].startswith(
            "ok changes=1"), "first insert")
        ft.check(t.ok("exec", ins, "t:a", "i:5")[0].startswith(
            "ok changes=0"), "insert-if-absent inserted twice")
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
    """pg_terminate_backend under an idle connection: the next statement
    reconnects and runs. Inside a transaction it fails instead, the
    rollback is accepted, and the statement after it reconnects."""
    t = Tool()
    try:
        t.ok("open", PG.uri)
        p1 = pid(t)
        terminate(p1)
        p2 = pid(t)
        ft.check(p2 != p1, "same backend after terminate")
        t.ok("begin")
        terminate(p2)
        line = t.err("exec", "SELECT 1", cls="error")
        ft.check("did not commit" in line, line)
        t.err("commit", cls="error")
        t.ok("rollback")
        ft.check(pid(t) not in (p1, p2), "no new backend")
        # A transaction begun after a termination starts on a new
        # connection; its statements are prepared again there.
        p3 = pid(t)
        terminate(p3)
        t.ok("begin")
        ft.check(pid(t) != p3, "transaction on the terminated backend")
        t.ok("commit")
        # The segment store: the allocation after a terminate succeeds.
        t.ok("store", PG.uri)
        t.ok("tag", "reconnect", "100", "1")
        ft.check(t.ok("alloc", "reconnect", "0")[0] == "ok 101 100", "alloc")
        backends = PG.sql("SELECT pid FROM pg_stat_activity WHERE "
                          "application_name = 'frond' AND pid <> %d"
                          % pid(t)).split()
        for b in backends:
            terminate(int(b))
        ft.check(t.ok("alloc", "reconnect", "0")[0] == "ok 201 100",
                 "alloc after the store's backend was terminated")
    finally:
        t.close()


def test_lost_answers():
    """The server commits, the answer is lost on the wire: the layer
    reports it (class lost) and never sends the statement again."""
    proxy = Proxy(int(PG.uri.split(":")[2].split("/")[0]))
    t = Tool()
    try:
        PG.sql("CREATE TABLE lost (k int PRIMARY KEY, v bigint)")
        PG.sql("INSERT INTO lost VALUES (1, 0)")
        t.ok("open", proxied(proxy))
        # COMMIT of a transaction.
        t.ok("begin")
        t.ok("exec", "UPDATE lost SET v = v + 1 WHERE k = 1")
        proxy.arm()
        line = t.err("commit", cls="lost")
        ft.check(proxy.cut.wait(10), "the proxy cut nothing")
        ft.check("may or may not have committed" in line, line)
        ft.check(PG.sql("SELECT v FROM lost").strip() == "1",
                 "the transaction did not commit on the server")
        # The next statement reconnects through the proxy.
        ft.check(t.rows("exec", "SELECT v FROM lost WHERE k = 1") ==
                 [["1"]], "after the lost commit")
        # A lone write (its own transaction).
        proxy.arm()
        line = t.err("exec", "UPDATE lost SET v = v + 1 WHERE k = 1",
                     cls="lost")
        ft.check("may or may not have taken effect" in line, line)
        ft.check(PG.sql("SELECT v FROM lost").strip() == "2",
                 "the lone write did not commit on the server")
        t.ok("exec", "SELECT 1")
        ft.check(PG.sql("SELECT v FROM lost").strip() == "2",
                 "the write was sent again")
        # An allocation: the lost range is never served; the next one
        # is the range after it.
        t.ok("store", proxied(proxy))
        t.ok("tag", "lost", "10", "1")
        ft.check(t.ok("alloc", "lost", "0")[0] == "ok 11 10", "alloc")
        proxy.arm()
        line = t.err("alloc", "lost", "0")
        ft.check("postgresql: " in line and "lost" in line, line)
        ft.check(PG.sql("SELECT max_id FROM leaf_alloc WHERE biz_tag = "
                        "'lost'").strip() == "21", "the lost allocation")
        ft.check(t.ok("alloc", "lost", "0")[0] == "ok 31 10",
                 "the allocation after a lost one")
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
        ft.main([test_uri_errors, test_params_and_nulls,
                 test_tokens_and_returning, test_session_settings,
                 test_terminated_backend, test_lost_answers,
                 test_store_order])
    finally:
        PG.close()


if __name__ == "__main__":
    main()
