# SPDX-License-Identifier: Apache-2.0
"""
rows_tags.py -- mistakes with segment tags and their stores: a tag
deleted and created again, a store restored from a backup, a single
database turned into a member of a multi: store, a member replaced by an
empty database or restored from an older one, a plain node left running
on a member, a range larger than a multi: tag's block, a tag re-created
with another step, an allocator used in a child after fork().
"""
import json
import os
import shutil
import sqlite3
import subprocess

import common
from common import Failure, check, row

STEP = 100


def sqlite_uri(d, name="frond.db"):
    return "sqlite:%s" % os.path.join(d, name)


def multi_uri(d, names=("a.db", "b.db")):
    return "multi:" + "|".join(sqlite_uri(d, n) for n in names)


def cli_ids(run, cwd, store, tag, n):
    """n IDs of tag from `frond next --segment` (one process)."""
    out = run.ok(["next", "--segment", tag, "--count", str(n),
                  "--store", store], cwd)
    return [int(x) for x in out.split()]


def http(server, method, path, body=None):
    """(status, decoded JSON or raw text) of an admin call."""
    hdrs = {"Content-Type": "application/json"} if body is not None else {}
    st, data = server.get(path, method=method,
                          body=json.dumps(body) if body is not None else None,
                          headers=hdrs)
    try:
        return st, json.loads(data) if data else None
    except ValueError:
        return st, data.decode(errors="replace")


def http_ok(server, method, path, body=None):
    st, ans = http(server, method, path, body)
    check(st in (200, 201, 204), "%s %s: %d %s" % (method, path, st, ans))
    return ans


def http_error(server, method, path, body=None):
    """The text of an admin call that must fail (for run.refused)."""
    st, ans = http(server, method, path, body)
    check(st >= 400, "%s %s: expected a refusal, got %d %s" %
          (method, path, st, ans))
    return json.dumps(ans)


def backup(src, dst):
    """A consistent copy of a SQLite store, as an online backup makes."""
    a = sqlite3.connect(src)
    b = sqlite3.connect(dst)
    try:
        a.backup(b)
    finally:
        a.close()
        b.close()


def restore(src, dst):
    """Put the backup src in place of the store dst (no process open)."""
    for suffix in ("-wal", "-shm"):
        if os.path.exists(dst + suffix):
            os.remove(dst + suffix)
    shutil.copyfile(src, dst)


# ---- multi: stores ----

@row("multi-range-over-step",
     "asked a multi: tag with a block of 100 for a range of 1,000")
def multi_range_over_step(run):
    d = run.subdir("db")
    multi = multi_uri(d)
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", multi],
           d)
    s = run.serve(d, ["--store", multi])
    ids = s.ids("/v1/segment/orders", 10)
    st, body = s.get("/v1/segment/orders/range?count=1000")
    failed = 0
    for _ in range(300):
        st2, b2 = s.get("/v1/segment/orders")
        if st2 == 200:
            ids.append(int(json.loads(b2)["ids"][0]))
        else:
            failed += 1
    if st == 200:
        r = json.loads(body)
        ids += list(range(int(r["start"]), int(r["end"])))
    check(failed == 0, "after the range, %d of 300 single calls failed"
          % failed)
    run.refused(body, "COUNT_INVALID", "100")
    run.unique([ids])


# ---- fork() ----

@row("segment-fork",
     "forked a process that had a segment allocator open and kept using "
     "it in the child")
def segment_fork(run):
    d = run.subdir("db")
    store = sqlite_uri(d)
    run.ok(["tag", "create", "orders", "--step", "5000", "--store", store], d)
    tool = os.path.join(os.environ.get("FROND_BUILD", ""), "seg_fork")
    check(os.path.exists(tool), "%s is not built" % tool)
    r = subprocess.run([tool, store, "orders", "2000"], cwd=d,
                              env=common.clean_env(), capture_output=True,
                              text=True, timeout=120)
    check(r.returncode == 0, "seg_fork: %s" % (r.stdout + r.stderr))
    parent, child, refusal = [], [], ""
    for line in r.stdout.splitlines():
        who, _, rest = line.partition(" ")
        if who == "parent":
            parent.append(int(rest))
        elif who == "child" and rest.startswith("error"):
            refusal = rest
        elif who == "child":
            child.append(int(rest))
    run.unique([parent, child])
    run.refused(refusal, "FORKED")
