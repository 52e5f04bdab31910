#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_client_node.py -- the Node client (clients/node) against real
`frond serve` processes, through tests/clients/frond_node_client.mjs:
snowflake IDs, segment IDs from leased ranges, formats and decoding,
typed errors with their codes, bad input, timeouts, many waiters on the
event loop, ranges dropped when too old, the adaptive range size, IDs as
strings (basic); uniqueness across processes; a server restarted and a
server killed with SIGKILL under load (the client carries on from its
buffer and the other server); the page's program run as written; and
`npm pack` of the package.

Node 20 or later: the system's node if it is, else the one the client
suite's package bundles (scripts/deps.sh test installs it), as
test_clients.py chooses; FROND_CLIENTS_NODE forces a path.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from fakefrond import FakeServer, FakeStore  # noqa: E402
from frondtest import check  # noqa: E402

SRC = os.path.abspath(ft.FROND_SRC)
PKG = os.path.join(SRC, "clients", "node")
PROG = os.path.join(SRC, "tests", "clients", "frond_node_client.mjs")
TAGS = {"orders": 1000, "small": 10}
NODE = []


def node():
    """A Node 20 or later."""
    if NODE:
        return NODE[0]
    cands = []
    if os.environ.get("FROND_CLIENTS_NODE", "") not in ("", "system",
                                                        "bundled"):
        cands.append(os.environ["FROND_CLIENTS_NODE"])
    if shutil.which("node"):
        cands.append(shutil.which("node"))
    r = subprocess.run(["npm", "root", "-g"], capture_output=True,
                       text=True, timeout=60) if shutil.which("npm") else None
    if r is not None and r.returncode == 0:
        arch = {"x86_64": "x64", "aarch64": "arm64"}.get(
            os.uname().machine, os.uname().machine)
        cands.append(os.path.join(r.stdout.strip(), "frond-client-suite",
                                  "node_modules", "node-linux-" + arch,
                                  "bin", "node"))
    for path in cands:
        try:
            v = subprocess.run([path, "-p", "process.versions.node"],
                               capture_output=True, text=True, timeout=60)
        except OSError:
            continue
        m = re.match(r"(\d+)\.", v.stdout)
        if v.returncode == 0 and m and int(m.group(1)) >= 20:
            NODE.append(path)
            print("Node %s at %s" % (v.stdout.strip(), path), flush=True)
            return path
    raise ft.Failure("no Node 20 or later: Debian 12's nodejs is 18; "
                     "scripts/deps.sh test installs Node 20 with the client "
                     "suite (tried %s)" % cands)


def url(s):
    return "http://127.0.0.1:%d" % s.port


def last_json(out, what):
    lines = out.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError):
        raise ft.Failure("%s printed %r" % (what, out[-3000:]))


def run(args, what, timeout=240, env=None):
    r = subprocess.run([node(), PROG, PKG] + args, capture_output=True,
                       text=True, timeout=timeout, env=env)
    check(r.returncode == 0, "%s: %s %s" % (what, r.stdout[-3000:],
                                            r.stderr[-2000:]))
    return last_json(r.stdout, what)


def unique(ids, what):
    check(len(set(ids)) == len(ids), "%s: %d duplicates" % (
        what, len(ids) - len(set(ids))))


def test_basic():
    s = ft.Server(tags=TAGS, extra=["--format.u", "ulid"])
    try:
        unique(run(["basic", url(s)], "basic")["ids"], "basic")
    finally:
        s.stop()
        s.close()


def test_processes():
    s = ft.Server(tags=TAGS)
    try:
        ps = [subprocess.Popen([node(), PROG, PKG, "count", "20000", url(s)],
                               stdout=subprocess.PIPE, text=True)
              for _ in range(4)]
        seen = []
        for p in ps:
            out, _ = p.communicate(timeout=240)
            check(p.returncode == 0, "a process failed: %s" % out[-2000:])
            seen += last_json(out, "count")["ids"]
        check(len(seen) == 4 * 20010, "%d IDs" % len(seen))
        unique(seen, "four processes")
    finally:
        s.stop()
        s.close()


class Load:
    """The load mode in a process: IDs until stop(), its progress read
    line by line."""

    def __init__(self, min_range, rate, urls):
        self.p = subprocess.Popen([node(), PROG, PKG, "load", str(min_range),
                                   str(rate)] + urls, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.ranges = 0
        self.lines = []

    def wait_ranges(self, n, what, timeout=60):
        deadline = time.monotonic() + timeout
        while self.ranges < n:
            check(time.monotonic() < deadline, "%s: %d ranges in %d s"
                  % (what, self.ranges, timeout))
            line = self.p.stdout.readline()
            check(line, "the load ended: %s" % "".join(self.lines[-20:]))
            self.lines.append(line)
            m = re.match(r"ranges (\d+) ", line)
            if m:
                self.ranges = int(m.group(1))

    def stop(self):
        out, _ = self.p.communicate("stop\n", timeout=120)
        check(self.p.returncode == 0, "load: %s" % out[-3000:])
        return last_json(out, "load")


def test_server_restarted():
    """The buffer outlasts a restart (two ranges of 100,000 at 20,000 IDs
    a second: 5 to 10 s): no error, no duplicate."""
    s = ft.Server(tags=TAGS, threads=1)
    try:
        load = Load(100000, 20000, [url(s)])
        try:
            load.wait_ranges(1, "before the restart")
            check(s.stop() == 0, "frond serve did not stop cleanly")
            e = ft.sanitizer_env(dict(os.environ),
                                 os.path.join(s.dir, "sanitizer"))
            s.proc = subprocess.Popen(s.args, cwd=s.dir, env=e, stdout=s.log,
                                      stderr=subprocess.STDOUT)
            ft.wait_port(s.port, timeout=30)
            mark = load.ranges
            load.wait_ranges(mark + 1, "after the restart")
            out = load.stop()
        finally:
            if load.p.poll() is None:
                load.p.kill()
        unique(out["ids"], "across the restart")
        check(not out["errors"], "errors: %s" % out["errors"][:3])
    finally:
        s.stop()
        s.close()


def names_store(s):
    status, body = ft.http_get(s.port, "/v1/layout")
    return status == 200 and "store" in json.loads(body)


def test_server_killed_failover():
    a = ft.Server(tags=TAGS, threads=1)
    b = ft.Server(store=a.store, threads=1)
    try:
        if not names_store(a):
            # Servers that do not name their store: two are refused.
            r = subprocess.run([node(), PROG, PKG, "count", "10", url(a),
                                url(b)], capture_output=True, text=True,
                               timeout=120)
            check(r.returncode != 0 and "STORE_MISMATCH" in r.stdout and
                  "does not name its store" in r.stdout,
                  "two servers without a store: %s" % r.stdout[-2000:])
            return
        load = Load(500, 0, [url(a), url(b)])
        try:
            load.wait_ranges(3, "from the first server")
            a.stop(sig=signal.SIGKILL)
            mark = load.ranges
            load.wait_ranges(mark + 3, "from the second server")
            out = load.stop()
        finally:
            if load.p.poll() is None:
                load.p.kill()
        unique(out["ids"], "across the failover")
        check(out["failovers"] >= 1, "no failover")
        check(not out["errors"], "errors: %s" % out["errors"][:3])
    finally:
        for s in (b, a):
            s.stop()
            s.close()


class Failover:
    """The failover mode: 150 IDs, then go() and 3000 more."""

    def __init__(self, urls):
        self.p = subprocess.Popen([node(), PROG, PKG, "failover"] + urls,
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        check(line == "ready\n", "failover: %r" % line)

    def go(self):
        try:
            out, _ = self.p.communicate("go\n", timeout=180)
        finally:
            if self.p.poll() is None:
                self.p.kill()
        check(self.p.returncode == 0, "failover: %s" % out[-3000:])
        return last_json(out, "failover")


def test_store_identity():
    """store_id with fake servers on one store, answering from their own
    buffers: after a failover to a server that has served before, no
    error and no duplicate; servers of different stores, or several that
    name no store, give STORE_MISMATCH."""
    st = FakeStore(step=1000)
    a, b = FakeServer(st), FakeServer(st)
    try:
        check(b.take(10) == (1, 11), "B's buffer")
        f = Failover([a.url, b.url])
        a.kill()
        out = f.go()
        ids = [int(i) for i in out["ids"]]
        check(not out["errors"], "%d errors, first %s" % (
            len(out["errors"]), out["errors"][:1]))
        check(len(ids) == 3150 and len(set(ids)) == 3150 and
              min(ids) < 1000, "%d IDs, %d distinct, min %d"
              % (len(ids), len(set(ids)), min(ids)))
    finally:
        a.close()
        b.close()
    x, y = FakeServer(FakeStore()), FakeServer(FakeStore())
    try:
        f = Failover([x.url, y.url])
        x.kill()
        out = f.go()
        errs = out["errors"]
        check(errs and all(e["code"] == "STORE_MISMATCH" for e in errs),
              "errors %s" % errs[:2])
        for part in (x.url, y.url, x.store.id, y.store.id):
            check(part in errs[0]["message"], "%s not in %s" % (
                part, errs[0]["message"]))
        check(len(out["ids"]) <= 200, "IDs of another store were used")
    finally:
        x.close()
        y.close()
    p, q = FakeServer(st, names_store=False), FakeServer(
        st, names_store=False)
    try:
        out = Failover([p.url]).go()
        check(not out["errors"] and len(out["ids"]) == 3150,
              "one server without a store: %s" % out["errors"][:1])
        errs = Failover([p.url, q.url]).go()["errors"]
        check(errs and errs[0]["code"] == "STORE_MISMATCH" and
              "does not name its store" in errs[0]["message"],
              "two servers without a store: %s" % errs[:1])
    finally:
        p.close()
        q.close()


def test_bad_range_answers():
    """start and end: strings of decimal digits within int64 only."""
    f = FakeServer(FakeStore())
    p = subprocess.Popen([node(), PROG, PKG, "ranges", f.url],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        def ask(bad):
            f.bad = bad
            p.stdin.write("go\n")
            p.stdin.flush()
            return json.loads(p.stdout.readline())
        for bad in [("9007199254740993", "9007199254741993"),
                    ('""', '"1000"'), ("1993.7", "2993.7"),
                    ('"1_000"', '"2000"'), ('"-5"', '"995"'),
                    ('"0x10"', '"1016"'), ('" 5"', '"1005"'),
                    ('"9223372036854775808"', '"9223372036854776808"'),
                    ("null", '"1000"'), ("true", '"1000"')]:
            got = ask(bad)
            check(got.get("code") == "BAD_RESPONSE" and
                  "decimal digits" in got.get("message", ""),
                  "%r gave %r" % (bad, got))
        got = ask(('"9223372036854774807"', '"9223372036854775807"'))
        check(got == {"start": "9223372036854774807",
                      "end": "9223372036854775807"}, "%r" % got)
        got = ask(None)
        check("start" in got, "a good answer after bad ones: %r" % got)
        p.stdin.write("stop\n")
        p.stdin.flush()
        p.communicate(timeout=60)
        check(p.returncode == 0, "ranges mode failed")
    finally:
        if p.poll() is None:
            p.kill()
        f.close()


def test_server_max_range():
    """A server whose max_range is below the client's: no error."""
    s = ft.Server(tags=TAGS, extra=["--max-range", "400"])
    try:
        ids = run(["count", "30000", url(s)], "count")["ids"]
        unique(ids, "behind --max-range 400")
    finally:
        s.stop()
        s.close()


def test_page_program():
    """docs/clients/node.md's program, as written, against a server named
    by FROND_SERVERS; the package resolved as an installed one would be
    (node_modules/frond-client)."""
    with open(os.path.join(SRC, "docs", "clients", "node.md")) as f:
        blocks = re.findall(r"```js\n(.*?)```", f.read(), re.S)
    check(blocks, "docs/clients/node.md has no js block")
    d = tempfile.mkdtemp(prefix="frond-nodeclient-")
    s = ft.Server(tags={"orders": 1000})
    try:
        os.makedirs(os.path.join(d, "node_modules"))
        os.symlink(PKG, os.path.join(d, "node_modules", "frond-client"))
        with open(os.path.join(d, "main.mjs"), "w") as f:
            f.write(blocks[0])
        r = subprocess.run([node(), "main.mjs"], cwd=d, capture_output=True,
                           text=True, timeout=120,
                           env=dict(os.environ, FROND_SERVERS=url(s)))
        check(r.returncode == 0, "the page's program: %s %s" % (r.stdout,
                                                                r.stderr))
        check(re.search(r"^order \d+$", r.stdout, re.M) and
              re.search(r"^event \d+$", r.stdout, re.M),
              "the page's program printed %r" % r.stdout)
    finally:
        s.stop()
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def test_npm_pack():
    """npm packs the package as the registry would take it: its files,
    its version, no dependency."""
    ft.need("npm", "npm")
    d = tempfile.mkdtemp(prefix="frond-nodepack-")
    try:
        r = subprocess.run(["npm", "pack", "--json", "--pack-destination", d,
                            PKG], capture_output=True, text=True,
                           timeout=120, cwd=d)
        check(r.returncode == 0, "npm pack: %s" % r.stderr[-2000:])
        info = json.loads(r.stdout)[0]
        files = sorted(f["path"] for f in info["files"])
        check(files == ["README.md", "index.d.ts", "index.js",
                        "package.json"], "packed %s" % files)
        with open(os.path.join(PKG, "package.json")) as f:
            pkg = json.load(f)
        check(info["version"] == pkg["version"] and not pkg["dependencies"],
              "version %s, dependencies %s" % (info["version"],
                                               pkg["dependencies"]))
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    ft.need(ft.FROND_BIN, "frond (build it first)")
    ft.main([test_basic, test_processes, test_server_restarted,
             test_server_killed_failover, test_store_identity,
             test_bad_range_answers, test_server_max_range,
             test_page_program, test_npm_pack])
