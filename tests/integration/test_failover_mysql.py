#!/usr/bin/env python3
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
import shutil
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import leafnode  # noqa: E402
import test_segment_sqlite as seg  # noqa: E402

TAG = "fo"


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
    def __init__(self, mode):
        self.primary = ft.MariaDB()
        self.replica = ft.MariaDB.__new__(ft.MariaDB)
        self.replica.dir = ft.tempdir("frond-my-replica-")
        r = self.primary._sh("replica", self.primary.dir, self.replica.dir,
                             mode)
        if r.returncode != 0:
            self.close()
            raise ft.Failure("no replica: " + r.stderr.strip())
        self.replica.start()  # already running: reads its URI and port
        self.fwd = Forwarder(self.primary.port)
        self.uri = "mysql://root@127.0.0.1:%d/frond" % self.fwd.port

    def fail_over(self):
        """The primary dies; the replica applies what it received, stops
        replicating and takes the primary's place."""
        self.primary.kill()
        r = self.replica._sh("promote", self.replica.dir)
        ft.check(r.returncode == 0, "promote: " + r.stderr)
        self.fwd.move(self.replica.port)

    def close(self):
        if getattr(self, "fwd", None):
            self.fwd.close()
        for my in (self.replica, self.primary):
            try:
                my.close()
            except Exception:
                pass


def setup_tag(pair):
    pair.primary.sql(leafnode.DDL)
    pair.primary.sql("INSERT INTO leaf_alloc (biz_tag, max_id, step) "
                     "VALUES ('%s', 1, 1000)" % TAG)
    deadline = time.monotonic() + 60
    while pair.replica.sql("SELECT count(*) FROM leaf_alloc").strip() != "1":
        ft.check(time.monotonic() < deadline, "the replica has no row")
        time.sleep(0.1)


def load(pair, workdir):
    # One thread, about 10,000 IDs/s, steps of at most 2,000.
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


def test_semisync_replica():
    pair = Pair("semisync")
    workdir = ft.tempdir("frond-fo-")
    try:
        setup_tag(pair)
        ld = load(pair, workdir)
        grow(ld, 5000, "5000 IDs before the failover")
        pair.fail_over()
        grow(ld, 20000, "20000 IDs after the promotion")
        rollbacks, ids = finish(ld)
        ft.check(rollbacks == 0, "a semi-synchronous replica lost %d "
                 "allocations" % rollbacks)
        ft.check("the row went back" not in ld.err, ld.err[-500:])
        row = int(pair.replica.sql("SELECT max_id FROM leaf_alloc WHERE "
                                   "biz_tag = '%s'" % TAG))
        ft.check(row > ids[-1], "the promoted row (%d) is not above the last "
                 "ID served (%d)" % (row, ids[-1]))
    finally:
        pair.close()
        shutil.rmtree(workdir, ignore_errors=True)


def test_async_replica_lost_writes():
    pair = Pair("async")
    workdir = ft.tempdir("frond-fo-")
    try:
        setup_tag(pair)
        ld = load(pair, workdir)
        grow(ld, 5000, "5000 IDs while the replica follows")
        pair.replica.sql("STOP SLAVE")
        grow(ld, 20000, "20000 IDs the replica does not see")
        pair.fail_over()
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
    ft.main([test_semisync_replica, test_async_replica_lost_writes])
