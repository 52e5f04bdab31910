#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_notify.py -- what `frond serve` tells systemd, heard on a fake
NOTIFY_SOCKET, as a unit with Type=notify and WatchdogSec= would.

A unix datagram socket in a temp dir stands in for systemd's; the server
gets NOTIFY_SOCKET and WATCHDOG_USEC in its environment, as systemd sets
them. In order: READY=1 once it listens and holds its node ID (with a
STATUS naming the node, the layout and readiness), a STATUS when readiness
changes, WATCHDOG=1 every half period while every event loop runs, and
STOPPING=1 at SIGTERM, after which the watchdog stops. One event loop
wedged (the test builds' FROND_TEST_WEDGE_MS hook: SIGUSR2 blocks the
first worker's loop) stops the pings while the other loop and the main
thread run on, and they resume once it is free. Without WATCHDOG_USEC no
WATCHDOG=1 is sent; a second SIGTERM during the drain says in STATUS
that it ends the drain now; a start that fails says why in STATUS.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402


class FakeSystemd:
    """A notify socket; every datagram is kept with its arrival time."""

    def __init__(self, d):
        self.path = os.path.join(d, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.msgs = []  # (monotonic time, text)
        self.lock = threading.Lock()
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            with self.lock:
                self.msgs.append((time.monotonic(), data.decode()))

    def all(self):
        with self.lock:
            return list(self.msgs)

    def wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, m in self.all():
                if pred(m):
                    return t, m
            time.sleep(0.02)
        raise ft.Failure("systemd never heard %s; it heard %r"
                         % (what, [m for _, m in self.all()]))

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


def serve(tmp, env, args=()):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("FROND_", "WATCHDOG_", "NOTIFY_"))}
    e.update(env)
    port = ft.free_port()
    log = open(os.path.join(tmp, "server.log"), "w+")
    proc = subprocess.Popen(
        [ft.FROND_BIN, "serve", "--listen", "127.0.0.1:%d" % port,
         "--resp-listen", "off", "--threads", "2", "--data-dir", tmp]
        + list(args), cwd=tmp, env=e, stdout=log, stderr=subprocess.STDOUT)
    return proc, port, log


def output(log):
    log.flush()
    with open(log.name) as f:
        return f.read()


def stop(proc, log):
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=30)
    check(rc == 0, "exit %d: %s" % (rc, output(log)))


def kinds(msg):
    """The assignments of a datagram, by name."""
    return dict(l.split("=", 1) for l in msg.split("\n") if "=" in l)


def test_lifecycle_and_wedged_loop():
    tmp = ft.tempdir()
    sd = FakeSystemd(tmp)
    proc = log = None
    pg, uri = ft.postgres_later()
    try:
        # A store that cannot be reached until it starts (node IDs from a
        # lease of their own): the server starts not ready (snowflake IDs
        # wait for the coordinator's check against the store's record),
        # then becomes ready.
        proc, port, log = serve(tmp, {
            "NOTIFY_SOCKET": sd.path, "WATCHDOG_USEC": "1000000",
            "FROND_TEST_WEDGE_MS": "6000"},
            ["--store", uri, "--coordinator",
             "lease+sqlite://%s/nodes.db" % tmp])
        t_ready, m = sd.wait(lambda m: "READY=1" in m, 30, "READY=1")
        check(kinds(m).get("STATUS") ==
              "node 0, layout frond: not ready: the coordinator not yet "
              "checked against the store's record; store not reached",
              "READY's STATUS: %r" % m)
        # It listens when it says so.
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
        pg.start()
        sd.wait(lambda m: m == "STATUS=node 0, layout frond: ready", 60,
                "the STATUS of readiness")
        # Pings every half second while both loops run.
        deadline = time.monotonic() + 30
        while sum(m == "WATCHDOG=1" for _, m in sd.all()) < 4:
            check(time.monotonic() < deadline, "fewer than 4 WATCHDOG=1 "
                  "in 30 s: %r" % sd.all())
            time.sleep(0.05)
        # Wedge one of the two loops for 6 s.
        t_wedge = time.monotonic()
        proc.send_signal(signal.SIGUSR2)
        time.sleep(7.5)
        pings = [t - t_wedge for t, m in sd.all()
                 if m == "WATCHDOG=1" and t > t_wedge]
        # At most one check after the wedge can still see a beat from
        # before it; from 2 s on, none until the loop is free at 6 s.
        during = [p for p in pings if 2.0 <= p <= 5.5]
        check(not during, "WATCHDOG=1 while a loop was wedged, at %r s"
              % during)
        check(any(p > 6.0 for p in pings), "the pings did not resume after "
              "the loop was free: %r" % pings)
        out = output(log)
        check("event loop 0 has not run for" in out and
              "event loop 0 runs again" in out, "the log does not say which "
              "loop was stuck: %s" % out)
        # The other loop served all along (the wedge is over by now).
        c = ft.http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/readyz")
        check(c.getresponse().status == 200, "not ready after the wedge")
        c.close()
        t_stop = time.monotonic()
        stop(proc, log)
        proc = None
        msgs = sd.all()
        stopping = [t for t, m in msgs if "STOPPING=1" in m]
        check(len(stopping) == 1 and stopping[0] >= t_stop,
              "STOPPING=1: %r" % msgs)
        check(kinds([m for _, m in msgs if "STOPPING=1" in m][0])
              .get("STATUS") == "node 0, layout frond: draining",
              "STOPPING's STATUS: %r" % msgs)
        # The order: READY first, STOPPING last, pings in between only.
        check("READY=1" in msgs[0][1] and "STOPPING=1" in msgs[-1][1],
              "first %r, last %r" % (msgs[0][1], msgs[-1][1]))
        check(all(t_ready <= t <= stopping[0] for t, m in msgs
                  if m == "WATCHDOG=1"), "a ping outside READY..STOPPING")
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        if log is not None:
            log.close()
        if pg.uri is not None:
            pg.close()
        ft.shutil.rmtree(pg.dir, ignore_errors=True)
        sd.close()
        shutil.rmtree(tmp, ignore_errors=True)


def test_no_watchdog_without_watchdog_usec():
    tmp = ft.tempdir()
    sd = FakeSystemd(tmp)
    proc = log = None
    try:
        proc, port, log = serve(tmp, {"NOTIFY_SOCKET": sd.path},
                                ["--store", "none"])
        _, m = sd.wait(lambda m: "READY=1" in m, 30, "READY=1")
        check(kinds(m).get("STATUS") == "node 0, layout frond: ready",
              "READY's STATUS: %r" % m)
        time.sleep(1.5)
        stop(proc, log)
        proc = None
        msgs = [m for _, m in sd.all()]
        check(len(msgs) == 2 and "STOPPING=1" in msgs[1],
              "without WATCHDOG_USEC: %r" % msgs)
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        if log is not None:
            log.close()
        sd.close()
        shutil.rmtree(tmp, ignore_errors=True)


def test_second_signal_says_so():
    """A second SIGTERM during the drain ends it at once; systemd hears
    it in STATUS, after STOPPING=1, and the stop is clean (exit 0)."""
    tmp = ft.tempdir()
    sd = FakeSystemd(tmp)
    proc = log = busy = None
    try:
        proc, port, log = serve(tmp, {"NOTIFY_SOCKET": sd.path},
                                ["--store", "none",
                                 "--drain-timeout-ms", "120000"])
        sd.wait(lambda m: "READY=1" in m, 30, "READY=1")
        # A request in flight keeps the drain going.
        busy = socket.create_connection(("127.0.0.1", port), timeout=5)
        busy.sendall(b"GET /readyz HTTP/1.1\r\nHost: a\r\n")
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        sd.wait(lambda m: "STOPPING=1" in m, 10, "STOPPING=1")
        time.sleep(0.3)
        check(proc.poll() is None, "the drain did not wait for the request")
        stop(proc, log)
        proc = None
        msgs = [m for _, m in sd.all()]
        check(len(msgs) == 3 and "READY=1" in msgs[0] and
              "STOPPING=1" in msgs[1] and msgs[2] ==
              "STATUS=node 0, layout frond: ending the drain now",
              "a second SIGTERM: %r" % msgs)
    finally:
        if busy is not None:
            busy.close()
        if proc is not None:
            proc.kill()
            proc.wait()
        if log is not None:
            log.close()
        sd.close()
        shutil.rmtree(tmp, ignore_errors=True)


def test_failed_start_says_why():
    tmp = ft.tempdir()
    sd = FakeSystemd(tmp)
    busy = socket.socket()
    try:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(("FROND_", "WATCHDOG_", "NOTIFY_"))}
        e["NOTIFY_SOCKET"] = sd.path
        r = subprocess.run([ft.FROND_BIN, "serve", "--listen",
                            "127.0.0.1:%d" % port, "--resp-listen", "off",
                            "--store", "none", "--data-dir", tmp], cwd=tmp,
                           env=e, capture_output=True, text=True, timeout=60)
        check(r.returncode == 1, "exit %d: %s" % (r.returncode, r.stderr))
        _, m = sd.wait(lambda m: m.startswith("STATUS="), 5, "a STATUS")
        check(m.startswith("STATUS=cannot start: IO: listen on 127.0.0.1:%d"
                           % port), "STATUS %r" % m)
        check(not any("READY=1" in m for _, m in sd.all()), "READY=1 sent")
    finally:
        busy.close()
        sd.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    ft.main([test_lifecycle_and_wedged_loop,
             test_no_watchdog_without_watchdog_usec,
             test_second_signal_says_so,
             test_failed_start_says_why])
