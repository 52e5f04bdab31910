#!/usr/bin/env python3
"""
test_coord_fleet.py -- three `frond serve` nodes share one ZooKeeper.

Each node gets its own node ID from the coordinator; IDs fetched over HTTP
from all of them never collide; a restarted node keeps its ID and goes on
above its earlier IDs; a fourth server on a busy node's ip:port (the
listeners use SO_REUSEPORT, so it can bind) is refused with NODE_IN_USE.

Needs the server with --coordinator wired to the coordinator (see
doc/coord.md); until the server is part of the tree it says so and stops.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from test_coord_zk import ZooKeeper  # noqa: E402


def get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path),
                                timeout=10) as r:
        return r.read().decode()


class Server:
    def __init__(self, zk, port, root):
        self.port = port
        self.dir = os.path.join(root, "node-%d" % port)
        os.makedirs(self.dir, exist_ok=True)
        self.log = open(os.path.join(self.dir, "log"), "a")
        self.p = subprocess.Popen(
            [ft.FROND_BIN, "serve", "--listen", "127.0.0.1:%d" % port,
             "--store", "none", "--threads", "1", "--data-dir", self.dir,
             "--coordinator", zk.uri("fleet")],
            stdout=self.log, stderr=subprocess.STDOUT)

    def ready(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            ft.check(self.p.poll() is None,
                     "server on %d exited: %s" % (self.port, self.text()))
            try:
                get(self.port, "/healthz")
                return self
            except OSError:
                time.sleep(0.05)
        raise ft.Failure("server on %d not up: %s" % (self.port, self.text()))

    def text(self):
        with open(os.path.join(self.dir, "log")) as f:
            return f.read()

    def ids(self, n):
        return [int(get(self.port, "/api/snowflake/get/fleet"))
                for _ in range(n)]

    def node_of(self, i):
        d = json.loads(get(self.port, "/decodeSnowflakeId?snowflakeId=%d"
                           % i))
        return int(d["workerId"])

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            self.p.wait(30)
        self.log.close()
        return self.p.returncode


def test_three_nodes_one_zookeeper():
    zk = ZooKeeper()
    root = ft.tempdir("frond-fleet-")
    servers = []
    try:
        ports = [ft.free_port() for _ in range(3)]
        servers = [Server(zk, p, root) for p in ports]
        for s in servers:
            s.ready()
        seen, nodes = set(), []
        for s in servers:
            ids = s.ids(200)
            ft.check(ids == sorted(ids) and len(set(ids)) == 200,
                     "IDs of one node must increase")
            seen.update(ids)
            node = {s.node_of(i) for i in ids[:3]}
            ft.check(len(node) == 1, "one node ID per server: %s" % node)
            nodes.append(node.pop())
        ft.check(len(seen) == 600, "duplicate IDs across the fleet")
        ft.check(sorted(nodes) == [0, 1, 2], "node IDs: %s" % nodes)

        # A fourth server on node 0's ip:port is refused while it lives.
        dup = Server(zk, ports[0], os.path.join(root, "dup"))
        ft.check(dup.p.wait(30) != 0, "a second server on one ip:port ran")
        ft.check("NODE_IN_USE" in dup.text(), "why: %s" % dup.text())
        dup.stop()

        # Restart: same node ID, IDs above the earlier ones.
        last = servers[1].ids(1)[0]
        ft.check(servers[1].stop() == 0, "clean stop")
        servers[1] = Server(zk, ports[1], root).ready()
        again = servers[1].ids(10)
        ft.check(servers[1].node_of(again[0]) == nodes[1],
                 "a restarted node keeps its ID")
        ft.check(again[0] > last, "IDs after a restart increase")
    finally:
        for s in servers:
            s.stop()
        zk.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def serve_with_coordinator():
    """frond serve exists and takes coordinator URIs beyond static."""
    r = ft.run(["serve", "--help"])
    return r.returncode == 0 and "zk://" in r.stdout


if __name__ == "__main__":
    if not serve_with_coordinator():
        print("note: `frond serve` does not take zk:// coordinators yet; "
              "the fleet test runs once the server is wired to them")
        print("0 passed, 0 failed")
        sys.exit(0)
    ft.main([test_three_nodes_one_zookeeper])
