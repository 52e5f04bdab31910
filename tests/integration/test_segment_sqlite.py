#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Segment mode on a real SQLite file shared by several processes: no
duplicate, per-thread order, a Leaf-made table, Leaf's own allocations
interleaved, and restart after kill -9 (segment_common.py's scenarios,
which test_segment_pg.py and test_segment_mysql.py run on the other
stores); and many processes opening one fresh file at once.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import segment_common as seg  # noqa: E402


def scenario_simultaneous_open(store, workdir):
    """Eight processes open one fresh SQLite file at the same moment, 20
    times over: every one of them gets the store (switching the file to WAL
    can meet a lock that the busy timeout does not wait for)."""
    for r in range(20):
        uri = "sqlite:///%s/fresh-%d.db" % (workdir, r)
        procs = [subprocess.Popen([ft.FROND_BIN, "tag", "list", "--store", uri],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(8)]
        for p in procs:
            out, errs = p.communicate(timeout=60)
            ft.check(p.returncode == 0,
                     "round %d: a process could not open the store: %s"
                     % (r, errs.strip()))


if __name__ == "__main__":
    seg.run_scenarios(ft.SqliteStore, [seg.scenario_many_processes,
                                       seg.scenario_kill9,
                                       scenario_simultaneous_open])
