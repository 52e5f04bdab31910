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
  - a ZooKeeper node cut off for longer than its session while a process
    with the same ip:port takes the ID;
  - a restart right after a burst that borrowed ahead of the clock;
  - a server killed with SIGKILL and started once, as a supervisor would;
  - three servers started together in one working directory.

Every wait is bounded; servers run on free loopback ports in temp dirs.
"""
import os
import select
import shutil
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


def ids_of(path):
    return list(ft.read_i64(path)) if os.path.exists(path) else []


def duplicates(*lists):
    all_ids = [i for l in lists for i in l]
    return len(all_ids) - len(set(all_ids))


def start_run(tool, ms, path, batch=16):
    """Send `run` without waiting for its answer."""
    tool.p.stdin.write("run %d %s %d\n" % (ms, path, batch))
    tool.p.stdin.flush()


def partitioned(name, a, proxy, cut_for, make_b, run_ms):
    """A issues while its link to the coordinator goes silent for cut_for
    seconds; then B, a later holder of A's node ID, issues. Returns
    nothing; fails on any ID both issued."""
    d = ft.tempdir("frond-fence-")
    b = None
    try:
        fa, fb = os.path.join(d, "a.ids"), os.path.join(d, "b.ids")
        start_run(a, run_ms, fa)
        time.sleep(0.4)
        proxy.blackhole()
        time.sleep(cut_for)
        b = make_b()
        ft.check(b.ok and b.node == a.node, "B: %s" % b.first)
        r = b.cmd("run 2000 %s 16" % fb, timeout=30).split()
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
        # 1.8 s: the lease (1.5 s) ran out in the database.
        partitioned("lease partition", a, proxy, 1.8,
                    lambda: Tool(db.uri(lease), port=2, layout=SMALL), 5000)
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
    uri = "lease+sqlite://%s/lease.db?lease_ms=600&report_ms=50" % d
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
             test_zk_disconnected_beyond_session_same_identity])
