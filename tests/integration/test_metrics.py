#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_metrics.py -- /metrics as Prometheus reads it.

A live server gets traffic on every HTTP route and every Redis command;
its /metrics must then pass `promtool check metrics` (the text format and
Prometheus' naming lint) with nothing to say, hold a latency histogram
for every route and every command, with exactly the requests sent, print
every number as the shortest decimal that reads back (no float noise, no
exponent in a bucket bound), and name the build. The same with a lease
coordinator (the fence and coordinator families), and with
metrics_histograms = off (no histogram family, still clean).
"""
import decimal
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

ROUTES = ("leaf_segment", "leaf_snowflake", "leaf_decode", "snowflake",
          "segment", "decode", "layout", "tags", "metrics", "livez",
          "readyz", "status_page", "other")
COMMANDS = ("incr", "incrby", "id.next", "id.snowflake", "id.decode",
            "id.tags", "ping", "echo", "quit", "hello", "auth", "select",
            "client", "command", "info", "config", "reset", "unknown")


class Resp:
    """A bare RESP2 client: one command, one reply."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.s.makefile("rb")

    def reply(self):
        line = self.f.readline()
        check(line.endswith(b"\r\n"), "connection closed: %r" % line)
        kind, rest = line[:1], line[1:-2]
        if kind in (b"+", b"-", b":"):
            return kind + rest
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return [self.reply() for _ in range(max(n, 0))]
        raise ft.Failure("not RESP2: %r" % line)

    def __call__(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.reply()

    def close(self):
        self.f.close()
        self.s.close()


def http_traffic(s):
    """Every route, once at least; returns {route: requests}."""
    sent = {}

    def get(route, method, path, body=None, headers=None):
        s.request(method, path, body, headers)
        sent[route] = sent.get(route, 0) + 1

    get("leaf_segment", "GET", "/api/segment/get/orders")
    get("leaf_snowflake", "GET", "/api/snowflake/get/x")
    _, _, b = s.request("GET", "/v1/snowflake")
    sent["snowflake"] = 1
    sid = re.search(rb"\d{6,}", b).group(0).decode()
    get("leaf_decode", "GET", "/decodeSnowflakeId?snowflakeId=" + sid)
    get("snowflake", "GET", "/v1/snowflake?count=3")
    get("segment", "GET", "/v1/segment/orders")
    get("segment", "GET", "/v1/segment/nothere")
    get("decode", "GET", "/v1/decode/" + sid)
    get("layout", "GET", "/v1/layout")
    get("tags", "GET", "/v1/tags")
    get("tags", "POST", "/v1/tags", '{"tag":"more","step":10}')
    get("tags", "DELETE", "/v1/tags/more")
    get("metrics", "GET", "/metrics")
    get("livez", "GET", "/livez")
    get("livez", "GET", "/healthz")
    get("readyz", "GET", "/readyz")
    get("status_page", "GET", "/")
    get("other", "GET", "/no/such/path")
    return sent


def resp_traffic(port):
    """Every command, with errors among them; returns {command: sent}."""
    sent = {}
    c = Resp(port)

    def cmd(name, *args):
        sent[name] = sent.get(name, 0) + 1
        return c(*args)

    check(cmd("incr", "INCR", "orders")[:1] == b":", "INCR")
    cmd("incr", "INCR", "nothere")  # looked up off the loop, not found
    cmd("incrby", "INCRBY", "orders", "1")
    cmd("incrby", "INCRBY", "orders", "5")  # refused
    cmd("id.next", "ID.NEXT", "orders", "3")
    cmd("id.snowflake", "ID.SNOWFLAKE", "2")
    sid = cmd("id.snowflake", "ID.SNOWFLAKE")
    cmd("id.decode", "ID.DECODE", sid[1:] if isinstance(sid, bytes) else 1)
    cmd("id.tags", "ID.TAGS")
    for _ in range(5):
        check(cmd("ping", "PING") == b"+PONG", "PING")
    cmd("echo", "ECHO", "hi")
    cmd("hello", "HELLO", "2")
    cmd("auth", "AUTH", "nobody")
    cmd("select", "SELECT", "0")
    cmd("client", "CLIENT", "SETNAME", "metrics-test")
    cmd("command", "COMMAND", "COUNT")
    cmd("info", "INFO", "server")
    cmd("config", "CONFIG", "GET", "maxmemory")
    cmd("reset", "RESET")
    cmd("unknown", "FLUSHALL")
    cmd("quit", "QUIT")
    c.close()
    return sent


def samples(text):
    """[(name, labels, value text)] of the exposition."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"([a-zA-Z_:][\w:]*)(\{.*\})? (\S+)", line)
        check(m, "not a sample line: %r" % line)
        out.append((m.group(1), m.group(2) or "", m.group(3)))
    return out


def shortest(v):
    """The shortest decimal that reads back as v, without an exponent
    (what the server should print); Python's repr is the shortest."""
    r = repr(float(v))
    d = decimal.Decimal(r)
    s = format(d, "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def promtool(text, where):
    ft.need("promtool", "prometheus")
    r = subprocess.run(["promtool", "check", "metrics"], input=text,
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and r.stdout == "" and r.stderr == "",
          "%s: promtool check metrics: rc %d\n%s%s" % (
              where, r.returncode, r.stdout, r.stderr))


def check_numbers(text, where):
    for name, labels, v in samples(text):
        if v in ("+Inf", "-Inf", "NaN"):
            continue
        if re.fullmatch(r"\d+", v) and int(v) >= 2 ** 53:
            continue  # a counter beyond a double's integers: exact as is
        check(v == shortest(v), "%s: %s%s %s is not the shortest form %s"
              % (where, name, labels, v, shortest(v)))
        le = re.search(r'le="([^"]*)"', labels)
        if le and le.group(1) != "+Inf":
            check(le.group(1) == shortest(le.group(1)),
                  "%s: bucket bound %s" % (where, le.group(1)))


def value(text, name, labels=""):
    for n, l, v in samples(text):
        if n == name and l == labels:
            return float(v)
    raise ft.Failure("no %s%s" % (name, labels))


def test_every_route_and_command():
    s = ft.Server(resp=True, tags={"orders": 1000})
    try:
        http_sent = http_traffic(s)
        resp_sent = resp_traffic(s.resp_port)
        check(set(http_sent) == set(ROUTES), "routes: %r" % http_sent)
        check(set(resp_sent) == set(COMMANDS), "commands: %r" % resp_sent)
        text = s.request("GET", "/metrics")[2].decode()
        http_sent["metrics"] += 1  # this scrape is not in its own page
        promtool(text, "every route and command")
        check_numbers(text, "every route and command")
        for r in ROUTES:
            got = value(text, "frond_http_request_duration_seconds_count",
                        '{route="%s"}' % r)
            want = http_sent[r] - (1 if r == "metrics" else 0)
            check(got == want, "route %s: %s timed, %d sent" % (r, got,
                                                                 want))
            check(value(text, "frond_http_request_duration_seconds_bucket",
                        '{route="%s",le="+Inf"}' % r) == got, r)
        for c in COMMANDS:
            got = value(text, "frond_resp_command_duration_seconds_count",
                        '{command="%s"}' % c)
            check(got == resp_sent[c], "command %s: %s timed, %d sent"
                  % (c, got, resp_sent[c]))
        check('le="0.000001"' in text and "e-0" not in text,
              "bucket bounds not as plain decimals")
        # Renamed: seconds, not milliseconds.
        check("frond_snowflake_ahead_ms" not in text, "the old name")
        # The default server leases its node ID in its store: the
        # generator issues under the lease's fence.
        for name in ("frond_snowflake_ahead_seconds",
                     "frond_snowflake_fence_refused_total",
                     "frond_snowflake_fence_ahead_seconds",
                     "frond_snowflake_time_left_seconds",
                     "frond_coord_node_held",
                     "frond_uptime_seconds"):
            value(text, name)
        left = value(text, "frond_snowflake_time_left_seconds")
        # The frond layout: 2^41 ms from 2025-01-01.
        want = (1735689600000 + 2 ** 41 - time.time() * 1000) / 1000
        check(abs(left - want) < 60, "time left %s, want about %s"
              % (left, want))
        m = re.search(r'^frond_build_info\{version="([^"]+)",build_type="'
                      r'([^"]+)",.*libsystemd="[^"]+",libmariadb="[^"]*",'
                      r'libcurl="[^"]*"\} 1$', text,
                      re.M)
        check(m and m.group(1) == "0.1.0", "frond_build_info: %r" % (
            m and m.group(0)))
        check(s.stop() == 0, "exit")
    finally:
        s.close()


def test_lease_coordinator():
    d = ft.tempdir()
    s = None
    try:
        uri = "lease+sqlite:///%s/lease.db" % d
        s = ft.Server(extra=["--coordinator", uri], store="none")
        deadline = time.monotonic() + 30
        while True:
            text = s.request("GET", "/metrics")[2].decode()
            if "frond_coord_last_fence_write_timestamp_seconds" in text:
                break
            check(time.monotonic() < deadline, "no fence write in 30 s")
            time.sleep(0.2)
        promtool(text, "lease coordinator")
        check_numbers(text, "lease coordinator")
        check(value(text, "frond_coord_node_held") == 1, "node held")
        check(0 < value(text, "frond_snowflake_fence_ahead_seconds") < 600,
              "generator's fence")
        check(0 < value(text, "frond_coord_fence_ahead_seconds") < 600,
              "coordinator's fence")
        wrote = value(text, "frond_coord_last_fence_write_timestamp_seconds")
        check(abs(wrote - time.time()) < 60, "last fence write %s" % wrote)
        check(value(text, "frond_coord_regains_total") == 0, "regains")
        check(value(text, "frond_coord_from_cache") == 0, "from cache")
        check(s.stop() == 0, "exit")
    finally:
        if s is not None:
            s.close()
        import shutil
        shutil.rmtree(d, ignore_errors=True)


def test_histograms_off():
    for how, extra, env in (("flag", ["--metrics-histograms", "off"], {}),
                            ("env", [], {"FROND_METRICS_HISTOGRAMS": "off"})):
        s = ft.Server(resp=True, tags={"orders": 1000}, extra=extra, env=env)
        try:
            http_traffic(s)
            resp_traffic(s.resp_port)
            text = s.request("GET", "/metrics")[2].decode()
            promtool(text, "histograms off (%s)" % how)
            check("_duration_seconds" not in text,
                  "%s: a histogram with metrics_histograms off" % how)
            check(value(text, "frond_resp_commands_total",
                        '{command="ping",result="ok"}') == 5, how)
            check(value(text, "frond_http_requests_total",
                        '{route="layout",status="200"}') == 1, how)
            check(s.stop() == 0, "exit")
        finally:
            s.close()


def test_static_node_reservation():
    """A static node ID without a store keeps a high-water file: its
    durable reservation is exported."""
    s = ft.Server(store="none")
    try:
        s.request("GET", "/v1/snowflake?count=10")
        text = s.request("GET", "/metrics")[2].decode()
        promtool(text, "static node")
        check(0 < value(text, "frond_snowflake_reserved_ahead_seconds") < 600,
              "reservation")
        check(s.stop() == 0, "exit")
    finally:
        s.close()


if __name__ == "__main__":
    ft.main([test_every_route_and_command, test_lease_coordinator,
             test_histograms_off, test_static_node_reservation])
