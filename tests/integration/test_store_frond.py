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
import http.client
import json
import os
import re
import signal
import socket
import sys
import threading
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
        # The second server buffers a segment first: a range it hands out
        # from it after the failover may lie below those taken from the
        # first (one store, two servers' buffers); it is taken all the same.
        http_get(pb, "/v1/segment/fo")
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


def http_get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), \
            r.read().decode()
    finally:
        c.close()


def test_store_identity_and_mismatch():
    """Servers name their store; one frond:// URI over two stores is
    refused, whichever server is listed first, with both named."""
    d1, d2 = ft.tempdir(), ft.tempdir()
    log = open(os.path.join(d1, "server.log"), "w")
    s1 = sqlite_with(d1, [("orders", 100)])
    s2 = sqlite_with(d2, [("orders", 100)])
    pa, pb, pc = ft.free_port(), ft.free_port(), ft.free_port()
    a = start(d1, pa, s1, log)
    b = start(d1, pb, s1, log)
    c = start(d2, pc, s2, log)
    try:
        ids = {}
        for name, port in (("a", pa), ("b", pb), ("c", pc)):
            st, _, body = http_get(port, "/v1/layout")
            lay = json.loads(body)
            ft.check(st == 200 and re.fullmatch("[0-9a-f]{32}",
                                                lay.get("store", "")) and
                     lay.get("max_range") == 1000000,
                     "%s: layout %r" % (name, body))
            ids[name] = lay["store"]
            st, hdr, body = http_get(port, "/v1/segment/orders/range?count=2"
                                     "&as=text")
            ft.check(st == 200 and hdr.get("frond-store") == ids[name] and
                     re.fullmatch(r"\d+ \d+\n", body),
                     "%s: text range %r %r" % (name, hdr, body))
            st, hdr, body = http_get(port, "/v1/segment/orders/range?count=2")
            ft.check(st == 200 and json.loads(body).get("store") == ids[name]
                     and hdr.get("frond-store") == ids[name],
                     "%s: JSON range %r" % (name, body))
        ft.check(ids["a"] == ids["b"] and ids["a"] != ids["c"],
                 "identities: %r" % ids)
        for first, second in ((pa, pc), (pc, pa)):
            r = ft.run(["next", "--segment", "orders", "--store",
                        "frond://127.0.0.1:%d,127.0.0.1:%d" % (first, second)])
            ft.check(r.returncode == 1 and "STORE_MISMATCH" in r.stderr and
                     ids["a"] in r.stderr and ids["c"] in r.stderr and
                     ":%d" % pa in r.stderr and ":%d" % pc in r.stderr and
                     not r.stdout.strip(),
                     "two stores: %r %r" % (r.stdout, r.stderr))
        r = ft.run(["next", "--segment", "orders", "--count", "2", "--store",
                    "frond://127.0.0.1:%d,127.0.0.1:%d" % (pa, pb)])
        ft.check(r.returncode == 0 and len(r.stdout.split()) == 2,
                 "one store: %r" % r.stderr)
    finally:
        for p in (a, b, c):
            stop(p)
        log.close()


class FakeServer:
    """Answers every request with one canned answer: what a proxy in front
    of a dead server, or a server failing inside, sends."""

    def __init__(self, answer):
        self.answer = answer
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                conn.settimeout(5)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                self.hits += 1
                conn.sendall(self.answer)
            except OSError:
                pass
            finally:
                conn.close()

    def close(self):
        self.sock.close()


def canned(status, ctype, body):
    return ("HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
            "Connection: close\r\n\r\n%s" % (status, ctype, len(body),
                                               body)).encode()


def test_server_failures_fail_over():
    """A 502 page, a 500, a 404 page that is not Frond's: the next server
    is asked. A 4xx with Frond's error is the answer."""
    d = ft.tempdir()
    log = open(os.path.join(d, "server.log"), "w")
    store = sqlite_with(d, [("orders", 10)])
    port = ft.free_port()
    p = start(d, port, store, log)
    try:
        for answer in (canned(502, "text/html", "<html>Bad Gateway</html>"),
                       canned(500, "application/json",
                              '{"error":{"code":"INTERNAL","message":"x"}}'),
                       canned(404, "text/html", "<html>no</html>")):
            fake = FakeServer(answer)
            try:
                for extra in ("", "&retries=0"):
                    uri = "frond://127.0.0.1:%d,127.0.0.1:%d?timeout_ms=2000%s"\
                        % (fake.port, port, extra)
                    r = ft.run(["next", "--segment", "orders", "--count",
                                "2", "--store", uri])
                    # One attempt a call: the allocator's next load goes
                    # to the next server, and the page's server is named.
                    ft.check(r.returncode == 0 and
                             len(r.stdout.split()) == 2 and
                             (not extra or ":%d" % fake.port in r.stderr),
                             "%r%s: %r" % (answer[:12], extra, r.stderr))
                ft.check(fake.hits >= 1, "the fake was not asked")
            finally:
                fake.close()
        # Frond's own 4xx is not retried elsewhere: TAG_NOT_FOUND at once,
        # and a server's newline in a message stays on one line.
        fake = FakeServer(canned(
            404, "application/json",
            '{"error":{"code":"TAG_NOT_FOUND","message":"a\\nfrond: b"}}'))
        try:
            r = ft.run(["next", "--segment", "orders", "--store",
                        "frond://127.0.0.1:%d,127.0.0.1:%d" % (fake.port,
                                                               port)])
            ft.check(r.returncode == 1 and "TAG_NOT_FOUND" in r.stderr and
                     "a frond: b" in r.stderr and
                     not any(x.startswith("frond: b")
                             for x in r.stderr.splitlines()),
                     "Frond's 404: %r" % r.stderr)
        finally:
            fake.close()
    finally:
        stop(p)
        log.close()


def test_step_above_max_range():
    """A tag whose step is above the server's max_range: ranges of
    max_range, not COUNT_INVALID."""
    d = ft.tempdir()
    log = open(os.path.join(d, "server.log"), "w")
    store = sqlite_with(d, [("big", 2000000)])
    port = ft.free_port()
    p = start(d, port, store, log, ["--max-range", "1000"])
    try:
        r = ft.run(["next", "--segment", "big", "--count", "3", "--store",
                    "frond://127.0.0.1:%d" % port])
        ft.check(r.returncode == 0 and r.stdout.split() == ["1", "2", "3"],
                 "step above max_range: %r %r" % (r.stdout, r.stderr))
        st, _, body = http_get(port, "/v1/segment/big/range?count=1")
        ft.check(st == 200 and json.loads(body)["start"] == "1001",
                 "one range of max_range taken: %r" % body)
    finally:
        stop(p)
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
        # With a token, issuing needs it too.
        r = ft.run(["next", "--segment", "nope", "--store", base])
        ft.check(r.returncode == 1 and "UNAUTHORIZED" in r.stderr,
                 "no token: %r" % r.stderr)
        r = ft.run(["next", "--segment", "nope", "--store",
                    base + "?token=s3cr3t-admin"])
        ft.check(r.returncode == 1 and "TAG_NOT_FOUND" in r.stderr,
                 "unknown tag: %r" % r.stderr)
        r = ft.run(["next", "--segment", "orders", "--count", "3", "--store",
                    base + "?token=s3cr3t-admin"])
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
        ft.check(r.returncode == 1 and "UNAUTHORIZED" in r.stderr and
                 "?token=" in r.stderr and "wrong-token" not in r.stderr,
                 "wrong token: %r" % r.stderr)
        r = ft.run(["tag", "create", "t2", "--step", "5", "--start", "100",
                    "--store", base + "?token=s3cr3t-admin"])
        ft.check(r.returncode == 0, "create with token: %r" % r.stderr)
        r = ft.run(["tag", "create", "t2", "--step", "5", "--start", "100",
                    "--store", base + "?token=s3cr3t-admin"])
        ft.check(r.returncode == 1 and "TAG_EXISTS" in r.stderr,
                 "create twice: %r" % r.stderr)
        r = ft.run(["next", "--segment", "t2", "--count", "2", "--store",
                    base + "?token=s3cr3t-admin"])
        ft.check(r.stdout.split() == ["100", "101"], "t2: %r" % r.stdout)
        r = ft.run(["tag", "list", "--store", base + "?token=s3cr3t-admin"])
        ft.check(r.returncode == 0 and "orders" in r.stdout and
                 "t2" in r.stdout, "tag list: %r" % r.stderr)
    finally:
        stop(p)
        log.close()


if __name__ == "__main__":
    ft.main([test_unique_across_threads_and_processes,
             test_failover_between_two_servers,
             test_timeout_and_no_server,
             test_bad_input,
             test_store_identity_and_mismatch,
             test_server_failures_fail_over,
             test_step_above_max_range])
