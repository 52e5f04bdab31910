# SPDX-License-Identifier: Apache-2.0
"""
chaos_etcd.py -- the coordinator scenarios of chaos.py on etcd: a fleet
whose node IDs come from a three-member etcd cluster (fleet.Fleet with
coord="etcd"), checked by the same checker (no duplicate, order per
node, no ID above its node's fence, read from etcd by etcd_fence.py).

  etcd-kill9           kill -9 and restart at once, every 3 s
  etcd-pause           SIGSTOP past the etcd lease while a spare waits
  etcd-member-restart  etcd members killed (-9) and restarted in turn:
                       the fleet keeps issuing while a quorum lives
  etcd-partition       one node cut off from every member past its lease
                       while its address comes up on another host
  etcd-clock           hosts' clocks off etcd's: refused at start with the
                       check on; with it off, the fence alone
  etcd-layout          chaos_layout.py's layout change, on etcd

chaos.py lists them after its own (scenarios(module)); they use its
helpers, which it passes in.
"""
import time

# Leases of 2 s (etcd's minimum here is 1.5 s), renewals every 200 ms.
ETCD_OPTS = "report_ms=200&session_ms=2000&connect_ms=1500"


def scenarios(m):
    """(name, scenario) pairs for chaos.py, whose module m gives the
    helpers."""

    def kill9(run):
        """kill -9 and restart at once, every 3 s, under etcd, while the
        nodes borrow ahead of the clock. A restart must come up at the
        first attempt (it waits for the dead process's lease, then for the
        clock to reach the dead one's fence), answer an ID within a lease
        + 2 s + a window + 1 s of the kill (8 s), and issue above
        everything its node ID issued before."""
        f = m.Fleet(run, "etcd", layout="sonyflake", etcd_opts=ETCD_OPTS)
        m.start_all(f)
        load = m.Load(run, "main", sum((m.mixed(n) for n in f.nodes), []) +
                      m.bursts(f.nodes, 256), seconds=3600,
                      max_ids=m.MAX_IDS)
        bound = 2 + 2 + 3 + 1
        took = []
        for i, _ in m.cycles(run, 2, 3, 5):
            victim = f.nodes[i % len(f.nodes)]
            victim.kill9()
            took.append(m.back_within(run, victim, time.monotonic(), bound,
                                      "its kill -9"))
        run.sleep_until(run.now() + 2)
        m.count_refusals(run, f.nodes, "restarts after kill -9")
        m.note_times(run, "restart after kill -9", took, bound)
        m.finish(run, f, load)
        return f

    def pause(run):
        """SIGSTOP longer than the etcd lease, then SIGCONT: a spare of
        another identity takes the paused node's ID meanwhile
        (retention_ms=1: once its claim is gone and its fence passed),
        above the fence etcd stores; the paused node, resumed, must issue
        nothing the spare issues, and stays blocked (its node key names
        the spare now) until it is restarted after the spare stopped;
        three times."""
        f = m.Fleet(run, "etcd", layout="sonyflake",
                    etcd_opts="nodes=3&retention_ms=1&" + ETCD_OPTS)
        m.start_all(f)
        spare = f.add_node("spare")
        impatient = [(n, "leaf", "snowflake", "-", 1, 3000, 0, 5)
                     for n in f.nodes[:3] for _ in range(4)]
        load = m.Load(run, "main", sum((m.mixed(n) for n in f.nodes), []) +
                      impatient + m.bursts([spare], 256),
                      seconds=3600, max_ids=m.MAX_IDS)
        for i, t in m.cycles(run, 1, 10, 3):
            victim = f.nodes[i % 3]
            keeper = m.Spare(run, spare)
            victim.pause()
            run.sleep_until(t + 4)
            victim.resume()
            run.sleep_until(t + 5.5)
            keeper.stop()
            spare.stop()
            # The victim lost its ID for good (its node key names the
            # spare): restarted, as an orchestrator would, it takes the ID
            # the spare gave up, so that the next cycle's spare has to
            # wait for the next victim's.
            victim.stop()
            m.back_within(run, victim, time.monotonic(), 8, "its restart")
        run.sleep_until(run.now() + 2)
        m.finish(run, f, load)
        return f

    def member_restart(run):
        """etcd members killed (-9) and restarted in turn, the leader
        among them, 4 s down each: two of three keep the quorum, and every
        node must go on answering snowflake IDs while one is down (a
        member that refuses is passed over for the next endpoint)."""
        f = m.Fleet(run, "etcd", layout="sonyflake", etcd_opts=ETCD_OPTS)
        m.start_all(f)
        load = m.Load(run, "main", sum((m.mixed(n) for n in f.nodes), []) +
                      m.bursts(f.nodes, 256), seconds=3600,
                      max_ids=m.MAX_IDS)
        for i, t in m.cycles(run, 2, 8, 3):
            member = i % f.etcd.n
            f.etcd.kill(member)
            down = time.monotonic_ns()
            run.log("etcd member %d killed" % member)
            run.sleep_until(t + 4)
            up = time.monotonic_ns()
            f.etcd.start(member, wait=False)
            f.etcd.wait_healthy()
            run.log("etcd member %d back" % member)
            for n in f.nodes:
                got = run.requests(down, up, labels=[n.label],
                                   kind="snowflake")
                run.notes.append("member %d down: %s: %s" % (
                    member, n.label, m.fl.describe(got)))
                if not got.get("ok"):
                    run.fault(1, "%s answered no snowflake ID while etcd "
                              "member %d was down" % (n.label, member))
            run.sleep_until(t + 7)
        m.finish(run, f, load)
        return f

    def partition(run):
        """A fault-injecting proxy between one node and every etcd member:
        delay, reset, then a partition longer than the lease. Meanwhile
        the same ip:port comes up on another host (a moved address) and
        claims the node ID once the partitioned node's lease expired,
        above the fence etcd stores. Healed, the partitioned node finds
        its claim gone and stays blocked until the twin stops, then
        claims again above the twin's fence."""
        f = m.Fleet(run, "etcd", proxied=True, etcd_opts=ETCD_OPTS)
        m.start_all(f)
        n0 = f.nodes[0]
        twin = f.twin(n0)
        load = m.Load(run, "main", sum((m.mixed(n) for n in f.nodes), []),
                      seconds=3600, max_ids=m.MAX_IDS)

        def cut(mode, arg=None):
            for i in range(f.etcd.n):
                f.proxy.set("n0-coord%d" % i, mode, arg)

        for i, t in m.cycles(run, 2, 15, 1):
            cut("delay", 300)
            run.sleep_until(t + 1)
            cut("reset")
            run.sleep_until(t + 2)
            cut("blackhole")
            run.sleep_until(t + 4)  # the lease of 2 s has expired
            if not twin.start(timeout=10):
                run.notes.append("the twin did not come up")
            run.sleep_until(t + 9)
            cut("pass")
            run.sleep_until(t + 10)
            twin.stop()  # the node ID goes back to n0
            run.sleep_until(t + 11)
            f.proxy.set("n0-store", "blackhole")
            run.sleep_until(t + 13)
            f.proxy.set("n0-store", "pass")
        run.sleep_until(run.now() + 1)
        m.finish(run, f, load)
        return f

    def clock(run):
        """Per-host clock offsets (libfaketime, CLOCK_REALTIME only) under
        etcd, as chaos.py's clock scenario under the lease. With the
        clock check at start (max_clock_offset_ms at its default, 1 s), a
        host 5 s ahead of etcd's clock, or 2 s behind, is refused
        (CLOCK_OFFSET) and starts once its clock is right. With the check
        off (max_clock_offset_ms=0) the fence alone must keep IDs unique:
        one host 5 s ahead, one 2 s behind; the fast host is cut off from
        every member and from its store, and its ip:port comes up on a
        host with a true clock, which takes the node ID back once the
        claim is gone and must start above the fence etcd stores, 5 s
        and more ahead of its clock; then clocks jump by +-300 s while
        serving, and nodes must refuse (CLOCK_BEHIND) rather than repeat
        an ID. The fast host, healed, takes its ID back once the twin
        stops."""
        f = m.Fleet(run, "etcd", layout="sonyflake", clock=True,
                    proxied=True, etcd_opts=ETCD_OPTS)
        n0, n1, n2 = f.nodes
        # Without the clock check the first half counts its absence.
        f.etcd_opts = m.option(f, ETCD_OPTS, "max_clock_offset_ms=0")
        m.clock_checked(run, f.add_node("checked", clock=True,
                                        coord_opts=ETCD_OPTS), "etcd's")
        n0.set_clock(5)
        n1.set_clock(-2)
        n0.check_clock(5)
        m.start_all(f, [n0, n1, n2])
        twin = f.twin(n0)
        load = m.Load(run, "main", sum((m.mixed(n) for n in (n0, n1, n2,
                                                             twin)), []),
                      seconds=3600, max_ids=m.MAX_IDS)

        def cut(mode):
            for i in range(f.etcd.n):
                f.proxy.set("n0-coord%d" % i, mode)
            f.proxy.set("n0-store", mode)

        for i, t in m.cycles(run, 3, 30, 1):
            cut("blackhole")
            # The claim is gone after its lease (2 s); the twin's start
            # then waits for its clock to pass the fast host's fence (5 s
            # + max_ahead + window ahead): up after 7 to 11 s.
            if not twin.start(timeout=16):
                run.fault(1, "the twin did not take the fast host's node "
                          "ID in 16 s")
            run.log("the twin up %.1f s into the partition" %
                    (run.now() - t))
            t = run.now()
            run.sleep_until(t + 1)
            cut("pass")
            m.clock_jumps(run, t + 1, n1, n2, twin.stop)
        run.notes.append("the twin: %d starts, refused %s" % (
            twin.starts, twin.refusals))
        m.finish(run, f, load)
        return f

    return [("etcd-kill9", kill9), ("etcd-pause", pause),
            ("etcd-member-restart", member_restart),
            ("etcd-partition", partition), ("etcd-clock", clock),
            ("etcd-layout",
             __import__("chaos_layout").scenario(m, coord="etcd"))]
