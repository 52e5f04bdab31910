#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
chaos.py -- Frond's fault-injection ("nemesis") suite.

Each scenario runs a fleet of `frond serve` nodes with real ZooKeeper and
PostgreSQL on loopback, loads every node through HTTP and the Redis
protocol with snowflake and segment requests, injects one kind of fault
the way fleets meet it, collects every ID every node answered and checks
the promises: no duplicate, order per node, no ID above its node's fence,
and the behaviour each fault must not break (a restart that comes up, a
node that serves again once the overload is gone). See README.md here.

usage: chaos.py [--list] [SCENARIO...]      (default: all, in order)

Environment:
  FROND_CHAOS_SOAK=S          stretch every scenario to about S seconds of
                              faults and load (repeating its fault cycle),
                              with no bound on the IDs collected
  FROND_CHAOS_EXPECT_FAIL=... all | none | a comma list of scenarios that
                              are expected to find failures (default: the
                              names in tests/chaos/expected-failures)
  FROND_CHAOS_FENCE=auto|1|0  count IDs above the fence (auto, the
                              default: when the server's /metrics has
                              frond_coord_fence_ahead_seconds; ctest
                              sets 1)
  FROND_CHAOS_KEEP=1          keep every scenario's files
  FROND_BIN, FROND_BUILD      the frond binary and the build dir of the tools
"""
import os
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet as fl  # noqa: E402
from fleet import Fleet, Load, Run, ft, mixed  # noqa: E402

SOAK = float(os.environ.get("FROND_CHAOS_SOAK", "0") or 0)
FROND_EPOCH_MS = 1735689600000  # the epoch of the default layout, frond
MAX_IDS = 0 if SOAK else 30000000  # per load process


def cycles(run, first, period, count):
    """Fault cycle start times: `count` of them, every `period` seconds
    from `first`; in a soak, as many as fit in FROND_CHAOS_SOAK seconds.
    The timeline begins here, with the load running."""
    run.begin()
    n = max(count, int((SOAK - first) // period)) if SOAK else count
    for i in range(n):
        run.sleep_until(first + i * period)
        yield i, first + i * period


def start_all(fleet, nodes=None):
    for n in fleet.nodes if nodes is None else nodes:
        ft.check(n.start(timeout=30), "%s did not start: %s" %
                 (n.label, n.text()[-1500:]))
        # A first start refused and tried again (a coordinator still
        # starting on a loaded machine) is noted; the scenarios count the
        # refusals of the starts their faults cause.
        for code, k in sorted(n.refusals.items()):
            fleet.run.notes.append("%s: first start refused %d time(s) "
                                   "with %s, then up" % (n.label, k, code))
        n.refusals.clear()
    fleet.fence_on = fence_mode(fleet)


def bursts(nodes, count, pause_us=0):
    """Snowflake batches past the layout's rate: the logical clock borrows
    up to max_ahead in front of the wall clock."""
    return [(n, "http", "snowflake", "-", count, 8000, pause_us)
            for n in nodes]


class Spare:
    """An orchestrator keeping a spare node started: while every node ID
    is leased it is refused (NODE_RANGE), so it keeps trying; it takes the
    first lease that expires."""

    def __init__(self, run, node):
        self.run, self.node = run, node
        self.stopping = threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()
        run.keepers.append(self)

    def loop(self):
        while not self.stopping.is_set():
            if not self.node.up():
                self.node.start(timeout=5, retry=False, expect_refusal=True)
            time.sleep(0.1)

    def stop(self):
        self.stopping.set()
        self.t.join(30)


def option(fleet, opts, extra):
    """opts with a coordinator option added, if the server knows it; a
    server from before it refuses it, and then the scenario runs without
    it (noted), so that older builds can still be measured."""
    r = fleet.node_cli("list", opts=opts + "&" + extra)
    if r.returncode == 0:
        return opts + "&" + extra
    fleet.run.notes.append("%s refused: %s" % (extra, r.stderr.strip()[:200]))
    return opts


def back_within(run, node, since, bound, what):
    """Start a node again unless it runs (retrying a refusal) and wait for
    its first snowflake ID: the seconds from `since` (CLOCK_MONOTONIC) to
    that ID, or None, counted wrong, when it took longer than bound."""
    if node.up() or node.start(timeout=bound + 10):
        node.first_id(max(0.1, since + bound + 5 - time.monotonic()))
    took = time.monotonic() - since
    if not node.up() or took > bound:
        run.fault(1, "%s answered no ID within %.0f s of %s (%s)" % (
            node.label, bound, what, "%.1f s" % took if node.up()
            else "not up"))
        return None
    run.log("%s: first ID %.2f s after %s" % (node.label, took, what))
    return took


def note_times(run, what, took, bound):
    done = [t for t in took if t is not None]
    if done:
        run.notes.append("%s: first ID after %.1f to %.1f s (bound %.0f s)"
                         % (what, min(done), max(done), bound))


def count_refusals(run, nodes, what):
    """Every start of these nodes that exited is a fault."""
    total, by = 0, {}
    for n in nodes:
        for code, k in n.refusals.items():
            total += k
            by[code] = by.get(code, 0) + k
    run.fault(total, "%s: %d refused (%s)" % (
        what, total, ", ".join("%s x%d" % kv for kv in sorted(by.items()))))


def finish(run, fleet, *loads):
    """Stop the load, give the fence poller one more poll, stop the nodes
    cleanly (all at once: each drains on its own)."""
    for k in run.keepers:
        k.stop()
    for ld in loads:
        ld.stop()
    time.sleep(0.3)
    up = [n for n in fleet.nodes if n.up()]
    for n in up:
        n.p.terminate()
    for n in up:
        rc = n.stop(signalled=True)
        if rc != 0:
            run.notes.append("%s exited %s on SIGTERM" % (n.label, rc))


# ---- scenarios ------------------------------------------------------------
#
# Each returns the fleet; behaviour the contract forbids is recorded with
# run.fault(count, what). Times are seconds into the timeline, which
# cycles() begins once the fleet is up and loaded.


def kill9(run):
    """kill -9 and restart at once, every 3 s, under ZooKeeper, while the
    nodes borrow ahead of the clock (batches past the layout's rate).
    A restart must come up at the first attempt (it waits for the dead
    process's session, then for the clock to reach the dead one's fence:
    no NODE_IN_USE, no CLOCK_BEHIND), answer an ID within a session
    timeout + 2 s + a window + 1 s of the kill (8 s), and issue above
    everything its node ID issued before."""
    f = Fleet(run, "zk", layout="sonyflake")
    start_all(f)
    load = Load(run, "main", sum((mixed(n) for n in f.nodes), []) +
                bursts(f.nodes, 256), seconds=3600, max_ids=MAX_IDS)
    # The restart's wait for the dead session is bounded by the session
    # timeout + 2 s, its wait for the clock by the window (the fence is at
    # most max_ahead + window ahead, and it may start max_ahead ahead);
    # 1 s to start the process.
    bound = 2 + 2 + 3 + 1
    took = []
    for i, _ in cycles(run, 2, 3, 5):
        victim = f.nodes[i % len(f.nodes)]
        victim.kill9()
        took.append(back_within(run, victim, time.monotonic(), bound,
                                "its kill -9"))
    run.sleep_until(run.now() + 2)
    count_refusals(run, f.nodes, "restarts after kill -9")
    note_times(run, "restart after kill -9", took, bound)
    finish(run, f, load)
    return f


def shared_dir(run):
    """Three servers started from one working directory (data_dir '.'):
    while ZooKeeper is down, each is killed and restarted, which must come
    up from its own node cache file (within connect_ms + a window + 2 s,
    6 s) and issue nothing (COORD) until ZooKeeper is back; then each must
    answer an ID within a session timeout + 2 s + a window + 2 s (9 s) of
    ZooKeeper's return."""
    f = Fleet(run, "zk", shared_dir=True,
              zk_opts="report_ms=200&session_ms=2000&connect_ms=1000")
    start_all(f)
    load = Load(run, "main", sum((mixed(n) for n in f.nodes), []),
                seconds=3600, max_ids=MAX_IDS)
    refused, took, bound, cached = 0, [], 2 + 2 + 3 + 2, []
    for c, t in cycles(run, 2, 16, 1):
        zk_port = f.zk.port
        f.zk.stop()
        run.log("ZooKeeper stopped")
        before = sum(sum(n.refusals.values()) for n in f.nodes)
        up = []
        for n in f.nodes:
            n.kill9()
            if not n.start(timeout=1 + 3 + 2, retry=False):
                run.fault(1, "%s did not start from its cache" % n.label)
            up.append((n.label, time.monotonic_ns()))
        refused += sum(sum(n.refusals.values()) for n in f.nodes) - before
        run.sleep_until(run.now() + 1.5)
        cached += [(label, since, time.monotonic_ns()) for label, since in up]
        f.zk.start(zk_port)
        back = time.monotonic()
        run.log("ZooKeeper started again")
        for n in f.nodes:
            took.append(back_within(run, n, back, bound,
                                    "ZooKeeper's return"))
        run.sleep_until(t + 15)
    run.fault(refused, "%d restarts refused while ZooKeeper was down (the "
              "cache file is shared)" % refused)
    note_times(run, "after ZooKeeper's return", took, bound)
    finish(run, f, load)
    for label, since, until in cached:
        down = run.requests(since, until, labels=[label], kind="snowflake")
        run.notes.append("snowflake requests to %s started from its cache, "
                         "ZooKeeper down: %s" % (label, fl.describe(down)))
        run.fault(down.get("ok", 0), "%s answered %d snowflake requests "
                  "from its cache with ZooKeeper down" % (
                      label, down.get("ok", 0)))
        if not down.get("COORD"):
            run.fault(1, "no snowflake request to %s failed with COORD "
                      "while it ran from its cache" % label)
    return f


def pause(run):
    """SIGSTOP longer than the database lease, then SIGCONT: a spare takes
    the paused node's ID meanwhile; when it stops, the first holder takes
    its ID back, and must issue only above what the spare issued."""
    f = Fleet(run, "lease", layout="sonyflake")
    start_all(f)
    spare = f.add_node("spare")
    # Impatient clients (single IDs, 5 ms back-off): some request arrives
    # in the first milliseconds after a node may issue again. The spare
    # borrows ahead, as a busy node does.
    impatient = [(n, "leaf", "snowflake", "-", 1, 3000, 0, 5)
                 for n in f.nodes[:3] for _ in range(4)]
    load = Load(run, "main", sum((mixed(n) for n in f.nodes), []) +
                impatient + bursts([spare], 256),
                seconds=3600, max_ids=MAX_IDS)
    for i, t in cycles(run, 1, 7, 3):
        victim = f.nodes[i % 3]
        keeper = Spare(run, spare)
        victim.pause()
        run.sleep_until(t + 3.5)
        victim.resume()
        run.sleep_until(t + 4.5)
        keeper.stop()
        spare.stop()  # its ID goes back to the paused node
    run.sleep_until(run.now() + 2)
    finish(run, f, load)
    return f


def partition_zk(run):
    """A fault-injecting proxy between one node and ZooKeeper: delay,
    reset, then a partition longer than the session. Meanwhile the same
    ip:port comes up on another host (a moved address) and claims the
    freed node ID. Then the partitioned node's store link is cut."""
    f = Fleet(run, "zk", proxied=True)
    start_all(f)
    n0 = f.nodes[0]
    twin = f.twin(n0)
    load = Load(run, "main", sum((mixed(n) for n in f.nodes), []),
                seconds=3600, max_ids=MAX_IDS)
    for i, t in cycles(run, 2, 13, 1):
        f.proxy.set("n0-coord", "delay", 300)
        run.sleep_until(t + 1)
        f.proxy.set("n0-coord", "reset")
        run.sleep_until(t + 2)
        f.proxy.set("n0-coord", "blackhole")
        run.sleep_until(t + 5)  # session_ms=2000 has expired
        if not twin.start(timeout=10):
            run.notes.append("the twin did not come up")
        run.sleep_until(t + 8)
        f.proxy.set("n0-coord", "pass")
        run.sleep_until(t + 9)
        twin.stop()  # the node ID goes back to n0
        run.sleep_until(t + 10)
        f.proxy.set("n0-store", "blackhole")
        run.sleep_until(t + 12)
        f.proxy.set("n0-store", "pass")
    run.sleep_until(run.now() + 1)
    finish(run, f, load)
    return f


def partition_lease(run):
    """A fault-injecting proxy between one node and the database that
    holds its lease and its segments: delay, reset, then a partition longer
    than the lease. A spare takes the lease once it expires; the cut-off
    node must not have issued what the spare issues."""
    f = Fleet(run, "lease", layout="sonyflake", proxied=True)
    start_all(f)
    spare = f.add_node("spare")
    load = Load(run, "main", sum((mixed(n) for n in f.nodes), []) +
                bursts(f.nodes, 256), seconds=3600, max_ids=MAX_IDS)
    keeper = None
    for i, t in cycles(run, 1, 10, 2):
        victim = f.nodes[i % 3]
        if keeper:
            keeper.stop()
            spare.stop()
        f.proxy.set(victim.label + "-coord", "delay", 400)
        run.sleep_until(t + 1)
        f.proxy.set(victim.label + "-coord", "reset")
        run.sleep_until(t + 2)
        keeper = Spare(run, spare)
        f.proxy.set(victim.label + "-coord", "blackhole")
        f.proxy.set(victim.label + "-store", "blackhole")
        run.sleep_until(t + 7)
        f.proxy.set(victim.label + "-coord", "pass")
        f.proxy.set(victim.label + "-store", "pass")
    run.sleep_until(run.now() + 3)
    finish(run, f, load)
    return f


def clock_checked(run, host, whose):
    """With the clock check on, a host 5 s ahead of `whose` clock and one
    2 s behind are refused CLOCK_OFFSET; with a true clock it starts."""
    for skew in (5, -2):
        host.set_clock(skew)
        host.check_clock(skew)
        if host.start(timeout=15, retry=False, expect_refusal=True):
            run.fault(1, "a host %+d s off %s clock started with the clock "
                      "check on" % (skew, whose))
            host.stop()
        elif host.refusal() != "CLOCK_OFFSET":
            run.fault(1, "a host %+d s off was refused with %s, not "
                      "CLOCK_OFFSET" % (skew, host.refusal()))
    host.set_clock(0)
    host.check_clock(0)
    if not host.start(timeout=15):
        run.fault(1, "a host with a true clock did not start")
    host.stop()


def clock_jumps(run, t, n1, n2, stop):
    """From t: n1's clock (2 s behind) jumps 300 s ahead and back, then
    n2's 300 s back and back, while serving; then stop()."""
    n1.set_clock(300)
    n1.check_clock(300)
    run.sleep_until(t + 2)
    n1.set_clock(-2)
    n2.set_clock(-300)
    run.sleep_until(t + 4)
    n2.set_clock(0)
    run.sleep_until(t + 5)
    stop()
    run.sleep_until(t + 7)


def clock(run):
    """Per-host clock offsets (libfaketime, CLOCK_REALTIME only). With the
    clock check at start (max_clock_offset_ms at its default, 1 s), a host
    5 s ahead of the database's clock, or 2 s behind, is refused
    (CLOCK_OFFSET) and starts once its clock is right. With the check off
    (max_clock_offset_ms=0) the fence alone must keep IDs unique: one host
    5 s ahead, one 2 s behind; the fast host loses its link to the lease
    database and a spare with a true clock takes its lease once it
    expires; then clocks jump by +-300 s while serving, and nodes must
    refuse (CLOCK_BEHIND) rather than repeat an ID."""
    checked = "lease_ms=4000&connect_ms=1500"
    f = Fleet(run, "lease", layout="sonyflake", clock=True, proxied=True,
              lease_opts=checked)
    n0, n1, n2 = f.nodes
    # Without the clock check the first half counts its absence.
    f.lease_opts = option(f, checked, "max_clock_offset_ms=0")
    clock_checked(run, f.add_node("checked", clock=True,
                                  coord_opts=checked), "the database's")
    n0.set_clock(5)
    n1.set_clock(-2)
    n0.check_clock(5)
    start_all(f, [n0, n1, n2])
    spare = f.add_node("spare", clock=True)
    load = Load(run, "main", sum((mixed(n) for n in (n0, n1, n2, spare)),
                                 []), seconds=3600, max_ids=MAX_IDS)
    for i, t in cycles(run, 3, 16, 1):
        keeper = Spare(run, spare)
        f.proxy.set("n0-coord", "blackhole")
        f.proxy.set("n0-store", "blackhole")
        run.sleep_until(t + 8)
        f.proxy.set("n0-coord", "pass")
        f.proxy.set("n0-store", "pass")
        clock_jumps(run, t + 8, n1, n2,
                    lambda: (keeper.stop(), spare.stop()))
    finish(run, f, load)
    return f


def overload(run):
    """Many threads asking two nodes for batches past the layout's rate and
    past max_ahead. Once the overload stops, the first must serve again
    within max_ahead (plus slack); the second, restarted right then (a
    deploy), must come up at the first attempt and answer an ID within
    max_ahead + 2 s of its stop, above everything it issued before."""
    f = Fleet(run, "zk", layout="sonyflake")
    n0, n1 = f.nodes[0], f.nodes[1]
    for n in (n0, n1):
        n.extra += ["--threads", "4"]  # calls into the generator at once
    start_all(f)
    load = Load(run, "main", sum((mixed(n) for n in f.nodes), []),
                seconds=3600, max_ids=MAX_IDS)
    grace = f.max_ahead_ms / 1000.0 + 2
    # A clean stop stores the exact high water, at most max_ahead ahead of
    # the clock: the restart waits for that, plus 2 s to start.
    bound = f.max_ahead_ms / 1000.0 + 2
    took = []
    for i, t in cycles(run, 2, 20, 1):
        storm = Load(run, "storm%d" % i, [
            (n, proto, "snowflake", "-", 256, 5000, 0, 0)
            for n in (n0, n1) for proto in ("http", "resp")] * 4,
            seconds=6, max_ids=MAX_IDS)
        storm.wait()
        end = time.monotonic_ns()
        run.log("overload over")
        probe = Load(run, "probe%d" % i,
                     [(n0, "leaf", "snowflake", "-", 1, 3000, 50000)],
                     seconds=grace + 8, max_ids=MAX_IDS)
        n1.stop()
        took.append(back_within(run, n1, time.monotonic(), bound,
                                "its stop"))
        probe.wait()
        codes = run.requests(end + int(grace * 1e9), load="probe%d" % i)
        total = sum(codes.values())
        late = total - codes.get("ok", 0)
        run.fault(late, "%d of %d requests to n0 failed from %.0f s after "
                  "the overload stopped (%s)" % (
                      late, total, grace, ", ".join(
                          "%s x%d" % kv for kv in sorted(codes.items())
                          if kv[0] != "ok")))
    count_refusals(run, [n1], "restart right after the overload")
    note_times(run, "restart after the overload", took, bound)
    finish(run, f, load)
    return f


def coord_down(run):
    """ZooKeeper stops for 5 s while every node serves, borrowing ahead
    (sessions of 8 s). Each node issues up to its fence (max_ahead + window
    = 1.3 s ahead of its last write), then stops: its calls fail with
    COORD, counted as failed requests, never answered with an ID; segment
    IDs, from a store of their own, keep coming. Once ZooKeeper is back,
    every node answers an ID again within a session timeout + 2 s (10 s)."""
    f = Fleet(run, "zk", layout="sonyflake", zk_tick_ms=500,
              zk_opts="report_ms=200&session_ms=8000&connect_ms=1500")
    f.zk_opts = option(f, f.zk_opts, "window_ms=300")
    # A loaded host's store loader can miss the 50 ms default (not ZK's doing)
    for n in f.nodes:
        n.extra += ["--segment-wait-ms", "2000"]
    start_all(f)
    load = Load(run, "main", sum((mixed(n) for n in f.nodes), []) +
                bursts(f.nodes, 256), seconds=3600, max_ids=MAX_IDS)
    # The last confirmed fence is at most max_ahead + window ahead of the
    # clock when ZooKeeper stops; half a second for requests in flight.
    stopped_by = (f.max_ahead_ms + 300) / 1000.0 + 0.5
    bound = 8 + 2
    outages, took = [], []
    for i, t in cycles(run, 2, 16, 1):
        port = f.zk.port
        f.zk.stop()
        down = time.monotonic_ns()  # down by now, if not a little before
        run.log("ZooKeeper stopped")
        time.sleep(5)
        outages.append((down, time.monotonic_ns()))
        f.zk.start(port)
        back = time.monotonic()
        run.log("ZooKeeper started again")
        for n in f.nodes:
            took.append(back_within(run, n, back, bound,
                                    "ZooKeeper's return"))
        run.sleep_until(t + 15)
    finish(run, f, load)
    note_times(run, "after ZooKeeper's return", took, bound)
    for down, up in outages:
        sf = run.requests(down + int(stopped_by * 1e9), up,
                          kind="snowflake")
        seg = run.requests(down, up, kind="segment")
        run.notes.append("snowflake requests from %.1f s into the outage: "
                         "%s; segment requests: %s" % (
                             stopped_by, fl.describe(sf), fl.describe(seg)))
        run.fault(sf.get("ok", 0), "%d snowflake requests answered with "
                  "ZooKeeper down, %.1f s past the last fence it confirmed"
                  % (sf.get("ok", 0), stopped_by))
        if not sf.get("COORD"):
            run.fault(1, "no snowflake call failed with COORD with "
                      "ZooKeeper down: no node was seen at its fence")
        failed = sum(seg.values()) - seg.get("ok", 0)
        run.fault(failed, "%d segment requests failed with ZooKeeper down"
                  % failed)
    return f


def coord_restart(run):
    """The database that holds the leases and the segments restarts (a
    failover) for longer than a lease, twice, while two spares wait for a
    lease. A spare takes an expired lease the moment the database is
    back; the old holder must not have issued what the spare issues."""
    f = Fleet(run, "lease", layout="sonyflake", max_ahead_ms=3000)
    start_all(f)
    spares = [f.add_node("spare%d" % i) for i in range(2)]
    load = Load(run, "main", sum((mixed(n) for n in f.nodes), []) +
                bursts(f.nodes, 256), seconds=3600, max_ids=MAX_IDS)
    for i, t in cycles(run, 2, 9, 2):
        keepers = [Spare(run, s) for s in spares]
        f.restart_pg(3)
        run.sleep_until(t + 7)
        for k in keepers:
            k.stop()
        for s in spares:
            s.stop()  # their IDs go back to the first holders
    finish(run, f, load)
    return f


SCENARIOS = [
    ("kill9", kill9),
    ("pause", pause),
    ("partition-zk", partition_zk),
    ("partition-lease", partition_lease),
    ("clock", clock),
    ("coord-restart", coord_restart),
    ("coord-down", coord_down),
    ("overload", overload),
    ("layout", __import__("chaos_layout").scenario(sys.modules[__name__])),
    ("shared-dir", shared_dir),
]
SCENARIOS += __import__("chaos_etcd").scenarios(sys.modules[__name__])


# ---- running and judging --------------------------------------------------


def expected_failures():
    env = os.environ.get("FROND_CHAOS_EXPECT_FAIL")
    names = [n for n, _ in SCENARIOS]
    if env is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "expected-failures")
        with open(path) as fh:
            return {w for line in fh for w in line.split("#")[0].split()}
    if env.strip().lower() in ("1", "all", "yes"):
        return set(names)
    if env.strip().lower() in ("", "0", "none", "no"):
        return set()
    return {w.strip() for w in env.split(",") if w.strip()}


def fence_mode(fleet):
    v = os.environ.get("FROND_CHAOS_FENCE", "auto").strip().lower()
    if v in ("1", "on", "yes"):
        return True
    if v in ("0", "off", "no"):
        return False
    on = fleet.fences_exposed()
    fleet.run.log("fence check %s: the server %s %s" % (
        "on" if on else "off", "exports" if on else "does not export",
        fl.FENCE_METRIC))
    return on


def run_scenario(name, fn, expect_fail):
    keep = os.environ.get("FROND_CHAOS_KEEP") == "1"
    run = Run(name, keep=keep)
    row = {"scenario": name, "ids": 0, "duplicates": 0, "order": 0,
           "above_fence": None, "wrong": 0, "seconds": 0.0}
    t0 = time.monotonic()
    try:
        print("== %s: %s" % (name, " ".join(fn.__doc__.split())), flush=True)
        fleet = fn(run)
        fence_on = fleet.fence_on
        bad = fleet.sanitizer_reports()
        run.fault(bad, "%d sanitizer reports in the node logs" % bad)
        run.log("checking")
        nums = fl.check(run, show_fence=fence_on)
        run.log("checked")
        # An ID of a node ID that never had a fence is above any fence.
        above = nums.get("above_fence", 0) + nums.get("unfenced", 0)
        row.update(ids=nums["ids"], duplicates=nums["duplicates"],
                   order=nums["order"],
                   above_fence=above if fence_on else None,
                   wrong=sum(c for c, _ in run.wrong))
        print("  ids %d (snowflake %d, segment %d) in %d requests, %d failed;"
              " duplicates %d (%d extra answers); order %d (%d after a "
              "restart); above fence %s" % (
                  nums["ids"], nums["snowflake_ids"], nums["segment_ids"],
                  nums["requests"], nums["failed_requests"],
                  nums["duplicates"], nums["duplicate_answers"],
                  nums["order"], nums["order_restart"],
                  "%d (%d without any)" % (nums.get("above_fence", 0),
                                           nums.get("unfenced", 0))
                  if fence_on else "not checked (%d)" %
                  nums.get("above_fence", -1)))
        print("  failed requests: %s" % (", ".join(
            "%s %d" % kv for kv in sorted(nums["failed"].items())) or "none"))
        for c, what in run.wrong:
            print("  wrong: %s" % what)
        for note in run.notes:
            print("  note: %s" % note)
        found = row["duplicates"] + row["order"] + row["wrong"] + \
            (row["above_fence"] or 0)
        sane = nums["snowflake_ids"] >= 1000 and nums["segment_ids"] >= 1000
        if not sane:
            row["result"] = "ERROR (too few IDs collected)"
        elif expect_fail:
            row["result"] = "XFAIL" if found else \
                "XPASS (fixed? take it out of expected-failures)"
        else:
            row["result"] = "FAIL" if found else "ok"
    except Exception as e:  # any failure of the harness is an error row
        print("  ERROR (%s: %s)" % (type(e).__name__, e), flush=True)
        first = (str(e).strip().splitlines() or [""])[0]
        row["result"] = "ERROR (%s: %s)" % (type(e).__name__, first[:60])
    finally:
        run.close()
    row["seconds"] = time.monotonic() - t0
    return row


def table(rows):
    head = ("scenario", "IDs", "duplicates", "order", "above-fence", "wrong",
            "seconds", "result")
    lines = [head] + [(
        r["scenario"], str(r["ids"]), str(r["duplicates"]), str(r["order"]),
        "off" if r["above_fence"] is None else str(r["above_fence"]),
        str(r["wrong"]), "%.1f" % r["seconds"], r["result"]) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = []
    for k, line in enumerate(lines):
        out.append("| " + " | ".join(
            c.ljust(w) if i in (0, 7) else c.rjust(w)
            for i, (c, w) in enumerate(zip(line, widths))) + " |")
        if k == 0:
            out.append("|" + "|".join(
                "-" * (w + 2) if i in (0, 7) else "-" * (w + 1) + ":"
                for i, w in enumerate(widths)) + "|")
    return "\n".join(out)


def main(argv):
    names = [n for n, _ in SCENARIOS]
    if argv[:1] == ["--list"]:
        print(";".join(names))
        return 0
    for a in argv:
        ft.check(a in names, "unknown scenario %s (have: %s)" %
                 (a, ", ".join(names)))
    chosen = [(n, fn) for n, fn in SCENARIOS if not argv or n in argv]
    expect = expected_failures()
    rows = [run_scenario(n, fn, n in expect) for n, fn in chosen]
    print()
    print(table(rows))
    bad = [r for r in rows if r["result"] not in ("ok", "XFAIL")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
