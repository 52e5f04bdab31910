# SPDX-License-Identifier: Apache-2.0
"""
ready_common.py -- what the outage recipe's tests share (test_ready.py
on ZooKeeper, test_ready_etcd.py on etcd): the scaled-down timings, the
readiness probe, a bounded wait, and a fleet of two nodes on one
coordinator whose every ID is kept.
"""
import json
import time

import frondtest as ft
from frondtest import check

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


def wait_for(what, cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    check(cond(), "timed out waiting for " + what)


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
