#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Segment mode on a real PostgreSQL (started by scripts/pg.sh in a temp dir,
stopped after): the scenarios of test_segment_sqlite.py, plus the store
going away mid-run and coming back.
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import test_segment_sqlite as seg  # noqa: E402


class Pg(ft.Postgres):
    dialect = "pg"
    engine = "postgresql"


def scenario_store_down(store, workdir):
    """The database stops: IDs keep coming from the buffers, then
    SEGMENT_UNAVAILABLE; once it is back, serving resumes by itself."""
    store.sql(seg.LEAF_DDL[store.dialect])
    store.sql("INSERT INTO leaf_alloc (biz_tag, max_id, step) "
              "VALUES ('down', 1, 2000)")
    # About 10,000 IDs/s with 2,000-ID segments: the buffers last well
    # under a second once the store is gone.
    ld = seg.Load(store, os.path.join(workdir, "d"), ["down"], "-n", "0",
                  "-k", "-p", "100", "-m", "2000", "-r", "300")
    ld.wait_for(lambda l: l.startswith("count ") and int(l.split()[1])
                >= 5000, 60, "5000 IDs")
    store.stop()
    stopped_at = ld.count
    ld.wait_for(lambda l: l.startswith("count "), 5, "progress")
    line = ld.wait_for(lambda l: l.startswith("state error"), 60,
                       "an error while the database is down")
    ft.check(line.split()[2] == "SEGMENT_UNAVAILABLE",
             "expected SEGMENT_UNAVAILABLE, got: " + line)
    ft.check(ld.count > stopped_at, "no IDs served from the buffers after "
             "the database stopped (%d, %d)" % (stopped_at, ld.count))
    time.sleep(1)
    store.start()
    ld.wait_for(lambda l: l == "state ok", 60,
                "serving again after the database came back")
    resumed = ld.count
    ld.wait_for(lambda l: l.startswith("count ") and int(l.split()[1])
                > resumed + 5000, 60, "5000 more IDs")
    ld.p.send_signal(signal.SIGTERM)
    ld.finish(timeout=30)
    # The failures were logged with the engine's own words.
    ft.check("segment: tag \"down\": loading a segment failed" in ld.err
             and store.engine + ": " in ld.err,
             "no store failure in the log: " + ld.err[-500:])
    ids = ld.ids(0)[0]
    seg.check_increasing(ids, "tag down across the outage")


if __name__ == "__main__":
    seg.run_scenarios(Pg, [seg.scenario_many_processes, seg.scenario_kill9,
                           scenario_store_down])
