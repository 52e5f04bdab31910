#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_http.py -- `frond serve` through real clients: every endpoint's
success and error paths, Leaf's bodies byte for byte, limits, pipelining,
and a store that cannot be reached (test_http_conn.py: many, slow and
draining connections).
"""
import json
import os
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft
from frondtest import check

TOKEN = "s3cret-token"
SRV = None  # shared server for the tests that do not need their own
STORE = None  # its segment store: a SQLite file in its dir unless set


def srv():
    global SRV
    if SRV is None:
        SRV = ft.Server(extra=["--layout", "twitter", "--max-count", "5000",
                               "--admin-token", TOKEN],
                        tags={"orders": 100, "seed": 100}, store=STORE)
    return SRV


def err_code(body):
    return json.loads(body)["error"]["code"]


def test_leaf_snowflake():
    s = srv()
    for method in ("GET", "POST", "PUT"):
        st, h, body = s.request(method, "/api/snowflake/get/anykey")
        check(st == 200, "status %d" % st)
        check(body.isdigit(), "Leaf body is the bare decimal ID: %r" % body)
        check(h["content-type"].startswith("text/plain"), h)
        check(h["date"].endswith(" GMT"), h)
    st, _, _ = s.request("GET", "/api/snowflake/get/")
    check(st == 404, "empty key: %d" % st)
    st, _, _ = s.request("GET", "/api/snowflake/get/a/b")
    check(st == 404, "key with a slash: %d" % st)


def test_leaf_segment():
    s = srv()
    ids = [int(s.request("GET", "/api/segment/get/orders")[2])
           for _ in range(5)]
    check(ids == sorted(ids) and len(set(ids)) == 5, ids)
    check(ids[0] >= 1, ids)
    st, h, body = s.request("GET", "/api/segment/get/missing")
    check(st == 500, "unknown tag on the Leaf path is 500: %d" % st)
    check(body == b"Result{id=-2, status=EXCEPTION}", body)
    check(h["frond-error"] == "TAG_NOT_FOUND", h)


def test_leaf_decode():
    s = srv()
    st, _, body = s.request("GET", "/api/snowflake/get/x")
    n = int(body)
    st, h, body = s.request("GET", "/decodeSnowflakeId?snowflakeId=%d" % n)
    check(st == 200, st)
    # Leaf's own arithmetic (Twitter layout), time in UTC (documented).
    ts = (n >> 22) + 1288834974657
    dt = datetime.fromtimestamp(ts / 1000, tz=timezone.utc)
    text = dt.strftime("%Y-%m-%d %H:%M:%S.") + "%03d" % (ts % 1000)
    want = ('{"timestamp":"%d(%s)","workerId":"%d","sequenceId":"%d"}'
            % (ts, text, (n >> 12) ^ (n >> 22 << 10),
               n ^ (n >> 12 << 12))).encode()
    check(body == want, "%r != %r" % (body, want))
    st, _, body = s.request("GET", "/decodeSnowflakeId?snowflakeId=abc")
    check(st == 200 and body == '{"errorMsg":"snowflake Id反解析失败"}'
          .encode(), body)
    st, _, body = s.request("GET", "/decodeSnowflakeId")
    check(st == 400 and err_code(body) == "BAD_REQUEST", (st, body))


def test_v1_snowflake():
    s = srv()
    st, h, body = s.request("GET", "/v1/snowflake")
    check(st == 200 and h["content-type"] == "application/json", (st, h))
    ids = json.loads(body)["ids"]
    check(len(ids) == 1 and isinstance(ids[0], str), ids)
    st, _, body = s.request("GET", "/v1/snowflake?count=1000")
    ids = [int(i) for i in json.loads(body)["ids"]]
    check(len(ids) == 1000 and ids == sorted(set(ids)), "batch not increasing")
    st, h, body = s.request("GET", "/v1/snowflake?count=3&format=text")
    lines = body.decode().splitlines()
    check(st == 200 and len(lines) == 3 and all(x.isdigit() for x in lines),
          body)
    check(h["content-type"] == "text/plain", h)
    # as= is the name now; Accept: text/plain asks for text too. The old
    # format=text still works, and is warned about once, whatever the
    # number of requests that use it.
    st, h, body = s.request("GET", "/v1/snowflake?count=2&as=text")
    check(st == 200 and h["content-type"] == "text/plain" and
          len(body.split()) == 2, body)
    st, h, body = s.request("GET", "/v1/snowflake?count=2",
                            headers={"Accept": "text/plain"})
    check(st == 200 and h["content-type"] == "text/plain", (h, body))
    st, h, _ = s.request("GET", "/v1/snowflake?count=2&format=text")
    check(st == 200 and h["content-type"] == "text/plain", h)
    warned = [l for l in s.output().splitlines()
              if "format=json|text is deprecated" in l]
    check(len(warned) == 1 and "as=json|text" in warned[0],
          "deprecation warnings: %r" % warned)
    st, h, _ = s.request("HEAD", "/v1/snowflake")
    check(st == 200, st)
    for bad in ("0", "-1", "abc", "", "5001", "1e3", "99999999999999999999"):
        st, _, body = s.request("GET", "/v1/snowflake?count=" + bad)
        check(st == 400 and err_code(body) == "COUNT_INVALID",
              "count=%s: %d %s" % (bad, st, body))
    st, _, body = s.request("GET", "/v1/snowflake?format=xml")
    check(st == 400 and err_code(body) == "BAD_REQUEST", body)
    st, h, body = s.request("POST", "/v1/snowflake")
    check(st == 405 and err_code(body) == "METHOD_NOT_ALLOWED", body)
    check("GET" in h["allow"], h)


def test_snowflake_batch_at_the_rate_limit():
    """With no borrowing allowed (max_ahead 0), a batch of 100,000 IDs
    spans 25 milliseconds of the layout's rate: it is served at that rate,
    not refused because one block would outwait max_wait."""
    s = ft.Server(extra=["--max-ahead-ms", "0"], store="none")
    try:
        for _ in range(3):
            st, _, body = s.request(
                "GET", "/v1/snowflake?count=100000&format=text")
            check(st == 200, "%d %s" % (st, body[:200]))
            ids = [int(x) for x in body.split()]
            check(len(ids) == 100000 and ids == sorted(set(ids)),
                  "batch not 100000 increasing IDs")
    finally:
        s.close()


def test_v1_segment():
    s = srv()
    st, _, body = s.request("GET", "/v1/segment/seed?count=25")
    ids = [int(i) for i in json.loads(body)["ids"]]
    check(st == 200 and ids == sorted(set(ids)) and len(ids) == 25, ids)
    st, _, body = s.request("GET", "/v1/segment/seed?count=4&format=text")
    check(st == 200 and len(body.splitlines()) == 4, body)
    st, _, body = s.request("GET", "/v1/segment/nope")
    check(st == 404 and err_code(body) == "TAG_NOT_FOUND", (st, body))
    st, _, body = s.request("GET", "/v1/segment/%FF%FE")
    check(st == 400 and err_code(body) == "TAG_INVALID", (st, body))
    st, _, body = s.request("GET", "/v1/segment/seed?count=0")
    check(st == 400 and err_code(body) == "COUNT_INVALID", body)


def test_v1_decode_and_layout():
    s = srv()
    n = int(s.request("GET", "/api/snowflake/get/x")[2])
    st, _, body = s.request("GET", "/v1/decode/%d" % n)
    d = json.loads(body)
    check(st == 200 and d["id"] == str(n), d)
    check(d["sequence"] == n & 4095 and d["node"] == 0, d)
    check(d["unix_ms"] == (n >> 22) + 1288834974657, d)
    for bad in ("abc", "-5", "", "1.5"):
        st, _, body = s.request("GET", "/v1/decode/" + bad)
        check(st == 400 and err_code(body) == "ID_INVALID", (bad, st, body))
    st, _, body = s.request("GET", "/v1/layout")
    lay = json.loads(body)
    check(lay["time_bits"] == 41 and lay["seq_bits"] == 12, lay)
    check(lay["epoch_ms"] == 1288834974657, lay)


def test_admin():
    s = srv()
    auth = {"Authorization": "Bearer " + TOKEN,
            "Content-Type": "application/json"}
    body = json.dumps({"tag": "invoices", "step": 50, "start": 1000,
                       "description": "Rechnungen \u00fc"})
    st, h, b = s.request("POST", "/v1/tags", body, {"Authorization": None})
    check(st == 401 and err_code(b) == "UNAUTHORIZED", (st, b))
    check(h["www-authenticate"] == "Bearer", h)
    st, _, b = s.request("POST", "/v1/tags", body,
                         {"Authorization": "Bearer wrong-token!"})
    check(st == 401, st)
    st, _, b = s.request("POST", "/v1/tags", body,
                         {"Authorization": "Bearer " + TOKEN[:-1]})
    check(st == 401, st)
    st, _, b = s.request("POST", "/v1/tags", body, auth)
    check(st == 201, (st, b))
    row = json.loads(b)
    check(row["tag"] == "invoices" and row["step"] == 50, row)
    check(row["description"] == "Rechnungen \u00fc", row)
    st, _, b = s.request("POST", "/v1/tags", body, auth)
    check(st == 409 and err_code(b) == "TAG_EXISTS", (st, b))
    st, _, b = s.request("GET", "/v1/segment/invoices?count=3")
    check(st == 200 and json.loads(b)["ids"] == ["1000", "1001", "1002"],
          (st, b))
    st, _, b = s.request("PATCH", "/v1/tags/invoices", '{"step": 70}', auth)
    check(st == 200 and json.loads(b)["step"] == 70, (st, b))
    st, _, b = s.request("PATCH", "/v1/tags/invoices", '{"step": 70}',
                         {"Authorization": None})
    check(st == 401, st)
    for bad in ('{"step": "x"}', '{"step": 1', "step=5", '{"stepp": 1}',
                '{}', '{"step": 1, "step": 2}'):
        st, _, b = s.request("PATCH", "/v1/tags/invoices", bad, auth)
        check(st == 400 and err_code(b) == "BAD_REQUEST", (bad, st, b))
    st, _, b = s.request("POST", "/v1/tags", '{"tag": "x"}', auth)
    check(st == 400, (st, b))
    st, _, b = s.request("GET", "/v1/tags")
    tags = [t["tag"] for t in json.loads(b)["tags"]]
    check("invoices" in tags and "orders" in tags, tags)
    st, _, b = s.request("GET", "/v1/tags/invoices")
    check(st == 200 and json.loads(b)["tag"] == "invoices", b)
    st, _, b = s.request("DELETE", "/v1/tags/invoices", None,
                         {"Authorization": None})
    check(st == 401, st)
    st, _, b = s.request("DELETE", "/v1/tags/invoices", None, auth)
    check(st == 204 and b == b"", (st, b))
    st, _, b = s.request("GET", "/v1/tags/invoices")
    check(st == 404 and err_code(b) == "TAG_NOT_FOUND", (st, b))
    st, _, b = s.request("PUT", "/v1/tags", "{}", auth)
    check(st == 405, st)
    st, _, b = s.request("POST", "/v1/tags", "x" * 5000, auth)
    check(st == 413 and err_code(b) == "BODY_TOO_LARGE", (st, b))


def test_health_and_metrics():
    s = srv()
    check(s.request("GET", "/livez")[:1] == (200,), "livez")
    st, _, b = s.request("GET", "/readyz")
    # One line, byte for byte as it always was; the kinds in ?kind=.
    check(st == 200 and b == b"ready\n", (st, b))
    for kind in ("snowflake", "segment"):
        st, _, b = s.request("GET", "/readyz?kind=" + kind)
        check(st == 200 and b == b"ready\n%s: ready\n" % kind.encode(),
              (kind, st, b))
    st, _, b = s.request("GET", "/readyz?kind=uuid")
    check(st == 400 and err_code(b) == "BAD_REQUEST", (st, b))
    # Percent-decoded as every query value; a kind given twice, or a bad
    # escape, is refused rather than read as the first.
    st, _, b = s.request("GET", "/readyz?x=1&kind=snow%66lake")
    check(st == 200 and b == b"ready\nsnowflake: ready\n", (st, b))
    for q in ("kind=segment&kind=snowflake", "kind=snowflake&x=&kind=",
              "kind=%zz", "kind=", "kind"):
        st, _, b = s.request("GET", "/readyz?" + q)
        check(st == 400 and err_code(b) == "BAD_REQUEST", (q, st, b))
    st, h, b = s.request("GET", "/metrics")
    text = b.decode()
    check(st == 200 and h["content-type"].startswith("text/plain"), h)
    for want in ('frond_http_requests_total{route="leaf_snowflake",'
                 'status="200"}',
                 'frond_http_requests_total{route="segment",status="404"}',
                 'frond_http_request_duration_seconds_bucket{route='
                 '"snowflake",le="+Inf"}',
                 'frond_ids_issued_total{generator="snowflake"}',
                 'frond_ids_issued_total{generator="segment"}',
                 'frond_segment_tag_ids_issued_total{tag="orders"}',
                 "frond_segment_tags ", "frond_segment_tags_in_use ",
                 "frond_connection_buffer_bytes ",
                 "frond_segment_loads_total", "frond_segment_rollbacks_total 0",
                 "frond_segment_step{",
                 "frond_segment_buffer_remaining{",
                 "frond_snowflake_clock_waits_total",
                 "frond_snowflake_clock_behind_total",
                 "frond_connections_accepted_total", "frond_connections "):
        check(want in text, "metrics lack %s" % want)


def test_not_found_and_bad_requests():
    s = srv()
    st, _, b = s.request("GET", "/nope")
    check(st == 404 and err_code(b) == "NOT_FOUND", (st, b))
    cases = [
        (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: a\r\n\r\n", 414),
        (b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"b" * 9000 + b"\r\n\r\n",
         431),
        (b"BREW / HTTP/1.1\r\nHost: a\r\n\r\n", 501),
        (b"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
        (b"GET /v1/segment/\xff\xfe HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\n\r\n", 400),
        (b"garbage\r\n\r\n", 400),
        (b"POST /v1/tags HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip"
         b"\r\n\r\n0\r\n\r\n", 501),
        (b"POST /v1/tags HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked"
         b"\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400),
        (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
        (b"GET /livez HTTP/1.1\r\nHost: a\r\nX-A: a\nContent-Length: 48"
         b"\r\n\r\n", 400),
        (b"GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    ]
    for req, want in cases:
        out = s.raw(req)
        rs = ft.split_responses(out)
        check(len(rs) == 1 and rs[0][0] == want,
              "%r...: want %d, got %r" % (req[:30], want, out[:80]))
        check(rs[0][1].get("connection") == "close", rs[0][1])
        json.loads(rs[0][2])
    # Still serving everyone.
    check(s.request("GET", "/livez")[0] == 200, "server died")


def test_curl():
    ft.need("curl", "curl")
    s = srv()
    r = subprocess.run(["curl", "-sS", "-f", "-H",
                        "Authorization: Bearer " + TOKEN,
                        "http://127.0.0.1:%d/api/segment/get/orders" % s.port],
                       capture_output=True, timeout=30)
    check(r.returncode == 0 and r.stdout.isdigit(), r)
    # A client waiting for 100 Continue is not left waiting: without the
    # interim answer curl sends its body only after --expect100-timeout
    # (60 s here), so 20 s tells the two apart on any machine.
    t0 = time.monotonic()
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                        "-H", "Expect: 100-continue", "-H",
                        "Authorization: Bearer " + TOKEN, "-H",
                        "Content-Type: application/json", "-X", "PATCH",
                        "--data", '{"step": 100}', "--expect100-timeout",
                        "60", "http://127.0.0.1:%d/v1/tags/orders" % s.port],
                       capture_output=True, timeout=90)
    check(r.stdout == b"200", r)
    check(time.monotonic() - t0 < 20, "100-continue not answered")
    r = subprocess.run(["curl", "-sS", "--http1.0", "-H",
                        "Authorization: Bearer " + TOKEN,
                        "http://127.0.0.1:%d/v1/"
                        "snowflake?count=2&format=text" % s.port],
                       capture_output=True, timeout=30)
    check(r.returncode == 0 and len(r.stdout.split()) == 2, r)


def test_pipelining():
    s = srv()
    n = 200
    auth = b"Authorization: Bearer " + TOKEN.encode() + b"\r\n\r\n"
    reqs = b"".join(b"GET /v1/decode/%d HTTP/1.1\r\nHost: a\r\n" % i + auth
                    for i in range(n))
    reqs += b"GET /livez HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
    rs = ft.split_responses(s.raw(reqs, timeout=10))
    check(len(rs) == n + 1, "got %d answers" % len(rs))
    for i in range(n):
        check(rs[i][0] == 200 and json.loads(rs[i][2])["id"] == str(i),
              "answer %d out of order" % i)
    check(rs[n][2] == b"ok\n", rs[n])
    # HTTP/1.0 keep-alive and close.
    out = s.raw(b"GET /livez HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                b"GET /livez HTTP/1.0\r\n\r\nGET /livez HTTP/1.0\r\n\r\n")
    rs = ft.split_responses(out)
    check(len(rs) == 2, "HTTP/1.0 without keep-alive closes: %r" % out)
    check(rs[0][1]["connection"] == "keep-alive", rs[0][1])


def test_half_close():
    """A client that shuts down its sending side after its requests still
    gets every answer, big or small, then the server closes."""
    s = srv()
    for req, n in ((b"GET /livez HTTP/1.1\r\nHost: a\r\n\r\n", 3),
                   (b"GET /v1/snowflake?count=5000&format=text HTTP/1.1\r\n"
                    b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
                    b"Host: a\r\n\r\n", 300)):
        c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        c.sendall(req * n)
        c.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            d = c.recv(1 << 20)
            if not d:
                break
            out += d
        c.close()
        rs = ft.split_responses(out)
        check(len(rs) == n and all(r[0] == 200 for r in rs),
              "%d of %d answers" % (len(rs), n))


def test_store_unreachable():
    """A store that cannot be reached at start, with node IDs from
    elsewhere: segment requests fail clearly, and so do snowflake
    requests, since the coordinator is not yet checked against the one
    the store records (docs/coordinators.md, one coordinator per store);
    /readyz is 503 with each kind's reason; once the store can be
    reached the server checks, records and becomes ready by itself. With the default coordinator the node ID is leased in the
    store: then the start stops, clearly. (A store that refuses for good,
    as a SQLite file in a directory that does not exist, stops the start
    whatever the coordinator: test_config_and_refusals.)"""
    # A PostgreSQL that starts later, on the port the server was given.
    pg, uri = ft.postgres_later()
    d = ft.tempdir()
    r = ft.run(["serve", "--listen", "127.0.0.1:%d" % ft.free_port(),
                "--resp-listen", "off", "--data-dir", d, "--store", uri],
               cwd=d)
    check(r.returncode == 1 and "cannot start: COORD: lease" in r.stderr,
          "default coordinator, store unreachable: %d %r"
          % (r.returncode, r.stderr))
    s = ft.Server(store=uri,
                  extra=["--coordinator", "lease+sqlite:///%s/nodes.db" % d])
    try:
        unchecked = b"the coordinator not yet checked against the " \
            b"store's record"
        st, _, b = s.request("GET", "/readyz")
        check(st == 503 and b == b"not ready: " + unchecked +
              b"; store not reached\n", (st, b))
        # Per kind, each with its own reason: snowflake IDs wait for the
        # coordinator's check, segment IDs for the store.
        st, _, b = s.request("GET", "/readyz?kind=snowflake")
        check(st == 503 and b == b"not ready: " + unchecked +
              b"\nsnowflake: not ready: " + unchecked + b"\n", (st, b))
        st, _, b = s.request("GET", "/readyz?kind=segment")
        check(st == 503 and b == b"not ready: store not reached\nsegment: "
              b"not ready: store not reached\n", (st, b))
        m = s.request("GET", "/metrics")[2].decode()
        check("frond_ready{" not in m, "frond_ready has one series")
        for want in ('frond_ready 0', 'frond_ready_kind{kind="snowflake"} 0',
                     'frond_ready_kind{kind="segment"} 0',
                     'frond_ready_reason{kind="segment",reason='
                     '"store_not_reached"} 1',
                     'frond_ready_reason{kind="snowflake",reason='
                     '"coordinator_unchecked"} 1',
                     'frond_ready_reason{kind="snowflake",reason="ready"} 0'):
            check("\n" + want + "\n" in m, "metrics lack %s" % want)
        st, _, b = s.request("GET", "/api/snowflake/get/x")
        check(st == 500 and b == b"Result{id=-3, status=EXCEPTION}", b)
        st, _, b = s.request("GET", "/v1/snowflake")
        check(st == 503 and err_code(b) == "STORE" and b"not checked" in b,
              (st, b))
        st, h, b = s.request("GET", "/api/segment/get/orders")
        check(st == 500 and b == b"Result{id=-1, status=EXCEPTION}", b)
        st, _, b = s.request("GET", "/v1/segment/orders")
        check(st == 503 and err_code(b) == "SEGMENT_UNAVAILABLE", (st, b))
        check(b"not been reached" in b, b)
        st, _, b = s.request("GET", "/")
        check(st == 200 and b"not been reached" in b, "status page")
        pg.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if s.request("GET", "/readyz")[0] == 200:
                break
            time.sleep(0.2)
        check(s.request("GET", "/readyz")[0] == 200, "never became ready")
        check(s.request("GET", "/api/snowflake/get/x")[0] == 200, "snowflake")
        st, _, b = s.request("POST", "/v1/tags", '{"tag":"orders","step":5}')
        check(st == 201, (st, b))
        st, _, b = s.request("GET", "/api/segment/get/orders")
        check(st == 200 and b == b"1", (st, b))
        check("store reached" in s.output(), s.output())
    finally:
        s.close()
        if pg.uri is not None:
            pg.close()
        ft.shutil.rmtree(pg.dir, ignore_errors=True)


def test_ipv6_loopback():
    check(socket.has_ipv6, "this Python has no IPv6")
    port = ft.free_port()
    d = ft.tempdir()
    # Never the default ports: a server the user started may hold them.
    p = subprocess.Popen([ft.FROND_BIN, "serve", "--listen", "[::1]:%d" % port,
                          "--resp-listen", "off", "--store", "none",
                          "--data-dir", d, "--threads", "1"], cwd=d,
                         stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        out = b""
        while time.monotonic() < deadline:
            try:
                c = socket.create_connection(("::1", port), timeout=2)
                c.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n"
                          b"Connection: close\r\n\r\n")
                while True:
                    chunk = c.recv(4096)
                    if not chunk:
                        break
                    out += chunk
                c.close()
                break
            except OSError:
                time.sleep(0.1)
        check(out.startswith(b"HTTP/1.1 200") and out.endswith(b"ok\n"), out)
    finally:
        p.terminate()
        check(p.wait(timeout=15) == 0, "exit status")
        ft.shutil.rmtree(d, ignore_errors=True)


def test_config_and_refusals():
    d = ft.tempdir()
    conf = os.path.join(d, "frond.conf")
    with open(conf, "w") as f:
        f.write("# test\nmax_count = 7\nthreads = 3\nnode = 5\n")
    env = dict(os.environ, FROND_THREADS="2", FROND_ADMIN_TOKEN="x")
    r = ft.run(["serve", "--config", conf, "--node", "6", "--print-config"],
               env=env)
    check(r.returncode == 0, r.stderr)
    cfg = dict(line.split(" = ", 1) for line in r.stdout.splitlines())
    check(cfg["max_count"] == "7" and cfg["threads"] == "2", cfg)
    check(cfg["node"] == "6" and cfg["admin_token"] == "(set)", cfg)
    check(cfg["listen"] == "127.0.0.1:8080", cfg)
    # The refusals below never reach the default ports either: a server
    # the user started may hold them.
    quiet = ["--resp-listen", "off"]
    here = ["--listen", "127.0.0.1:%d" % ft.free_port()] + quiet
    r = ft.run(["serve", "--listen", "0.0.0.0:%d" % ft.free_port(),
                "--data-dir", d] + quiet, cwd=d, timeout=30)
    check(r.returncode == 1 and "admin_token" in r.stderr, r)
    # A coordinator that cannot be reached (and no cache yet): a clear
    # COORD error, not a start on a guessed node ID.
    r = ft.run(["serve", "--coordinator",
                "zk://127.0.0.1:%d/x?connect_ms=500" % ft.free_port(),
                "--store", "none", "--data-dir", d] + here, cwd=d, timeout=30)
    check(r.returncode == 1 and "COORD" in r.stderr, r)
    r = ft.run(["serve", "--coordinator", "etcd://x", "--data-dir", d] + here,
               cwd=d, timeout=30)
    check(r.returncode == 1 and "STORE_URI" not in r.stderr and
          "etcd" in r.stderr, r)
    # A store that refuses for good stops the start (a store that is down
    # would be retried): a SQLite file in a directory that does not exist.
    missing = os.path.join(d, "missing", "frond.db")
    r = ft.run(["serve", "--store", "sqlite://" + missing, "--data-dir", d] +
               here, cwd=d, timeout=30)
    check(r.returncode == 1 and "STORE_PERMANENT" in r.stderr and
          "unable to open" in r.stderr and "does not exist" in r.stderr, r)
    # A second server on a taken port refuses to start, even though
    # SO_REUSEPORT would let it share the port.
    other = ft.Server(store="none")
    try:
        r = ft.run(["serve", "--listen", "127.0.0.1:%d" % other.port,
                    "--store", "none", "--data-dir", d] + quiet, cwd=d,
                   timeout=30)
        check(r.returncode == 1 and "Address already in use" in r.stderr, r)
    finally:
        other.close()
    r = ft.run(["serve", "--max-count", "0"], cwd=d)
    check(r.returncode == 2 and "max_count" in r.stderr, r)
    r = ft.run(["serve", "--bogus", "1"], cwd=d)
    check(r.returncode == 2, r)
    r = ft.run(["serve", "--help"], cwd=d)
    check(r.returncode == 0 and "--header-timeout-ms" in r.stdout, r)


# The tests that hold on any segment store: integration/test_http_mysql
# runs them again with the store on MariaDB (test_http.py --store mariadb),
# as a Leaf deployment that switches in place keeps its table and clients.
ANY_STORE = [test_leaf_snowflake, test_leaf_segment, test_leaf_decode,
             test_v1_snowflake, test_v1_segment, test_admin,
             test_health_and_metrics]


def main(argv):
    global STORE
    try:
        if argv == ["--store", "mariadb"]:
            STORE = ft.MariaDB().uri  # closed at exit, after SRV
            ft.main(ANY_STORE)  # exits
        check(not argv, "usage: test_http.py [--store mariadb]")
        ft.main([test_leaf_snowflake, test_leaf_segment, test_leaf_decode,
                 test_snowflake_batch_at_the_rate_limit,
                 test_v1_snowflake, test_v1_segment, test_v1_decode_and_layout,
                 test_admin, test_health_and_metrics,
                 test_not_found_and_bad_requests, test_curl, test_pipelining,
                 test_half_close,
                 test_store_unreachable,
                 test_ipv6_loopback,
                 test_config_and_refusals])
    finally:
        if SRV is not None:
            rc = SRV.stop()
            if rc != 0:
                print("shared server exited %d:\n%s" % (rc, SRV.output()))
            SRV.close()


if __name__ == "__main__":
    main(sys.argv[1:])
