#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Ordered tags (docs/segment.md, "Ordered tags"): three servers on one
store, clients taking a tag's IDs through all of them at once. For an
ordered tag no ID repeats and none is below an ID answered before it was
asked for, on SQLite, PostgreSQL and MariaDB, through:
  - a plain run (and the same load on a tag that is not ordered steps
    back: the checker finds what it looks for);
  - a clean stop of the owner (its claim released, the rest of its
    segment given back: the next owner continues at the next number);
  - kill -9 of the owner (another node claims the tag once the lease ran
    out);
  - SIGSTOP of the owner past its lease, then SIGCONT;
  - a partition of the owner from the store (PostgreSQL, through the
    chaos suite's proxy), healed later;
  - a partition of the owner from its coordinator (ZooKeeper): its
    snowflake IDs stop, its ordered tag is served on;
  - a node whose wall clock is a second ahead (libfaketime);
  - on MariaDB, other spellings of the tag that its collation matches.
Also: ranges of an ordered tag are refused, an ordered tag on a multi:
store is refused, the RESP front is forwarded as HTTP is, and a node
that finds its own address recorded for another owner says so.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import ordered_common as oc  # noqa: E402
import respclient  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TAG = "orders"


def fleet(uri, n=3, extra=(), env=None):
    nodes = [oc.node(uri, extra=extra, env=env) for _ in range(n)]
    # The first node claims the tag before the load begins.
    s, _, body = nodes[0].request("GET", "/v1/segment/%s" % TAG)
    ft.check(s == 200, "first ID: %d %r" % (s, body))
    return nodes


def taken_over(nodes, old):
    """Wait until a node other than old says it owns the tag."""
    ft.wait_for("another node to own the tag", lambda: any(
        s is not old and s.alive() and "this node owns" in s.output()
        for s in nodes), 60)


def close(nodes):
    for s in nodes:
        if s.alive():
            s.proc.send_signal(signal.SIGCONT)  # a paused one stops too
        s.close()


def plain(store):
    """Three nodes and six clients: one increasing sequence. The same
    load on a plain tag steps back (the checker is not blind)."""
    oc.create(store, TAG, "--ordered", "--step", "50")
    oc.create(store, "plain", "--step", "50")
    nodes = fleet(store.uri)
    try:
        load = oc.Load(nodes, TAG)
        load.wait_more(3000)
        ops = load.stop()
        oc.check_ordered(ops, "ordered")
        ft.check(sum(1 for s in nodes if "this node owns" in s.output())
                 == 1, "more than one owner without a fault")
        # A follower counts what it forwarded apart from what it issued.
        owner = oc.owner_of(nodes, TAG)
        for n in nodes:
            _, _, text = n.request("GET", "/metrics")
            fwd = re.search(rb"^frond_ids_forwarded_total (\d+)$", text,
                            re.M)
            ft.check(fwd is not None, "no frond_ids_forwarded_total")
            ft.check((int(fwd.group(1)) == 0) == (n is owner),
                     "node %d forwarded %s IDs (owner: %s)"
                     % (n.port, fwd.group(1), n is owner))
        load = oc.Load(nodes, "plain")
        load.wait_more(3000)
        dups, back = oc.violations(load.stop())
        print("  plain tag: %d duplicates, %d steps back; ordered: 0, 0"
              % (dups, back), flush=True)
        ft.check(dups == 0 and back > 0,
                 "a plain tag through three nodes: %d duplicates, %d steps "
                 "back (some expected)" % (dups, back))
        # A range is refused; the RESP front is forwarded as HTTP is.
        s, _, body = nodes[2].request("GET", "/v1/segment/%s/range?count=10"
                                      % TAG)
        ft.check(s == 400 and b"ordered" in body, "range: %d %r" % (s, body))
        r = oc.node(store.uri, extra=["--resp-listen", "127.0.0.1:%d"
                                      % ft.free_port()])
        nodes.append(r)
        port = int(r.args[len(r.args) - 1 - r.args[::-1].index(
            "--resp-listen") + 1].split(":")[1])
        ft.wait_port(port)
        c = respclient.Resp(port)
        last = max(max(ids) for _, _, ids in ops)
        a = c.command("INCR", TAG)
        b = c.command("ID.NEXT", TAG, "3")
        ft.check(isinstance(a, int) and a > last and
                 [int(x) for x in b] == sorted(int(x) for x in b) and
                 int(b[0]) > a, "RESP through a follower: %r %r" % (a, b))
        ft.check("this node owns" not in r.output(), "the follower claimed")
    finally:
        close(nodes)


def stop_owner(store, sig):
    """The owner stopped by sig under load; the others carry on. Printed:
    how long no call sent after the stop was answered, and how many
    numbers the owner change skipped (a clean stop: none, unless another
    call raced it)."""
    oc.create(store, TAG, "--ordered", "--step", "50")
    nodes = fleet(store.uri)
    try:
        load = oc.Load(nodes, TAG)
        load.wait_more(1000)
        owner = oc.owner_of(nodes, TAG)
        ft.check(owner is not None, "no owner")
        with load.lock:
            load.nodes.remove(owner)
        t0 = time.monotonic()
        owner.stop(sig)
        t1 = time.monotonic()
        taken_over(nodes, owner)
        load.wait_more(1000, timeout=60)
        ops = load.stop()
        oc.check_ordered(ops, "owner stopped by %s" % sig.name)
        after = [o for o in ops if o[0] > t1]
        first = min(after, key=lambda o: o[0])
        # The successor's first ID, and the highest issued below it.
        m = min(min(ids) for _, _, ids in after)
        below = max(x for _, _, ids in ops for x in ids if x < m)
        skipped = m - below - 1
        print("  %s: answered again %.2f s after the stop; %d numbers "
              "skipped" % (sig.name, first[1] - t1, skipped), flush=True)
        if sig == signal.SIGTERM:
            ft.check("1 tags given back" in owner.output() and skipped < 50,
                     "a clean stop skipped %d numbers:\n%s"
                     % (skipped, owner.output()[-2000:]))
    finally:
        close(nodes)


def clean_stop(store):
    stop_owner(store, signal.SIGTERM)


def kill9(store):
    stop_owner(store, signal.SIGKILL)


def pause(store):
    """SIGSTOP past the lease, then SIGCONT: the paused owner's answers
    after it wakes are below the successor's only for requests sent
    before it stopped; it then forwards to the successor. A large step:
    the owner wakes with IDs in its buffers, which it must not issue."""
    oc.create(store, TAG, "--ordered", "--step", "100000")
    nodes = fleet(store.uri)
    try:
        load = oc.Load(nodes, TAG)
        load.wait_more(1000)
        owner = oc.owner_of(nodes, TAG)
        with load.lock:  # clients stop calling it (in-flight calls wait)
            load.nodes.remove(owner)
        owner.proc.send_signal(signal.SIGSTOP)
        taken_over(nodes, owner)
        load.wait_more(1000, timeout=60)
        owner.proc.send_signal(signal.SIGCONT)
        with load.lock:
            load.nodes.append(owner)
        load.wait_more(2000, timeout=60)
        ops = load.stop()
        oc.check_ordered(ops, "owner paused past its lease")
        out = owner.output()
        ft.check("owned by" in out or "not confirmed" in out,
                 "the paused owner did not learn it lost the tag:\n"
                 + out[-2000:])
    finally:
        close(nodes)


class Proxy:
    """tests/chaos/netproxy.py with one route to a target port."""

    def __init__(self, port):
        self.p = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "..", "chaos", "netproxy.py"),
             "--route", "db=127.0.0.1:%d" % port],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ports = json.loads(self.p.stdout.readline())
        self.port, self.control = ports["db"], ports["control"]

    def mode(self, m):
        with socket.create_connection(("127.0.0.1", self.control), 10) as c:
            c.sendall(("db %s\n" % m).encode())
            ft.check(c.recv(100).startswith(b"ok"), "proxy: " + m)

    def close(self):
        self.p.terminate()
        self.p.wait(10)


def partition(store):
    """The owner loses the store (a blackhole) under load; the others
    claim the tag once its lease ran out; healed, it forwards."""
    oc.create(store, TAG, "--ordered", "--step", "100000")
    proxy = Proxy(store.port)
    uri = store.uri.replace(":%d/" % store.port, ":%d/" % proxy.port)
    owner = oc.node(uri + "?connect_timeout=2")
    nodes = [owner]
    try:
        s, _, body = owner.request("GET", "/v1/segment/%s" % TAG)
        ft.check(s == 200, "owner's first ID: %d %r" % (s, body))
        nodes += [oc.node(store.uri) for _ in range(2)]
        load = oc.Load(nodes, TAG)
        load.wait_more(1000)
        proxy.mode("blackhole")
        taken_over(nodes, owner)
        load.wait_more(1000, timeout=60)
        proxy.mode("pass")
        ft.wait_for("the old owner to learn it lost the tag",
                    lambda: "owned by" in owner.output(), 60)
        load.wait_more(1000, timeout=60)
        ops = load.stop()
        oc.check_ordered(ops, "owner partitioned from the store")
    finally:
        close(nodes)
        proxy.close()


def coordinator_partition(store):
    """The owner loses its coordinator (ZooKeeper, through the proxy):
    its snowflake IDs stop at their fence, and its ordered tag, whose
    claim lives in the store, is served on as before."""
    oc.create(store, TAG, "--ordered", "--step", "100000")
    zk = ft.start_server("zookeeper")
    proxy = Proxy(zk.port)
    owner = oc.node(store.uri, extra=["--coordinator", zk.uri().replace(
        ":%d/" % zk.port, ":%d/" % proxy.port)])
    nodes = [owner]
    try:
        s, _, body = owner.request("GET", "/v1/segment/%s" % TAG)
        ft.check(s == 200, "owner's first ID: %d %r" % (s, body))
        nodes += [oc.node(store.uri, extra=["--coordinator", zk.uri()])
                  for _ in range(2)]
        load = oc.Load(nodes, TAG)
        load.wait_more(1000)
        proxy.mode("blackhole")
        ft.wait_for("the owner's snowflake IDs to stop", lambda: owner.request(
            "GET", "/v1/snowflake")[0] != 200, 60)
        load.wait_more(2000, timeout=60)
        proxy.mode("pass")
        ops = load.stop()
        oc.check_ordered(ops, "owner partitioned from its coordinator")
        ft.check(oc.owner_of(nodes, TAG) is owner,
                 "the tag changed owner without a fault of the store")
    finally:
        close(nodes)
        proxy.close()
        zk.close()


def clock_ahead(store):
    """One node's wall clock a second ahead: claims are timed by the
    database's clock and each node's monotonic one, so nothing changes."""
    ft.need("faketime", "faketime")
    oc.create(store, TAG, "--ordered", "--step", "50")
    lib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
    nodes = fleet(store.uri, n=2)
    nodes.append(oc.node(store.uri, env={
        "LD_PRELOAD": lib, "FAKETIME": "+1s",
        "ASAN_OPTIONS": ft.set_option(os.environ.get("ASAN_OPTIONS"),
                                      "verify_asan_link_order", "0")}))
    try:
        load = oc.Load(nodes, TAG)
        load.wait_more(1000)
        with load.lock:
            load.nodes.remove(nodes[0])
        nodes[0].stop(signal.SIGKILL)
        taken_over(nodes, nodes[0])
        load.wait_more(2000, timeout=60)
        ops = load.stop()
        oc.check_ordered(ops, "a clock a second ahead")
    finally:
        close(nodes)


def spellings(store):
    """MariaDB's collation finds the row under ORDERS and 'orders ' too:
    an ordered tag is served under its own spelling only (two spellings
    in one node would be two sequences)."""
    oc.create(store, TAG, "--ordered", "--step", "50")
    nodes = fleet(store.uri, n=2)
    try:
        for n in nodes:
            for other in ("ORDERS", "orders%20"):
                s, _, body = n.request("GET", "/v1/segment/%s" % other)
                ft.check(s == 400 and b"spelt another way" in body,
                         "%s: %d %r" % (other, s, body))
        load = oc.Load(nodes, TAG)
        load.wait_more(500)
        oc.check_ordered(load.stop(), "after other spellings were refused")
    finally:
        close(nodes)


def same_address():
    """Two nodes that record one address (as two hosts that both listen
    on 127.0.0.1:8080 would): the follower says so, and calls no one."""
    with ft.start_server("sqlite") as store:
        oc.create(store, TAG, "--ordered")
        same = ["--advertise", "127.0.0.1:%d" % ft.free_port()]
        a = oc.node(store.uri, extra=same + ["--coordinator", "static:1"])
        b = oc.node(store.uri, extra=same + ["--coordinator", "static:2"])
        try:
            s, _, body = a.request("GET", "/v1/segment/%s" % TAG)
            ft.check(s == 200, "owner: %d %r" % (s, body))
            s, h, body = b.request("GET", "/v1/segment/%s" % TAG)
            ft.check(s == 503 and json.loads(body)["error"]["code"] ==
                     "TAG_OWNER" and b"this node's own" in body,
                     "follower: %d %r" % (s, body))
        finally:
            close([a, b])


def multi_refused():
    with ft.start_server("sqlite") as a, ft.start_server("sqlite") as b:
        uri = "multi:%s|%s" % (a.uri, b.uri)
        r = ft.run(["tag", "create", "m", "--ordered", "--store", uri])
        ft.check(r.returncode != 0 and "one database" in r.stderr,
                 "multi: %d %s" % (r.returncode, r.stderr))


def on(kind, fn):
    def t():
        with ft.start_server(kind) as store:
            fn(store)
    t.__name__ = "%s_%s" % (fn.__name__, kind)
    return t


if __name__ == "__main__":
    tests = [on("sqlite", f) for f in (plain, clean_stop, kill9, pause,
                                       clock_ahead)]
    tests += [on("postgresql", f) for f in (plain, clean_stop, kill9, pause,
                                            partition, coordinator_partition)]
    tests += [on("mariadb", plain), on("mariadb", spellings), same_address,
              multi_refused]
    ft.main(tests)
