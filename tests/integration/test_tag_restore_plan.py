#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""frond tag restore: the plan's bounds and refusals, from sources written
by hand on a SQLite store (test_tag_restore.py runs the whole story with
real servers and dumps on every engine).

Each case is a way the plan could come out too low, or the command could
act where it must not: a fleet of nodes whose steps grew, a seq format's
period rows, a tag outside the scrape's per-tag series, a plan that
writes to a multi: store, --apply while a node serves, a float or an
absurd step in a scrape, a compressed rotated file it cannot read, an
HTTP answer that is not a Frond node's."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402

BIG = 1000000  # the server's max_step, and max_range's default


class Work:
    def __enter__(self):
        self.dir = ft.tempdir()
        return self.dir

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def store_with(work, tags, name="s.db"):
    store = "sqlite:///" + os.path.join(work, name)
    for tag, step in tags.items():
        r = ft.run(["tag", "create", tag, "--step", str(step),
                    "--store", store])
        ft.check(r.returncode == 0, "create %s: %s" % (tag, r.stderr))
    return store


def rows(store):
    r = ft.run(["tag", "list", "--json", "--store", store])
    ft.check(r.returncode == 0, "tag list: %s" % r.stderr)
    return {t["tag"]: t["max_id"] for t in json.loads(r.stdout)}


def write(work, name, text):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def audit_line(tag, first, last, **extra):
    rec = {"time": "2026-11-28T00:00:00.000Z", "client": "c",
           "proto": "http", "op": "batch", "tag": tag, "first": first,
           "last": last, "count": last - first + 1}
    rec.update(extra)
    return json.dumps(rec, separators=(",", ":")) + "\n"


def restore(store, *args):
    return ft.run(["tag", "restore", "--store", store] + list(args))


def plan_of(r):
    ft.check(r.returncode == 0, "plan: %d %s %s"
             % (r.returncode, r.stdout, r.stderr))
    return {p["tag"]: p for p in json.loads(r.stdout)}


def test_fleet_margin():
    """Three nodes, each with its own audit log, steps grown: a node may
    have handed out two buffers of the grown step past its last record.
    The plan covers every node's (or refuses without the fleet's size)."""
    with Work() as work:
        store = store_with(work, {"orders": 10})
        logs = [write(work, "a%d.log" % i, audit_line("orders", 1 + i * 100,
                                                      100 + i * 100))
                for i in range(3)]
        high = 300
        srcs = ["audit:" + x for x in logs]
        # The audit log does not say how many nodes wrote it: refused.
        r = restore(store, *srcs, "--json")
        ft.check(r.returncode == 1 and "--nodes" in r.stderr,
                 "no --nodes: %d %s" % (r.returncode, r.stderr))
        r = restore(store, *srcs, "--nodes", "3", "--json")
        p = plan_of(r)["orders"]
        ft.check(p["highest_seen"] == high and
                 p["to"] == high + 1 + 3 * 2 * BIG,
                 "3 nodes: %r" % p)
        ft.check("assumed" in r.stderr and "1000000" in r.stderr,
                 "no warning naming the assumption: %s" % r.stderr)
        # --max-step: the operator's fleet grows no further.
        r = restore(store, *srcs, "--nodes", "3", "--max-step", "200",
                    "--json")
        p = plan_of(r)["orders"]
        ft.check(p["to"] == high + 1 + 3 * 2 * 200, "max-step: %r" % p)
        # Scrapes: one a node; the largest step any of them shows counts.
        scrapes = []
        for i in range(3):
            scrapes.append("metrics:" + write(
                work, "m%d.prom" % i,
                "frond_segment_tags 1\nfrond_segment_tags_in_use 1\n"
                'frond_segment_step{tag="orders"} %d\n'
                'frond_segment_buffer_last_id{tag="orders",buffer="current"}'
                " %d\n" % (50 if i else 3000000, 400 + i)))
        r = restore(store, *scrapes, "--json")
        p = plan_of(r)["orders"]
        ft.check(p["highest_seen"] == 402 and
                 p["to"] == 402 + 1 + 3 * 2 * 3000000, "scrapes: %r" % p)
        # The fleet's margin saturates: never below the highest seen + 1.
        top = write(work, "top.prom", "frond_segment_tags 1\n"
                    "frond_segment_tags_in_use 1\n"
                    'frond_segment_step{tag="orders"} 10\n'
                    'frond_segment_buffer_last_id{tag="orders",'
                    'buffer="current"} 9223372036854775000\n')
        r = restore(store, "metrics:" + top, "--nodes", "1000000", "--json")
        p = plan_of(r)["orders"]
        ft.check(p["to"] == 9223372036854775807, "saturated: %r" % p)
        # An explicit margin is taken as given, the nodes unknown.
        r = restore(store, *srcs, "--margin", "7", "--json")
        p = plan_of(r)["orders"]
        ft.check(p["to"] == high + 1 + 7, "margin: %r" % p)


def test_seq_periods():
    """A seq format's records name strings, not IDs: their numbers count
    in the period rows (tag:YYYYMMDD) of the store."""
    with Work() as work:
        store = store_with(work, {"orders": 10})
        spec = "seq:tag=orders,digits=6"
        r = ft.run(["next", "--format", spec, "--count", "5",
                    "--store", store])
        ft.check(r.returncode == 0, "next: %s" % r.stderr)
        got = r.stdout.split()
        period = "orders:" + got[0][:8]
        ft.check(period in rows(store), "no period row: %r" % rows(store))
        log = write(work, "audit.log", json.dumps(
            {"time": "2026-11-28T00:00:00.000Z", "client": "c",
             "proto": "http", "op": "batch", "format": "daily",
             "tag": "orders", "first_string": got[0],
             "last_string": got[-1], "count": 5},
            separators=(",", ":")) + "\n")
        r = restore(store, "audit:" + log, "--nodes", "1", "--json")
        ft.check(r.returncode == 1 and period in r.stderr and
                 "--format" in r.stderr,
                 "seq unread: %d %s %s" % (r.returncode, r.stdout, r.stderr))
        r = restore(store, "audit:" + log, "--nodes", "1", "--max-step",
                    "10", "--format", "daily=" + spec, "--json")
        p = plan_of(r)
        ft.check(p[period]["highest_seen"] == 5 and
                 p[period]["to"] == 5 + 1 + 20, "period: %r" % p[period])
        ft.check(p["orders"]["action"] == "not seen", "base: %r" % p)


def test_tags_outside_series():
    """A scrape whose node used more tags than it shows series of."""
    with Work() as work:
        store = store_with(work, {"hot": 10, "cold": 10})
        scrape = write(work, "m.prom",
                       "frond_segment_tags 2\nfrond_segment_tags_in_use 2\n"
                       'frond_segment_step{tag="cold"} 10\n'
                       'frond_segment_buffer_last_id{tag="cold",'
                       'buffer="current"} 20\n')
        r = restore(store, "metrics:" + scrape, "--json")
        ft.check(r.returncode == 1 and "1 tag" in r.stderr and
                 "metrics_tags" in r.stderr,
                 "missing tags: %d %s" % (r.returncode, r.stderr))
        r = restore(store, "metrics:" + scrape, "--missing-tags-ok",
                    "--json")
        ft.check(r.returncode == 0 and "metrics_tags" in r.stderr,
                 "accepted: %d %s" % (r.returncode, r.stderr))


def test_multi_plan_writes_nothing():
    """A plan on a multi: store records nothing in its members."""
    with Work() as work:
        dbs = [os.path.join(work, "m%d.db" % i) for i in range(2)]
        store = "multi:" + "|".join("sqlite:///" + d for d in dbs)
        r = ft.run(["tag", "create", "t", "--step", "10", "--store", store])
        ft.check(r.returncode == 0, "create: %s" % r.stderr)
        scrape = write(work, "m.prom",
                       'frond_store_info{store="%s"} 1\n'
                       "frond_segment_tags 1\nfrond_segment_tags_in_use 1\n"
                       'frond_segment_buffer_last_id{tag="t",'
                       'buffer="current"} 150\n' % ("ab" * 16))

        def ids():
            out = []
            for d in dbs:
                c = sqlite3.connect(d)
                try:
                    out += c.execute("SELECT value FROM frond_meta WHERE "
                                     "name = 'store.id'").fetchall()
                except sqlite3.OperationalError:
                    pass
                c.close()
            return out

        was = ids()
        r = restore(store, "metrics:" + scrape, "--json")
        ft.check(ids() == was, "the plan wrote %r" % ids())
        ft.check("recording a format" not in r.stderr, r.stderr)


def test_apply_refused_while_serving():
    """--apply with a node that answers: it serves from its buffers and
    loads more while the rows move."""
    with Work() as work:
        store = store_with(work, {"t": 10})
        with ft.Server(store=store, extra=["--metrics-tags", "t"]) as srv:
            s, _, b = srv.request("GET", "/v1/segment/t")
            ft.check(s == 200, "segment: %d %r" % (s, b))
            url = "http://127.0.0.1:%d" % srv.port
            was = rows(store)
            r = restore(store, url, "--nodes", "1", "--apply")
            ft.check(r.returncode == 1 and "--nodes-fenced" in r.stderr,
                     "apply live: %d %s" % (r.returncode, r.stderr))
            ft.check(rows(store) == was, "moved while serving")
            r = restore(store, url, "--nodes", "1", "--apply",
                        "--nodes-fenced")
            ft.check(r.returncode == 0 and "advanced" in r.stdout,
                     "fenced: %d %s %s" % (r.returncode, r.stdout, r.stderr))
            # The URL's path is kept (a node behind a prefix).
            r = restore(store, url + "/nope/metrics", "--nodes", "1")
            ft.check(r.returncode == 1 and "/nope/metrics" in r.stderr,
                     "path: %d %s" % (r.returncode, r.stderr))


def test_bad_values():
    """Floats (federation's form) and absurd steps: refused, never a plan
    below the highest seen."""
    with Work() as work:
        store = store_with(work, {"big": 10, "small": 10})
        was = rows(store)
        cases = [
            'frond_segment_buffer_last_id{tag="big",buffer="current"} '
            "9.007199254740993e+15\n",
            'frond_segment_buffer_last_id{tag="small",buffer="next"} 5e3\n',
            'frond_segment_buffer_last_id{tag="small",buffer="next"} '
            "5000.0\n",
            'frond_segment_step{tag="small"} 9223372036854775807\n'
            'frond_segment_buffer_last_id{tag="small",buffer="current"} '
            "5000\n",
            'frond_segment_step{tag="small"} 4611686018427387904\n'
            'frond_segment_buffer_last_id{tag="small",buffer="current"} '
            "5000\n",
            'frond_segment_buffer_last_id{tag="small",buffer="current"} '
            "-5\n",
        ]
        for i, text in enumerate(cases):
            path = write(work, "f%d.prom" % i, "frond_segment_tags 2\n"
                         "frond_segment_tags_in_use 1\n" + text)
            r = restore(store, "metrics:" + path, "--apply")
            ft.check(r.returncode == 1 and "INVAL" in r.stderr and
                     (path + ":") in r.stderr and
                     not ft.sanitizer_errors(r.stderr),
                     "%r: %d %s" % (text, r.returncode, r.stderr))
            ft.check(rows(store) == was, "%r moved the store" % text)
        # The margin saturates; the target is never below highest + 1.
        path = write(work, "top.prom", "frond_segment_tags 2\n"
                     "frond_segment_tags_in_use 1\n"
                     'frond_segment_step{tag="small"} 10\n'
                     'frond_segment_buffer_last_id{tag="small",'
                     'buffer="current"} 9223372036854775000\n')
        r = restore(store, "metrics:" + path, "--json", "--margin",
                    "9223372036854775807")
        p = plan_of(r)["small"]
        ft.check(p["to"] == 9223372036854775807 and
                 not ft.sanitizer_errors(r.stderr), "top: %r" % p)


def test_unreadable_sources():
    """A compressed rotated file it cannot read, a server that is not a
    Frond node: refused, not read as nothing."""
    with Work() as work:
        store = store_with(work, {"t": 10})
        log = write(work, "audit.log", audit_line("t", 1, 5))
        with open(log + ".3.bz2", "wb") as f:
            f.write(b"BZh91AY&SY" + bytes(40))
        r = restore(store, "audit:" + log, "--nodes", "1")
        ft.check(r.returncode == 1 and ".3.bz2" in r.stderr,
                 "bz2: %d %s" % (r.returncode, r.stderr))
        os.remove(log + ".3.bz2")
        with open(log + ".4.zst", "wb") as f:
            f.write(b"\x28\xb5\x2f\xfd" + bytes(40))
        r = restore(store, "audit:" + log, "--nodes", "1")
        ft.check(r.returncode == 1 and ".4.zst" in r.stderr,
                 "zst: %d %s" % (r.returncode, r.stderr))
        os.remove(log + ".4.zst")
        port = ft.free_port()
        srv = subprocess.Popen(
            [sys.executable, "-c",
             "import http.server as h\n"
             "class H(h.BaseHTTPRequestHandler):\n"
             "  def do_GET(self):\n"
             "    b = b'frond_build_info{version=\"x\"} 1\\n'\n"
             "    self.send_response(200)\n"
             "    self.send_header('Content-Length', str(len(b)))\n"
             "    self.end_headers(); self.wfile.write(b)\n"
             "  def log_message(self, *a): pass\n"
             "h.HTTPServer(('127.0.0.1', %d), H).serve_forever()\n" % port])
        try:
            ft.wait_port(port)
            r = restore(store, "http://127.0.0.1:%d" % port, "--nodes", "1")
            ft.check(r.returncode == 1 and "segment" in r.stderr,
                     "not frond: %d %s" % (r.returncode, r.stderr))
        finally:
            srv.kill()
            srv.wait()


if __name__ == "__main__":
    ft.main([test_fleet_margin, test_seq_periods, test_tags_outside_series,
             test_multi_plan_writes_nothing, test_apply_refused_while_serving,
             test_bad_values, test_unreadable_sources])
