# SPDX-License-Identifier: Apache-2.0
"""
What test_segment_give.py and bench/giveback/run.py share: servers on a
store (SQLite or PostgreSQL, the fixtures of frondtest.py), IDs taken over
HTTP, the row read with the store's own client, and the two measurements
of what a restart skips: one node stopped and started again, and a
rolling restart of three nodes sharing the store.
"""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402


def create(store, tag, *opts):
    r = ft.run(["tag", "create", tag, "--store", store.uri] + list(opts))
    ft.check(r.returncode == 0, "tag create %s: %s" % (tag, r.stderr))


def row(store, tag):
    """The row's max_id, read with the store's own client."""
    return int(store.sql("SELECT max_id FROM leaf_alloc WHERE biz_tag = "
                         "'%s'" % tag).strip())


def server(store, give_back=True, extra=()):
    return ft.Server(store=store.uri, extra=[
        "--segment-give-back", "on" if give_back else "off"] + list(extra))


def ids(srv, tag, n):
    """n IDs of tag from srv, one request (a batch)."""
    s, _, body = srv.request("GET", "/v1/segment/%s?count=%d" % (tag, n))
    ft.check(s == 200, "GET %s?count=%d: %d %r" % (tag, n, s, body))
    return [int(x) for x in json.loads(body)["ids"]]


def singles(srv, tag, n):
    out = []
    for _ in range(n):
        s, _, body = srv.request("GET", "/api/segment/get/" + tag)
        ft.check(s == 200, "GET %s: %d %r" % (tag, s, body))
        out.append(int(body))
    return out


def lease(srv, tag, n):
    """A range lease: its first ID."""
    s, _, body = srv.request("GET", "/v1/segment/%s/range?count=%d"
                             % (tag, n))
    ft.check(s == 200, "range %s: %d %r" % (tag, s, body))
    return int(json.loads(body)["start"])


def stop(srv, sig=signal.SIGTERM):
    """Stop srv; a clean stop must exit 0. Returns its log."""
    rc = srv.stop(sig)
    out = srv.output()
    if sig != signal.SIGKILL:
        ft.check(rc == 0, "the server exited %d:\n%s" % (rc, out[-3000:]))
    srv.close()
    return out


def wait_row(store, tag, above, timeout=30):
    """Wait until the row's max_id passes above (a load committed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if row(store, tag) > above:
            return
        time.sleep(0.05)
    raise ft.Failure("tag %s: the row stayed at %d" % (tag, above))


def gaps(issued):
    """Numbers below the highest ID issued that were never issued."""
    return max(issued) - len(set(issued)) if issued else 0


def restart_skipped(store, tag, give_back, step=1000, n=10):
    """One node takes n IDs, stops cleanly, starts again and takes one:
    the numbers between the last ID before and the first after."""
    create(store, tag, "--step", str(step))
    srv = server(store, give_back)
    before = singles(srv, tag, n)
    stop(srv)
    srv = server(store, give_back)
    after = singles(srv, tag, 1)
    stop(srv)
    ft.check(after[0] > max(before), "tag %s: %d after %d" %
             (tag, after[0], max(before)))
    return after[0] - max(before) - 1


def rolling_skipped(store, tag, give_back, step=1000, rounds=3, n=50):
    """Three nodes share the store; each round every node takes n IDs
    (nodes 0, 1, 2 in turn), then one node stops cleanly and starts again
    (node 2, then 1, then 0: a rolling deploy). At the end every node
    stops cleanly, 2 first. Returns (IDs issued, numbers reserved and
    never issued: the row's max_id - 1 - issued). Only a node whose
    allocation is the row's last can give back: the others' rests lie
    below another node's range, and stay skipped."""
    create(store, tag, "--step", str(step))
    nodes = [server(store, give_back) for _ in range(3)]
    issued = []
    try:
        for r in range(rounds):
            for srv in nodes:
                issued += singles(srv, tag, n)
            i = 2 - r % 3
            stop(nodes[i])
            nodes[i] = server(store, give_back)
        for srv in nodes:
            issued += singles(srv, tag, n)
    finally:
        for srv in reversed(nodes):
            if srv.alive():
                stop(srv)
    ft.check(len(set(issued)) == len(issued), "tag %s: an ID issued twice"
             % tag)
    return len(issued), row(store, tag) - 1 - len(issued)
