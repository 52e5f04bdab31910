#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Failover of a replicated PostgreSQL under load (scripts/pg.sh: a primary
and a streaming standby in temp dirs on loopback). The allocator is given
a multi-host URI with target_session_attrs=read-write; the primary is
killed (-9, its backends with it) while seg_load draws IDs, the standby
promoted.

- Synchronous standby: no committed allocation is lost, so nothing is
  caught; the node carries on by itself, and the promoted row is above
  every ID served.
- Asynchronous standby that missed the last allocations (stopped while
  the primary went on): the promoted row is behind what the node took.
  The rollback guard catches it, says so in the log, counts it, and the
  node still serves no ID twice (one thread: strictly increasing).
"""
import os
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import test_segment_sqlite as seg  # noqa: E402

TAG = "fo"


class Pair:
    """A primary and a streaming standby; uri names both."""

    ddl = seg.LEAF_DDL["pg"]

    def __init__(self, mode):
        self.primary = ft.Postgres()
        self.standby = ft.Postgres.__new__(ft.Postgres)
        self.standby.dir = ft.tempdir("frond-pg-standby-")
        self.stopped = False
        r = self.primary._pg("standby", self.primary.dir, self.standby.dir,
                             mode)
        if r.returncode != 0:
            self.close()
            raise ft.Failure("no standby: " + r.stderr.strip())
        self.standby.uri = r.stdout.strip()
        ports = [int(self.primary.uri.rsplit(":", 1)[1].split("/")[0]),
                 int(self.standby.uri.rsplit(":", 1)[1].split("/")[0])]
        self.uri = ("postgresql://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres"
                    "?target_session_attrs=read-write" % tuple(ports))

    def stop_replication(self):
        self.standby.stop()
        self.stopped = True

    def fail_over(self):
        """The primary dies (its backends with it); the standby, started
        again if it was stopped, is promoted."""
        r = self.primary._pg("kill", self.primary.dir)
        ft.check(r.returncode == 0, "kill: " + r.stderr)
        if self.stopped:
            self.standby.start()
        r = self.standby._pg("promote", self.standby.dir)
        ft.check(r.returncode == 0, "promote: " + r.stderr)

    def close(self):
        for db in (self.standby, self.primary):
            try:
                db.close()
            except Exception:
                pass


def setup_tag(pair):
    pair.primary.sql(pair.ddl)
    pair.primary.sql("INSERT INTO leaf_alloc (biz_tag, max_id, step) "
                     "VALUES ('%s', 1, 1000)" % TAG)
    deadline = time.monotonic() + 60
    while pair.standby.sql("SELECT count(*) FROM leaf_alloc").strip() != "1":
        ft.check(time.monotonic() < deadline, "the standby has no row")
        time.sleep(0.1)


def load(pair, workdir):
    # One thread, about 10,000 IDs/s, steps of at most 2,000: a store
    # allocation every 0.2 s or so, the buffers empty within a second.
    return seg.Load(pair, os.path.join(workdir, "f"), [TAG], "-n", "0",
                    "-k", "-p", "100", "-m", "2000", "-r", "300")


def grow(ld, by, what):
    start = ld.count
    ld.wait_for(lambda l: l.startswith("count ") and int(l.split()[1])
                >= start + by, 120, what)


def finish(ld):
    ld.p.send_signal(signal.SIGTERM)
    ld.finish(timeout=60)
    line = ld.wait_for(lambda l: l.startswith("rollbacks "), 10, "rollbacks")
    ids = ld.ids(0)[0]
    seg.check_increasing(ids, "tag %s across the failover" % TAG)
    return int(line.split()[1]), ids


def nothing_lost(pair, workdir):
    """The standby has every acknowledged commit: nothing to catch."""
    setup_tag(pair)
    ld = load(pair, workdir)
    grow(ld, 5000, "5000 IDs before the failover")
    pair.fail_over()
    grow(ld, 20000, "20000 IDs after the promotion")
    rollbacks, ids = finish(ld)
    ft.check(rollbacks == 0, "the standby lost %d allocations"
             % rollbacks)
    ft.check("the row went back" not in ld.err, ld.err[-500:])
    row = int(pair.standby.sql("SELECT max_id FROM leaf_alloc WHERE "
                               "biz_tag = '%s'" % TAG))
    ft.check(row > ids[-1], "the promoted row (%d) is not above the last "
             "ID served (%d)" % (row, ids[-1]))


def lost_writes(pair, workdir):
    """The standby stops receiving; the primary goes on allocating, then
    dies: those allocations exist nowhere else."""
    setup_tag(pair)
    ld = load(pair, workdir)
    grow(ld, 5000, "5000 IDs while the standby follows")
    pair.stop_replication()
    grow(ld, 20000, "20000 IDs the standby does not see")
    pair.fail_over()
    grow(ld, 20000, "20000 IDs after the promotion")
    rollbacks, ids = finish(ld)
    ft.check(rollbacks >= 1, "the guard caught nothing")
    ft.check("the row went back" in ld.err, ld.err[-500:])
    print("     the rollback guard caught %d range(s), %d IDs served"
          % (rollbacks, len(ids)))


def scenario(make_pair, mode, fn):
    def t():
        pair = make_pair(mode)
        workdir = ft.tempdir("frond-fo-")
        try:
            fn(pair, workdir)
        finally:
            pair.close()
            shutil.rmtree(workdir, ignore_errors=True)
    t.__name__ = "%s_%s" % (mode, fn.__name__)
    return t


if __name__ == "__main__":
    ft.main([scenario(Pair, "sync", nothing_lost),
             scenario(Pair, "async", lost_writes)])
