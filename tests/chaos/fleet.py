# SPDX-License-Identifier: Apache-2.0
"""
fleet.py -- what the fault-injection scenarios are made of.

A Run owns one scenario's temp dir, clock and clean-up. In it a Fleet
starts PostgreSQL (the segment store, and the lease table for the lease
coordinator), ZooKeeper or a three-member etcd cluster when the fleet
uses it, a fault-injecting proxy
(netproxy.py) in front of every node's links when asked, the fence poller
(chaos_fence) and the nodes: `frond serve` processes on loopback, each in
its own data dir, optionally under libfaketime (a per-host clock that can
be moved while it runs) or under the bind shim (a second process with a
live node's ip:port identity). Load (chaos_load) collects every ID every
node answers; check() hands everything to chaos_check.

Everything is bounded in time, listens on 127.0.0.1 only, uses free ports
and is stopped by process ID.
"""
import array
import bisect
import glob
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import frondtest as ft  # noqa: E402
from etcd_common import Etcd  # noqa: E402

CLUSTER = "chaos"
FENCE_METRIC = "frond_coord_fence_ahead_seconds"
TAGS = {"orders": 200, "events": 5000}  # small steps: many allocations


def error_names():
    """Frond's error codes by number, from FROND_ERRNO_MAP."""
    with open(os.path.join(ft.FROND_SRC, "include", "frond.h")) as f:
        return {int(n): name for n, name in
                re.findall(r"XX\((\d+), (\w+),", f.read())}


CLIENT_CODES = {1: "CONNECT", 2: "TIMEOUT", 3: "CLOSED", 4: "GARBAGE",
                5: "STATUS"}  # chaos_load's own failures


def code_name(code, names={}):
    """The name of a code chaos_load recorded: 'ok', Frond's name for a
    negative one, the client's for a positive one."""
    if code == 0:
        return "ok"
    if code > 0:
        return CLIENT_CODES.get(code, "CLIENT%d" % code)
    if not names:
        names.update(error_names())
    return names.get(-code, "E%d" % -code)


def faketime_lib():
    for p in sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1") +
                    glob.glob("/usr/lib/faketime/libfaketimeMT.so.1")):
        return p
    raise ft.Failure("libfaketime is not installed (Debian package "
                     "libfaketime; scripts/deps.sh test installs it)")


class Run:
    """One scenario's temp dir, clock, log and the processes to stop."""

    def __init__(self, name, keep=False):
        self.name = name
        self.dir = ft.tempdir("frond-chaos-%s-" % name)
        self.keep = keep
        if keep:
            ft.keep_tempdir(self.dir)
        self.t0 = time.monotonic()
        self.origin = self.t0  # of the scenario's timeline: see begin()
        self.layouts = {}      # name -> spec
        self.incarnations = []  # (label, spawn_ns, layout name)
        self.streams = []      # (name, prefix, kind, tag, label)
        self.fence_files = []
        self.barriers = []     # (monotonic ns, [label]): see chaos_check
        self.static = []       # labels of nodes with a static node ID
        self.wrong = []        # (count, what): behaviour the contract forbids
        self.notes = []
        self.cleanups = []
        self.keepers = []      # things that start nodes on their own

    def begin(self):
        """Start the scenario's timeline (once the fleet is up)."""
        self.origin = time.monotonic()
        self.log("timeline begins")

    def now(self):
        """Seconds into the scenario's timeline."""
        return time.monotonic() - self.origin

    def log(self, msg):
        print("[%6.2fs] %s" % (time.monotonic() - self.t0, msg), flush=True)

    def path(self, *parts):
        """A file in the run's dir (its directory is made)."""
        p = os.path.join(self.dir, *parts)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def subdir(self, *parts):
        """A directory in the run's dir, made."""
        p = os.path.join(self.dir, *parts)
        os.makedirs(p, exist_ok=True)
        return p

    def sleep_until(self, t):
        """Sleep until t seconds into the scenario's timeline."""
        left = self.origin + t - time.monotonic()
        if left > 0:
            time.sleep(left)

    def requests(self, sent_from=0, answered_by=None, labels=None, kind=None,
                 load=None):
        """Requests of the streams chosen (node labels, "snowflake" or
        "segment", a load's name) sent at or after sent_from and answered
        before answered_by (CLOCK_MONOTONIC ns): {code name: requests}."""
        out = {}
        for name, prefix, k, _, label in self.streams:
            if (labels is not None and label not in labels) or \
                    (kind and k != kind) or \
                    (load and not name.startswith(load + "-")):
                continue
            r = array.array("q")
            with open(prefix + ".rec", "rb") as fh:
                r.frombytes(fh.read())
            n = len(r) // 4
            sent = _Column(r, 0, n)
            i = bisect.bisect_left(sent, sent_from)
            for j in range(i, n):
                if r[4 * j] >= (answered_by or 1 << 62):
                    break  # sent after the window: answered after it too
                if answered_by is not None and r[4 * j + 1] >= answered_by:
                    continue
                c = code_name(r[4 * j + 3])
                out[c] = out.get(c, 0) + 1
        return out

    def fault(self, count, what):
        if count:
            self.wrong.append((count, what))
            self.log("WRONG: %s" % what)

    def close(self):
        for k in self.keepers:  # before they start a node again
            k.stop()
        for fn in reversed(self.cleanups):
            try:
                fn()
            except Exception as e:  # clean up the rest whatever happens
                print("clean-up: %s: %s" % (type(e).__name__, e))
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            print("kept %s" % self.dir)


class _Column:
    """One column of a records array, for bisect."""

    def __init__(self, r, col, n):
        self.r, self.col, self.n = r, col, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.r[4 * i + self.col]


def describe(counts):
    """'ok 12, COORD 3' from {code name: requests}."""
    return ", ".join("%s %d" % kv for kv in sorted(
        counts.items(), key=lambda kv: (kv[0] != "ok", kv[0]))) or "none"


def stop_process(p, timeout=15, signalled=False):
    """SIGTERM (after SIGCONT, in case it is stopped; not again when the
    caller already sent it: a second one cuts a drain short), then
    SIGKILL after timeout."""
    if p.poll() is not None:
        return p.returncode
    try:
        if not signalled:
            os.kill(p.pid, signal.SIGCONT)
            p.terminate()
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(10)
        return None


class Proxy:
    """netproxy.py with one route per (node, link)."""

    def __init__(self, run, routes):
        args = [sys.executable, os.path.join(HERE, "netproxy.py")]
        for name, target in routes.items():
            args += ["--route", "%s=%s" % (name, target)]
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        run.cleanups.append(lambda: stop_process(self.p))
        line = self.p.stdout.readline()
        ft.check(line, "netproxy did not start")
        self.ports = json.loads(line)
        self.run = run

    def set(self, route, mode, arg=None):
        import socket
        s = socket.create_connection(("127.0.0.1", self.ports["control"]),
                                     timeout=10)
        s.sendall(("%s %s %s\n" % (route, mode, arg or "")).encode())
        answer = s.makefile().readline().strip()
        s.close()
        ft.check(answer == "ok", "netproxy %s %s: %s" % (route, mode, answer))
        self.run.log("proxy %s: %s %s" % (route, mode, arg or ""))


class Node:
    """One `frond serve` process slot: a label, its ports and its data dir;
    start() spawns a new incarnation."""

    def __init__(self, fleet, label, identity_port=None, data_dir=None,
                 cwd=None, clock=False, layout=None, extra=(), coord=None,
                 coord_opts=None):
        self.fleet, self.run = fleet, fleet.run
        self.label = label
        self.http_port = ft.free_port()
        self.resp_port = ft.free_port()
        # The ip:port the coordinator knows it by; another port for a twin.
        self.identity_port = identity_port or self.http_port
        self.dir = data_dir or self.run.subdir("nodes", label, "data")
        self.cwd = cwd or self.dir
        self.layout = layout or fleet.layout
        self.extra = list(extra)
        # A coordinator of its own (static:N), or the fleet's with another
        # query string; None: the fleet's.
        self.coord, self.coord_opts = coord, coord_opts
        if coord and coord.startswith("static:"):
            self.run.static.append(label)
        self.clock_file = None
        if clock:
            self.clock_file = self.run.path("nodes", label, "faketime")
            self.set_clock(0, log=False)
        self.p = None
        self.log_path = self.run.path("nodes", label, "log")
        self.sanitizer_path = self.run.path("nodes", label, "sanitizer")
        self.starts = 0
        self.refusals = {}
        self.run.cleanups.append(self.stop)

    # ---- clock ----------------------------------------------------------

    def set_clock(self, offset_s, log=True):
        """Move this host's wall clock offset_s seconds from the real one
        (libfaketime re-reads the file within a second)."""
        with open(self.clock_file + ".tmp", "w") as f:
            f.write("%+ds\n" % offset_s)
        os.rename(self.clock_file + ".tmp", self.clock_file)
        if log:
            self.run.log("%s: clock %+ds" % (self.label, offset_s))

    def check_clock(self, offset_s, within=1.5):
        """Make sure the nemesis bites: a process started the way this node
        is sees CLOCK_REALTIME offset_s off and CLOCK_MONOTONIC true
        (libfaketime re-reads the offset within `within` seconds)."""
        e = self.env()
        e.pop("ASAN_OPTIONS", None)
        probe = "import time; print(time.time(), time.monotonic())"
        deadline = time.monotonic() + within + 1
        while True:
            real, mono = time.time(), time.monotonic()
            out = subprocess.run([sys.executable, "-c", probe], env=e,
                                 capture_output=True, text=True, timeout=30)
            ft.check(out.returncode == 0, "clock probe: %s" % out.stderr)
            r, m = (float(x) for x in out.stdout.split())
            # Both readings include the probe's start-up time: compare the
            # wall clock's lead over the monotonic one.
            drift = m - mono
            off = r - real - drift
            if abs(off - offset_s) < 0.5 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        ft.check(abs(off - offset_s) < 0.5,
                 "%s: CLOCK_REALTIME is %+.2f s off, want %+d s" %
                 (self.label, off, offset_s))
        ft.check(0 <= drift < 2,
                 "%s: CLOCK_MONOTONIC moved too (%+.2f s)" % (self.label,
                                                              drift))

    # ---- processes ------------------------------------------------------

    def args(self):
        f = self.fleet
        a = [ft.FROND_BIN, "serve",
             "--listen", "127.0.0.1:%d" % self.identity_port,
             "--resp-listen", "127.0.0.1:%d" % self.resp_port,
             "--store", f.store_uri(self),
             "--coordinator", f.coord_uri(self),
             "--layout", f.run.layouts[self.layout],
             "--threads", "1", "--max-ahead-ms", str(f.max_ahead_ms)]
        if self.dir != self.cwd or not f.shared_dir:
            a += ["--data-dir", self.dir]
        return a + self.extra

    def env(self):
        e = ft.sanitizer_env(os.environ, self.sanitizer_path)
        preload = []
        if self.identity_port != self.http_port:
            preload.append(self.fleet.shim)
            e["CHAOS_BIND_FROM"] = str(self.identity_port)
            e["CHAOS_BIND_TO"] = str(self.http_port)
        if self.clock_file:
            preload.append(faketime_lib())
            e["FAKETIME_TIMESTAMP_FILE"] = self.clock_file
            e["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
            # Timed waits keep their deadlines (README.md, Clocks).
            e["FAKETIME_FORCE_MONOTONIC_FIX"] = "0"
            e["FAKETIME_CACHE_DURATION"] = "1"
        if preload:
            e["LD_PRELOAD"] = " ".join(preload)
            e["ASAN_OPTIONS"] = ft.set_option(e.get("ASAN_OPTIONS"),
                                              "verify_asan_link_order", "0")
        return e

    def spawn(self):
        log = open(self.log_path, "a")
        log.write("---- start %d at +%.2fs\n" %
                  (self.starts + 1, time.monotonic() - self.run.t0))
        log.flush()
        self.run.incarnations.append((self.label, time.monotonic_ns(),
                                      self.layout))
        self.p = subprocess.Popen(self.args(), cwd=self.cwd, env=self.env(),
                                  stdout=log, stderr=subprocess.STDOUT)
        log.close()
        self.starts += 1

    def live(self):
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.http_port,
                                           timeout=1)
            c.request("GET", "/livez")
            ok = c.getresponse().status == 200
            c.close()
            return ok
        except (OSError, http.client.HTTPException):
            return False

    def refusal(self):
        """The code of the last 'cannot start' line of the log."""
        text = self.text()
        i = text.rfind("cannot start: ")
        if i < 0:
            return "EXIT %s" % self.p.returncode
        return text[i + 14:].split(":", 1)[0].strip()

    def start(self, timeout=20, retry=True, expect_refusal=False):
        """Start a new incarnation and wait until it answers. A start that
        exits is a refusal: counted, and tried again every 0.3 s while
        retry and time allow. Returns True once up."""
        ft.check(not self.up(), "%s: started while running" % self.label)
        deadline = time.monotonic() + timeout
        while True:
            self.spawn()
            while time.monotonic() < deadline and self.p.poll() is None:
                if self.live():
                    self.run.log("%s: up (start %d)" %
                                 (self.label, self.starts))
                    return True
                time.sleep(0.05)
            if self.p.poll() is None:
                self.run.log("%s: not up after %.0fs" % (self.label, timeout))
                return False
            code = self.refusal()
            self.refusals[code] = self.refusals.get(code, 0) + 1
            if not expect_refusal:
                self.run.log("%s: start refused: %s" % (self.label, code))
            if not retry or time.monotonic() + 0.3 > deadline:
                return False
            time.sleep(0.3)

    def up(self):
        return self.p is not None and self.p.poll() is None

    def first_id(self, timeout):
        """Ask this node for one snowflake ID until one is answered: the
        seconds that took, or None after timeout."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.http_port,
                                               timeout=2)
                c.request("GET", "/v1/snowflake?count=1&format=text")
                ok = c.getresponse().status == 200
                c.close()
                if ok:
                    return time.monotonic() - t0
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.05)
        return None

    def kill9(self):
        self.p.kill()
        self.p.wait(30)
        self.run.log("%s: kill -9" % self.label)

    def pause(self):
        os.kill(self.p.pid, signal.SIGSTOP)
        self.run.log("%s: SIGSTOP" % self.label)

    def resume(self):
        os.kill(self.p.pid, signal.SIGCONT)
        self.run.log("%s: SIGCONT" % self.label)

    def stop(self, signalled=False):
        """A clean stop (SIGTERM, unless already sent); returns the exit
        status."""
        if self.p is None or (self.p.poll() is not None and not signalled):
            return None if self.p is None else self.p.returncode
        rc = stop_process(self.p, timeout=20, signalled=signalled)
        self.run.log("%s: stopped (exit %s)" % (self.label, rc))
        return rc

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


class Fleet:
    """The services and nodes of one scenario.

    coord: "zk" (node IDs from ZooKeeper), "etcd" (from a three-member
    etcd cluster, etcd_opts on its URI) or "lease" (lease rows in the
    PostgreSQL that is also the segment store). proxied: every node reaches
    its coordinator and its store through its own netproxy routes, named
    "<label>-coord" and "<label>-store"."""

    def __init__(self, run, coord="zk", nodes=3, layout="frond",
                 max_ahead_ms=1000, proxied=False, shared_dir=False,
                 clock=False, zk_opts="report_ms=200&session_ms=2000&"
                 "connect_ms=1500", lease_opts="lease_ms=2000&connect_ms=1500",
                 lease_nodes=None, zk_tick_ms=200,
                 etcd_opts="report_ms=200&session_ms=2000&connect_ms=1500"):
        self.run = run
        self.etcd_opts = etcd_opts
        self.coord = coord
        self.layout = layout
        self.max_ahead_ms = max_ahead_ms
        self.zk_opts, self.lease_opts = zk_opts, lease_opts
        self.lease_nodes = lease_nodes or nodes
        self.shared_dir = shared_dir
        self.shim = os.path.join(ft.FROND_BUILD, "libchaos_bindshim.so")
        run.layouts.setdefault(layout, layout)
        self.pg = ft.Postgres()
        run.cleanups.append(self.pg.close)
        for tag, step in TAGS.items():
            r = ft.run(["tag", "create", tag, "--step", str(step),
                        "--store", self.pg.uri])
            ft.check(r.returncode == 0, "tag create: %s" % r.stderr)
        self.zk = None
        if coord == "zk":
            self.zk = ft.ZooKeeper(tick_ms=zk_tick_ms)
            run.cleanups.append(self.zk.close)
        self.etcd = None
        if coord == "etcd":
            self.etcd = Etcd(3)
            run.cleanups.append(self.etcd.close)
        self.nodes = []
        common = run.subdir("shared") if shared_dir else None
        labels = ["n%d" % i for i in range(nodes)]
        self.proxy = None
        self.nodes = [Node(self, lb, data_dir=common, cwd=common, clock=clock)
                      for lb in labels]
        if proxied:
            routes = {}
            for n in self.nodes:
                if coord == "etcd":  # a route to each member
                    for i in range(self.etcd.n):
                        routes["%s-coord%d" % (n.label, i)] = \
                            "127.0.0.1:%d" % self.etcd.client[i]
                else:
                    routes[n.label + "-coord"] = self.coord_target()
                routes[n.label + "-store"] = "127.0.0.1:%d" % self.pg_port()
            self.proxy = Proxy(run, routes)
        self.fence = self.start_fence_poller()

    def pg_port(self):
        return int(self.pg.uri.rsplit(":", 1)[1].split("/")[0])

    def coord_target(self):
        if self.coord == "zk":
            return self.zk.address
        if self.coord == "etcd":
            return "127.0.0.1:%d" % self.etcd.client[0]
        return "127.0.0.1:%d" % self.pg_port()

    def route_port(self, node, link):
        """The port a node uses for a link: its proxy route, or direct (a
        node added later, a twin, has no route: it is another host)."""
        name = "%s-%s" % (node.label, link)
        if self.proxy and name in self.proxy.ports:
            return self.proxy.ports[name]
        return int(self.coord_target().rsplit(":", 1)[1]) \
            if link == "coord" else self.pg_port()

    def store_uri(self, node):
        return "postgresql://postgres@127.0.0.1:%d/postgres" % \
            self.route_port(node, "store")

    def coord_uri(self, node=None, opts=None):
        """The coordinator URI of a node (None: the direct one, as the
        command line tools reach it)."""
        if node is not None and node.coord:
            return node.coord
        if self.coord == "etcd":  # every member, through its routes if any
            eps = self.etcd.endpoints()
            if node is not None and self.proxy and \
                    "%s-coord0" % node.label in self.proxy.ports:
                eps = ",".join("127.0.0.1:%d" % self.proxy.ports[
                    "%s-coord%d" % (node.label, i)]
                    for i in range(self.etcd.n))
            return "etcd://%s/%s?%s" % (
                eps, CLUSTER,
                opts or (node.coord_opts if node and node.coord_opts
                         else self.etcd_opts))
        port = self.route_port(node, "coord") if node else \
            int(self.coord_target().rsplit(":", 1)[1])
        if opts is None:
            opts = node.coord_opts if node and node.coord_opts else \
                self.zk_opts if self.coord == "zk" else self.lease_opts
        if self.coord == "zk":
            return "zk://127.0.0.1:%d/%s?%s" % (port, CLUSTER, opts)
        return "lease+postgresql://postgres@127.0.0.1:%d/postgres?%s&" \
            "nodes=%d" % (port, opts, self.lease_nodes)

    def node_cli(self, *args, opts=None):
        """`frond node ARGS --coordinator <the fleet's>`: the result."""
        return ft.run(["node"] + list(args) +
                      ["--coordinator", self.coord_uri(opts=opts)],
                      timeout=60)

    def start_fence_poller(self):
        out = self.run.path("fence.bin")
        if self.coord == "zk":
            args = [ft.tool("chaos_fence"), "zk", self.zk.address, CLUSTER,
                    out, "100"]
        elif self.coord == "etcd":
            args = [sys.executable, os.path.join(HERE, "etcd_fence.py"),
                    self.etcd.endpoints(), "/" + CLUSTER, out, "100"]
        else:
            args = [ft.tool("chaos_fence"), "lease", self.pg.uri, out, "100"]
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL)
        self.run.fence_files.append(out)
        self.run.cleanups.append(lambda: stop_process(p))
        return p

    def add_node(self, label, **kw):
        n = Node(self, label, **kw)
        self.nodes.append(n)
        return n

    def twin(self, of, label=None):
        """A node with `of`'s ip:port identity, its own data dir and ports:
        the same address moved to another host."""
        n = Node(self, label or of.label + "-twin",
                 identity_port=of.identity_port)
        self.nodes.append(n)
        return n

    def restart_zk(self, down_s):
        port = self.zk.port
        self.zk.stop()
        self.run.log("ZooKeeper stopped")
        time.sleep(down_s)
        self.zk.start(port)
        self.run.log("ZooKeeper started again")

    def restart_pg(self, down_s):
        self.pg.stop()
        self.run.log("PostgreSQL stopped")
        time.sleep(down_s)
        self.pg.start()
        self.run.log("PostgreSQL started again")

    def sanitizer_reports(self):
        """Sanitizer reports in the node logs and the nodes' sanitizer
        files; leaks that tests/lsan.supp suppressed are noted, not
        counted."""
        bad = 0
        for n in self.nodes:
            k = 0
            for path in [n.log_path] + sorted(glob.glob(n.sanitizer_path +
                                                        ".*")):
                if os.path.exists(path):
                    with open(path, errors="replace") as f:
                        t = f.read()
                    bad += ft.sanitizer_errors(t)
                    k += t.count("Suppressions used:")
            if k:
                self.run.notes.append(
                    "%s: %d exit(s) with a suppressed leak (%s)" % (
                        n.label, k, os.path.basename(ft.LSAN_SUPP)))
        return bad

    def stop_all(self):
        for n in self.nodes:
            n.stop()

    def fences_exposed(self):
        """Does the server under test keep fences? It is taken to when its
        /metrics has the coordinator's fence gauge
        (frond_coord_fence_ahead_seconds: the fence minus the clock), which
        a server that only reports its high water does not export."""
        for n in self.nodes:
            if not n.up():
                continue
            try:
                c = http.client.HTTPConnection("127.0.0.1", n.http_port,
                                               timeout=2)
                c.request("GET", "/metrics")
                body = c.getresponse().read().decode(errors="replace")
                c.close()
                return FENCE_METRIC in body
            except (OSError, http.client.HTTPException):
                continue
        return False


class Load:
    """A chaos_load process. Streams are (node, proto, kind, tag, count,
    timeout_ms, pause_us[, backoff_ms]); HTTP protocols go to the node's
    HTTP port, the Redis protocol to its RESP port."""

    def __init__(self, run, name, streams, seconds, max_ids=0):
        self.run = run
        out = run.subdir("load", name)
        args = [ft.tool("chaos_load"), "--dir", out, "--seconds",
                str(seconds), "--max-ids", str(max_ids)]
        for i, st in enumerate(streams):
            node, proto, kind, tag, count, timeout_ms, pause_us = st[:7]
            backoff_ms = st[7] if len(st) > 7 else 100
            sname = "%s-%d-%s-%s-%s" % (name, i, node.label, proto,
                                        tag if kind == "segment" else "sf")
            port = node.resp_port if proto in ("resp", "incr") \
                else node.http_port
            args.append("%s,%s,%d,%s,%s,%d,%d,%d,%d" % (
                sname, proto, port, kind, tag if kind == "segment" else "-",
                count, timeout_ms, pause_us, backoff_ms))
            run.streams.append((sname, os.path.join(out, sname), kind,
                                tag if kind == "segment" else "-",
                                node.label))
        self.out = open(os.path.join(out, "stdout"), "w")
        self.p = subprocess.Popen(args, stdout=self.out,
                                  stderr=subprocess.STDOUT)
        run.cleanups.append(self.stop)
        run.log("load %s: %d streams" % (name, len(streams)))

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.out.close()
        ft.check(self.p.returncode == 0,
                 "chaos_load exited with %s" % self.p.returncode)

    def wait(self):
        self.p.wait()
        self.stop()


def mixed(node, snowflake_count=50, segment_count=20, timeout_ms=3000,
          pause_us=1000, backoff_ms=100):
    """The everyday load on a node: snowflake and segment IDs, single and
    in batches, over HTTP (Leaf's paths and /v1) and the Redis protocol."""
    return [
        (node, "http", "snowflake", "-", snowflake_count, timeout_ms,
         pause_us, backoff_ms),
        (node, "leaf", "snowflake", "-", 1, timeout_ms, pause_us, backoff_ms),
        (node, "resp", "snowflake", "-", max(1, snowflake_count // 2),
         timeout_ms, pause_us, backoff_ms),
        (node, "http", "segment", "orders", segment_count, timeout_ms,
         pause_us, backoff_ms),
        (node, "incr", "segment", "events", 1, timeout_ms, pause_us,
         backoff_ms),
        (node, "resp", "segment", "events", segment_count, timeout_ms,
         pause_us, backoff_ms),
    ]


def check(run, show_fence=True):
    """Run chaos_check over everything collected; returns its numbers (and
    "failed" = {code: requests}) and prints its examples."""
    manifest = run.path("manifest")
    tmp = run.subdir("check")
    with open(manifest, "w") as f:
        f.write("tmp %s\n" % tmp)
        for name, spec in run.layouts.items():
            f.write("layout %s %s\n" % (name, spec))
        for label, ns, layout in run.incarnations:
            f.write("incarnation %s %d %s\n" % (label, ns, layout))
        for s in run.streams:
            f.write("stream %s %s %s %s %s\n" % s)
        for fence in run.fence_files:
            f.write("fence %s\n" % fence)
        for label in run.static:
            f.write("static %s\n" % label)
        for ns, labels in run.barriers:
            f.write("barrier %d %s\n" % (ns, ",".join(labels)))
    r = subprocess.run([ft.tool("chaos_check"), manifest],
                       capture_output=True, text=True, timeout=3600)
    ft.check(r.returncode == 0, "chaos_check: %s" % r.stderr.strip())
    numbers = {"failed": {}}
    for line in r.stdout.splitlines():
        if line.startswith("example fence") and not show_fence:
            continue
        if line.startswith("example"):
            print("  " + line)
        elif line.startswith("failed "):
            _, code, v = line.split()
            numbers["failed"][code] = int(v)
        else:
            k, v = line.split()
            numbers[k] = int(v)
    return numbers
