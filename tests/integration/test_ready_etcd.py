#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_ready_etcd.py -- riding out an etcd outage: the recipe of
docs/coordinators.md ("How long can the coordinator be down?") on a real
three-member etcd cluster (etcd_common.py), scaled down as
test_ready.py runs it on ZooKeeper.

- Two nodes on etcd with window_ms 20000, report_ms 500 and a lease
  (session_ms, the etcd lease's TTL) of 60 s: a claim is sure for 9/10
  of it less report_ms, 53.5 s, longer than any step below, so that the
  fence is what stops a node, never the claim.
- Every member killed (-9) for 8 s (less than half the window), then
  started again on its data: both nodes go on issuing snowflake and
  segment IDs, /readyz?kind=snowflake and ?kind=segment stay 200 and say
  the node rides the outage out; etcd back, both ready again, their
  claims kept (no regain).
- Every member hung (SIGSTOP: connections open, nothing answers) past
  the window: snowflake goes 503 "stopped at its fence" no later than
  the first refusal and no earlier than window_ms - report_ms, while
  segment stays 200; metrics and the status page say the same.
- Members resumed (SIGCONT): both nodes ready again by themselves, on
  the same claims. Every ID collected is unique, each node's increasing.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from etcd_common import with_etcd  # noqa: E402
from frondtest import check  # noqa: E402
from ready_common import Fleet, ready  # noqa: E402

# The etcd lease's TTL: its 9/10 less report_ms (53.5 s) outlasts the
# hang's check (the fence used up by LATEST_S, 21 s; the loop's bound
# LATEST_S + 30 s), so that a node stops at its fence, not its claim.
SESSION_MS = 60000


def metric(s, name):
    """The value of s's unlabelled metric name."""
    m = s.request("GET", "/metrics")[2].decode()
    r = re.search(r"^%s (\S+)$" % re.escape(name), m, re.M)
    check(r, "no metric %s" % name)
    return float(r.group(1))


def check_claims_kept(f, when):
    for s in f.nodes:
        check(metric(s, "frond_coord_regains_total") == 0,
              "node on port %d claimed its node ID again %s: the lease "
              "expired" % (s.port, when))


@with_etcd(3)
def test_etcd_outage(etcd):
    f = Fleet(etcd, session_ms=SESSION_MS)
    try:
        # 1. Every member down for less than half the window: nothing
        # stops, on either node.
        for i in range(etcd.n):
            etcd.kill(i)
        f.ride_out()
        # The body says each node rides it out, and for how long at most.
        for s in f.nodes:
            st, b = ready(s, "snowflake")
            check(st == 200 and "coordinator not reached for" in b and
                  "issuing up to its fence" in b, b)
            check(metric(s, "frond_coord_fence_write_failures_total") > 0,
                  "no fence write failed with every etcd member down")
        before = f.check_ids()
        check(before > 0, "no ID issued")
        for i in range(etcd.n):
            etcd.start(i, wait=False)
        etcd.wait_healthy()
        f.reached_again("etcd")
        check_claims_kept(f, "after the members' restart")

        # 2. etcd hangs longer than the window: requests stay in flight,
        # and snowflake stops at the fence all the same; readiness says
        # so no later than the first refusal.
        for i in range(etcd.n):
            etcd.pause(i)
        took = f.stops_at_fence("etcd", ["frond_coord_node_held 1"])

        # 3. etcd back: ready again by itself, on the same claim, IDs
        # above the fence.
        for i in range(etcd.n):
            etcd.resume(i)
        f.back("etcd")
        check_claims_kept(f, "after the hang")
        total = f.check_ids()
        check(total > before, "no ID after the outages")
        print("%d IDs from 2 nodes, none repeated; snowflake stopped %.1f s "
              "into the hang" % (total, took))
    finally:
        for i in range(etcd.n):
            try:
                etcd.resume(i)
            except OSError:
                pass
        f.close()


if __name__ == "__main__":
    ft.main([test_etcd_outage])
