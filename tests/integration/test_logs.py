#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_logs.py -- what `frond serve` logs: log_format = json (from the flag
and from FROND_LOG_FORMAT), every line one JSON object, the node and the
layout on every line once the node ID is held; the warning of a layout
near its end, at start; a tag changed through the admin API logged with
the request's fields, in both formats, failures as warnings.
"""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

TOKEN = "secret-token"
AUTH = {"Authorization": "Bearer " + TOKEN}


def json_lines(text):
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            raise ft.Failure("not a JSON line: %r" % line)
    return out


def test_json_lines():
    for how in ("flag", "env"):
        extra = ["--admin-token", TOKEN]
        env = {}
        if how == "flag":
            extra += ["--log-format", "json"]
        else:
            env["FROND_LOG_FORMAT"] = "json"
        s = ft.Server(extra=extra, env=env, tags={"orders": 100})
        try:
            st, _, _ = s.request("POST", "/v1/tags",
                                 '{"tag":"invoices","step":10}', AUTH)
            check(st == 201, "POST %d" % st)
            st, _, _ = s.request("POST", "/v1/tags",
                                 '{"tag":"invoices","step":10}', AUTH)
            check(st == 409, "second POST %d" % st)
            st, _, _ = s.request("PATCH", "/v1/tags/orders", '{"step":500}',
                                 AUTH)
            check(st == 200, "PATCH %d" % st)
            st, _, _ = s.request("DELETE", "/v1/tags/invoices", None, AUTH)
            check(st == 204, "DELETE %d" % st)
            # Reads are not logged.
            check(s.request("GET", "/v1/tags")[0] == 200, "GET")
            check(s.stop() == 0, "exit")
            lines = json_lines(s.output())
            check(len(lines) >= 6, "%s: %r" % (how, lines))
            for l in lines:
                check(set(l) >= {"time", "level", "msg"} and
                      re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z",
                                   l["time"]), "%s: %r" % (how, l))
            # From the start line on (the node is held before it), every
            # line names the node and its layout.
            first = next(i for i, l in enumerate(lines)
                         if l["msg"].startswith("listening on"))
            for l in lines[first:]:
                check(l.get("node") == 0 and l.get("layout") == "frond",
                      "%s: no node or layout in %r" % (how, l))
            tags = [l for l in lines if "tag" in l]
            want = [("info", 'tag "invoices" created', "POST", "/v1/tags",
                     201),
                    ("warn", 'tag "invoices" not created: TAG_EXISTS: tag '
                     '"invoices" already exists', "POST", "/v1/tags", 409),
                    ("info", 'tag "orders" re-stepped', "PATCH",
                     "/v1/tags/orders", 200),
                    ("info", 'tag "invoices" deleted', "DELETE",
                     "/v1/tags/invoices", 204)]
            check(len(tags) == len(want), "%s: tag lines %r" % (how, tags))
            for l, (level, msg, method, path, status) in zip(tags, want):
                check((l["level"], l["msg"], l["method"], l["path"],
                       l["status"]) == (level, msg, method, path, status) and
                      re.fullmatch(r"127\.0\.0\.1:\d+", l["client"]),
                      "%s: %r, wanted %r" % (how, l, (level, msg, method,
                                                      path, status)))
        finally:
            s.close()


def test_text_fields():
    s = ft.Server(extra=["--admin-token", TOKEN])
    try:
        st, _, _ = s.request("POST", "/v1/tags", '{"tag":"a b","step":10}',
                             AUTH)
        check(st == 201, "POST %d" % st)
        s.stop()
        m = re.search(r'^frond: info: tag "a b" created method=POST '
                      r'path=/v1/tags client=127\.0\.0\.1:\d+ tag="a b" '
                      r'status=201$', s.output(), re.M)
        check(m, "text line: %s" % s.output())
    finally:
        s.close()


def test_layout_end_warning():
    """A layout with less than a year left: a warning at start, and the
    time left in /metrics."""
    now = int(time.time() * 1000)
    # 2^35 ms is about 398 days: starting 300 days ago, 97 or 98 are left.
    epoch = now - 300 * 86400000
    spec = "time=35,node=10,seq=12,unit=1ms,epoch=%d" % epoch
    s = ft.Server(extra=["--layout", spec], store="none")
    try:
        text = s.request("GET", "/metrics")[2].decode()
        m = re.search(r"^frond_snowflake_time_left_seconds (\S+)$", text,
                      re.M)
        left = float(m.group(1)) if m else -1
        want = (epoch + 2 ** 35 - time.time() * 1000) / 1000
        check(abs(left - want) < 60, "time left %s, want about %.0f"
              % (m and m.group(1), want))
        s.stop()
        out = s.output()
        check(re.search(r"^frond: warn: layout 'custom' \(%s\) runs out of "
                        r"time bits on \S+, in 9[78] days" % re.escape(spec),
                        out, re.M), "no warning: %s" % out)
    finally:
        s.close()
    # A layout with decades left says nothing.
    s = ft.Server(store="none")
    try:
        s.stop()
        check("runs out of time bits" not in s.output(), s.output())
    finally:
        s.close()


if __name__ == "__main__":
    ft.main([test_json_lines, test_text_fields, test_layout_end_warning])
