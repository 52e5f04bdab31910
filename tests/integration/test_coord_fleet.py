#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_coord_fleet.py -- the regression guard for the whole contract.

Three `frond serve` nodes share one ZooKeeper (node IDs) and one
PostgreSQL (segment rows). Mixed snowflake and segment load runs over HTTP
for 20 s while, every few seconds, one node is killed with SIGKILL and
restarted on the same ip:port. The union of every ID any node answered is
free of duplicates; each node keeps its node ID across restarts; and a
second server on a live node's ip:port is refused with NODE_IN_USE.
"""
import http.client
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import ZooKeeper  # noqa: E402

LOAD_SECONDS = 20
KILL_EVERY = 3.0
TAGS = {"orders": 50, "messages": 1000}  # a small step: many allocations
NODE_BITS, SEQ_BITS = 10, 12  # the default layout, frond


def node_of(i):
    return (i >> SEQ_BITS) & ((1 << NODE_BITS) - 1)


class Node:
    def __init__(self, zk_uri, store, port, root):
        self.port = port
        self.dir = os.path.join(root, "node-%d" % port)
        os.makedirs(self.dir, exist_ok=True)
        self.zk_uri, self.store = zk_uri, store
        self.p = None
        self.starts = 0

    def spawn(self, data_dir=None):
        log = open(os.path.join(self.dir, "log"), "a")
        p = subprocess.Popen(
            [ft.FROND_BIN, "serve", "--listen", "127.0.0.1:%d" % self.port,
             "--resp-listen", "off", "--store", self.store, "--threads", "1",
             "--data-dir", data_dir or self.dir,
             "--coordinator", self.zk_uri],
            stdout=log, stderr=subprocess.STDOUT)
        log.close()
        return p

    def start(self, timeout=30):
        """Start and wait until it answers; after a SIGKILL the old
        ZooKeeper session must expire first, so a start refused with
        NODE_IN_USE is retried until the timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.p = self.spawn()
            while time.monotonic() < deadline and self.p.poll() is None:
                try:
                    c = http.client.HTTPConnection("127.0.0.1", self.port,
                                                   timeout=2)
                    c.request("GET", "/livez")
                    if c.getresponse().status == 200:
                        self.starts += 1
                        return
                except OSError:
                    time.sleep(0.05)
            if self.p.poll() is not None:
                ft.check("NODE_IN_USE" in self.text()[-2000:],
                         "node %d exited: %s" % (self.port, self.text()[-2000:]))
                time.sleep(0.3)
        raise ft.Failure("node %d did not come back: %s"
                         % (self.port, self.text()[-2000:]))

    def kill9(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(30)

    def stop(self):
        if self.p is not None and self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(10)
        return self.p.returncode if self.p else None

    def text(self):
        with open(os.path.join(self.dir, "log")) as f:
            return f.read()


class Collector:
    """IDs answered with 200, by kind; only complete answers count."""

    def __init__(self):
        self.lock = threading.Lock()
        self.snowflake = []
        self.segment = {t: [] for t in TAGS}
        self.errors = 0

    def add(self, kind, ids):
        with self.lock:
            (self.snowflake if kind is None else self.segment[kind]).extend(ids)


def load_worker(nodes, col, stop, seed):
    rnd = random.Random(seed)
    conns = {}
    while not stop.is_set():
        node = rnd.choice(nodes)
        c = conns.get(node.port)
        if c is None:
            c = conns[node.port] = http.client.HTTPConnection(
                "127.0.0.1", node.port, timeout=5)
        pick = rnd.random()
        tag = rnd.choice(list(TAGS))
        if pick < 0.35:
            path, kind = "/api/snowflake/get/fleet", None
        elif pick < 0.5:
            path, kind = "/v1/snowflake?count=200&format=text", None
        elif pick < 0.85:
            path, kind = "/api/segment/get/%s" % tag, tag
        else:
            path, kind = "/v1/segment/%s?count=200&format=text" % tag, tag
        try:
            c.request("GET", path)
            r = c.getresponse()
            body = r.read().decode()
            if r.status == 200:
                col.add(kind, [int(x) for x in body.split()])
            else:
                col.errors += 1
        except (OSError, http.client.HTTPException, ValueError):
            # The node was killed under us: drop the connection, go on.
            c.close()
            conns.pop(node.port, None)
            time.sleep(0.01)
    for c in conns.values():
        c.close()


def check_unique(name, ids):
    dup = len(ids) - len(set(ids))
    ft.check(dup == 0, "%s: %d duplicate IDs among %d" % (name, dup, len(ids)))


def test_fleet_kill9_under_load():
    zk = ZooKeeper()
    pg = None
    root = ft.tempdir("frond-fleet-")
    nodes = []
    try:
        pg = ft.Postgres()
        for tag, step in TAGS.items():
            r = ft.run(["tag", "create", tag, "--step", str(step),
                        "--store", pg.uri])
            ft.check(r.returncode == 0, "tag create: %s" % r.stderr)
        uri = zk.uri("fleet")
        nodes = [Node(uri, pg.uri, ft.free_port(), root) for _ in range(3)]
        for n in nodes:
            n.start()

        # A second server on a live node's ip:port is refused.
        dup = nodes[0].spawn(data_dir=ft.tempdir("frond-fleet-dup-"))
        ft.check(dup.wait(30) != 0, "a second server on one ip:port ran")
        ft.check("NODE_IN_USE" in nodes[0].text(), "refusal not explained")

        col, stop = Collector(), threading.Event()
        workers = [threading.Thread(target=load_worker,
                                    args=(nodes, col, stop, i))
                   for i in range(4)]
        for w in workers:
            w.start()
        t0, kills, victim = time.monotonic(), 0, 0
        try:
            while time.monotonic() - t0 < LOAD_SECONDS:
                time.sleep(KILL_EVERY)
                nodes[victim].kill9()
                kills += 1
                nodes[victim].start()
                victim = (victim + 1) % len(nodes)
        finally:
            stop.set()
            for w in workers:
                w.join(30)

        for n in nodes:
            ft.check(n.stop() == 0, "node %d did not stop cleanly" % n.port)
        ft.check(kills >= 3, "only %d kills" % kills)
        ft.check(len(col.snowflake) >= 2000,
                 "too few snowflake IDs: %d" % len(col.snowflake))
        check_unique("snowflake", col.snowflake)
        seen_nodes = {node_of(i) for i in col.snowflake}
        ft.check(len(seen_nodes) == 3 and max(seen_nodes) < 3,
                 "node IDs in use: %s (want 3, kept across restarts)"
                 % sorted(seen_nodes))
        for tag, ids in col.segment.items():
            ft.check(len(ids) >= 1000, "too few %s IDs: %d" % (tag, len(ids)))
            check_unique("segment " + tag, ids)
            ft.check(min(ids) >= 1, "segment IDs start at 1")
        print("fleet: %d kills, %d snowflake and %s segment IDs, %d non-200 "
              "answers" % (kills, len(col.snowflake),
                           {t: len(v) for t, v in col.segment.items()},
                           col.errors))
    finally:
        for n in nodes:
            n.stop()
        if pg is not None:
            pg.close()
        zk.cleanup()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    ft.main([test_fleet_kill9_under_load])
