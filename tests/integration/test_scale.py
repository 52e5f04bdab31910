#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_scale.py -- what keeps a server small with many tags and many
connections: range leases over HTTP and RESP, /metrics with bounded
per-tag series, the status page a page of tags at a time, and connection
buffers that shrink once a large answer or request is done.
"""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft
from frondtest import check
from respclient import Resp, RespError


def body_json(b):
    return json.loads(b.decode())


def metric(text, name):
    """The value of an unlabelled series, or None."""
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


def test_range_lease_http():
    s = ft.Server(tags={"orders": 100}, extra=["--max-range", "5000"])
    try:
        st, _, b = s.request("GET", "/v1/segment/orders?count=3")
        check(st == 200, (st, b))
        before = [int(i) for i in body_json(b)["ids"]]
        st, h, b = s.request("GET", "/v1/segment/orders/range?count=1000")
        check(st == 200 and h["content-type"] == "application/json", (st, b))
        r = body_json(b)
        check(isinstance(r["start"], str) and isinstance(r["end"], str), r)
        start, end = int(r["start"]), int(r["end"])
        check(r["tag"] == "orders" and r["count"] == 1000, r)
        check(end - start == 1000, r)
        check(start > max(before), (before, r))
        # A range larger than what is buffered: one segment of its own.
        st, _, b = s.request("GET",
                             "/v1/segment/orders/range?count=5000&format=text")
        check(st == 200, (st, b))
        a, e = [int(x) for x in b.decode().split()]
        check(e - a == 5000 and a >= end, (a, e, end))
        st, _, b = s.request("GET", "/v1/segment/orders?count=3")
        after = [int(i) for i in body_json(b)["ids"]]
        check(min(after) >= e, (after, e))
        # Ranges never overlap what was handed out, nor each other.
        seen = set(before) | set(after)
        check(not any(start <= i < end or a <= i < e for i in seen), seen)
        for path, status, code in (
                ("/v1/segment/orders/range?count=5001", 400, "COUNT_INVALID"),
                ("/v1/segment/orders/range?count=0", 400, "COUNT_INVALID"),
                ("/v1/segment/nope/range?count=10", 404, "TAG_NOT_FOUND"),
                ("/v1/segment//range?count=10", 404, None)):
            st, _, b = s.request("GET", path)
            check(st == status, (path, st, b))
            if code:
                check(body_json(b)["error"]["code"] == code, (path, b))
        st, h, _ = s.request("POST", "/v1/segment/orders/range?count=10")
        check(st == 405 and "GET" in h.get("allow", ""), (st, h))
        st, _, b = s.request("GET", "/metrics")
        check('route="segment_range",status="200"' in b.decode(),
              "range requests are not counted under their route")
    finally:
        s.close()


def test_range_lease_resp():
    s = ft.Server(tags={"orders": 100}, resp=True)
    try:
        r = Resp(s.resp_port)
        first = r.command("INCR", "orders")
        got = r.command("ID.RANGE", "orders", 250)
        # IDs as bulk strings, as every ID.* answer.
        check(isinstance(got, list) and len(got) == 2 and
              all(isinstance(v, bytes) for v in got), got)
        start, end = (int(v) for v in got)
        check(end - start == 250 and start > first, (first, got))
        nxt = [int(v) for v in r.command("ID.NEXT", "orders", 2)]
        check(min(nxt) >= end, (nxt, got))
        for args, code in ((("ID.RANGE", "orders", 0), "COUNT_INVALID"),
                           (("ID.RANGE", "orders", "x"), "COUNT_INVALID"),
                           (("ID.RANGE", "orders", 1000001), "COUNT_INVALID"),
                           (("ID.RANGE", "nope", 5), "TAG_NOT_FOUND"),
                           (("ID.RANGE", "orders"), "ERR")):
            e = r.command(*args)
            check(isinstance(e, RespError) and str(e).startswith(code),
                  (args, e))
        r.close()
    finally:
        s.close()


def test_metrics_bounded():
    tags = {"t%02d" % i: 1000 for i in range(40)}
    s = ft.Server(tags=tags, extra=["--metrics-top-tags", "3",
                                    "--metrics-tags", "t07, t39"])
    try:
        c = s.conn()
        total = 0
        for i in range(40):
            n = 2000 if i == 20 else 1
            s.request("GET", "/v1/segment/t%02d?count=%d" % (i, n), conn=c)
            total += n
        # Keep t20 the fastest while the sampler measures (once a second).
        text = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            s.request("GET", "/v1/segment/t20?count=1000", conn=c)
            total += 1000
            text = s.request("GET", "/metrics", conn=c)[2].decode()
            if 'frond_segment_tag_ids_issued_total{tag="t20"}' in text:
                break
            time.sleep(0.2)
        c.close()
        per_tag = re.findall(r'^frond_segment_tag_ids_issued_total\{tag="'
                             r'([^"]+)"\}', text, re.M)
        check('t20' in per_tag, "the fastest tag has no series: %s" % per_tag)
        check("t07" in per_tag and "t39" in per_tag,
              "configured tags lack series: %s" % per_tag)
        check(len(per_tag) <= 5, "per-tag series unbounded: %s" % per_tag)
        for fam in ("frond_segment_step", "frond_segment_buffer_remaining"):
            n = len(set(re.findall(r'^%s\{tag="([^"]+)"' % fam, text, re.M)))
            check(n <= 5, "%s has %d tags" % (fam, n))
        agg = metric(text, 'frond_ids_issued_total{generator="segment"}')
        check(agg == total, (agg, total))
        check(metric(text, "frond_segment_tags") == 40, "tags gauge")
        check(metric(text, "frond_segment_tags_in_use") == 40, "in use")
    finally:
        s.close()


def test_status_page_pages():
    tags = {"tag-%03d" % i: 10 for i in range(120)}
    tags["<i>odd</i>"] = 10
    s = ft.Server(tags=tags)
    try:
        st, _, b = s.request("GET", "/")
        page = b.decode()
        check(st == 200, st)
        check("tags 1&ndash;50 of 121" in page, "first page: no count")
        check(page.count("<tr><td><code>") == 50, "not 50 rows on a page")
        check("tag-049" not in page or "tag-050" not in page, "page 1")
        check("page=2" in page, "no link to the next page")
        page = s.request("GET", "/?page=3")[2].decode()
        check("tags 101&ndash;121 of 121" in page, "third page")
        check(page.count("<tr><td><code>") == 21, "third page rows")
        page = s.request("GET", "/?q=tag-11")[2].decode()
        rows = re.findall(r"<tr><td><code>([^<]+)</code>", page)
        check(rows == ["tag-%03d" % i for i in range(110, 120)], rows)
        page = s.request("GET", "/?q=%3Ci%3E")[2].decode()
        check("&lt;i&gt;odd&lt;/i&gt;" in page and "<i>odd" not in page,
              "search text or tag not escaped")
        page = s.request("GET", "/?q=zzz")[2].decode()
        check("No tag contains" in page, "empty search")
        check(s.request("GET", "/?page=999")[0] == 200, "past the end")
    finally:
        s.close()


def buffer_bytes(s):
    text = s.request("GET", "/metrics")[2].decode()
    v = metric(text, "frond_connection_buffer_bytes")
    check(v is not None, "no frond_connection_buffer_bytes")
    return v


def test_buffers_shrink():
    """Idle connections that each once fetched a large batch or sent a
    large command hold a few KiB each, not their largest answer."""
    s = ft.Server(tags={"orders": 100000}, resp=True,
                  extra=["--max-body", "1048576"])
    conns, resps = [], []
    try:
        for _ in range(10):
            c = s.conn()
            st, _, b = s.request("GET", "/v1/snowflake?count=100000", conn=c)
            check(st == 200 and len(b) > 1000000, (st, len(b)))
            # A large request body, refused (not JSON).
            st, _, b = s.request("POST", "/v1/tags", body=b"x" * 900000,
                                 headers={"Content-Type": "application/json"},
                                 conn=c)
            check(st == 400, (st, b[:200]))
            conns.append(c)
        for _ in range(10):
            r = Resp(s.resp_port)
            ids = r.command("ID.NEXT", "orders", 100000)
            check(len(ids) == 100000, len(ids))
            e = r.command("ID.DECODE", "x" * 60000)
            check(isinstance(e, RespError), e)
            resps.append(r)
        # The answers are flushed; nothing else runs. 20 connections (and
        # the one asking /metrics) at most 16 KiB each.
        held = buffer_bytes(s)
        deadline = time.monotonic() + 10
        while held > 21 * 16384 and time.monotonic() < deadline:
            time.sleep(0.1)
            held = buffer_bytes(s)
        check(held <= 21 * 16384,
              "idle connections hold %.0f bytes of buffers" % held)
        # After a second idle, the read buffers go too.
        deadline = time.monotonic() + 10
        while held > 8192 and time.monotonic() < deadline:
            time.sleep(0.2)
            held = buffer_bytes(s)
        check(held <= 8192, "idle connections still hold %.0f bytes" % held)
        # Still usable.
        for c in conns:
            st, _, b = s.request("GET", "/v1/snowflake?count=2", conn=c)
            check(st == 200, (st, b[:200]))
        for r in resps:
            check(len(r.command("ID.NEXT", "orders", 3)) == 3, "resp")
    finally:
        for c in conns:
            c.close()
        for r in resps:
            r.close()
        s.close()


if __name__ == "__main__":
    ft.main([test_range_lease_http, test_range_lease_resp,
             test_metrics_bounded, test_status_page_pages,
             test_buffers_shrink])
