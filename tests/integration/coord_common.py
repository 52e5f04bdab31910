# SPDX-License-Identifier: Apache-2.0
"""
coord_common.py -- what the coordinator suites share (test_coord_*.py):
Tool, which drives tests/tools/coord_tool (a node that holds, or
fails to hold, a node ID and answers commands on stdin), and Lease, the
lease coordinator's table in a database from frondtest.py.
"""
import collections
import os
import select
import subprocess
import threading
import time

import frondtest as ft
from frondtest import Failure, check

# A lease coordinator URI's fast timings for tests: leases of 1.5 s.
LEASE_FAST = "lease_ms=1500&report_ms=200&connect_ms=2000"


class Tool:
    """One tests/tools/coord_tool process: a node holding (or failing to
    hold) an ID from the coordinator uri, answering commands on stdin."""

    def __init__(self, uri, ip="10.0.0.1", port=8080, cache=None,
                 layout=None, faketime=None, lazy=False, extra=()):
        args = [ft.tool("coord_tool"), "--coordinator", uri, "--ip", ip,
                "--port", str(port)]
        args += list(extra)
        if cache:
            args += ["--cache-dir", cache]
        if layout:
            args += ["--layout", layout]
        env = dict(os.environ)
        if faketime:
            ft.need("faketime", "faketime")
            args = ["faketime", "-m", "-f", faketime] + args
            env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
            # libfaketime 0.9.10's "monotonic fix" for glibc >= 2.34 ends
            # every timed wait on a monotonic condition variable at once
            # (it reads the fake wall clock as the monotonic one); off, the
            # waits keep their deadlines.
            env["FAKETIME_FORCE_MONOTONIC_FIX"] = "0"
            env["ASAN_OPTIONS"] = ft.set_option(
                env.get("ASAN_OPTIONS"), "verify_asan_link_order", "0")
        self.args, self.env = args, env
        self._spawn()
        if lazy:
            return
        self.ready()
        # A claim whose own session or lease ran out before it completed
        # (NODE_ID_LOST at the start: a machine loaded past its cores, the
        # coordinator's fsyncs slow), or a coordinator request that timed
        # out, is a start that failed for want of time, which no test asks
        # for: start again, twice at most. Not with a cache directory,
        # where the failed start may have left a file that the next start
        # would use.
        for _ in range(2):
            slow = (self.first[:2] == ["err", "NODE_ID_LOST"] or
                    (self.first[:2] == ["err", "COORD"] and
                     "timed out" in " ".join(self.first)))
            if self.ok or cache or not slow:
                break
            self._spawn()
            self.ready()

    def _spawn(self):
        self.p = subprocess.Popen(self.args, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True,
                                  env=self.env)
        # Its log is read as it comes: a pipe nobody reads fills up and
        # blocks the thread that logs next (the fencer, in a long fault).
        self.log = collections.deque(maxlen=200)
        self.drain = threading.Thread(target=self._drain,
                                      args=(self.p, self.log), daemon=True)
        self.drain.start()

    def ready(self):
        """Read the start line: the node ID, or the error."""
        self.first = self.readline(20).split()
        self.ok = self.first[:1] == ["node"]
        if self.ok:
            self.node = int(self.first[1])
            self.start_hw = int(self.first[2])
            self.from_cache = self.first[3] == "1"
        else:
            self.p.wait(10)
            self.p.stdin.close()
            self.p.stdout.close()

    def _drain(self, p, log):
        for line in p.stderr:
            log.append(line.rstrip("\n"))
        p.stderr.close()

    def log_tail(self, n=20):
        """The last n lines it logged (all of them once it exited)."""
        if self.p.poll() is not None:
            self.drain.join(10)
        return "\n".join(list(self.log)[-n:])

    def readline(self, timeout=10):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        check(r, "coord_tool silent for %ss" % timeout)
        line = self.p.stdout.readline()
        if not line:
            self.p.wait(10)
            raise Failure("coord_tool exited: %s" % self.log_tail())
        return line.strip()

    def cmd(self, line, timeout=10):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.readline(timeout)

    def next(self):
        """(id, unix ms) of one new ID, or raise with the error."""
        r = self.cmd("next").split()
        check(r[0] == "id", "next failed: %s" % " ".join(r))
        return int(r[1]), int(r[2])

    def wait_state(self, want, timeout=45):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.cmd("state") == "state " + want:
                return
            time.sleep(0.05)
        raise Failure("state never became %s" % want)

    def close(self):
        if self.p.poll() is None:
            try:
                self.cmd("quit")
            except Failure:
                pass
            self.p.stdin.close()
            self.p.wait(20)
        if self.ok and self.p.returncode != 0:
            raise Failure("coord_tool exit %s: %s" % (
                self.p.returncode, self.log_tail()))
        self.p.stdout.close()

    def kill(self):
        self.p.kill()
        self.p.wait(10)
        for f in (self.p.stdin, self.p.stdout):
            f.close()


class Lease:
    """The lease coordinator's table in a database fixture of kind
    "sqlite", "postgresql" or "mariadb": uri(extra) is a coordinator URI
    on it, reset() starts from an empty table; base is the database's own
    URI; stop(), start() and close() are the database's."""

    def __init__(self, kind):
        self.db = ft.start_server(kind)
        self.kind = kind
        self.base = getattr(self.db, "uri", None)
        self.n = 0

    def uri(self, extra=LEASE_FAST):
        if self.kind == "sqlite":
            return "lease+sqlite://%s/lease%d.db?%s" % (self.db.dir, self.n,
                                                        extra)
        return "lease+%s?%s" % (self.base, extra)

    def reset(self):
        if self.kind == "sqlite":
            self.n += 1
        else:
            self.db.sql("DROP TABLE IF EXISTS frond_node")

    def start(self):
        self.db.start()
        self.base = self.db.uri

    def stop(self):
        self.db.stop()

    def close(self):
        self.db.close()

    cleanup = close


def lease_sqlite():
    return Lease("sqlite")


def lease_postgres():
    return Lease("postgresql")


def lease_mariadb():
    return Lease("mariadb")


def zk_tool(zk, *args):
    """tests/tools/zk_tool on the ZooKeeper fixture zk: its stdout."""
    r = subprocess.run([ft.tool("zk_tool"), zk.address] + list(args),
                       capture_output=True, text=True, timeout=30)
    ft.check(r.returncode == 0, "zk_tool %s: %s" % (args, r.stderr))
    return r.stdout


# Two layouts of one bit split, B's epoch 30 s before A's: B's IDs
# are above A's at every instant, by 30 s worth of IDs (a floor that
# far ahead is refused at a start, and still accepted by layout --set).
FLOOR_A = "time=41,node=10,seq=12,unit=1ms,epoch=1735689600000"
FLOOR_B = "time=41,node=10,seq=12,unit=1ms,epoch=1735689570000"


def floor_after_cache_start(uri, down, up, cache):
    """The layout floor on the first claim after a start from the cache.

    One identity and one cache directory: a node runs under A and stops;
    the fleet moves to B, a node issues there and stops; the fleet moves
    back to A (its floor: the largest ID B could have issued). With the
    coordinator down (down()), the node restarts under A from the cache;
    the coordinator comes back (up()) and the node claims its ID. It must
    issue nothing at or below the floor: here the floor lies 30 s
    ahead, further than a restart explains, so it refuses LAYOUT_MISMATCH,
    as a start with the coordinator up does."""
    def set_layout(spec):
        r = ft.run(["node", "layout", "--coordinator", uri, "--set", spec])
        check(r.returncode == 0, "layout --set %s: %s %s"
              % (spec, r.stdout, r.stderr))

    a = Tool(uri, cache=cache, layout=FLOOR_A)
    check(a.ok and not a.from_cache, "start under A: %s" % a.first)
    a.next()
    a.close()
    set_layout(FLOOR_B)
    b = Tool(uri, cache=cache, layout=FLOOR_B)
    check(b.ok, "start under B: %s" % b.first)
    theirs = [b.next()[0] for _ in range(2000)]
    b.close()
    set_layout(FLOOR_A)
    refused = Tool(uri, cache=cache, layout=FLOOR_A)
    check(refused.first[:2] == ["err", "LAYOUT_MISMATCH"],
          "a start under A with the coordinator up: %s" % refused.first)
    down()
    c = Tool(uri, cache=cache, layout=FLOOR_A)
    try:
        check(c.ok and c.from_cache, "start from the cache: %s" % c.first)
        r = c.cmd("next").split()
        check(r[:2] == ["err", "COORD"], "issued from the cache: %s" % r)
        up()
        deadline = time.monotonic() + 45
        state = c.cmd("state")
        while state == "state COORD" and time.monotonic() < deadline:
            time.sleep(0.05)
            state = c.cmd("state")
        top, seen, issued, below, same = max(theirs), set(theirs), 0, 0, 0
        for _ in range(2000):
            r = c.cmd("next").split()
            if r[0] != "id":
                break
            issued += 1
            below += int(r[1]) <= top
            same += int(r[1]) in seen
        print("first claim after a cache start: %s; %d IDs issued, %d at "
              "or below the largest of layout B, %d equal to one of B's"
              % (state, issued, below, same))
        check(below == 0 and same == 0, "%d IDs at or below the floor, "
              "%d issued before under B" % (below, same))
        check(state == "state LAYOUT_MISMATCH" and r[:2] ==
              ["err", "LAYOUT_MISMATCH"], "after the claim: %s, next %s"
              % (state, r))
    finally:
        c.close()
