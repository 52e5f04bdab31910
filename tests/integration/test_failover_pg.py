#!/usr/bin/env python3
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

    def __init__(self, mode):
        self.primary = ft.Postgres()
        self.standby = ft.Postgres.__new__(ft.Postgres)
        self.standby.dir = ft.tempdir("frond-pg-standby-")
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

    def kill_primary(self):
        r = self.primary._pg("kill", self.primary.dir)
        ft.check(r.returncode == 0, "kill: " + r.stderr)

    def promote(self):
        r = self.standby._pg("promote", self.standby.dir)
        ft.check(r.returncode == 0, "promote: " + r.stderr)

    def close(self):
        for pg in (self.standby, self.primary):
            try:
                pg.close()
            except Exception:
                pass


def setup_tag(pair):
    pair.primary.sql(seg.LEAF_DDL["pg"])
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


def test_sync_standby():
    pair = Pair("sync")
    workdir = ft.tempdir("frond-fo-")
    try:
        setup_tag(pair)
        ld = load(pair, workdir)
        grow(ld, 5000, "5000 IDs before the failover")
        pair.kill_primary()
        pair.promote()
        grow(ld, 20000, "20000 IDs after the promotion")
        rollbacks, ids = finish(ld)
        ft.check(rollbacks == 0, "a synchronous standby lost %d allocations"
                 % rollbacks)
        ft.check("the row went back" not in ld.err, ld.err[-500:])
        row = int(pair.standby.sql("SELECT max_id FROM leaf_alloc WHERE "
                                   "biz_tag = '%s'" % TAG))
        ft.check(row > ids[-1], "the promoted row (%d) is not above the last "
                 "ID served (%d)" % (row, ids[-1]))
    finally:
        pair.close()
        shutil.rmtree(workdir, ignore_errors=True)


def test_async_standby_lost_writes():
    pair = Pair("async")
    workdir = ft.tempdir("frond-fo-")
    try:
        setup_tag(pair)
        ld = load(pair, workdir)
        grow(ld, 5000, "5000 IDs while the standby streams")
        # The standby stops receiving; the primary goes on allocating, then
        # dies: those allocations exist nowhere else.
        pair.standby.stop()
        grow(ld, 20000, "20000 IDs the standby does not see")
        pair.kill_primary()
        pair.standby.start()
        pair.promote()
        grow(ld, 20000, "20000 IDs after the promotion")
        rollbacks, ids = finish(ld)
        ft.check(rollbacks >= 1, "the guard caught nothing")
        ft.check("the row went back" in ld.err, ld.err[-500:])
        print("     the rollback guard caught %d range(s), %d IDs served"
              % (rollbacks, len(ids)))
    finally:
        pair.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    ft.main([test_sync_standby, test_async_standby_lost_writes])
