#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_coord_scale.py -- 1,024 node IDs from each coordinator, from one
process through the public frond_coord_* API (tests/tools/coord_scale).

For each coordinator (ZooKeeper, the PostgreSQL lease, the MariaDB
lease, etcd's three members; the databases at their default connection
limits, PostgreSQL 100 and MariaDB 151): 1,024 claimants get 1,024
distinct node IDs, the 1,025th is refused with NODE_RANGE, each issues
(a holder whose renewal the loaded machine delayed past its lease takes
its ID back first), and every tenth is killed (as kill -9: no final
fence, no release) in three waves and restarted while the others renew; each new holder starts above the dead holder's durable fence and
issues above its last ID, and no node ID is held twice. Then the seeds'
three regions: three lease databases with datacenter=0..2 on a 5 dc + 5
worker bit layout, 32 nodes each, clocks up to 1 s apart (libfaketime,
per process): no ID repeated, each node's increasing; and the seeds'
1,024 servers in three regions, 342 in each region's own etcd on a 2 dc
+ 9 worker bit layout, the same way.

The timings are those of a 1,024-node fleet that spares its database
(the default lease, fence writes every 9 s instead of 3, a window of
18 s): a loaded 2-core test machine runs the fleet, its database and
the sanitizers at once. What the default timings cost the database is
bench/coord/run.sh's.

One part per run, named by the argument (ctest runs each as a test of
its own, never two at once): postgresql, mariadb, zookeeper, etcd,
regions or regions1024; none runs them all, one after the other.
"""
import contextlib
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from etcd_common import Etcd  # noqa: E402

NODES = 1024
# Leases and sessions long enough that 1,024 holders renewing on a
# loaded 2-core machine keep them; kills wait at most one lease.
LEASE_SCALE = ("lease_ms=30000&report_ms=9000&window_ms=18000"
               "&connect_ms=10000")
# Sessions of 20 s (ZooKeeper ticks of 1 s): 1,024 sessions ping every
# ~7 s instead of every 1.3 s.
ZK_SCALE = "report_ms=9000&session_ms=20000&connect_ms=10000&window_ms=18000"
# etcd sessions as ZooKeeper's: 1,024 leases kept alive every ~7 s.
ETCD_SCALE = ("report_ms=9000&session_ms=20000&connect_ms=10000"
              "&window_ms=18000")
LAYOUT_DC = "time=41,dc=5,worker=5,seq=12"


# coord_scale's claims and churn end by the deadline it is given; after
# it, a holder may take up to a minute to recover from a late renewal
# before its first ID, and again before the last (SETTLE_MS), then close.
SETTLE_S = 150


def run_scale(uri, nodes=NODES, waves=3, extra=1, timeout=360, parallel=1):
    """Run coord_scale; its fact lines as a dict of lists of words."""
    cmd = [ft.tool("coord_scale"), "--coordinator", uri, "--nodes",
           str(nodes), "--extra", str(extra), "--waves", str(waves),
           "--gap-ms", "6000", "--deadline-s", str(timeout - SETTLE_S),
           "--parallel", str(parallel)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    facts = {}
    for line in r.stdout.splitlines():
        w = line.split()
        if w:
            facts.setdefault(w[0], []).append(w[1:])
    fails = [" ".join(f) for f in facts.get("FAIL", [])]
    check(not fails and r.returncode == 0, "coord_scale exit %d: %s\n%s" %
          (r.returncode, "; ".join(fails), r.stderr[-2000:]))
    return facts


def check_fleet(name, uri, timeout=360, nodes=NODES, parallel=1):
    f = run_scale(uri, nodes=nodes, timeout=timeout, parallel=parallel)
    n, ms, distinct, retried = (int(x) for x in f["claimed"][0])
    check(n == nodes and distinct == 1, "%s: claims %s" % (name, f["claimed"]))
    extra = f["extra"][0]
    check(extra[0] == "NODE_RANGE", "%s: claim %d: %s" %
          (name, nodes + 1, " ".join(extra)))
    killed, restarted, churn_ms, rounds, stalls = (int(x)
                                                   for x in f["churn"][0])
    check(killed == (nodes + 9) // 10 and restarted == killed,
          "%s: killed %d, restarted %d" % (name, killed, restarted))
    check(len(f["wave"]) == 3, "%s: waves %s" % (name, f["wave"]))
    # A holder whose renewal came late on the loaded machine waits for
    # its claim before its first ID; more than a tenth of the fleet
    # doing so is no longer the machine's load but a renewal that fails.
    waited = int(f["first"][0][0])
    check(waited <= nodes // 10, "%s: %d of %d holders waited for a late "
          "renewal before their first ID" % (name, waited, nodes))
    ok, of = (int(x) for x in f["survivors"][0])
    writes, failures = (int(x) for x in f["writes"][0])
    # The holders renew throughout. A holder whose database did not
    # answer for a whole lease stops, safely (NODE_ID_LOST, checked
    # above by the fences); on a machine loaded past its cores that may
    # befall a few, never more than 1 % (one PostgreSQL run at load 80
    # ended with 1,023 of 1,024: bench/RESULTS.md).
    check(of == nodes and ok >= nodes - nodes // 100,
          "%s: %d of %d holders still issue (%d fence writes, %d failed)" %
          (name, ok, of, writes, failures))
    print("%s: %d claims in %d ms (%.0f/s, %d retried), the next one "
          "refused (%s); every first ID issued (%d waited for a late "
          "renewal); %d killed in 3 waves, all restarted in %d ms; %d "
          "of %d holders issuing at the end; %d fence writes, %d failed" %
          (name, n, ms, n * 1000.0 / max(ms, 1), retried, extra[0], waited,
           killed, churn_ms, ok, of, writes, failures), flush=True)


def test_postgresql_1024():
    with ft.start_server("postgresql") as pg:
        limit = int(pg.sql("SHOW max_connections").strip())
        if limit != 100:
            pg.sql("ALTER SYSTEM SET max_connections = 100")
            pg.stop()
            pg.start()
            limit = int(pg.sql("SHOW max_connections").strip())
        check(limit == 100, "PostgreSQL's default max_connections: %d" % limit)
        check_fleet("postgresql", "lease+%s?%s" % (pg.uri, LEASE_SCALE))


def test_mariadb_1024():
    with ft.start_server("mariadb") as my:
        my.sql("SET GLOBAL max_connections = 151")  # MariaDB's default
        check(my.sql("SELECT @@max_connections").strip() == "151",
              "MariaDB's max_connections")
        check_fleet("mariadb", "lease+%s?%s" % (my.uri, LEASE_SCALE))


def test_zookeeper_1024():
    with ft.start_server("zookeeper", tick_ms=1000) as zk:
        # A ZooKeeper handle runs two threads of the client library
        # besides ours: 1,024 of them in one sanitized process claim
        # about 6 a second on a loaded 2-core machine.
        check_fleet("zookeeper", zk.uri(extra=ZK_SCALE), timeout=600)


def test_etcd_1024():
    # A start on etcd takes about a second (it reads the member's clock
    # to the change of its Date header's second), mostly waiting: the
    # fleet's servers start side by side, 32 at a time here.
    with Etcd(3) as etcd:
        check_fleet("etcd", etcd.uri(extra=ETCD_SCALE), timeout=600,
                    parallel=32)


COORDINATORS = [
    ("postgresql", test_postgresql_1024),
    ("mariadb", test_mariadb_1024),
    ("zookeeper", test_zookeeper_1024),
    ("etcd", test_etcd_1024),
]


def region_uris(kind, stack):
    """Three coordinator URIs, one per region (datacenter 0..2): lease
    databases on one PostgreSQL, or three etcd clusters of one member."""
    if kind == "etcd":
        return ["%s&datacenter=%d" % (stack.enter_context(Etcd(1)).uri(
            prefix="/frond", extra=ETCD_SCALE), r) for r in range(3)]
    pg = stack.enter_context(ft.start_server("postgresql"))
    uris = []
    for r in range(3):
        pg.sql("DROP DATABASE IF EXISTS region%d" % r)
        pg.sql("CREATE DATABASE region%d" % r)
        uris.append("lease+%s?datacenter=%d&%s" % (
            pg.uri.rsplit("/", 1)[0] + "/region%d" % r, r, LEASE_SCALE))
    return uris


def three_regions(kind, layout, worker_bits, seq_bits, per_region, ids,
                  extra, parallel, timeout):
    """Three coordinators, one per region (datacenter 0..2), per_region
    nodes each on layout, clocks -0.5 s, 0 and +0.5 s off: every ID once,
    each node's increasing, each carrying its region's datacenter; with
    extra, each region's next claim refused."""
    offsets = ["-0.5", "+0", "+0.5"]
    node_bits = 63 - 41 - seq_bits
    ft.need("faketime", "faketime")
    with contextlib.ExitStack() as stack:
        d = stack.enter_context(
            tempfile.TemporaryDirectory(prefix="frond-regions-"))
        procs = [(r, os.path.join(d, "ids%d" % r), uri)
                 for r, uri in enumerate(region_uris(kind, stack))]
        # One process per region, at once: their clocks apart. Only the
        # wall clock moves; FAKETIME_FORCE_MONOTONIC_FIX=0 keeps timed
        # waits on monotonic condition variables whole (libfaketime 0.9.10
        # ends each at once otherwise: coord_common.py).
        env = dict(os.environ)
        env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
        env["FAKETIME_FORCE_MONOTONIC_FIX"] = "0"
        env["ASAN_OPTIONS"] = ft.set_option(env.get("ASAN_OPTIONS"),
                                            "verify_asan_link_order", "0")
        running = []
        m0 = time.monotonic() * 1000
        w = time.time() * 1000
        m1 = time.monotonic() * 1000
        for r, out, uri in procs:
            cmd = [ft.tool("coord_scale"), "--coordinator", uri, "--nodes",
                   str(per_region), "--extra", "1" if extra else "0",
                   "--waves", "0", "--layout", layout, "--ident",
                   "10.%d" % r, "--ids", str(ids), "--out", out,
                   "--parallel", str(parallel), "--deadline-s",
                   str(timeout - SETTLE_S)]
            # Into files: a pipe read only at the end could fill and
            # hold a region's logging threads.
            so = stack.enter_context(open(out + ".out", "w+"))
            se = stack.enter_context(open(out + ".err", "w+"))
            running.append((subprocess.Popen(
                ["faketime", "-f", offsets[r] + "s"] + cmd, env=env,
                stdout=so, stderr=se, text=True), so, se))
        deadline = time.monotonic() + timeout
        try:
            for p, _, _ in running:
                p.wait(timeout=max(1, deadline - time.monotonic()))
        finally:
            for p, _, _ in running:  # all of them, when one failed too
                if p.poll() is None:
                    p.kill()
                    p.wait()
        for r, (p, so, se) in enumerate(running):
            so.seek(0)
            se.seek(0)
            so, se = so.read(), se.read()
            check(p.returncode == 0, "region %d: %s %s" % (r, so, se[-1500:]))
            if extra:
                check("extra NODE_RANGE" in so, "region %d's claim %d: %s" %
                      (r, per_region + 1, so))
            facts = dict((x.split()[0], x.split()[1:])
                         for x in so.splitlines() if x.strip())
            check("wall" in facts and "clock" in facts,
                  "region %d: no wall or clock line: %s" % (r, so))
            # Each region's wall clock is where libfaketime put it: the
            # wall clock minus the monotonic one (which does not move)
            # there, minus the same here; each read between two monotonic
            # readings, so a pause between them widens the bounds and
            # cannot fail the check (2 ms of rounding to whole ms).
            want = float(offsets[r]) * 1000
            mb, wall, ma = (int(x) for x in facts["wall"])
            low, high = (wall - ma) - (w - m0) - 2, (wall - mb) - (w - m1) + 2
            check(low <= want <= high, "region %d's clock is %+.0f to %+.0f "
                  "ms off, not %+d" % (r, low, high, want))
            # The lease measures each holder's clock against its
            # database's (within half a fence write's round trip): the
            # median at the region's offset, every one near it. etcd
            # measures against the other live holders' (the first holder,
            # with none, against etcd's): every holder measured.
            lo, med, hi, measured = (int(x) for x in facts["clock"])
            check(measured == per_region and
                  (kind != "lease" or (abs(med - want) <= 250 and
                                       max(abs(lo - want), abs(hi - want))
                                       <= 450)),
                  "region %d's clocks, %+d ms off, measured from %d to %d "
                  "ms, median %d (%d holders)" %
                  (r, want, lo, hi, med, measured))
        seen, per_node = set(), {}
        for r, out, _ in procs:
            with open(out) as f:
                for line in f:
                    node, i = (int(x) for x in line.split())
                    check(node >> worker_bits == r,
                          "region %d issued node %d" % (r, node))
                    check(i not in seen, "ID %d repeated" % i)
                    seen.add(i)
                    check(((i >> seq_bits) & ((1 << node_bits) - 1)) == node,
                          "ID %d not node %d" % (i, node))
                    last = per_node.get(node, -1)
                    check(i > last, "node %d: %d after %d" % (node, i, last))
                    per_node[node] = i
        check(len(per_node) == 3 * per_region and
              len(seen) == 3 * per_region * ids,
              "%d nodes, %d IDs" % (len(per_node), len(seen)))
        print("three regions on %s, %s: %d IDs from %d nodes, none "
              "repeated, each node's increasing" %
              (kind, layout, len(seen), len(per_node)), flush=True)


def test_three_regions():
    """The seeds' layout, 5 datacenter and 5 worker bits: 32 nodes in
    each region's lease database, the 33rd refused."""
    three_regions("lease", LAYOUT_DC, 5, 12, 32, 200, True, 8, 270)


def test_three_regions_1024():
    """The seeds' 1,024 servers in three regions, each region its own
    etcd: 342 in each (1,026), which needs 9 worker bits (2 datacenter
    bits, 11 sequence bits: 2,048 IDs per node per ms)."""
    three_regions("etcd", "time=41,dc=2,worker=9,seq=11", 9, 11, 342, 20,
                  False, 32, 600)


if __name__ == "__main__":
    parts = dict(COORDINATORS + [("regions", test_three_regions),
                                 ("regions1024", test_three_regions_1024)])
    want = sys.argv[1:] or list(parts)
    unknown = [w for w in want if w not in parts]
    if unknown:
        sys.exit("test_coord_scale.py: no part %s (parts: %s)" %
                 (", ".join(unknown), " ".join(parts)))
    ft.tool("coord_scale")
    ft.main([parts[w] for w in want])
