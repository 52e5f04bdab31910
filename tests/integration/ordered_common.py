# SPDX-License-Identifier: Apache-2.0
"""
What test_segment_ordered.py and bench/ordered/run.py share: a fleet of
servers on one store, a load that takes a tag's IDs through every node
at once and records when each request was sent and each answer
received, and the checker of an ordered tag's guarantee.

The guarantee (docs/segment.md, "Ordered tags"): an ID whose request was
sent after another ID's answer was received is larger (the sequence is
linearizable), and no ID is issued twice. The checker sorts the answers
by when they were received and walks the requests in the order they
were sent, keeping the largest ID received before each one was sent.
"""
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402

LEASE_MS = 1000


def create(store, tag, *opts):
    r = ft.run(["tag", "create", tag, "--store", store.uri] + list(opts))
    ft.check(r.returncode == 0, "tag create %s: %s" % (tag, r.stderr))


def node(store_uri, lease_ms=LEASE_MS, env=None, extra=()):
    return ft.Server(store=store_uri, env=env, extra=[
        "--ordered-lease-ms", str(lease_ms)] + list(extra))


class Load:
    """Client threads taking tag's IDs through nodes (a list that may be
    changed while it runs: a stopped node is skipped after its first
    refusal), singles and batches; at most max_ops answers or until
    stop(). ops: (sent, received, [ids]) of every 200; errors: counts
    by status and code."""

    def __init__(self, nodes, tag, threads=6, max_ops=200000, batch=(1, 4)):
        self.nodes, self.tag, self.batch = list(nodes), tag, batch
        self.ops, self.errors = [], {}
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.max_ops = max_ops
        self.threads = [threading.Thread(target=self._run, args=(i,),
                                         daemon=True) for i in range(threads)]
        for t in self.threads:
            t.start()

    def _run(self, i):
        rnd = random.Random(i)
        conns = {}
        while not self.done.is_set():
            with self.lock:
                if len(self.ops) >= self.max_ops:
                    return
                nodes = list(self.nodes)
            if not nodes:
                time.sleep(0.01)
                continue
            srv = nodes[rnd.randrange(len(nodes))]
            n = rnd.choice(self.batch)
            try:
                c = conns.get(srv.port)
                if c is None:
                    c = conns[srv.port] = srv.conn(timeout=10)
                sent = time.monotonic()
                c.request("GET", "/v1/segment/%s?count=%d" % (self.tag, n))
                r = c.getresponse()
                body = r.read()
                got = time.monotonic()
            except Exception as e:  # a node stopped, paused, or reset
                conns.pop(srv.port, None)
                self._error("conn:" + type(e).__name__)
                time.sleep(0.005)
                continue
            if r.status == 200:
                ids = [int(x) for x in json.loads(body)["ids"]]
                with self.lock:
                    self.ops.append((sent, got, ids))
            else:
                self._error("%d:%s" % (r.status, r.getheader("Frond-Error")))
                time.sleep(0.005)

    def _error(self, what):
        with self.lock:
            self.errors[what] = self.errors.get(what, 0) + 1

    def count(self):
        with self.lock:
            return len(self.ops)

    def wait_more(self, n, timeout=60):
        """Wait until n more answers than now arrived."""
        want = self.count() + n
        ft.wait_for("%d answers (errors %s)" % (want, self.errors),
                    lambda: self.count() >= want, timeout)

    def stop(self):
        self.done.set()
        for t in self.threads:
            t.join(30)
        return self.ops


def violations(ops):
    """(duplicates, steps back): IDs issued twice, and requests answered
    with an ID not above an ID received before the request was sent (or
    a batch not increasing)."""
    seen, dups, back = set(), 0, 0
    for _, _, ids in ops:
        for x in ids:
            if x in seen:
                dups += 1
            seen.add(x)
        back += sum(1 for a, b in zip(ids, ids[1:]) if b <= a)
    by_recv = sorted((got, max(ids)) for _, got, ids in ops)
    top, j = 0, 0
    for sent, _, ids in sorted(ops, key=lambda o: o[0]):
        while j < len(by_recv) and by_recv[j][0] < sent:
            top = max(top, by_recv[j][1])
            j += 1
        if min(ids) <= top:
            back += 1
    return dups, back


def check_ordered(ops, what):
    dups, back = violations(ops)
    ft.check(len(ops) > 0, "%s: no ID was answered" % what)
    ft.check(dups == 0 and back == 0,
             "%s: %d IDs issued twice, %d answers below an ID received "
             "before they were asked for (of %d answers)"
             % (what, dups, back, len(ops)))


def owner_of(nodes, tag):
    """A live node whose log says it owns tag, and has not said since that
    another does; None when there is none."""
    for s in nodes:
        if not s.alive():
            continue
        out = s.output()
        i = out.rfind('ordered tag "%s": this node owns it' % tag)
        j = out.rfind('ordered tag "%s": owned by' % tag)
        if i > j and i >= 0:
            return s
    return None
