#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_coord_fence.py -- the fence rule under partitions, restarts and
shared directories.

A node never issues an ID whose time is above a fence already durable where
any later holder of its node ID reads it. Each test builds one situation in
which two holders of one node ID could overlap, and counts duplicates:

  - a lease holder cut off from PostgreSQL (a TCP proxy that swallows every
    byte) while a successor takes the row over;
  - a lease holder taking its row back from a successor that wrote fences:
    the answer to its take lost on the wire, or its take held up while the
    successor, its lease run out, wrote fences again;
  - a ZooKeeper node cut off for longer than its session while a process
    with the same ip:port takes the ID;
  - a restart right after a burst that borrowed ahead of the clock;
  - a server killed with SIGKILL and started once, as a supervisor would;
  - three servers started together in one working directory.

Every wait is bounded; servers run on free loopback ports in temp dirs.
"""
import json
import os
import select
import shutil
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import (ZK_FAST as FAST, ZooKeeper, serve,  # noqa: E402
                       wait_serving)
from coord_common import (Tool, lease_mariadb, lease_postgres,  # noqa: E402
                          lease_sqlite)

# 16 IDs per ms: a node borrows a whole second ahead with 16,000 IDs.
SMALL = "time=49,node=10,seq=4"


class Proxy:
    """A TCP relay on a free loopback port to `target` (host, port).
    blackhole() makes it hold every byte in both directions without
    closing anything: to both ends the link is silent, as in a partition.
    """

    def __init__(self, target):
        self.target = target
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.silent = threading.Event()
        self.stopping = threading.Event()
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping.is_set():
            r, _, _ = select.select([self.sock], [], [], 0.1)
            if not r:
                continue
            try:
                a, _ = self.sock.accept()
                b = socket.create_connection(self.target, timeout=5)
            except OSError:
                continue
            self.conns += [a, b]
            threading.Thread(target=self._pump, args=(a, b),
                             daemon=True).start()

    def _pump(self, a, b):
        peer = {a: b, b: a}
        try:
            while not self.stopping.is_set():
                r, _, _ = select.select([a, b], [], [], 0.1)
                if self.silent.is_set():
                    continue  # leave the bytes in the kernel's buffers
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        return
                    peer[s].sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass

    def blackhole(self):
        self.silent.set()

    def close(self):
        self.stopping.set()
        self.sock.close()


class TextProxy:
    """A TCP relay on a free loopback port to a database on `port` that
    acts on the client's bytes, chunk by chunk (a statement is prepared in
    one round trip and run in the next):
      refuse()    close every connection and refuse new ones: a partition
                  that fails at once;
      cut(text, then=None)
                  pass the chunk that holds text (the statement prepared)
                  and the next one (its run; with then, the next one that
                  holds then: the COMMIT of the statement's transaction),
                  then close both sides once the server answered: the
                  server ran it, the client never learns how it went;
      hold(text)  pass the chunk that holds text and keep the next one
                  back, the connection open, until release();
      heal()      pass everything again.
    `acted` is set once a cut or a hold took effect."""

    def __init__(self, port):
        self.target = port
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.lock = threading.Lock()
        self.mode, self.text, self.then = "pass", b"", None
        self.acted = threading.Event()
        self.released = threading.Event()
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _set(self, mode, text=""):
        with self.lock:
            self.mode, self.text = mode, text.encode()

    def refuse(self):
        self._set("refuse")
        for c in list(self.conns):
            self._close(c)

    def heal(self):
        self._set("pass")

    def cut(self, text, then=None):
        self.acted.clear()
        self._set("cut", text)
        self.then = then.encode() if then else None

    def hold(self, text):
        self.acted.clear()
        self.released.clear()
        self._set("hold", text)

    def release(self):
        self.released.set()

    @staticmethod
    def _close(pair):
        for x in pair:
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            x.close()

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            if self.mode == "refuse":
                c.close()
                continue
            try:
                s = socket.create_connection(("127.0.0.1", self.target), 5)
                s.settimeout(None)  # a held statement waits as long as asked
            except OSError:
                c.close()
                continue
            pair = (c, s)
            self.conns.append(pair)
            state = {"cut": False}
            threading.Thread(target=self._c2s, args=(pair, state),
                             daemon=True).start()
            threading.Thread(target=self._s2c, args=(pair, state),
                             daemon=True).start()

    def _c2s(self, pair, state):
        c, s = pair
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                with self.lock:
                    mode, text = self.mode, self.text
                    if mode in ("cut", "hold") and text in data:
                        self.mode = mode + "next"
                    elif mode == "cutnext" and (self.then is None or
                                                self.then in data):
                        self.mode = "pass"
                        state["cut"] = True  # before the server answers
                    elif mode == "holdnext":
                        self.mode = "pass"
                if mode == "refuse":
                    break
                if mode == "holdnext":
                    self.acted.set()
                    self.released.wait(120)
                s.sendall(data)
        except OSError:
            pass
        self._close(pair)

    def _s2c(self, pair, state):
        c, s = pair
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    break
                if state["cut"]:
                    self.acted.set()  # the server answered: it ran
                    break
                c.sendall(data)
        except OSError:
            pass
        self._close(pair)

    def close(self):
        self.released.set()
        self.ls.close()
        for c in list(self.conns):
            self._close(c)


def row0(uri):
    """Node 0's lease row now: {"live": ..., "fence_ms": ...}."""
    r = ft.run(["node", "list", "--coordinator", uri, "--json"], timeout=30)
    ft.check(r.returncode == 0, "frond node list: %s" % r.stderr)
    rows = [x for x in json.loads(r.stdout) if x["node"] == 0]
    ft.check(len(rows) == 1, "no row for node 0: %s" % r.stdout)
    return rows[0]


def row_live(uri):
    """Whether a live process holds node 0's lease row now."""
    return row0(uri)["live"]


def wait_for(cond, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise ft.Failure("%s: not within %ds" % (what, timeout))


def take_over(db, lease, r_ids, name, held):
    """R holds node 0 through a proxy and issues; the proxy refuses it,
    R's lease runs out and T takes the row directly (borrowing far ahead:
    max_ahead 4 s). Returns (proxy, R, T, uri); R's IDs go to r_ids; what
    was started goes to held (proxy first) as it starts."""
    host_port = db.base.split("@")[1].split("/")[0]
    proxy = TextProxy(int(host_port.rsplit(":", 1)[1]))
    held.append(proxy)
    via = "lease+%s?%s" % (db.base.replace(host_port, "127.0.0.1:%d"
                                           % proxy.port), lease)
    r = Tool(via + "&connect_ms=60000", port=1, layout=SMALL)
    held.append(r)
    ft.check(r.ok and r.node == 0, "R: %s" % r.first)
    ft.check(r.cmd("run 300 %s 16" % r_ids).startswith("ran"), "R's run")
    proxy.refuse()
    uri = db.uri(lease)
    wait_for(lambda: not row_live(uri), "%s: R's lease ran out" % name)
    t = Tool(uri, port=2, layout=SMALL, extra=["--max-ahead-ms", "4000"])
    held.append(t)
    ft.check(t.ok and t.node == 0, "T: %s" % t.first)
    return proxy, r, t, uri


def let_go(held):
    """Stop what take_over started."""
    for x in held[1:]:
        if x.ok and x.p.poll() is None:
            x.p.send_signal(signal.SIGCONT)
            x.kill()
    if held:
        held[0].close()


TAKE = "UPDATE frond_node SET owner"
LEASE_RT = "lease_ms=1500&report_ms=200&nodes=1"


def both_apart(r, r_ids, t_ids, when, name):
    """R's run (started before) issued something, and no ID of R's file
    is in T's."""
    res = r.readline(60).split()
    # R's take and first fence on a short lease (1.5 s: each write has
    # half a second) can take longer than its run on a machine loaded past
    # its cores: its calls then wait (NODE_ID_LOST, COORD) and it runs
    # again, appending to the same file, for up to a minute. Whatever it
    # issues is checked.
    deadline = time.monotonic() + 60
    while res[0] == "ran" and int(res[1]) == 0 and \
            res[3] in ("NODE_ID_LOST", "COORD") and \
            time.monotonic() < deadline:
        res = r.cmd("run 6000 %s 16" % r_ids, 60).split()
    ft.check(res[0] == "ran" and int(res[1]) > 0,
             "R issued nothing %s: %s; its log ends:\n%s"
             % (when, res, r.log_tail()))
    ir, it = ids_of(r_ids), ids_of(t_ids)
    dup = duplicates(ir, it)
    print("regain, %s: R %d IDs, T %d IDs, %d duplicates"
          % (name, len(ir), len(it), dup), flush=True)
    ft.check(dup == 0, "%d IDs issued by both holders" % dup)


def lease_regain_answer_lost(make, then=None):
    """R takes its row back from T, which borrowed ahead and was killed;
    the answer to R's take is lost on the wire, so R learns only on a
    retry that the row is its own. R must resume above T's fence."""
    db = make()
    d = ft.tempdir("frond-fence-")
    held = []
    try:
        fr, ft_ = os.path.join(d, "r.ids"), os.path.join(d, "t.ids")
        proxy, r, t, uri = take_over(db, LEASE_RT, fr, "answer lost", held)
        ft.check(t.cmd("run 1500 %s 16" % ft_, 30).startswith("ran"),
                 "T's run")
        t.kill()
        start_run(r, 8000, fr, 16)
        proxy.cut(TAKE, then)  # and the partition heals
        ft.check(proxy.acted.wait(60), "R's take never went through the "
                 "proxy")
        both_apart(r, fr, ft_, "after the cut", "answer lost")
    finally:
        let_go(held)
        db.cleanup()
        shutil.rmtree(d, ignore_errors=True)


def lease_regain_take_held(make):
    """R reads T's row (T paused, its lease run out) to take it back, and
    its take is held up on the wire; T wakes, renews and borrows ahead,
    then dies; R's take goes through once T's lease ran out again. R must
    resume above the fence T wrote while the take was held, which only
    the take itself can read (MySQL: its emulation of RETURNING, in the
    take's transaction)."""
    db = make()
    d = ft.tempdir("frond-fence-")
    held = []
    try:
        fr, ft_ = os.path.join(d, "r.ids"), os.path.join(d, "t.ids")
        proxy, r, t, uri = take_over(db, LEASE_RT, fr, "take held", held)
        ft.check(t.cmd("next 100").startswith("ids"), "T issues")
        t.p.send_signal(signal.SIGSTOP)
        wait_for(lambda: not row_live(uri), "T's lease ran out")
        proxy.hold(TAKE)  # and the partition heals
        ft.check(proxy.acted.wait(60), "R's take was never held")
        # Until the clock passes the fence R read: all T issues from now on
        # is above it.
        fence = row0(uri)["fence_ms"]
        wait_for(lambda: time.time() * 1000 > fence + 100, "the clock passes "
                 "T's fence")
        t.p.send_signal(signal.SIGCONT)
        ft.check(t.cmd("run 1500 %s 16" % ft_, 30).startswith("ran"),
                 "T's run")
        t.kill()
        wait_for(lambda: not row_live(uri), "T's renewed lease ran out")
        start_run(r, 6000, fr, 16)
        proxy.release()
        both_apart(r, fr, ft_, "after its take", "take held")
    finally:
        let_go(held)
        db.cleanup()
        shutil.rmtree(d, ignore_errors=True)


def test_lease_regain_answer_lost():
    lease_regain_answer_lost(lease_postgres)


def test_lease_regain_answer_lost_mysql():
    # The take and its read-back are one transaction: its COMMIT's answer
    # is the one lost.
    lease_regain_answer_lost(lease_mariadb, "COMMIT")


def test_lease_regain_take_held():
    lease_regain_take_held(lease_postgres)


def test_lease_regain_take_held_mysql():
    lease_regain_take_held(lease_mariadb)


def ids_of(path):
    return list(ft.read_i64(path)) if os.path.exists(path) else []


def duplicates(*lists):
    all_ids = [i for l in lists for i in l]
    return len(all_ids) - len(set(all_ids))


def start_run(tool, ms, path, batch=16):
    """Send `run` without waiting for its answer."""
    tool.p.stdin.write("run %d %s %d\n" % (ms, path, batch))
    tool.p.stdin.flush()


def partitioned(name, a, proxy, cut_for, make_b, run_ms, freed=None):
    """A issues while its link to the coordinator goes silent for cut_for
    seconds, or until freed() says A's claim ran out; then B, a later
    holder of A's node ID, issues. Returns nothing; fails on any ID both
    issued."""
    d = ft.tempdir("frond-fence-")
    b = None
    try:
        fa, fb = os.path.join(d, "a.ids"), os.path.join(d, "b.ids")
        start_run(a, run_ms, fa)
        time.sleep(0.4)
        proxy.blackhole()
        if freed is not None:
            wait_for(freed, "A's claim running out")
        else:
            time.sleep(cut_for)
        b = make_b()
        ft.check(b.ok and b.node == a.node, "B: %s" % b.first)
        # B may wait a while before its first ID on a loaded machine (its
        # lease confirmed, the clock past A's fence): it runs again, every
        # ID into the one file, until it issued some (30 s at most).
        deadline = time.monotonic() + 30
        while True:
            r = b.cmd("run 2000 %s 16" % fb, timeout=30).split()
            if r[0] != "ran" or int(r[1]) > 0 or time.monotonic() > deadline:
                break
        ft.check(r[0] == "ran" and int(r[1]) > 0, "B issued nothing: %s" % r)
        r = a.readline(30).split()
        ft.check(r[0] == "ran", "A's run: %s" % r)
        ia, ib = ids_of(fa), ids_of(fb)
        dup = duplicates(ia, ib)
        print("%s: A %d IDs, B %d IDs, %d duplicates"
              % (name, len(ia), len(ib), dup), flush=True)
        ft.check(dup == 0, "%d IDs issued by both holders" % dup)
    finally:
        if b and b.ok:
            b.close()
        shutil.rmtree(d, ignore_errors=True)


def lease_partitioned_holder_vs_successor(make):
    """A holds node 0 through a proxy and borrows a second ahead of the
    clock; the proxy goes silent, A's lease runs out and B takes the row
    directly. Nothing A issued may be issued by B."""
    db = make()
    proxy = a = None
    try:
        host_port = db.base.split("@")[1].split("/")[0]
        host, port = host_port.rsplit(":", 1)
        proxy = Proxy((host, int(port)))
        lease = "lease_ms=1500&report_ms=200&connect_ms=2000&nodes=1"
        via = "lease+%s?%s" % (db.base.replace(host_port, "127.0.0.1:%d"
                                               % proxy.port), lease)
        a = Tool(via, port=1, layout=SMALL)
        ft.check(a.ok and a.node == 0, "A: %s" % a.first)
        # B starts once the lease (1.5 s) ran out in the database: a
        # renewal that got through just before the cut moves that later
        # than a fixed wait would allow on a loaded machine.
        partitioned("lease partition", a, proxy, None,
                    lambda: Tool(db.uri(lease), port=2, layout=SMALL), 5000,
                    freed=lambda: not row_live(db.uri(lease)))
    finally:
        if a:
            a.kill()
        if proxy:
            proxy.close()
        db.cleanup()


def test_lease_partitioned_holder_vs_successor():
    lease_partitioned_holder_vs_successor(lease_postgres)


def test_lease_partitioned_holder_vs_successor_mysql():
    lease_partitioned_holder_vs_successor(lease_mariadb)


def test_zk_disconnected_beyond_session_same_identity():
    """A is cut off from ZooKeeper (proxy) for longer than its session; a
    new process with A's ip:port claims the freed ID. Nothing A issued may
    be issued by B."""
    zk = ZooKeeper()
    proxy = Proxy(("127.0.0.1", zk.port))
    a = None
    try:
        via = "zk://127.0.0.1:%d/fence?%s" % (proxy.port, FAST)
        a = Tool(via, ip="10.7.0.1", layout=SMALL)
        ft.check(a.ok, "A: %s" % a.first)
        # 3.5 s: session_ms=2000, the server expires A's session.
        partitioned("zk partition", a, proxy, 3.5,
                    lambda: Tool(zk.uri("fence"), ip="10.7.0.1",
                                 layout=SMALL), 9000)
    finally:
        if a:
            a.kill()
        proxy.close()
        zk.cleanup()


def test_restart_right_after_burst():
    """A clean stop right after a burst stores a time ahead of the clock;
    starting again at once must work (the generator waits), not fail with
    CLOCK_BEHIND."""
    db = lease_sqlite()
    try:
        uri = db.uri("lease_ms=3000&report_ms=200")
        a = Tool(uri, port=1, layout=SMALL)
        ft.check(a.ok, "A: %s" % a.first)
        r = a.cmd("next 8000").split()  # 500 ms ahead of the clock
        ft.check(r[0] == "ids", "burst: %s" % r)
        last = int(r[2])
        a.close()
        b = Tool(uri, port=1, layout=SMALL)
        ft.check(b.ok, "restart after a burst: %s" % b.first)
        first = b.next()[0]
        ft.check(first > last, "first ID %d not above %d" % (first, last))
        b.close()
    finally:
        db.cleanup()


def test_zk_kill9_restart_once():
    """A server killed with SIGKILL and started once comes back by itself:
    it waits for its dead session's claim to go, then takes it."""
    zk = ZooKeeper()
    d = ft.tempdir("frond-fence-")
    port = ft.free_port()
    uri = zk.uri("k9", "report_ms=200&session_ms=2000&connect_ms=2000")
    procs = []
    try:
        with open(os.path.join(d, "log"), "a") as log:
            p = serve(["--coordinator", uri], d, port, log)
            procs.append(p)
            before = wait_serving(p, port, 30)
            ft.check(before is not None, "first start failed")
            p.kill()
            p.wait(10)
            t0 = time.monotonic()
            p = serve(["--coordinator", uri], d, port, log)
            procs.append(p)
            after = wait_serving(p, port, 30)
        with open(os.path.join(d, "log")) as f:
            text = f.read()
        ft.check(after is not None, "the restart did not come back: %s"
                 % text[-1500:])
        ft.check(after > before, "ID after the restart %d not above %d"
                 % (after, before))
        print("kill -9 restart: serving again after %.1f s"
              % (time.monotonic() - t0), flush=True)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        zk.cleanup()
        shutil.rmtree(d, ignore_errors=True)


def test_three_servers_one_directory():
    """Three servers started together in one working directory: all start,
    each keeps its own node cache, none reports a failed cache write."""
    d = ft.tempdir("frond-fence-")
    # Reports every 50 ms (report_ms), each rewriting a cache file; the
    # lease of 6 s gives each fence write 2 s on a loaded machine (at
    # 600 ms, 200 ms with SQLite's lock wait: one slow write and a start
    # fails).
    uri = "lease+sqlite://%s/lease.db?lease_ms=6000&report_ms=50" % d
    ports = [ft.free_port() for _ in range(3)]
    procs = []
    try:
        with open(os.path.join(d, "log"), "a") as log:
            procs = [serve(["--coordinator", uri], d, p, log) for p in ports]
            got = [wait_serving(p, port, 30) for p, port in zip(procs, ports)]
            time.sleep(1.5)  # many reports, each rewriting a cache file
            alive = [p.poll() is None for p in procs]
            for p in procs:
                p.terminate()
            codes = [p.wait(20) for p in procs]
        with open(os.path.join(d, "log")) as f:
            text = f.read()
        ft.check(codes == [0, 0, 0], "clean stops: %s: %s" % (codes, text))
        ft.check(all(g is not None for g in got) and all(alive),
                 "not all three serve: %s" % text[-2000:])
        nodes = {(g >> 12) & 1023 for g in got}
        ft.check(len(nodes) == 3, "node IDs not distinct: %s" % nodes)
        caches = [f for f in os.listdir(d) if f.endswith(".cache")]
        ft.check(len(caches) == 3, "want one cache file per server: %s"
                 % sorted(os.listdir(d)))
        ft.check("rename" not in text and "node cache" not in text,
                 "cache writes collided: %s" % text[-2000:])
        ft.check(not [f for f in os.listdir(d) if ".tmp" in f],
                 "temporary files left: %s" % os.listdir(d))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    ft.need(ft.tool("coord_tool"), "(build the tests)")
    ft.main([test_restart_right_after_burst,
             test_three_servers_one_directory,
             test_zk_kill9_restart_once,
             test_lease_partitioned_holder_vs_successor,
             test_lease_partitioned_holder_vs_successor_mysql,
             test_lease_regain_answer_lost,
             test_lease_regain_answer_lost_mysql,
             test_lease_regain_take_held,
             test_lease_regain_take_held_mysql,
             test_zk_disconnected_beyond_session_same_identity])
