#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_ready.py -- readiness per kind of ID, and riding out a ZooKeeper
outage (docs/coordinators.md, "How long can the coordinator be down?").

- Without a store, segment IDs are not a configured kind: /readyz is 200,
  /readyz?kind=segment 503 "no store configured"; RESP's INFO and the
  status page say the same.
- The recipe, scaled down: two nodes on one ZooKeeper with window_ms
  20000 and a session longer than the window. ZooKeeper is stopped for
  8 s (less than half the window): both nodes go on issuing, every
  request answered, /readyz?kind=snowflake and ?kind=segment stay 200.
  Then it hangs (SIGSTOP: connections open, nothing answers, the fence
  write in flight) until the fence is used up: snowflake goes 503
  "stopped at its fence" no later than the first refusal and no earlier
  than the docs' arithmetic allows (window_ms - report_ms), while segment
  stays 200; ZooKeeper resumed (SIGCONT),
  snowflake is ready again. Every ID collected is unique, each node's
  increasing.
- A restart after a crash waits (before it listens) up to the earlier
  session's timeout for its claim to expire; SIGTERM during that wait
  stops it at once, exit 0, the earlier claim left as it is.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check, wait_for  # noqa: E402
from ready_common import WINDOW_MS, Fleet, ready  # noqa: E402

# maxSessionTimeout is 20 ticks: 40 s, above the window, so that the
# fence is what stops a node, never the session.
TICK_MS = 2000
SESSION_MS = 40000


def test_without_store():
    s = ft.Server(store="none", resp=True)
    try:
        st, b = ready(s)
        check(st == 200 and b == "ready\n", (st, b))
        st, b = ready(s, "segment")
        check(st == 503 and b == "not ready: no store configured\nsegment: "
              "not ready: no store configured (store = none)\n", (st, b))
        check(ready(s, "snowflake")[0] == 200, "snowflake")
        m = s.request("GET", "/metrics")[2].decode()
        check("\nfrond_ready 1\n" in m and
              '\nfrond_ready_kind{kind="snowflake"} 1\n' in m, m)
        check('frond_ready{' not in m, "frond_ready has one series")
        check('frond_ready_kind{kind="segment"}' not in m,
              "a kind that is not configured has no frond_ready_kind series")
        check('\nfrond_ready_reason{kind="segment",reason="no_store"} 1\n'
              in m, "segment reason")
        page = s.request("GET", "/")[2].decode()
        check("id=ready-snowflake>yes<" in page and
              "id=ready-segment>no<" in page and
              "no store configured" in page, "status page")
        r = socket.create_connection(("127.0.0.1", s.resp_port), timeout=5)
        r.sendall(b"INFO snowflake segment\r\n")
        info = b""
        while b"ready_reason:no_store" not in info:
            d = r.recv(65536)
            check(d, "INFO: %r" % info)
            info += d
        check(b"\r\nready:1\r\nready_reason:ready\r\n" in info and
              b"\r\nready:0\r\nready_reason:no_store\r\n" in info, info)
        r.close()
    finally:
        s.close()


@ft.with_server("zookeeper", tick_ms=TICK_MS)
def test_zookeeper_outage(zk):
    f = Fleet(zk, SESSION_MS)
    try:
        # 1. An outage shorter than half the window: nothing stops.
        zk.stop()
        f.ride_out()
        # The body says the node rides it out, and for how long at most.
        st, b = ready(f.nodes[0], "snowflake")
        check(st == 200 and "coordinator not reached for" in b and
              "issuing up to its fence" in b, b)
        before = f.check_ids()
        check(before > 0, "no ID issued")
        zk.start(zk.port)
        f.reached_again("ZooKeeper")

        # 2. ZooKeeper hangs longer than the window: the fence write stays
        # in flight, no round fails, and snowflake stops at the fence all
        # the same; readiness says so no later than the first refusal.
        os.kill(zk.pid(), signal.SIGSTOP)
        took = f.stops_at_fence("ZooKeeper")

        # 3. ZooKeeper back: ready again by itself, IDs above the fence.
        os.kill(zk.pid(), signal.SIGCONT)
        f.back("ZooKeeper")
        total = f.check_ids()
        check(total > before, "no ID after the outages")
        print("%d IDs from 2 nodes, none repeated; snowflake stopped %.1f s "
              "into the second outage" % (total, took))
    finally:
        try:
            os.kill(zk.pid(), signal.SIGCONT)
        except OSError:
            pass
        f.close()


@ft.with_server("zookeeper", tick_ms=TICK_MS)
def test_sigterm_while_waiting_for_the_claim(zk):
    uri = zk.uri(extra="connect_ms=3000&session_ms=%d&window_ms=%d"
                 % (SESSION_MS, WINDOW_MS))
    s = ft.Server(extra=["--coordinator", uri], threads=1)
    try:
        wait_for("ready", lambda: ready(s)[0] == 200, 60)
        s.proc.kill()
        s.proc.wait()
        # The same identity again: its claim is the dead session's until
        # ZooKeeper expires it, up to session_ms + 2 s from now.
        s.log = open(os.path.join(s.dir, "server.log"), "w+")
        s.proc = subprocess.Popen(
            s.args, cwd=s.dir, stdout=s.log, stderr=subprocess.STDOUT,
            env=ft.sanitizer_env(dict(os.environ),
                                 os.path.join(s.dir, "sanitizer")))
        wait_for("the wait for the earlier claim",
                 lambda: "for that session to expire" in s.output(), 30)
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        try:
            rc = s.proc.wait(timeout=SESSION_MS / 4000)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, "SIGTERM during the claim's wait: rc %r after %.1f s "
              "(the wait is up to %d ms): %s" % (rc, time.monotonic() - t0,
                                                 SESSION_MS, s.output()))
        out = s.output()
        check("SIGTERM while starting: stopped" in out and
              "listening on" not in out, out)
    finally:
        s.close()


def restart(s):
    """Start s's process again, same flags and dir, its log new."""
    s.log = open(os.path.join(s.dir, "server.log"), "w+")
    s.proc = subprocess.Popen(
        s.args, cwd=s.dir, stdout=s.log, stderr=subprocess.STDOUT,
        env=ft.sanitizer_env(dict(os.environ),
                             os.path.join(s.dir, "sanitizer")))


def first_id(s):
    st, _, b = s.request("GET", "/v1/snowflake?count=1")
    check(st == 200, "snowflake: %d %r" % (st, b))
    return int(json.loads(b)["ids"][0])


@ft.with_server("zookeeper", tick_ms=TICK_MS)
def test_sigterm_while_waiting_for_the_clock(zk):
    """After a kill -9 the fence lies up to window_ms ahead: a restart
    waits for the dead session, then for the clock to reach the fence.
    SIGTERM during the clock's wait ends the start at once and cleanly
    (exit 0, the claim given up); the next start has no session to wait
    for. The fence the stopped start wrote stays (lowering it is not safe:
    the generator's start may rest on a high-water file the coordinator
    does not know), so a start may refuse CLOCK_BEHIND until the clock
    reaches it; then it serves above every ID from before."""
    uri = zk.uri(extra="connect_ms=3000&session_ms=%d&window_ms=%d"
                 % (2 * TICK_MS, WINDOW_MS))
    s = ft.Server(extra=["--coordinator", uri], threads=1)
    try:
        wait_for("ready", lambda: ready(s)[0] == 200, 60)
        before = first_id(s)
        s.proc.kill()
        s.proc.wait()
        restart(s)
        waiting = "ms for the clock to reach the high-water time"
        wait_for("the wait for the clock", lambda: waiting in s.output(),
                 WINDOW_MS / 1000)
        check("for that session to expire" in s.output(), s.output())
        t0 = time.monotonic()
        s.proc.send_signal(signal.SIGTERM)
        try:
            rc = s.proc.wait(timeout=WINDOW_MS / 4000)
        except subprocess.TimeoutExpired:
            rc = None
        out = s.output()
        check(rc == 0, "SIGTERM during the clock's wait: rc %r after %.1f s "
              "(the wait is up to %d ms): %s"
              % (rc, time.monotonic() - t0, WINDOW_MS, out))
        check("SIGTERM while starting: stopped" in out and
              "listening on" not in out and "draining" not in out, out)
        # The claim was given up: no session to wait for, the clock only;
        # refused (safely) until the clock reaches the fence left above.
        deadline = time.monotonic() + 3 * WINDOW_MS / 1000 + 30
        while True:
            restart(s)
            wait_for("listening or refused", lambda: "listening on" in
                     s.output() or s.proc.poll() is not None,
                     2 * WINDOW_MS / 1000)
            out = s.output()
            check("for that session to expire" not in out, out)
            if s.proc.poll() is None:
                break
            check("CLOCK_BEHIND" in out and time.monotonic() < deadline, out)
            time.sleep(0.5)  # between attempts, bounded by the deadline
        wait_for("ready again", lambda: ready(s)[0] == 200, 30)
        after = first_id(s)
        check(after > before, "ID %d after the restart, %d before"
              % (after, before))
    finally:
        s.close()


def sigmask(pid, field, signum):
    """Whether signum is in process pid's /proc status mask field."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1], 16) >> (signum - 1) & 1 == 1
    except FileNotFoundError:
        pass
    return False


def catches(pid, signum):
    """Whether process pid has a handler for signum."""
    return sigmask(pid, "SigCgt", signum)


def test_sigterm_during_a_start_that_fails():
    """A signal that does not stop the start (the connection to the
    coordinator is not a wait for an earlier holder) leaves a start that
    then fails a failure: exit status 1, not the 0 of a stop asked for."""
    d = ft.tempdir()
    log = open(os.path.join(d, "server.log"), "w+")
    # Nothing listens on the coordinator's port: the start fails after
    # connect_ms, with the signal taken meanwhile.
    uri = "zk://127.0.0.1:%d/frond?connect_ms=10000" % ft.free_port()
    p = subprocess.Popen(
        [ft.FROND_BIN, "serve", "--listen", "127.0.0.1:%d" % ft.free_port(),
         "--resp-listen", "off", "--store", "none", "--data-dir", d,
         "--coordinator", uri], cwd=d, stdout=log, stderr=subprocess.STDOUT,
        env=ft.sanitizer_env(dict(os.environ), os.path.join(d, "sanitizer")))
    try:
        wait_for("the start's signal handler",
                 lambda: catches(p.pid, signal.SIGTERM) or
                 p.poll() is not None, 30)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=60)
        log.seek(0)
        out = log.read()
        check(rc == 1 and "cannot start: COORD:" in out and
              "while starting: stopped" not in out, (rc, out))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
        shutil.rmtree(d, ignore_errors=True)


def test_second_sigterm_during_a_start():
    """A start stuck on a step the first SIGTERM does not end (the
    connection to a coordinator) ends at once on the second: the
    default action, as a crash, nothing having been issued."""
    d = ft.tempdir()
    log = open(os.path.join(d, "server.log"), "w+")
    uri = "zk://127.0.0.1:%d/frond?connect_ms=60000" % ft.free_port()
    p = subprocess.Popen(
        [ft.FROND_BIN, "serve", "--listen", "127.0.0.1:%d" % ft.free_port(),
         "--resp-listen", "off", "--store", "none", "--data-dir", d,
         "--coordinator", uri], cwd=d, stdout=log, stderr=subprocess.STDOUT,
        env=ft.sanitizer_env(dict(os.environ), os.path.join(d, "sanitizer")))
    try:
        wait_for("the start's signal handler",
                 lambda: catches(p.pid, signal.SIGTERM), 30)
        p.send_signal(signal.SIGTERM)
        # Taken (no longer pending: a second one sent before would merge
        # with it), but the connection goes on: still running.
        wait_for("the first SIGTERM taken",
                 lambda: not sigmask(p.pid, "ShdPnd", signal.SIGTERM), 30)
        check(p.poll() is None, "exited on the first SIGTERM")
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            rc = None
        log.seek(0)
        check(rc == -signal.SIGTERM, "second SIGTERM during the start: rc "
              "%r (the connection waits up to 60 s): %s" % (rc, log.read()))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
        shutil.rmtree(d, ignore_errors=True)


@ft.with_server("zookeeper")
def test_sigterm_during_a_start_that_succeeds(zk):
    """A SIGTERM taken while the start connects to a ZooKeeper that
    answers late (stopped, then resumed) does not stop the start: once it
    has started, the signal drains it as one that comes later would (it
    aborted in libuv once), storing the final fence."""
    d = ft.tempdir()
    log = open(os.path.join(d, "server.log"), "w+")
    os.kill(zk.pid(), signal.SIGSTOP)
    p = None
    try:
        p = subprocess.Popen(
            [ft.FROND_BIN, "serve", "--listen",
             "127.0.0.1:%d" % ft.free_port(), "--resp-listen", "off",
             "--store", "none", "--data-dir", d, "--coordinator",
             zk.uri(extra="connect_ms=60000")],
            cwd=d, stdout=log, stderr=subprocess.STDOUT,
            env=ft.sanitizer_env(dict(os.environ),
                                 os.path.join(d, "sanitizer")))
        wait_for("the start's signal handler",
                 lambda: catches(p.pid, signal.SIGTERM), 30)
        p.send_signal(signal.SIGTERM)
        wait_for("the SIGTERM taken",
                 lambda: not sigmask(p.pid, "ShdPnd", signal.SIGTERM), 30)
        check(p.poll() is None, "exited before ZooKeeper answered")
        os.kill(zk.pid(), signal.SIGCONT)
        try:
            rc = p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            rc = None
        log.seek(0)
        out = log.read()
        check(rc == 0 and "SIGTERM: draining" in out and
              "high-water time stored" in out, (rc, out))
    finally:
        os.kill(zk.pid(), signal.SIGCONT)
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()
        log.close()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    ft.main([test_without_store, test_zookeeper_outage,
             test_sigterm_while_waiting_for_the_claim,
             test_sigterm_while_waiting_for_the_clock,
             test_sigterm_during_a_start_that_fails,
             test_second_sigterm_during_a_start,
             test_sigterm_during_a_start_that_succeeds])
