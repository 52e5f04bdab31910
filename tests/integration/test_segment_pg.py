#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Segment mode on a real PostgreSQL (started by scripts/pg.sh in a temp dir,
stopped after): the scenarios of test_segment_sqlite.py, plus the store
going away mid-run and coming back (segment_common.py holds them all).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import segment_common as seg  # noqa: E402


if __name__ == "__main__":
    seg.run_scenarios(ft.Postgres, [seg.scenario_many_processes,
                                    seg.scenario_kill9,
                                    seg.scenario_store_down])
