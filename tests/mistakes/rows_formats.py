# SPDX-License-Identifier: Apache-2.0
"""
rows_formats.py -- mistakes with ID formats: order numbers and keyed
sequences whose key or parameters differ between the processes that share
them, daily sequences on a multi: store, and the 128-bit formats whose
uniqueness rests on random bits.
"""
import json
import threading
import time

from common import check, row, Failure


def _frond_ok(run, d, *args):
    r = run.frond(list(args), d)
    check(r.returncode == 0, "frond %s: exit %d: %s" %
          (" ".join(args), r.returncode, r.stderr.strip()))
    return r.stdout


def _to_the_end(srv, name, seed, cap=400):
    """Batches of 20 to 255 strings of format `name` until the period is
    used up (SEQUENCE_EXHAUSTED); every string answered."""
    got = []
    for i in range(cap):
        n = 20 + (seed * 7919 + i * 104729) % 236
        st, body = srv.get("/v1/format/%s?count=%d" % (name, n), timeout=60)
        if st == 503 and json.loads(body)["error"]["code"] == \
                "SEQUENCE_EXHAUSTED":
            return got
        check(st == 200, "%s %s: %d %s" % (srv.name, name, st, body[:300]))
        got += json.loads(body)["ids"]
    raise Failure("%s: not used up after %d batches" % (name, cap))


@row("seq-multi-typo-batches",
     "one node's multi: URI names member b at a path that does not exist "
     "(it serves from member a alone); a daily sequence is taken in "
     "batches to the end of the day from that node and a correct one")
def seq_multi_typo_batches(run):
    d = run.subdir("db")
    store = "multi:sqlite://%s/a.db|sqlite://%s/b.db" % (d, d)
    typo = "multi:sqlite://%s/a.db|sqlite://%s/dbb/b.db" % (d, d)
    day = time.strftime("%Y%m%d", time.gmtime())
    tags = ["t%d" % i for i in range(6)]
    args = ["--segment-wait-ms", "20000"]
    for t in tags:
        _frond_ok(run, d, "tag", "create", t, "--step", "100", "--store",
                  store)
        # The day's row exists on both members (the node with the typo
        # cannot make it: that needs every member).
        _frond_ok(run, d, "tag", "create", "%s:%s" % (t, day), "--step",
                  "10", "--store", store)
        args += ["--format." + t, "seq:tag=%s,digits=4" % t]
    srvs = [run.serve(run.subdir("n1"), ["--store", typo] + args),
            run.serve(run.subdir("n2"), ["--store", store] + args)]
    lists = []
    for t in tags:
        outs = [None] * 4

        def go(i, t=t):
            outs[i] = _to_the_end(srvs[i % 2], t, i)
        ths = [threading.Thread(target=go, args=(i,)) for i in range(4)]
        for th in ths:
            th.start()
        for th in ths:
            th.join(300)
        check(None not in outs, "%s: a client failed" % t)
        got = sum(outs, [])
        if any(x[:8] != day for x in got):
            raise Failure("the UTC day changed during the row: run it again")
        # Each tag's numbers are their own: named by the tag.
        lists.append(["%s %s" % (t, x) for x in got])
    run.unique(lists, "numbers of one day")
