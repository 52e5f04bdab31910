# SPDX-License-Identifier: Apache-2.0
"""
What the SQL layer's suites share, one per engine (test_segment_db_pg.py,
test_segment_db_mysql.py): Tool, which drives tests/tools/db_tool; a
wire proxy that can cut or swallow one answer, the engine's framing in a
subclass; and the scenarios whose steps are the same on every engine (a
connection dropped by the server, answers lost after the commit).
"""
import queue
import socket
import subprocess
import threading
import time

import frondtest as ft


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


class WireProxy:
    """A TCP proxy to a database server that reads the protocol enough to
    act on one command. After arm(mode, **what), the next command the
    subclass's matches() accepts is passed on, and its answer is
      "cut":  held back until the server has sent it (the subclass's
              answered()), then both sockets are closed: the server has
              finished (committed), the client never learns it;
      "hold": swallowed, the connection left open: a silent server.
    done is set once an armed answer was cut or swallowed.

    Subclasses give split(buf, started): the complete client messages at
    the start of buf as (messages, rest), started saying whether the
    connection's first message has gone; matches(message, what); and
    answered(buf): (whether the armed answer is complete, rest)."""

    def __init__(self, port):
        self.target = port
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.port = self.ls.getsockname()[1]
        self.armed = None
        self.done = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, mode="cut", **what):
        self.done.clear()
        self.armed = (mode, what)

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

    def _c2s(self, c, s, pair):
        buf, started = b"", False
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                buf += data
                messages, buf = self.split(buf, started)
                started = started or bool(messages)
                armed = self.armed
                if armed and any(self.matches(m, armed[1]) for m in messages):
                    self.armed = None
                    pair["mode"] = armed[0]  # before the server can answer
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
                if pair["mode"] is None:
                    c.sendall(data)
                elif pair["mode"] == "cut":
                    buf += data
                    complete, buf = self.answered(buf)
                    if complete:
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


def now_and_if_absent(t, uri, key_type):
    """The dialect's first tokens: {now_ms} is the server's clock in ms;
    {if_absent:k} makes an INSERT of an existing key change nothing. Leaves
    a table r (k key_type PRIMARY KEY, v bigint) holding ('a', 100)."""
    t.ok("open", uri)
    now = int(t.rows("exec", "SELECT {now_ms}")[0][0])
    ft.check(abs(now - time.time() * 1000) < 600000, "{now_ms} is %d" % now)
    t.ok("exec", "CREATE TABLE r (k %s PRIMARY KEY, v bigint)" % key_type)
    ins = "INSERT INTO r VALUES ($1, $2) {if_absent:k}"
    ft.check(t.ok("exec", ins, "t:a", "i:100")[0].startswith("ok changes=1"),
             "first insert")
    ft.check(t.ok("exec", ins, "t:a", "i:5")[0].startswith("ok changes=0"),
             "insert-if-absent inserted twice")
    return ins


def dropped_connection(t, uri, conn_id, drop, others):
    """The server drops a connection (PostgreSQL's pg_terminate_backend,
    MariaDB's KILL) under an idle connection: the next statement
    reconnects and runs. Inside a transaction it fails instead, the
    rollback is accepted, and the statement after it reconnects. Then the
    segment store: an allocation after its connection was dropped.
    conn_id(t): the server's id of t's connection; drop(id) returns once
    it is gone; others(t): the ids of the store's other connections."""
    t.ok("open", uri)
    c1 = conn_id(t)
    drop(c1)
    c2 = conn_id(t)
    ft.check(c2 != c1, "same connection after it was dropped")
    t.ok("begin")
    drop(c2)
    line = t.err("exec", "SELECT 1", cls="error")
    ft.check("did not commit" in line, line)
    t.err("commit", cls="error")
    t.ok("rollback")
    ft.check(conn_id(t) not in (c1, c2), "no new connection")
    # A transaction begun after a drop starts on a new connection; its
    # statements are prepared again there.
    c3 = conn_id(t)
    drop(c3)
    t.ok("begin")
    ft.check(conn_id(t) != c3, "transaction on the dropped connection")
    t.ok("commit")
    t.ok("store", uri)
    t.ok("tag", "reconnect", "100", "1")
    ft.check(t.ok("alloc", "reconnect", "0")[0] == "ok 101 100", "alloc")
    for c in others(t):
        drop(c)
    ft.check(t.ok("alloc", "reconnect", "0")[0] == "ok 201 100",
             "alloc after the store's connection was dropped")


def lost_answers(t, db, proxy, uri, arm_commit, arm_write, arm_alloc):
    """The server commits, the answer is lost on the wire: the layer
    reports it (class lost) and never sends the statement again; a lost
    allocation is a gap, never served twice. db: the server (sql());
    proxy: its WireProxy, reached through uri; arm_*(): arm the proxy to
    cut the answer to a COMMIT, to a lone write, to an allocation."""
    db.sql("CREATE TABLE lost (k int PRIMARY KEY, v bigint)")
    db.sql("INSERT INTO lost VALUES (1, 0)")
    t.ok("open", uri)
    # COMMIT of a transaction.
    t.ok("begin")
    t.ok("exec", "UPDATE lost SET v = v + 1 WHERE k = 1")
    arm_commit()
    line = t.err("commit", cls="lost")
    ft.check(proxy.done.wait(10), "the proxy cut nothing")
    ft.check("may or may not have committed" in line, line)
    ft.check(db.sql("SELECT v FROM lost").strip() == "1",
             "the transaction did not commit on the server")
    # The next statement reconnects through the proxy.
    ft.check(t.rows("exec", "SELECT v FROM lost WHERE k = 1") == [["1"]],
             "after the lost commit")
    # A lone write (its own transaction).
    arm_write()
    line = t.err("exec", "UPDATE lost SET v = v + 1 WHERE k = 1", cls="lost")
    ft.check("may or may not have taken effect" in line, line)
    ft.check(db.sql("SELECT v FROM lost").strip() == "2",
             "the lone write did not commit on the server")
    t.ok("exec", "SELECT 1")
    ft.check(db.sql("SELECT v FROM lost").strip() == "2",
             "the write was sent again")
    # An allocation: the lost range is never served; the next one is the
    # range after it.
    t.ok("store", uri)
    t.ok("tag", "lost", "10", "1")
    ft.check(t.ok("alloc", "lost", "0")[0] == "ok 11 10", "alloc")
    arm_alloc()
    line = t.err("alloc", "lost", "0")
    ft.check("may or may not" in line, line)
    ft.check(db.sql("SELECT max_id FROM leaf_alloc WHERE biz_tag = "
                    "'lost'").strip() == "21", "the lost allocation")
    ft.check(t.ok("alloc", "lost", "0")[0] == "ok 31 10",
             "the allocation after a lost one")
