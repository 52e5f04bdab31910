#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench/coord/coord.py -- claims per second and renew load per
coordinator, 1,024 nodes beside 1 (the reference, measured in the same
run), at the default timings (lease_ms 30000, report_ms 3000, window_ms
3000). Run it through bench/coord/run.sh.

For each coordinator (a throwaway PostgreSQL at its default
max_connections of 100, a MariaDB at its default of 151, a standalone
ZooKeeper; scripts/ in temp dirs on loopback), build/coord_scale claims
NODES node IDs from one process through the public API and then holds
them, idle, for HOLD_S seconds while the database's own counters are
read every 0.5 s:
  PostgreSQL  pg_stat_database: xact_commit (transactions), sessions
              (connections opened), numbackends (open now, ours only)
  MariaDB     SHOW GLOBAL STATUS: Com_update, Connections,
              Threads_connected
  ZooKeeper   srvr: Zxid (writes), Connections
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "scripts")
TOOL = os.environ.get("COORD_SCALE", os.path.join(ROOT, "build",
                                                  "coord_scale"))
NODES = int(os.environ.get("NODES", 1024))
HOLD_S = float(os.environ.get("HOLD_S", 30))
COORDS = os.environ.get("COORDS", "postgresql mariadb zookeeper").split()


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


def measure(db, nodes):
    """Claims per second, then per second over HOLD_S: statements
    (transactions, updates or writes), connections opened, and open
    connections (median and maximum)."""
    db.reset()
    p = subprocess.Popen([TOOL, "--coordinator", db.coord, "--nodes",
                          str(nodes), "--extra", "0", "--waves", "0",
                          "--hold-ms", "-1", "--deadline-s", "600"],
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
        t0, c0 = time.monotonic(), db.counters()
        opened = []
        while time.monotonic() - t0 < HOLD_S:
            time.sleep(0.5)
            opened.append(db.counters()[2])
        t1, c1 = time.monotonic(), db.counters()
        p.stdin.write("go\n")
        p.stdin.flush()
        out = p.communicate(timeout=600)[0]
        if p.returncode != 0:
            sys.exit("coord.py: coord_scale: %s" % out)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    dt = t1 - t0
    return dict(claims_s=claimed[0] * 1000.0 / max(claimed[1], 1),
                stmts_s=(c1[0] - c0[0]) / dt, conns_s=(c1[1] - c0[1]) / dt,
                open_med=statistics.median(opened), open_max=max(opened))


def main():
    rows = []
    for kind in COORDS:
        d = tempfile.mkdtemp(prefix="frond-bench-coord-")
        db = {"postgresql": Pg, "mariadb": My, "zookeeper": Zk}[kind](d)
        try:
            one = measure(db, 1)
            many = measure(db, NODES)
            rows.append((db.name, db.limit(), one, many))
        finally:
            db.stop()
            subprocess.run(["rm", "-rf", d])
    print("| coordinator | nodes | claims/s | statements/s | connects/s | "
          "open (median, max) | statements/s per node, ratio to 1 node |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, limit, one, many in rows:
        for n, m in ((1, one), (NODES, many)):
            ratio = (m["stmts_s"] / n) / max(one["stmts_s"], 1e-9)
            print("| %s%s | %d | %.0f | %.1f | %.1f | %g, %d | %.2f× |" % (
                name, " (max %d)" % limit if limit else "", n, m["claims_s"],
                m["stmts_s"], m["conns_s"], m["open_med"], m["open_max"],
                ratio))


if __name__ == "__main__":
    main()
