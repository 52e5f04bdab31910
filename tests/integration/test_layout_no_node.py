#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_layout_no_node.py -- Simpleflake's layout without its duplicates: a
layout with no node bits (time=41,node=0,seq=22) has one node ID, so it
runs only where exactly one holder of node 0 can exist.

  - two servers on one lease store: the second is refused, the first's
    IDs are unique, and a successor starts above them;
  - a static node 0 is refused (CONFIG) by serve, check, --print-config
    and next, saying why: beside a store (unregistered=1), and with
    store none, where the high-water file's lock covers one node ID in
    one directory. Three ways that lock let two node-0 issuers run, each
    now refused at start: another layout's server in the same directory,
    a directory moved from node 1 of 10 bits, two directories;
  - with store none, a lease on one SQLite file (the setting the refusal
    names) serves, and a second server on another directory is refused;
  - `frond next` on the lease is refused beside a server and runs above
    it after.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402

L = "time=41,node=0,seq=22"
SHARED_PG = "postgresql://frond@127.0.0.1:1/ids"  # never reached: refused first


def ids(server, n=1000):
    s, _, body = server.request("GET", "/v1/snowflake?count=%d" % n)
    ft.check(s == 200, "batch: %d %s" % (s, body))
    return [int(x) for x in json.loads(body)["ids"]]


def check_fields(out):
    """Time in the top 41 bits, the sequence in the low 22, no node."""
    for i in (out[0], out[-1]):
        r = ft.run(["decode", str(i), "--layout", L])
        ft.check(r.returncode == 0, "decode %d: %s" % (i, r.stderr))
        f = json.loads(r.stdout)
        ft.check(f["node"] == 0, "node of %d: %s" % (i, f))
        ft.check(f["time_units"] == i >> 22 and
                 f["sequence"] == i & (2**22 - 1),
                 "fields of %d: %s" % (i, f))


def refused(r, code, *words):
    """Exit 1 and the code and words said (frond check says them on
    standard output, the others on standard error)."""
    said = r.stdout + r.stderr
    ft.check(r.returncode != 0, "not refused: %s" % said)
    ft.check(code in said, "want %s: %s" % (code, said))
    for w in words:
        ft.check(w in said, "want %r in: %s" % (w, said))


def test_two_servers_one_lease():
    with ft.start_server("frond", extra=["--layout", L]) as a:
        first = ids(a, 2000) + ids(a, 2000)
        ft.check(len(set(first)) == len(first), "a repeated ID")
        ft.check(first == sorted(first), "not increasing")
        check_fields(first)
        s, _, body = a.request("GET", "/v1/layout")
        lay = json.loads(body)
        ft.check(s == 200 and lay["node_bits"] == 0 and lay["node"] == 0,
                 "/v1/layout: %s" % body)
        with tempfile.TemporaryDirectory() as d:
            port = ft.free_port()
            r = subprocess.run(
                [ft.FROND_BIN, "serve", "--listen", "127.0.0.1:%d" % port,
                 "--resp-listen", "off", "--store", a.store, "--data-dir", d,
                 "--threads", "1", "--layout", L], cwd=d, timeout=60,
                capture_output=True, text=True)
            refused(r, "NODE_RANGE", "all 1 node IDs")
            # A one-off run beside the server is refused the same way.
            r = ft.run(["next", "--store", a.store, "--layout", L,
                        "--data-dir", d], cwd=d)
            refused(r, "NODE_RANGE")
        more = ids(a, 1000)
        ft.check(more[0] > first[-1], "the first server went on")
        ft.check(a.stop() == 0, "stop: %s" % a.output())
        # The successor (a one-off run now) starts above the fence.
        with tempfile.TemporaryDirectory() as d:
            r = ft.run(["next", "--store", a.store, "--layout", L,
                        "--data-dir", d, "--count", "3"], cwd=d)
            ft.check(r.returncode == 0, "next after: %s" % r.stderr)
            after = [int(x) for x in r.stdout.split()]
            ft.check(len(after) == 3 and after[0] > more[-1],
                     "after %s, before %d" % (after, more[-1]))


def test_static_shared_store_refused():
    with tempfile.TemporaryDirectory() as d:
        base = ["--store", SHARED_PG, "--layout", L, "--data-dir", d,
                "--coordinator", "static:0?unregistered=1"]
        for cmd in (["serve", "--listen", "127.0.0.1:%d" % ft.free_port(),
                     "--resp-listen", "off"] + base,
                    ["serve", "--print-config"] + base,
                    ["check"] + base):
            r = ft.run(cmd, cwd=d)
            refused(r, "CONFIG", "no node bits", "registered nowhere",
                    "would issue the same IDs", "Drop unregistered=1")
        # Node bits: the same configuration is the operator's to make.
        r = ft.run(["serve", "--print-config", "--store", SHARED_PG,
                    "--coordinator", "static:0?unregistered=1",
                    "--data-dir", d], cwd=d)
        ft.check(r.returncode == 0, "with node bits: %s" % r.stderr)


def start_or_exit(args, d, log):
    """Start `frond serve` args in d and wait until it serves an ID or
    exits: (served ID or None, its output). A server that started is
    stopped before returning."""
    port = ft.free_port()
    with open(log, "w") as f:
        p = ft.serve(args, d, port, f)
    try:
        got = ft.wait_serving(p, port, 60)
        if got is None and p.poll() is None:
            raise ft.Failure("neither served nor exited in 60 s")
    finally:
        if p.poll() is None:
            p.terminate()
        p.wait(30)
    with open(log) as f:
        return got, f.read()


def refused_at_start(args, d, log, what):
    got, out = start_or_exit(args, d, log)
    ft.check(got is None, "%s started (ID %s): %s" % (what, got, out))
    ft.check("CONFIG" in out and "no node bits" in out and
             "registered nowhere" in out and "same IDs" in out,
             "%s: want CONFIG, why: %s" % (what, out))


DEFAULT_FIX = "coordinator = lease+sqlite:///var/lib/frond/nodes.db"


def test_static_no_store_refused():
    """The default with store none is a static node 0: serve, check,
    --print-config and next refuse it, naming the one-line setting."""
    d = ft.tempdir("frond-nonode-")
    try:
        base = ["--store", "none", "--layout", L, "--data-dir", d]
        refused_at_start(["--layout", L], d, os.path.join(d, "s.log"),
                         "the default with store none")
        with open(os.path.join(d, "s.log")) as f:
            ft.check(DEFAULT_FIX in f.read(), "the setting is named")
        os.remove(os.path.join(d, "s.log"))
        for cmd in (["serve", "--print-config"] + base,
                    ["check", "--listen", "127.0.0.1:%d" % ft.free_port(),
                     "--resp-listen", "off"] + base):
            r = ft.run(cmd, cwd=d)
            refused(r, "CONFIG", "no node bits", "registered nowhere",
                    "another layout in this directory", DEFAULT_FIX)
        # A static node 0 typed by hand, and a one-off run: the same.
        r = ft.run(["serve", "--print-config", "--coordinator", "static:0"]
                   + base, cwd=d)
        refused(r, "CONFIG", "static:0 is registered nowhere",
                "lease+sqlite:///var/lib/frond/nodes.db")
        for extra in ([], ["--node", "0"]):
            r = ft.run(["next"] + base + extra, cwd=d)
            refused(r, "CONFIG", "no node bits",
                    "--coordinator lease+sqlite:///var/lib/frond/nodes.db")
        ft.check(not [f for f in os.listdir(d) if f.endswith(".hw")],
                 "a refused run wrote a high-water file: %s" % os.listdir(d))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_same_dir_other_layout():
    """A server on node 1 of a 10-node-bit layout holds its directory's
    node-1 lock; a node-0 server with no node bits in the same directory
    would lock node 0's file, start, and repeat node 1's IDs (its
    sequence covers every node's range). Refused at start."""
    d = ft.tempdir("frond-nonode-")
    try:
        port = ft.free_port()
        with open(os.path.join(d, "a.log"), "w") as f:
            a = ft.serve(["--node", "1"], d, port, f)
        try:
            ft.check(ft.wait_serving(a, port, 60) is not None,
                     "node 1 did not serve")
            refused_at_start(["--layout", L], d, os.path.join(d, "b.log"),
                             "node 0 beside node 1 in one directory")
            ft.check(a.poll() is None, "node 1 went down")
        finally:
            a.terminate()
            a.wait(30)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_moved_dir_refused():
    """A directory that ran static node 1 (10 node bits), moved to no
    node bits in place: node 0's high-water file is new and node 1's is
    never read, so a clock behind would repeat node 1's IDs. Refused."""
    d = ft.tempdir("frond-nonode-")
    try:
        got, out = start_or_exit(["--node", "1"], d,
                                 os.path.join(d, "a.log"))
        ft.check(got is not None, "node 1 did not serve: %s" % out)
        ft.check(os.path.exists(os.path.join(d, "frond-node-1.hw")),
                 "no node-1 file: %s" % os.listdir(d))
        for extra in ([], ["--node", "0"], ["--layout-change"]):
            refused_at_start(["--layout", L] + extra, d,
                             os.path.join(d, "b.log"), "moved %s" % extra)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_two_dirs_refused():
    """Two store-none servers on one host, each its own directory: both
    node 0, each lock its own. Both refused at start."""
    d = ft.tempdir("frond-nonode-")
    try:
        for h in ("a", "b"):
            os.mkdir(os.path.join(d, h))
            refused_at_start(["--layout", L], os.path.join(d, h),
                             os.path.join(d, h + ".log"), "server " + h)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_single_host_lease():
    """The setting the refusal names: with store none, node 0 leased in
    one SQLite file on the host. The first server serves; a second on
    another directory is refused NODE_RANGE; a successor starts above."""
    d = ft.tempdir("frond-nonode-")
    try:
        co = ["--layout", L, "--coordinator",
              "lease+sqlite:///%s/nodes.db" % d]
        for h in ("a", "b", "c"):
            os.mkdir(os.path.join(d, h))
        r = ft.run(["check", "--store", "none", "--data-dir",
                    os.path.join(d, "a"), "--listen",
                    "127.0.0.1:%d" % ft.free_port(), "--resp-listen", "off"]
                   + co, cwd=d)
        ft.check(r.returncode == 0, "check: %s" % r.stdout)
        with ft.start_server("frond", store="none", extra=co) as a:
            first = ids(a, 3000)
            ft.check(len(set(first)) == 3000 and first == sorted(first),
                     "unique and increasing")
            check_fields(first)
            got, out = start_or_exit(co, os.path.join(d, "b"),
                                     os.path.join(d, "b.log"))
            ft.check(got is None and "NODE_RANGE" in out,
                     "second holder of node 0: %s %s" % (got, out))
            last = ids(a, 10)[-1]
            ft.check(last > first[-1], "the first server went on")
            ft.check(a.stop() == 0, "stop: %s" % a.output())
        got, out = start_or_exit(co, os.path.join(d, "c"),
                                 os.path.join(d, "c.log"))
        ft.check(got is not None and got > last,
                 "successor %s after %d: %s" % (got, last, out))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_decode_no_node():
    r = ft.run(["decode", str((5 << 22) | 9), "--layout", L])
    ft.check(r.returncode == 0, r.stderr)
    f = json.loads(r.stdout)
    ft.check((f["time_units"], f["node"], f["sequence"]) == (5, 0, 9),
             str(f))


if __name__ == "__main__":
    ft.main([test_two_servers_one_lease, test_static_shared_store_refused,
             test_static_no_store_refused, test_same_dir_other_layout,
             test_moved_dir_refused, test_two_dirs_refused,
             test_single_host_lease, test_decode_no_node])
