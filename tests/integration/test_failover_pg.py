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
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import segment_common as seg  # noqa: E402


class Pair:
    """A primary and a streaming standby; uri names both."""

    ddl = seg.LEAF_DDL["pg"]

    def __init__(self, mode):
        self.primary = ft.Postgres()
        self.standby = ft.Postgres(start=False)
        self.stopped = False
        r = self.primary.script("standby", self.primary.dir,
                                self.standby.dir, mode)
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
        self.primary.kill()
        if self.stopped:
            self.standby.start()
        r = self.standby.script("promote", self.standby.dir)
        ft.check(r.returncode == 0, "promote: " + r.stderr)

    def close(self):
        for db in (self.standby, self.primary):
            try:
                db.close()
            except Exception:
                pass


if __name__ == "__main__":
    ft.main([seg.failover_scenario(Pair, "sync", seg.nothing_lost),
             seg.failover_scenario(Pair, "async", seg.lost_writes)])
