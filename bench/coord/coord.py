#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench/coord/coord.py -- claims per second and renew load per
coordinator, 1,024 nodes beside 1 (the reference, measured in the same
run), at the timings TIMINGS gives (a coordinator URI's query; empty:
the defaults, lease_ms 30000, report_ms 3000, window_ms 3000). Run it
through bench/coord/run.sh.

For each coordinator (a throwaway PostgreSQL at its default
max_connections of 100, a MariaDB at its default of 151, a standalone
ZooKeeper, a one-member etcd; scripts/ and etcd in temp dirs on
loopback), build/coord_scale claims NODES node IDs from one process
through the public API, PARALLEL at a time (a fleet's servers start side
by side), and then holds them, idle, for HOLD_S seconds while the
coordinator's own counters are read every 0.5 s (less what those reads
cost by themselves, measured first with no node):
  PostgreSQL  pg_stat_database: xact_commit (transactions), sessions
              (connections opened), numbackends (open now, ours only)
  MariaDB     SHOW GLOBAL STATUS: Com_update, Connections,
              Threads_connected
  ZooKeeper   srvr: Zxid (writes), Connections
  etcd        /metrics: etcd_server_proposals_committed_total (writes
              through consensus; keepalives are not), and the TCP
              connections established to its client port (ss)
Then the holders close (each stores its final fence and releases).
Everything it started is stopped and removed; every wait is bounded.
"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "scripts")
TOOL = os.environ.get("COORD_SCALE", os.path.join(ROOT, "build",
                                                  "coord_scale"))
NODES = int(os.environ.get("NODES", 1024))
HOLD_S = float(os.environ.get("HOLD_S", 30))
COORDS = os.environ.get("COORDS",
                        "postgresql mariadb zookeeper etcd").split()
TIMINGS = os.environ.get("TIMINGS", "")
PARALLEL = int(os.environ.get("PARALLEL", 32))


def with_timings(uri):
    """uri with TIMINGS appended to its query."""
    if not TIMINGS:
        return uri
    return uri + ("&" if "?" in uri else "?") + TIMINGS


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sh(*args, timeout=120, env=None):
    r = subprocess.run(list(args), capture_output=True, text=True,
                       timeout=timeout, env=env)
    if r.returncode != 0:
        sys.exit("coord.py: %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout.strip()


class Pg:
    name = "PostgreSQL lease"

    def __init__(self, d):
        self.d = d
        os.chmod(d, 0o777)
        self.uri = sh(os.path.join(SCRIPTS, "pg.sh"), "start", d)
        self.coord = "lease+" + self.uri

    def sql(self, q):
        return sh("psql", "-X", "-tA", "-d", self.uri, "-c", q)

    def limit(self):
        return int(self.sql("SHOW max_connections"))

    def reset(self):
        self.sql("DROP TABLE IF EXISTS frond_node; "
                 "DROP TABLE IF EXISTS frond_meta")

    def counters(self):
        """(transactions, connections opened, open now)"""
        x, s = self.sql("SELECT xact_commit, sessions FROM pg_stat_database "
                        "WHERE datname = 'postgres'").split("|")
        n = self.sql("SELECT count(*) FROM pg_stat_activity WHERE "
                     "application_name = 'frond-lease'")
        return int(x), int(s), int(n)

    def stop(self):
        sh(os.path.join(SCRIPTS, "pg.sh"), "stop", self.d)


class My:
    name = "MariaDB lease"

    def __init__(self, d):
        self.d = d
        self.uri = sh(os.path.join(SCRIPTS, "mariadb.sh"), "start", d)
        self.coord = "lease+" + self.uri
        self.sql("SET GLOBAL max_connections = 151")  # MariaDB's default

    def sql(self, q):
        return sh(os.path.join(SCRIPTS, "mariadb.sh"), "sql", self.d, q)

    def limit(self):
        return int(self.sql("SELECT @@max_connections"))

    def reset(self):
        self.sql("DROP TABLE IF EXISTS frond_node; "
                 "DROP TABLE IF EXISTS frond_meta")

    def counters(self):
        st = dict(line.split("\t") for line in self.sql(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_update', "
            "'Connections', 'Threads_connected')").splitlines())
        # the query's own connection is one of Threads_connected
        return (int(st["Com_update"]), int(st["Connections"]),
                int(st["Threads_connected"]) - 1)

    def stop(self):
        sh(os.path.join(SCRIPTS, "mariadb.sh"), "stop", self.d)


class Zk:
    name = "ZooKeeper"

    def __init__(self, d):
        self.d = d
        self.addr = sh(os.path.join(SCRIPTS, "zk.sh"), "start", d)
        self.n = 0
        self.coord = None
        # zk.sh returns once the port is open; srvr answers "not
        # currently serving requests" until the server has started.
        deadline = time.monotonic() + 60
        while "Zxid" not in self.srvr():
            if time.monotonic() > deadline:
                self.stop()
                sys.exit("coord.py: ZooKeeper at %s does not serve" %
                         self.addr)
            time.sleep(0.2)

    def limit(self):
        return 0  # maxClientCnxns=0: no per-host limit

    def reset(self):
        self.n += 1
        self.coord = "zk://%s/bench%d" % (self.addr, self.n)

    def srvr(self):
        host, port = self.addr.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(b"srvr")
            out = b""
            while True:
                b = s.recv(4096)
                if not b:
                    break
                out += b
        return dict(line.split(": ", 1) for line in out.decode().splitlines()
                    if ": " in line)

    def counters(self):
        st = self.srvr()
        # the srvr query's own connection is one of Connections
        return int(st["Zxid"], 16), 0, int(st["Connections"]) - 1

    def stop(self):
        sh(os.path.join(SCRIPTS, "zk.sh"), "stop", self.d)


class Etcd:
    name = "etcd"

    def __init__(self, d):
        self.d = d
        self.port, peer = free_port(), free_port()
        self.log = open(os.path.join(d, "etcd.log"), "ab")
        self.p = subprocess.Popen(
            ["etcd", "--name", "m0", "--data-dir", os.path.join(d, "m0"),
             "--listen-client-urls", "http://127.0.0.1:%d" % self.port,
             "--advertise-client-urls", "http://127.0.0.1:%d" % self.port,
             "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
             "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
             "--initial-cluster", "m0=http://127.0.0.1:%d" % peer],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while b'"health":"true"' not in self.get("/health"):
            if time.monotonic() > deadline or self.p.poll() is not None:
                self.stop()
                sys.exit("coord.py: etcd did not start (%s)" % self.log.name)
            time.sleep(0.2)
        self.n = 0
        self.coord = None

    def get(self, path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" %
                                        (self.port, path), timeout=5) as r:
                return r.read()
        except OSError:
            return b""

    def limit(self):
        return 0  # no connection limit

    def reset(self):
        self.n += 1
        self.coord = "etcd://127.0.0.1:%d/bench%d" % (self.port, self.n)

    def counters(self):
        writes = 0
        for line in self.get("/metrics").decode().splitlines():
            if line.startswith("etcd_server_proposals_committed_total "):
                writes = int(float(line.split()[1]))
        est = sh("ss", "-Htn", "state", "established",
                 "( sport = :%d )" % self.port)
        return writes, 0, len(est.splitlines())

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()


def measure(db, nodes):
    """Claims per second, then per second over HOLD_S: statements
    (transactions, updates or writes), connections opened, and open
    connections (median and maximum)."""
    db.reset()
    p = subprocess.Popen([TOOL, "--coordinator", with_timings(db.coord),
                          "--nodes", str(nodes), "--extra", "0", "--waves",
                          "0", "--hold-ms", "-1", "--deadline-s", "600",
                          "--parallel", str(min(PARALLEL, nodes))],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    try:
        claimed = None
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                sys.exit("coord.py: coord_scale ended: %s" % claimed)
            w = line.split()
            if w[0] == "claimed":
                claimed = (int(w[1]), int(w[2]))
            elif w[0] == "FAIL":
                sys.exit("coord.py: %s" % line.strip())
            elif w[0] == "ready":
                break
        time.sleep(2)  # past the start's burst
        rates = sample(db, HOLD_S)
        p.stdin.write("go\n")
        p.stdin.flush()
        out = p.communicate(timeout=600)[0]
        fails = [w for w in out.splitlines() if w.startswith("FAIL")]
        # A final fence write that failed at close (the coordinator busy
        # with the others' closes) leaves the fence where it was: safe,
        # and after the measurement; counted, not fatal.
        closes = [w for w in fails if w.startswith("FAIL close:")]
        if p.returncode != 0 and len(closes) != len(fails):
            sys.exit("coord.py: coord_scale: %s" % out)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    rates["claims_s"] = claimed[0] * 1000.0 / max(claimed[1], 1)
    rates["close_failed"] = len(closes)
    return rates


def sample(db, hold_s):
    """The coordinator's counters over hold_s, read every 0.5 s: per
    second, statements and connections opened; open connections (median
    and maximum)."""
    t0, c0 = time.monotonic(), db.counters()
    opened = []
    while time.monotonic() - t0 < hold_s:
        time.sleep(0.5)
        opened.append(db.counters()[2])
    t1, c1 = time.monotonic(), db.counters()
    dt = t1 - t0
    return dict(stmts_s=(c1[0] - c0[0]) / dt, conns_s=(c1[1] - c0[1]) / dt,
                open_med=statistics.median(opened), open_max=max(opened))


def net(m, base):
    """m less what reading the counters costs by itself (base: the same
    reads with no node; a database's own queries are statements and
    connections too)."""
    m = dict(m)
    m["stmts_s"] = max(m["stmts_s"] - base["stmts_s"], 0.0)
    m["conns_s"] = max(m["conns_s"] - base["conns_s"], 0.0)
    return m


def main():
    print("timings: %s; claims %d at a time; held %g s" %
          (TIMINGS or "the defaults", PARALLEL, HOLD_S))
    print("| coordinator | nodes | claims/s | statements/s | connects/s | "
          "open (median, max) | statements/s per node, ratio to 1 node |")
    print("| --- | --- | --- | --- | --- | --- | --- |", flush=True)
    for kind in COORDS:
        d = tempfile.mkdtemp(prefix="frond-bench-coord-")
        db = {"postgresql": Pg, "mariadb": My, "zookeeper": Zk,
              "etcd": Etcd}[kind](d)
        try:
            db.reset()
            base = sample(db, min(HOLD_S, 15))
            one = net(measure(db, 1), base)
            many = net(measure(db, NODES), base)
            limit = db.limit()
        finally:
            db.stop()
            subprocess.run(["rm", "-rf", d])
        for n, m in ((1, one), (NODES, many)):
            ratio = (m["stmts_s"] / n) / max(one["stmts_s"], 1e-9)
            conns = ("%.1f" % m["conns_s"]) if kind in ("postgresql",
                                                        "mariadb") else "—"
            print("| %s%s | %d | %.0f | %.1f | %s | %g, %d | %.2f× |" % (
                db.name, " (max %d)" % limit if limit else "", n,
                m["claims_s"], m["stmts_s"], conns, m["open_med"],
                m["open_max"], ratio), flush=True)
            if m["close_failed"]:
                print("<!-- %s, %d nodes: %d final fence writes failed at "
                      "close -->" % (db.name, n, m["close_failed"]),
                      flush=True)


if __name__ == "__main__":
    main()
