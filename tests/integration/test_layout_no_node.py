#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_layout_no_node.py -- Simpleflake's layout without its duplicates: a
layout with no node bits (time=41,node=0,seq=22) has one node ID, so it
runs only where exactly one holder of node 0 can exist.

  - two servers on one lease store: the second is refused, the first's
    IDs are unique, and a successor starts above them;
  - a static node 0 beside a store other hosts share (unregistered=1) is
    refused by serve, check and --print-config, saying why;
  - a static node 0 with no store serves, and its data directory's lock
    refuses a second process;
  - `frond next` on a static node 0 is refused; on the lease it is
    refused beside a server and runs above it after.
"""
import json
import os
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
            refused(r, "CONFIG", "no node bits",
                    "two processes would issue the same IDs",
                    "drop unregistered=1")
            said = r.stdout + r.stderr
            ft.check("frond@127.0.0.1:1/ids" in said,
                     "the store is named: %s" % said)
        # Node bits: the same configuration is the operator's to make.
        r = ft.run(["serve", "--print-config", "--store", SHARED_PG,
                    "--coordinator", "static:0?unregistered=1",
                    "--data-dir", d], cwd=d)
        ft.check(r.returncode == 0, "with node bits: %s" % r.stderr)


def test_one_holder_static_no_store():
    with ft.start_server("frond", store="none",
                         extra=["--layout", L, "--node", "0"]) as a:
        out = ids(a, 3000)
        ft.check(len(set(out)) == 3000 and out == sorted(out), "unique")
        check_fields(out)
        # A second process on the same data directory: the file's lock.
        r = subprocess.run(
            [ft.FROND_BIN, "serve", "--listen",
             "127.0.0.1:%d" % ft.free_port(), "--resp-listen", "off",
             "--store", "none", "--data-dir", a.dir, "--threads", "1",
             "--layout", L], cwd=a.dir, timeout=60, capture_output=True,
            text=True)
        refused(r, "NODE_IN_USE")
        # A one-off run with no store: refused whatever its directory.
        with tempfile.TemporaryDirectory() as other:
            for d in (a.dir, other):
                r = ft.run(["next", "--store", "none", "--layout", L,
                            "--data-dir", d], cwd=d)
                refused(r, "CONFIG", "no node bits",
                        "lease the servers share")
        ft.check(ids(a, 10)[0] > out[-1], "still serving")


def test_decode_no_node():
    r = ft.run(["decode", str((5 << 22) | 9), "--layout", L])
    ft.check(r.returncode == 0, r.stderr)
    f = json.loads(r.stdout)
    ft.check((f["time_units"], f["node"], f["sequence"]) == (5, 0, 9),
             str(f))


if __name__ == "__main__":
    ft.main([test_two_servers_one_lease, test_static_shared_store_refused,
             test_one_holder_static_no_store, test_decode_no_node])
