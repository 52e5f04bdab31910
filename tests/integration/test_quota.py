#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Quotas on a real server, over HTTP and the Redis protocol at once: a
client or a tag over its rate is refused (429 with Retry-After,
-QUOTA_EXCEEDED) and nothing is issued (the next ID follows the last one
given); another tag is not touched; batches, range leases, INCRBY and
each command of a transaction take the IDs they issue; a burst passes;
the bucket is one for the whole server, whichever front and worker
thread a request reaches; /metrics counts the refusals; rules that cannot
be read stop the start.
"""
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from respclient import Resp, RespError  # noqa: E402


def refused(r, what):
    check(isinstance(r, RespError) and r.code == "QUOTA_EXCEEDED",
          "%s: %r" % (what, r))
    return r


def refused_or_refilled(r, what, since):
    """A single ID past a bucket of rate 1 a second: refused, unless a
    loaded machine took a second or more since the bucket was emptied
    (`since`), which gives one ID back."""
    if isinstance(r, RespError) or time.monotonic() - since < 1.0:
        refused(r, what)


def metric(s, line):
    status, body = ft.http_get(s.port, "/metrics")
    check(status == 200, "/metrics: %d" % status)
    m = re.search(r"^%s (\d+)$" % re.escape(line), body, re.M)
    check(m, "no %s in /metrics" % line)
    return int(m.group(1))


def until_admitted(ask, timeout, what):
    """ask() until it is not refused for the quota, within timeout s;
    every refusal on the way issues nothing. Returns the answer."""
    deadline = time.monotonic() + timeout
    while True:
        r = ask()
        if not (isinstance(r, RespError) and r.code == "QUOTA_EXCEEDED"):
            return r
        check(time.monotonic() < deadline, "%s: refused for %d s"
              % (what, timeout))
        time.sleep(0.02)


def test_tags_over_both_fronts():
    """Tag rules: the exact one and a pattern's bucket per tag, shared by
    HTTP and RESP and by both worker threads."""
    s = ft.Server(resp=True, tags={"orders": 1000, "orders:eu": 1000,
                                   "orders:us": 1000, "orders:fr": 1000,
                                   "users": 1000},
                  extra=["--quota-tag", "orders=1/20, orders:*=1/10"])
    try:
        # A burst passes, in one batch; the next is 429, nothing issued.
        emptied = time.monotonic()
        st, _, body = s.request("GET", "/v1/segment/orders?count=20")
        check(st == 200, "a burst of 20: %d %r" % (st, body))
        ids = [int(x) for x in re.findall(rb'"(\d+)"', body)]
        st, h, body = s.request("GET", "/v1/segment/orders")
        check(st == 429 and b'"code":"QUOTA_EXCEEDED"' in body and
              b'tag \\"orders\\"' in body, "the 21st: %d %r" % (st, body))
        check(re.fullmatch(r"[1-9]\d*", h.get("retry-after", "")),
              "Retry-After: %r" % h.get("retry-after"))
        # The same bucket over RESP, on another connection and thread.
        c = Resp(s.resp_port)
        refused_or_refilled(c.command("INCR", "orders"), "INCR over RESP",
                            emptied)
        refused(c.command("ID.RANGE", "orders", "5"), "ID.RANGE")
        # Refused for good above the burst, said so.
        r = refused(c.command("ID.NEXT", "orders:eu", "11"), "11 of 10")
        check("ask for at most 10 at once" in r.line, r.line)
        st, h, body = s.request("GET", "/v1/segment/orders:eu/range?count=11")
        check(st == 429 and "retry-after" not in h, "%d %r" % (st, h))
        # A pattern: each tag its own bucket; another tag unaffected.
        emptied = time.monotonic()
        check(len(c.command("ID.NEXT", "orders:eu", "10")) == 10, "eu")
        refused_or_refilled(c.command("INCR", "orders:eu"), "eu's 11th",
                            emptied)
        emptied = time.monotonic()
        check(isinstance(c.command("INCRBY", "orders:us", "9"), int), "us")
        refused_or_refilled(c.command("INCRBY", "orders:us", "2"),
                            "INCRBY counts n", emptied)
        st, _, _ = s.request("GET", "/v1/segment/users?count=1000")
        check(st == 200, "users has no rule: %d" % st)
        # A transaction: each command takes its own; one refused is that
        # command's reply, the others run.
        check(c.command("MULTI") == "OK", "MULTI")
        for _ in range(12):
            check(c.command("INCR", "orders:fr") == "QUEUED", "QUEUED")
        r = c.command("EXEC")
        check(isinstance(r, list) and len(r) == 12, "EXEC: %r" % r)
        ok = [x for x in r if isinstance(x, int)]
        check(10 <= len(ok) < 12 and r[:len(ok)] == ok and
              ok == list(range(ok[0], ok[0] + len(ok))) and
              all(isinstance(x, RespError) and x.code == "QUOTA_EXCEEDED"
                  for x in r[len(ok):]),
              "EXEC of 12 INCR, a burst of 10: %r" % r)
        # Refusals used up no ID: once refilled, the next follows the last.
        nxt = until_admitted(lambda: c.command("INCR", "orders"), 10,
                             "orders refilling")
        check(nxt == ids[-1] + 1, "after refusals: %r, the last given %d"
              % (nxt, ids[-1]))
        c.close()
        check(metric(s, 'frond_quota_refused_total{tag="orders"}') >= 2,
              "orders' refusals")
        check(metric(s, 'frond_quota_rule_refused_total{kind="tag",'
                        'rule="orders:*"}') >= 3, "the pattern's refusals")
    finally:
        s.stop()
        s.close()


def test_client_across_fronts():
    """A client rule counts every ID and string the client is given,
    whichever front: snowflake batches over HTTP, UUIDs and segment IDs
    over RESP, from one bucket; Leaf's path answers 429 too."""
    s = ft.Server(resp=True, tags={"t": 1000},
                  extra=["--quota-client", "anonymous=1/50"])
    try:
        st, _, _ = s.request("GET", "/v1/snowflake?count=30")
        check(st == 200, "30 of 50: %d" % st)
        c = Resp(s.resp_port)
        check(len(c.command("ID.UUID", "v7", "15")) == 15, "15 UUIDs")
        check(len(c.command("ID.NEXT", "t", "5")) == 5, "5 segment IDs")
        r = refused(c.command("ID.SNOWFLAKE"), "the 51st ID")
        check('client "anonymous"' in r.line and "retry in" in r.line, r.line)
        st, h, body = s.request("GET", "/api/segment/get/t")
        check(st == 429 and h.get("frond-error") == "QUOTA_EXCEEDED" and
              "retry-after" in h and body.startswith(b"Result{id=-3"),
              "Leaf's path: %d %r %r" % (st, h, body))
        # Tag administration and pages take nothing.
        st, _, _ = s.request("GET", "/v1/tags")
        check(st == 200, "/v1/tags: %d" % st)
        check(c.command("PING") == "PONG", "PING")
        c.close()
        check(metric(s, 'frond_quota_refused_total{client="anonymous"}') == 2,
              "the client's refusals")
        check(metric(s, 'frond_quota_tokens{client="anonymous"}') <= 2,
              "tokens left")
    finally:
        s.stop()
        s.close()


def test_no_quota_no_families():
    """Without a rule nothing is counted and /metrics has no quota
    family."""
    s = ft.Server()
    try:
        for _ in range(3):
            st, _, _ = s.request("GET", "/v1/snowflake?count=100000")
            check(st == 200, "no limit: %d" % st)
        status, body = ft.http_get(s.port, "/metrics")
        check(status == 200 and "frond_quota" not in body,
              "quota families without a rule")
    finally:
        s.stop()
        s.close()


def test_bad_rules_stop_the_start():
    """Rules that cannot be read: --print-config and a start refuse them,
    naming the key and the item; the variable is read like the flag."""
    d = ft.tempdir()  # a path, removed at the end
    cases = [
        (["--quota-tag", "orders=0"], "quota_tag: \"orders=0\": RATE must be"),
        (["--quota-client", "a=1,a=2"], "quota_client: \"a\" is given twice"),
        (["--quota-tag", "or*ders=5"], "a * inside it"),
        (["--quota-buckets", "8"], "quota_buckets"),
    ]
    for args, want in cases:
        r = ft.run(["serve", "--store", "none", "--resp-listen", "off",
                    "--print-config"] + args, cwd=d)
        check(r.returncode != 0 and want in r.stderr,
              "%s: %d %r" % (args, r.returncode, r.stderr))
    env = dict(os.environ, FROND_QUOTA_TAG="x=1/0")
    r = ft.run(["serve", "--store", "none", "--resp-listen", "off",
                "--listen", "127.0.0.1:%d" % ft.free_port()], cwd=d,
               env=env)
    check(r.returncode == 1 and "cannot start: INVAL: quota_tag" in r.stderr,
          "a start: %d %r" % (r.returncode, r.stderr))
    r = ft.run(["serve", "--store", "none", "--print-config",
                "--quota-client", "*=1000/5000, payments=50000"], cwd=d)
    check(r.returncode == 0 and
          "quota_client = *=1000/5000, payments=50000" in r.stdout,
          "a good one: %d %r" % (r.returncode, r.stderr))
    shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    ft.need(ft.FROND_BIN, "frond (build it first)")
    ft.main([test_tags_over_both_fronts, test_client_across_fronts,
             test_no_quota_no_families, test_bad_rules_stop_the_start])
