#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench/giveback/run.py -- the numbers a clean restart skips, with the
give-back on a clean stop (segment_give_back = on) beside without it
(off), measured in the same run on SQLite and PostgreSQL (each in a temp
dir, on loopback):

  restart   one node takes 10 IDs of a tag of step 1000, stops cleanly
            (SIGTERM), starts again and takes one: the numbers between
            the last ID before and the first after
  rolling   three nodes share the store; three rounds of 50 IDs from
            each node, each round followed by one node stopped cleanly
            and started again (node 2, 1, 0: a rolling deploy); then 50
            more from each and all three stopped cleanly: the numbers
            the row reserved and nobody issued (max_id - 1 - IDs issued)

Every scenario runs REPS times (default 3) with a fresh tag; the table
shows medians and the ratio on/off.

  FROND_BIN=build/frond python3 bench/giveback/run.py
"""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
os.environ.setdefault("FROND_BIN", os.path.join(HERE, "..", "..", "build",
                                                "frond"))
os.environ.setdefault("FROND_SRC", os.path.join(HERE, "..", ".."))
import frondtest as ft  # noqa: E402
import give_common as gc  # noqa: E402

REPS = int(os.environ.get("REPS", 3))


def measure(store, engine):
    out = []
    for what in ("restart", "rolling"):
        res = {}
        for on in (False, True):
            vals = []
            for r in range(REPS):
                tag = "%s_%s_%d" % (what, "on" if on else "off", r)
                if what == "restart":
                    vals.append(gc.restart_skipped(store, tag, on))
                else:
                    vals.append(gc.rolling_skipped(store, tag, on)[1])
            res[on] = statistics.median(vals)
        out.append((engine, what, res[False], res[True]))
        print("%-10s %-8s off %8d  on %8d" % (engine, what, res[False],
                                               res[True]), flush=True)
    return out


def main():
    rows = []
    with ft.start_server("sqlite") as s:
        rows += measure(s, "SQLite")
    with ft.start_server("postgresql") as s:
        rows += measure(s, "PostgreSQL")
    print()
    print("| store | scenario | skipped, give-back off | skipped, on | on / off |")
    print("| --- | --- | ---: | ---: | ---: |")
    for engine, what, off, on in rows:
        print("| %s | %s | %d | %d | %s |" % (
            engine, what, off, on, "%.3f" % (on / off) if off else "-"))


if __name__ == "__main__":
    main()
