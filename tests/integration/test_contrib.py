#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_contrib.py -- what ships in contrib/ works as shipped: the Prometheus
alerting rules pass `promtool check rules` and their unit tests (`promtool
test rules`), and every metric the rules and the Grafana dashboard name is
one that /metrics really exports, read off running servers (a snowflake
node with a lease coordinator and a SQLite store, and one on a multi:
store, both with traffic on every family that appears only once used).
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from respclient import Resp  # noqa: E402

CONTRIB = os.path.join(ft.FROND_SRC, "contrib")
RULES = os.path.join(CONTRIB, "prometheus", "frond.rules.yml")
RULE_TESTS = os.path.join(CONTRIB, "prometheus", "frond.rules.test.yml")
DASHBOARD = os.path.join(CONTRIB, "grafana", "frond.json")
NAME = re.compile(r"\b((?:frond|process)_[a-z0-9_]+)\b")


def promtool(*args):
    ft.need("promtool", "prometheus")
    return subprocess.run(["promtool"] + list(args), capture_output=True,
                          text=True, timeout=120,
                          cwd=os.path.dirname(RULES))


def test_rules_check():
    r = promtool("check", "rules", RULES)
    ft.check(r.returncode == 0, "promtool check rules: %s%s" %
             (r.stdout, r.stderr))


def test_rules_unit_tests():
    r = promtool("test", "rules", RULE_TESTS)
    ft.check(r.returncode == 0 and "SUCCESS" in r.stdout,
             "promtool test rules:\n%s%s" % (r.stdout, r.stderr))
    # Every alert has its test: firing at least once, quiet at least once.
    with open(RULES) as f:
        alerts = re.findall(r"^\s+- alert: (\w+)$", f.read(), re.M)
    with open(RULE_TESTS) as f:
        tests = f.read()
    for a in alerts:
        blocks = re.findall(r"alertname: %s\n(\s+exp_alerts:[^\n]*)" % a,
                            tests)
        ft.check(any(b.strip().endswith("[]") for b in blocks),
                 "%s: no test that it stays quiet" % a)
        ft.check(any(not b.strip().endswith("[]") for b in blocks),
                 "%s: no test that it fires" % a)


def dashboard():
    with open(DASHBOARD) as f:
        return json.load(f)


def test_dashboard_shape():
    d = dashboard()
    ids = [p["id"] for p in d["panels"]]
    ft.check(len(ids) == len(set(ids)), "panel ids repeat: %s" % ids)
    names = [v["name"] for v in d["templating"]["list"]]
    ft.check(names == ["datasource", "instance"], "variables: %s" % names)
    for p in d["panels"]:
        if p["type"] == "row":
            continue
        ft.check(p["datasource"]["uid"] == "${datasource}" and p["targets"],
                 "panel %r: no templated data source or no query" %
                 p["title"])
        for t in p["targets"]:
            ft.check('instance=~"$instance"' in t["expr"],
                     "panel %r: %s ignores the instance variable" %
                     (p["title"], t["expr"]))


def exprs():
    """Every PromQL expression of the rules and the dashboard."""
    out = []
    with open(RULES) as f:
        text = f.read()
    # An expr is one line, or a folded block (>-) of indented lines.
    for m in re.finditer(r"^(\s+)expr: (>-\n(?:\1\s+.*\n)+|.*\n)", text, re.M):
        out.append(("rules", m.group(2)))
    for p in dashboard()["panels"]:
        for t in p.get("targets", []):
            out.append(("dashboard: " + p["title"], t["expr"]))
    return out


def exported(text):
    """The sample names of a /metrics page; a histogram's family name
    stands for its _bucket, _sum and _count."""
    names = set()
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            names.add(m.group(1))
            if m.group(2) == "histogram":
                names |= {m.group(1) + s for s in ("_bucket", "_sum",
                                                   "_count")}
    return names


def traffic(s, tag):
    """Use every family that appears only once used."""
    for path in ("/v1/snowflake?count=10", "/v1/segment/%s?count=10" % tag,
                 "/api/segment/get/%s" % tag, "/v1/layout", "/livez"):
        st, _, body = s.request("GET", path)
        ft.check(st == 200, "%s: %d %s" % (path, st, body[:200]))
    r = Resp(s.resp_port)
    ft.check(r.command("PING") == "PONG", "PING")
    r.command("INCR", tag)
    r.close()


def test_every_name_is_exported():
    names = set()
    servers = []
    try:
        d = ft.tempdir()
        store = "sqlite:///%s/frond.db" % d
        lease = ["--coordinator", "lease+sqlite:///%s/nodes.db" % d]
        tags = ["--metrics-tags", "orders"]
        s = ft.Server(extra=lease + tags, tags={"orders": 100}, store=store,
                      resp=True)
        servers.append(s)
        m = ft.tempdir()
        multi = "multi:sqlite:///%s/a.db|sqlite:///%s/b.db" % (m, m)
        r = ft.run(["tag", "create", "orders", "--step", "100", "--store",
                    multi], cwd=m)
        ft.check(r.returncode == 0, "tag create on multi: %s" % r.stderr)
        # A multi: store hands out no node IDs: the lease is named beside.
        s2 = ft.Server(extra=tags + ["--coordinator",
                                     "lease+sqlite:///%s/n.db" % m],
                       store=multi, resp=True)
        servers.append(s2)
        for srv in servers:
            traffic(srv, "orders")
            st, _, body = srv.request("GET", "/metrics")
            ft.check(st == 200, "/metrics: %d" % st)
            names |= exported(body.decode())
    finally:
        for srv in servers:
            srv.close()
    missing = []
    for where, e in exprs():
        for n in NAME.findall(e):
            if n not in names:
                missing.append("%s: %s" % (where, n))
    ft.check(not missing, "named but not exported by /metrics:\n  " +
             "\n  ".join(sorted(set(missing))))


if __name__ == "__main__":
    ft.main([test_rules_check, test_rules_unit_tests, test_dashboard_shape,
             test_every_name_is_exported])
