#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Segment mode on a real MariaDB (started by scripts/mariadb.sh in a temp
dir, stopped after): the scenarios of test_segment_sqlite.py and
test_segment_pg.py. The table is made by Leaf's own script, and a Leaf
node's statements (leafnode.py: Leaf's SQL through PyMySQL, its dynamic
step included) run between Frond's processes: 2 processes x 4 threads x 3
tags, no ID twice and none inside a Leaf segment; kill -9 and restart;
the database stopped mid-run and back.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import segment_common as seg  # noqa: E402


if __name__ == "__main__":
    seg.run_scenarios(ft.MariaDB, [seg.scenario_many_processes,
                                   seg.scenario_kill9,
                                   seg.scenario_store_down])
