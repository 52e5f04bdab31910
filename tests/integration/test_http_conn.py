#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_http_conn.py -- `frond serve`'s connections under load and at the
end: 1,000 concurrent keep-alive connections, slow clients and timeouts,
back-pressure on a client that does not read, the connection limit, and
the drain on SIGTERM (and a second signal during it).
"""
import json
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft
from frondtest import check


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        if hard != resource.RLIM_INFINITY and hard < n:
            raise ft.Failure("RLIMIT_NOFILE hard limit %d < %d" % (hard, n))
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))


def test_1000_connections():
    raise_nofile(4096)
    s = ft.Server(tags={"orders": 1000})
    try:
        conns, per = 1000, 5
        sel = selectors.DefaultSelector()
        socks = []
        for i in range(conns):
            c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
            c.setblocking(False)
            socks.append(c)
        state = {}
        path = [b"/api/snowflake/get/x", b"/api/segment/get/orders"]
        for i, c in enumerate(socks):
            state[c] = {"left": per, "buf": b"", "ids": [], "p": path[i % 2]}
            c.send(b"GET %s HTTP/1.1\r\nHost: a\r\n\r\n" % state[c]["p"])
            sel.register(c, selectors.EVENT_READ)
        done = 0
        deadline = time.monotonic() + 60
        while done < conns and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                c = key.fileobj
                st = state[c]
                data = c.recv(65536)
                check(data, "server closed a keep-alive connection")
                st["buf"] += data
                head, sep, rest = st["buf"].partition(b"\r\n\r\n")
                if not sep:
                    continue
                n = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                if len(rest) < n:
                    continue
                check(head.startswith(b"HTTP/1.1 200"), head)
                st["ids"].append((st["p"], int(rest[:n])))
                st["buf"] = rest[n:]
                st["left"] -= 1
                if st["left"] == 0:
                    sel.unregister(c)
                    done += 1
                else:
                    c.send(b"GET %s HTTP/1.1\r\nHost: a\r\n\r\n" % st["p"])
        check(done == conns, "only %d of %d connections finished" %
              (done, conns))
        ids = [x for st in state.values() for x in st["ids"]]
        check(len(ids) == conns * per, len(ids))
        check(len(set(ids)) == len(ids), "duplicate IDs")
        for c in socks:
            c.close()
        check(s.alive(), "server died")
    finally:
        s.close()


def test_slow_client_and_timeouts():
    s = ft.Server(extra=["--header-timeout-ms", "2500",
                         "--idle-timeout-ms", "2000"], store="none")
    try:
        slow = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        req = b"GET /livez HTTP/1.1\r\nHost: a\r\n\r\n"
        t0 = time.monotonic()
        got = b""
        for ch in req:
            try:
                slow.send(bytes([ch]))
            except OSError:
                break
            # Others are served meanwhile.
            check(s.request("GET", "/livez")[0] == 200, "not serving")
            time.sleep(1.0)  # one byte a second
            if time.monotonic() - t0 > 6:
                break
        slow.settimeout(5)
        try:
            while True:
                d = slow.recv(4096)
                if not d:
                    break
                got += d
        except OSError:
            pass
        check(got.startswith(b"HTTP/1.1 408"), "slow client got %r" % got)
        check(time.monotonic() - t0 < 6, "slow client held too long")
        # An idle keep-alive connection is closed after idle_timeout_ms.
        c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        c.sendall(b"GET /livez HTTP/1.1\r\nHost: a\r\n\r\n")
        time.sleep(0.3)
        c.recv(4096)
        t0 = time.monotonic()
        c.settimeout(6)
        check(c.recv(4096) == b"", "idle connection not closed")
        el = time.monotonic() - t0
        check(1.3 < el < 4, "idle close after %.1fs" % el)
        st, _, b = s.request("GET", "/metrics")
        check(b"frond_connections_header_timeouts_total 1" in b, "metric")
    finally:
        s.close()


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def metric(s, name):
    text = s.request("GET", "/metrics")[2].decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise ft.Failure("no metric %s" % name)


def test_backpressure():
    """A client that pipelines big batches without reading holds a bounded
    amount of server memory, gets every answer in order once it reads, and
    a client that never reads is closed after idle_timeout_ms."""
    # 5 s: the reading client below must not look idle on a loaded host
    # (it was closed after 9 answers at 2 s); the idle close is still
    # waited for, bounded, at the end.
    s = ft.Server(extra=["--idle-timeout-ms", "5000"], store="none")
    try:
        n = 40
        req = b"GET /v1/snowflake?count=100000&format=text HTTP/1.1\r\nHost: a\r\n\r\n"
        # Timeouts bound the test, generous for a loaded host.
        c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        base = rss_kb(s.proc.pid)
        c.sendall(req * n)
        time.sleep(1.0)
        grown = rss_kb(s.proc.pid) - base
        check(grown < 48 * 1024, "server grew by %d KiB for %d MB of "
              "unread answers" % (grown, n * 2))
        data = bytearray()
        ids = set()
        got = 0
        while got < n:
            chunk = c.recv(1 << 20)
            check(chunk, "closed after %d answers" % got)
            data += chunk
            while True:
                head, sep, rest = bytes(data[:200]).partition(b"\r\n\r\n")
                if not sep:
                    break
                clen = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                hl = len(head) + 4
                if len(data) < hl + clen:
                    break
                body = bytes(data[hl:hl + clen])
                del data[:hl + clen]
                lines = body.split()
                check(len(lines) == 100000, "answer %d short" % got)
                ids.update(lines)
                got += 1
        check(len(ids) == n * 100000, "duplicate IDs")
        c.close()
        # A client that never reads is dropped.
        before = metric(s, "frond_connections_idle_timeouts_total")
        d = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        d.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        d.sendall(req * 8)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if metric(s, "frond_connections_idle_timeouts_total") > before:
                break
            time.sleep(0.3)
        check(metric(s, "frond_connections_idle_timeouts_total") > before,
              "a client that never reads was not closed")
        d.close()
        check(s.request("GET", "/livez")[0] == 200, "not serving")
    finally:
        s.close()


def test_max_connections():
    s = ft.Server(extra=["--max-connections", "3"], threads=1, store="none")
    try:
        time.sleep(0.3)  # let the start-up probe's connection close
        held = [socket.create_connection(("127.0.0.1", s.port))
                for _ in range(3)]
        time.sleep(0.3)
        out = s.raw(b"GET /livez HTTP/1.1\r\nHost: a\r\n\r\n")
        check(out.startswith(b"HTTP/1.1 503"), out)
        check(b"TOO_MANY_CONNECTIONS" in out, out)
        rs = ft.split_responses(out)
        check(len(rs) == 1 and "date" in rs[0][1], "503 without Date: %r"
              % out)
        for h in held:
            h.close()
        time.sleep(0.3)
        check(s.request("GET", "/livez")[0] == 200, "not serving again")
    finally:
        s.close()


def test_drain():
    s = ft.Server(tags={"orders": 100})
    try:
        idle = socket.create_connection(("127.0.0.1", s.port), timeout=5)
        busy = socket.create_connection(("127.0.0.1", s.port), timeout=5)
        busy.sendall(b"GET /readyz HTTP/1.1\r\nHost: a\r\n")
        time.sleep(0.3)
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        check(s.alive(), "exited before finishing in-flight requests")
        busy.sendall(b"\r\n")
        busy.settimeout(5)
        out = b""
        while True:
            d = busy.recv(4096)
            if not d:
                break
            out += d
        rs = ft.split_responses(out)
        check(rs[0][0] == 503 and rs[0][2] == b"draining\n", rs)
        check(rs[0][1]["connection"] == "close", rs[0][1])
        check(idle.recv(10) == b"", "idle connection not closed")
        rc = s.proc.wait(timeout=10)
        check(rc == 0, "exit status %d" % rc)
        # The node ID leased in the store was given back with its exact
        # high-water time.
        r = ft.run(["node", "list", "--store", s.store, "--json"], cwd=s.dir)
        rows = json.loads(r.stdout) if r.returncode == 0 else r.stderr
        check(isinstance(rows, list) and len(rows) == 1 and
              not rows[0]["live"] and rows[0]["fence_ms"] > 0,
              "the node ID was not released with its high water: %r" % rows)
        log = s.output()
        check("SIGTERM" in log and "stopped" in log, log)
        try:
            socket.create_connection(("127.0.0.1", s.port), timeout=1)
            raise ft.Failure("still accepting")
        except OSError:
            pass
    finally:
        s.close()


def test_drain_second_signal():
    """A second SIGTERM (or SIGINT) during the drain ends it at once, and
    the stop is still clean: the connections still in flight are closed,
    the exact high-water time is stored, the process exits 0. It never
    falls back to the signal's default action, which would end the
    process without storing anything."""
    for first, second in ((signal.SIGTERM, signal.SIGTERM),
                          (signal.SIGINT, signal.SIGTERM)):
        s = ft.Server(extra=["--drain-timeout-ms", "120000"], store="none")
        try:
            busy = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            busy.sendall(b"GET /readyz HTTP/1.1\r\nHost: a\r\n")
            time.sleep(0.3)
            s.proc.send_signal(first)
            time.sleep(0.5)
            check(s.alive(), "exited before finishing in-flight requests")
            s.proc.send_signal(second)
            try:
                rc = s.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                raise ft.Failure("the second signal did not end the drain")
            check(rc == 0, "exit status %d after a second signal" % rc)
            busy.settimeout(5)
            try:
                check(busy.recv(4096) == b"", "the request in flight was "
                      "answered, or its connection left open")
            except ConnectionResetError:
                pass
            log = s.output()
            check("draining" in log and "ending the drain now" in log, log)
            check("high-water time stored" in log, log)
            check(os.path.exists(os.path.join(s.dir, "frond-node-0.hw")),
                  "no high-water file")
        finally:
            s.close()


if __name__ == "__main__":
    ft.main([test_1000_connections, test_slow_client_and_timeouts,
             test_backpressure, test_max_connections, test_drain,
             test_drain_second_signal])
