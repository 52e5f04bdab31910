# SPDX-License-Identifier: Apache-2.0
"""
coord_common.py -- what the coordinator suites share (test_coord_*.py):
Tool, which drives tests/tools/coord_tool (a node that holds, or
fails to hold, a node ID and answers commands on stdin), and Lease, the
lease coordinator's table in a database from frondtest.py.
"""
import os
import select
import subprocess
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
            env["ASAN_OPTIONS"] = ft.set_option(
                env.get("ASAN_OPTIONS"), "verify_asan_link_order", "0")
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        if not lazy:
            self.ready()

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
            self.p.stderr.close()

    def readline(self, timeout=10):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        check(r, "coord_tool silent for %ss" % timeout)
        line = self.p.stdout.readline()
        if not line:
            self.p.wait(10)
            raise Failure("coord_tool exited: %s" % self.p.stderr.read())
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
                self.p.returncode, self.p.stderr.read()))
        self.p.stdout.close()
        self.p.stderr.close()

    def kill(self):
        self.p.kill()
        self.p.wait(10)
        for f in (self.p.stdin, self.p.stdout, self.p.stderr):
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
