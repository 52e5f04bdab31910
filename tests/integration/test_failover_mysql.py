#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Failover of a replicated MariaDB under load, as MySQL is run under Leaf:
a primary and a replica (scripts/mariadb.sh), and between Frond and them
a name that follows the primary (here a TCP forwarder, as a virtual IP or
ProxySQL would be). The primary is killed (-9) while seg_load draws IDs,
the replica promoted the way failover tools do it (its relay log applied,
replication stopped), the forwarder pointed at it.

- Semi-synchronous replica (AFTER_SYNC, Leaf's setup): no acknowledged
  allocation is lost; nothing caught; the promoted row is above every ID
  served.
- Asynchronous replica that missed the last allocations (its replication
  stopped while the primary went on): the rollback guard catches the
  range, logs and counts it, and the node serves no ID twice.
"""
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import leafnode  # noqa: E402
import segment_common as seg  # noqa: E402


class Forwarder:
    """Loopback TCP forwarding to a target port that can be moved; moving
    it closes the connections to the old one."""

    def __init__(self, target):
        self.target = target
        self.conns = []
        self.mu = threading.Lock()
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            try:
                s = socket.create_connection(("127.0.0.1", self.target), 5)
                s.settimeout(None)
            except OSError:
                c.close()
                continue
            with self.mu:
                self.conns += [c, s]
            for a, b in ((c, s), (s, c)):
                threading.Thread(target=self._pipe, args=(a, b),
                                 daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def move(self, target):
        with self.mu:
            self.target = target
            for x in self.conns:
                try:
                    x.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.conns = []

    def close(self):
        self.ls.close()
        self.move(None)


class Pair:
    """A primary and a replica behind a forwarder; uri names the
    forwarder. standby: the replica (the helpers' name for it)."""

    ddl = leafnode.DDL  # Leaf's own script

    def __init__(self, mode):
        self.primary = ft.MariaDB()
        self.standby = ft.MariaDB(start=False)
        self.fwd = None
        r = self.primary.script("replica", self.primary.dir,
                                self.standby.dir, mode)
        if r.returncode != 0:
            self.close()
            raise ft.Failure("no replica: " + r.stderr.strip())
        self.standby.start()  # already running: reads its URI and port
        self.fwd = Forwarder(self.primary.port)
        self.uri = "mysql://root@127.0.0.1:%d/frond" % self.fwd.port

    def stop_replication(self):
        self.standby.sql("STOP SLAVE")

    def fail_over(self):
        """The primary dies; the replica applies what it received, stops
        replicating and takes the primary's place."""
        self.primary.kill()
        r = self.standby.script("promote", self.standby.dir)
        ft.check(r.returncode == 0, "promote: " + r.stderr)
        self.fwd.move(self.standby.port)

    def close(self):
        if self.fwd is not None:
            self.fwd.close()
        for db in (self.standby, self.primary):
            try:
                db.close()
            except Exception:
                pass


if __name__ == "__main__":
    ft.main([seg.failover_scenario(Pair, "semisync", seg.nothing_lost),
             seg.failover_scenario(Pair, "async", seg.lost_writes)])
