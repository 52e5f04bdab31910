#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_store_frond.py -- libfrond's frond:// store against real `frond
serve` processes: a C program's allocator leases ranges from the servers
and hands IDs out itself (tests/tools/seg_load).

- Uniqueness: threads of one process and two processes, on one server:
  every ID once, each thread's increasing.
- Failover: two servers on one store, listed together; one killed with
  SIGKILL mid-run, started again, then the other stopped: the program
  carries on from its buffers and the other server, without an error, and
  every ID is still unique and increasing per thread.
- A server that accepts and never answers: STORE_TIMEOUT, the attempts
  named; no server: STORE.
- Bad input: a malformed URI (STORE_URI, no token shown), an unknown tag
  (TAG_NOT_FOUND), a server that will not serve over frond://, node IDs
  refused from it, tag changes refused without the admin token and made
  with it.
"""
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
import segment_common as sc  # noqa: E402


class Uri:
    def __init__(self, uri):
        self.uri = uri


def sqlite_with(d, tags):
    store = "sqlite:///%s/frond.db" % d
    for name, step in tags:
        r = ft.run(["tag", "create", name, "--step", str(step), "--store",
                    store], cwd=d)
        ft.check(r.returncode == 0, "tag create: %s" % r.stderr)
    return store


def start(d, port, store, log, extra=()):
    p = ft.serve(list(extra), d, port, log, store=store)
    ft.wait_port(port, timeout=30)
    return p


def stop(p, sig=signal.SIGTERM):
    if p.poll() is None:
        p.send_signal(sig)
        p.wait(timeout=30)


def all_ids(ld, t):
    """Tag t's IDs of every thread of ld, each thread's checked
    increasing."""
    out = []
    for i, ids in enumerate(ld.ids(t)):
        sc.check_increasing(ids, "tag %d thread %d" % (t, i))
        out.extend(ids)
    return out


def test_unique_across_threads_and_processes():
    d = ft.tempdir()
    log = open(os.path.join(d, "server.log"), "w")
    store = sqlite_with(d, [("orders", 100), ("pay", 7)])
    port = ft.free_port()
    p = start(d, port, store, log)
    lds = []
    try:
        uri = Uri("frond://127.0.0.1:%d?timeout_ms=5000" % port)
        for k in range(2):
            lds.append(sc.Load(uri, os.path.join(d, "p%d" % k), ["orders",
                               "pay"], "-t", "4", "-n", "5000", "-w", "5000"))
        for ld in lds:
            ld.finish()
        for t in range(2):  # each tag's IDs are its own: 1, 2, ...
            ids = []
            for ld in lds:
                ids += all_ids(ld, t)
            ft.check(len(ids) == 2 * 4 * 5000, "IDs missing: %d" % len(ids))
            ft.check(len(set(ids)) == len(ids), "tag %d: %d duplicate IDs"
                     % (t, len(ids) - len(set(ids))))
    finally:
        for ld in lds:
            ld.kill()
        stop(p)
        log.close()


def test_failover_between_two_servers():
    d = ft.tempdir()
    log = open(os.path.join(d, "server.log"), "w")
    store = sqlite_with(d, [("fo", 50)])
    pa, pb = ft.free_port(), ft.free_port()
    a = start(d, pa, store, log)
    b = start(d, pb, store, log)
    ld = None
    try:
        # Small ranges (max_step 200) at about 10,000 IDs/s per thread: the
        # program asks the servers every few tens of ms all along.
        uri = Uri("frond://127.0.0.1:%d,127.0.0.1:%d?timeout_ms=2000"
                  % (pa, pb))
        ld = sc.Load(uri, os.path.join(d, "ids"), ["fo"], "-t", "2", "-n",
                     "0", "-m", "200", "-p", "100", "-w", "5000", "-k")
        sc.grow(ld, 3000, "IDs from the first server")
        a.send_signal(signal.SIGKILL)
        a.wait(timeout=30)
        sc.grow(ld, 5000, "IDs after the first server was killed")
        a = start(d, pa, store, log)
        sc.grow(ld, 3000, "IDs after it came back")
        stop(b)
        sc.grow(ld, 5000, "IDs after the second server stopped")
        ld.p.send_signal(signal.SIGTERM)
        out = []
        while True:
            line = ld.lines.get(timeout=60)
            if line is None:
                break
            out.append(line)
        ld.finish()
        errors = [x for x in out if x.startswith("state error")]
        ft.check(not errors, "the program saw errors: %s" % errors[:3])
        rb = [x for x in out if x.startswith("rollbacks ")]
        ft.check(rb == ["rollbacks 0"], "ranges dropped: %s" % rb)
        ids = all_ids(ld, 0)
        ft.check(len(ids) >= 16000, "too few IDs: %d" % len(ids))
        ft.check(len(set(ids)) == len(ids), "duplicate IDs after failover")
    finally:
        if ld is not None:
            ld.kill()
        stop(a)
        stop(b)
        log.close()


def listening_silent():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    return s


def test_timeout_and_no_server():
    s = listening_silent()
    try:
        port = s.getsockname()[1]
        r = ft.run(["next", "--segment", "x", "--store",
                    "frond://127.0.0.1:%d?timeout_ms=200&retries=1" % port])
        ft.check(r.returncode == 1 and "STORE_TIMEOUT" in r.stderr and
                 "2 attempts" in r.stderr and "no answer within" in r.stderr,
                 "silent server: %r" % r.stderr)
    finally:
        s.close()
    gone = ft.free_port()
    r = ft.run(["next", "--segment", "x", "--store",
                "frond://127.0.0.1:%d?retries=0" % gone])
    ft.check(r.returncode == 1 and "frond: STORE:" in r.stderr and
             "refused" in r.stderr, "no server: %r" % r.stderr)


def test_bad_input():
    d = ft.tempdir()
    log = open(os.path.join(d, "server.log"), "w")
    store = sqlite_with(d, [("orders", 10)])
    port = ft.free_port()
    p = start(d, port, store, log, ["--admin-token", "s3cr3t-admin"])
    base = "frond://127.0.0.1:%d" % port
    try:
        for uri, words in [
                (base + "?tls=on&token=hushhush", "plain HTTP only"),
                (base + "?retries=99&token=hushhush", "0..10"),
                ("frond://u:pw@127.0.0.1:%d" % port, "?token="),
                ("frond://127.0.0.1:0", "1..65535")]:
            r = ft.run(["next", "--segment", "orders", "--store", uri])
            ft.check(r.returncode == 1 and "STORE_URI" in r.stderr and
                     words in r.stderr and "hushhush" not in r.stderr,
                     "%s: %r" % (uri, r.stderr))
        r = ft.run(["next", "--segment", "nope", "--store", base])
        ft.check(r.returncode == 1 and "TAG_NOT_FOUND" in r.stderr,
                 "unknown tag: %r" % r.stderr)
        r = ft.run(["next", "--segment", "orders", "--count", "3", "--store",
                    base])
        ft.check(r.returncode == 0 and r.stdout.split() == ["1", "2", "3"],
                 "next: %r %r" % (r.stdout, r.stderr))
        # Node IDs never come from servers, and a server does not serve
        # over other servers.
        r = ft.run(["next", "--store", base])
        ft.check(r.returncode != 0 and "not node IDs" in r.stderr,
                 "snowflake over frond://: %r" % r.stderr)
        r = ft.run(["serve", "--listen", "127.0.0.1:%d" % ft.free_port(),
                    "--resp-listen", "off", "--store", base], cwd=d)
        ft.check(r.returncode != 0 and "only proxy them" in r.stderr,
                 "serve over frond://: %r" % r.stderr)
        # Tag changes: the admin API, with the token.
        r = ft.run(["tag", "create", "t2", "--step", "5", "--start", "100",
                    "--store", base + "?token=wrong-token"])
        ft.check(r.returncode == 1 and "STORE_PERMANENT" in r.stderr and
                 "UNAUTHORIZED" in r.stderr and "wrong-token" not in r.stderr,
                 "wrong token: %r" % r.stderr)
        r = ft.run(["tag", "create", "t2", "--step", "5", "--start", "100",
                    "--store", base + "?token=s3cr3t-admin"])
        ft.check(r.returncode == 0, "create with token: %r" % r.stderr)
        r = ft.run(["tag", "create", "t2", "--step", "5", "--start", "100",
                    "--store", base + "?token=s3cr3t-admin"])
        ft.check(r.returncode == 1 and "TAG_EXISTS" in r.stderr,
                 "create twice: %r" % r.stderr)
        r = ft.run(["next", "--segment", "t2", "--count", "2", "--store",
                    base])
        ft.check(r.stdout.split() == ["100", "101"], "t2: %r" % r.stdout)
        r = ft.run(["tag", "list", "--store", base])
        ft.check(r.returncode == 0 and "orders" in r.stdout and
                 "t2" in r.stdout, "tag list: %r" % r.stderr)
    finally:
        stop(p)
        log.close()


if __name__ == "__main__":
    ft.main([test_unique_across_threads_and_processes,
             test_failover_between_two_servers,
             test_timeout_and_no_server,
             test_bad_input])
