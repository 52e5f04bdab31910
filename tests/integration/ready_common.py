# SPDX-License-Identifier: Apache-2.0
"""
ready_common.py -- what the outage recipe's tests share (test_ready.py
on ZooKeeper, test_ready_etcd.py on etcd): the scaled-down timings, the
readiness probe, and a fleet of two nodes on one coordinator whose every
ID is kept, with the recipe's steps the two coordinators share.
"""
import json
import time

import frondtest as ft
from frondtest import check, wait_for

WINDOW_MS = 20000
REPORT_MS = 500
# Every write asks for now + max_ahead + window_ms, and one is confirmed
# at least every report_ms: a node stops no earlier than
# window_ms - report_ms (19.5 s) into an outage, no later than
# max_ahead + window_ms (21 s). 8 s is well under it: no stop.
OUTAGE_S = 8
EARLIEST_S = (WINDOW_MS - REPORT_MS) / 1000
LATEST_S = (1000 + WINDOW_MS) / 1000


def ready(s, kind=None):
    st, _, b = s.request("GET", "/readyz" + ("?kind=" + kind if kind else ""))
    return st, b.decode()


class Fleet:
    """Two nodes on one coordinator (ZooKeeper, etcd: its uri()), each
    with a segment tag; every ID they answer is kept, per node."""

    def __init__(self, zk, session_ms):
        uri = zk.uri(extra="report_ms=%d&connect_ms=3000&session_ms=%d"
                     "&window_ms=%d" % (REPORT_MS, session_ms, WINDOW_MS))
        self.nodes = []
        self.ids = {}
        for _ in range(2):
            s = ft.Server(extra=["--coordinator", uri], tags={"orders": 1000},
                          threads=1)
            self.nodes.append(s)
            self.ids[s.port] = []
        for s in self.nodes:
            wait_for("ready", lambda: ready(s)[0] == 200, 60)

    def issue(self, s):
        """Ask s for 20 snowflake IDs; the status, and the IDs kept."""
        st, _, b = s.request("GET", "/v1/snowflake?count=20")
        if st == 200:
            self.ids[s.port] += [int(i) for i in json.loads(b)["ids"]]
        return st, b

    def segment(self, s):
        return s.request("GET", "/v1/segment/orders")[0]

    def check_ids(self):
        every = []
        for port, ids in self.ids.items():
            check(ids == sorted(set(ids)),
                  "node %d: IDs not strictly increasing" % port)
            every += ids
        check(len(every) == len(set(every)),
              "%d duplicate IDs" % (len(every) - len(set(every))))
        return len(every)

    def close(self):
        for s in self.nodes:
            s.close()

    def ride_out(self):
        """The coordinator just went away: for OUTAGE_S (less than half
        the window) both nodes issue both kinds and stay ready."""
        t0 = time.monotonic()
        rounds = 0
        while time.monotonic() - t0 < OUTAGE_S and rounds < 5000:
            rounds += 1
            for s in self.nodes:
                st, b = self.issue(s)
                check(st == 200, "snowflake refused %.1f s into the outage: "
                      "%d %r" % (time.monotonic() - t0, st, b))
                check(self.segment(s) == 200, "segment refused")
                for kind in ("snowflake", "segment"):
                    st, b = ready(s, kind)
                    check(st == 200, "%s not ready %.1f s into the outage: %r"
                          % (kind, time.monotonic() - t0, b))

    def reached_again(self, name):
        """The coordinator (name) is back after a short outage: both
        nodes ready for both kinds, and issuing."""
        for s in self.nodes:
            wait_for("%s reached again" % name,
                     lambda: ready(s, "snowflake")[1] ==
                     "ready\nsnowflake: ready\n", 60)
            check(self.issue(s)[0] == 200, "after the outage")

    def stops_at_fence(self, name, metrics=()):
        """The coordinator (name) just hung past the window: node 0 issues
        until /readyz?kind=snowflake says it stopped at its fence, no
        earlier than window_ms - report_ms; then it refuses snowflake IDs,
        serves segment IDs, and says so in /readyz, the metrics (and the
        lines of `metrics`) and the status page. How long it took, in s."""
        a = self.nodes[0]
        t0 = time.monotonic()
        deadline = t0 + LATEST_S + 30
        while time.monotonic() < deadline:
            st, _ = self.issue(a)
            if ready(a, "snowflake")[0] == 503:
                break
            check(st == 200, "refused %.1f s into the hang while /readyz"
                  "?kind=snowflake said ready" % (time.monotonic() - t0))
            time.sleep(0.05)
        took = time.monotonic() - t0
        st, b = ready(a, "snowflake")
        check(st == 503 and b.startswith(
            "not ready: node ID held, stopped at its fence: the coordinator "
            "has not confirmed a fence\nsnowflake: not ready: node ID held, "
            "stopped at its fence: the coordinator has not confirmed a fence "
            "(for ") and "window_ms 20000 used up" in b, (took, b))
        check(took >= EARLIEST_S, "stopped %.1f s into the hang, before "
              "window_ms - report_ms = %.1f s" % (took, EARLIEST_S))
        st, _ = self.issue(a)
        check(st == 503, "snowflake IDs issued past the fence: %d" % st)
        st, b = ready(a, "segment")
        check(st == 200 and b == "ready\nsegment: ready\n", b)
        check(self.segment(a) == 200, "segment IDs stopped with " + name)
        st, b = ready(a)
        check(st == 503 and b == "not ready: node ID held, stopped at its "
              "fence: the coordinator has not confirmed a fence\n", b)
        m = a.request("GET", "/metrics")[2].decode()
        check(all("\n%s\n" % line in m for line in (
            'frond_ready_reason{kind="snowflake",reason="fence_reached"} 1',
            'frond_ready_kind{kind="snowflake"} 0',
            'frond_ready_kind{kind="segment"} 1',
            'frond_ready 0') + tuple(metrics)), "metrics")
        page = a.request("GET", "/")[2].decode()
        check("id=ready-snowflake>no<" in page and
              "stopped at its fence" in page, "status page")
        return took

    def back(self, name):
        """The coordinator (name) answers again: both nodes ready by
        themselves and issuing."""
        for s in self.nodes:
            wait_for("snowflake ready after %s returned" % name,
                     lambda: ready(s, "snowflake")[0] == 200, 90)
            for _ in range(5):
                check(self.issue(s)[0] == 200, "after %s returned" % name)
