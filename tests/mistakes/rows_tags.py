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
import re
import shutil
import sqlite3
import subprocess
import time

import common
from common import Failure, check, row

STEP = 100


def sqlite_uri(d, name="frond.db"):
    return "sqlite:%s" % os.path.join(d, name)


def multi_uri(d, names=("a.db", "b.db")):
    return "multi:" + "|".join(sqlite_uri(d, n) for n in names)


def on_multi(d, store=None):
    """A server's flags for a multi: store in d: a multi: store hands out
    no node IDs, so the fleet's lease is named beside it. The rows count
    IDs, not latency: a block waits for another member to record it, which
    on a loaded machine can take longer than a request's default 50 ms."""
    return ["--store", store or multi_uri(d),
            "--coordinator", "lease+" + sqlite_uri(d, "nodes.db"),
            "--segment-wait-ms", "5000"]


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


# ---- a tag deleted and created again ----

def recreate(run, store, cwd):
    """Delete and create again with the command, then with the admin API
    of a server; IDs from the command and from servers before and after
    each, checked together."""
    run.ok(["tag", "create", "orders", "--step", str(STEP),
            "--store", store], cwd)
    before = cli_ids(run, cwd, store, "orders", 250)
    run.ok(["tag", "delete", "orders", "--store", store], cwd)
    run.ok(["tag", "create", "orders", "--step", str(STEP),
            "--store", store], cwd)
    after = cli_ids(run, cwd, store, "orders", 250)
    a = run.serve(cwd, ["--store", store])
    served = a.ids("/v1/segment/orders", 250)
    http_ok(a, "DELETE", "/v1/tags/orders")
    http_ok(a, "POST", "/v1/tags", {"tag": "orders", "step": STEP})
    a.stop()
    b = run.serve(cwd, ["--store", store])
    again = b.ids("/v1/segment/orders", 250)
    run.unique([before, after, served, again])


@row("tag-recreate-sqlite",
     "deleted a tag and created it again (command, then admin API) on "
     "SQLite")
def tag_recreate_sqlite(run):
    d = run.subdir("db")
    recreate(run, sqlite_uri(d), d)


@row("tag-recreate-pg",
     "deleted a tag and created it again (command, then admin API) on "
     "PostgreSQL")
def tag_recreate_pg(run):
    pg = run.postgres()
    recreate(run, pg.uri, run.subdir("cwd"))


@row("tag-recreate-mariadb",
     "deleted a tag and created it again (command, then admin API) on "
     "MariaDB")
def tag_recreate_mariadb(run):
    db = run.mariadb()
    recreate(run, db.uri, run.subdir("cwd"))


@row("tag-recreate-two-nodes",
     "re-created a tag through one node's admin API while another node "
     "still served it from its buffers")
def tag_recreate_two_nodes(run):
    d = run.subdir("db")
    store = sqlite_uri(d)
    run.ok(["tag", "create", "orders", "--step", "1000", "--store", store], d)
    a = run.serve(run.subdir("a"), ["--store", store])
    b = run.serve(run.subdir("b"), ["--store", store])
    a_ids = a.ids("/v1/segment/orders", 300)
    http_ok(b, "DELETE", "/v1/tags/orders")
    http_ok(b, "POST", "/v1/tags", {"tag": "orders", "step": 1000})
    # a still serves its buffered segments (its next refresh is a minute
    # away), then loads from the new row; b from the new row at once.
    b_ids = b.ids("/v1/segment/orders", 2500)
    a_ids += a.ids("/v1/segment/orders", 2500)
    run.unique([a_ids, b_ids])


@row("tag-floor-refused",
     "created a deleted tag again with a start below what it issued, "
     "moved it back, loaded a row below it by SQL")
def tag_floor_refused(run):
    d = run.subdir("db")
    store = sqlite_uri(d)
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", store],
           d)
    first = cli_ids(run, d, store, "orders", 150)
    row = json.loads(run.ok(["tag", "get", "orders", "--json", "--store",
                             store], d))
    floor = str(row["max_id"])  # what the tag may have issued, and above
    run.ok(["tag", "delete", "orders", "--store", store], d)
    run.refused(run.frond(["tag", "create", "orders", "--step", str(STEP),
                           "--start", "1", "--store", store], d),
                "TAG_FLOOR", floor)
    s = run.serve(d, ["--store", store])
    run.refused(http_error(s, "POST", "/v1/tags",
                           {"tag": "orders", "step": STEP, "start": 5}),
                "TAG_FLOOR", floor)
    # Without a start, the tag starts at its floor.
    http_ok(s, "POST", "/v1/tags", {"tag": "orders", "step": STEP})
    second = s.ids("/v1/segment/orders", 150)
    s.stop()
    run.refused(run.frond(["tag", "advance", "orders", "--to", "10",
                           "--store", store], d), "TAG_FLOOR")
    # A row loaded by hand (an import from a dump) below the floor is
    # refused at its first allocation.
    run.ok(["tag", "delete", "orders", "--store", store], d)
    con = sqlite3.connect(os.path.join(d, "frond.db"))
    with con:
        con.execute("INSERT INTO leaf_alloc (biz_tag, max_id, step) "
                    "VALUES ('orders', 1, 100)")
    con.close()
    r = run.frond(["next", "--segment", "orders", "--count", "10",
                   "--store", store], d)
    if r.returncode == 0:
        third = [int(x) for x in r.stdout.split()]
        run.unique([first, second, third])
    run.refused(r, "TAG_FLOOR")
    run.unique([first, second])


@row("store-restore-advance",
     "restored the store from an older backup, then moved the tag past "
     "what was issued with `frond tag advance`")
def store_restore_advance(run):
    d = run.subdir("db")
    store = sqlite_uri(d)
    db = os.path.join(d, "frond.db")
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", store],
           d)
    before = cli_ids(run, d, store, "orders", 300)
    backup(db, os.path.join(d, "backup.db"))
    s = run.serve(d, ["--store", store])
    lost = s.ids("/v1/segment/orders", 500)  # issued after the backup
    s.stop()
    restore(os.path.join(d, "backup.db"), db)
    # What the operator knows: the highest ID the application holds.
    top = max(before + lost)
    r = run.frond(["tag", "advance", "orders", "--to", str(top + 1),
                   "--store", store], d)
    after = cli_ids(run, d, store, "orders", 300)
    s = run.serve(d, ["--store", store])
    after += s.ids("/v1/segment/orders", 300)
    run.unique([before, lost, after])
    check(r.returncode == 0, "tag advance: %s" % (r.stdout + r.stderr))
    # Never back: below what the tag may already have issued.
    run.refused(run.frond(["tag", "advance", "orders", "--to", str(top),
                           "--store", store], d), "TAG_FLOOR")


@row("tag-max-lowered",
     "lowered a bounded tag's max below the IDs it had issued, and kept "
     "asking for IDs once it ran out")
def tag_max_lowered(run):
    d = run.subdir("db")
    store = sqlite_uri(d)
    run.ok(["tag", "create", "invoices", "--step", "10", "--max", "60",
            "--store", store], d)
    s = run.serve(d, ["--store", store])
    first = s.ids("/v1/segment/invoices", 35)
    # The operator thinks the printed form holds two digits... of 30.
    run.refused(http_error(s, "PATCH", "/v1/tags/invoices", {"max": 30}),
                "TAG_FLOOR", "max 30")
    s.stop()
    run.refused(run.frond(["tag", "set-max", "invoices", "30", "--store",
                           store], d), "TAG_FLOOR", "max 30")
    # The bound holds: what is left up to 60, then SEGMENT_EXHAUSTED,
    # never a wrap, however often the clients ask.
    rest = []
    for _ in range(80):
        r = run.frond(["next", "--segment", "invoices", "--store", store], d)
        if r.returncode != 0:
            break
        rest += [int(x) for x in r.stdout.split()]
    run.refused(r, "SEGMENT_EXHAUSTED", "invoices", "max 60")
    check(max(first + rest) <= 60, "an ID above the max: %d"
          % max(first + rest))
    run.unique([first, rest])


@row("tag-stride-changed",
     "asked for a stride on a tag that had issued IDs without one, then "
     "re-created it strided while a client leased ranges of it")
def tag_stride_changed(run):
    d = run.subdir("db")
    store = sqlite_uri(d)
    run.ok(["tag", "create", "orders", "--step", "10", "--store", store], d)
    before = cli_ids(run, d, store, "orders", 25)
    # A stride cannot be put on a tag in use: IDs of two residues.
    run.refused(run.frond(["tag", "create", "orders", "--step", "10",
                           "--increment", "2", "--offset", "1", "--store",
                           store], d), "TAG_EXISTS")
    s = run.serve(d, ["--store", store])
    run.refused(http_error(s, "POST", "/v1/tags",
                           {"tag": "orders", "step": 10, "increment": 2,
                            "offset": 1}), "TAG_EXISTS")
    # The way to it: a new tag of the name, above its floor.
    http_ok(s, "DELETE", "/v1/tags/orders")
    http_ok(s, "POST", "/v1/tags", {"tag": "orders", "step": 10,
                                    "increment": 2, "offset": 1})
    after = s.ids("/v1/segment/orders", 25)
    # A client that leases ranges would hand out every number: refused.
    r = run.frond(["next", "--segment", "orders", "--count", "5", "--store",
                   "frond://127.0.0.1:%d" % s.port], d)
    run.refused(r, "INVAL", "step by 2")
    check(all(x % 2 == 1 for x in after), "an even ID: %s" % after)
    check(min(after) > max(before), "the re-created tag went back: %s"
          % after)
    # A second node serving the tag from its buffers when it is deleted
    # and created strided elsewhere: it notices at its next load (or tag
    # refresh) and drops the old tag's numbers, instead of issuing every
    # number to the end of a 1000-number buffer.
    http_ok(s, "POST", "/v1/tags", {"tag": "ledger", "step": 1000})
    b = run.serve(run.subdir("b"), ["--store", store])
    old = b.ids("/v1/segment/ledger", 1)
    http_ok(s, "DELETE", "/v1/tags/ledger")
    http_ok(s, "POST", "/v1/tags", {"tag": "ledger", "step": 1000,
                                    "increment": 2, "offset": 1})
    # Past a tenth of its segment: the node loads the next one (the new
    # tag's); once that load is done, no number of the old tag.
    old += b.ids("/v1/segment/ledger", 150, batch=1)
    deadline = time.monotonic() + 30
    while loads(b) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    check(loads(b) >= 2, "the second node never loaded again")
    new = b.ids("/v1/segment/ledger", 20, batch=1)
    new += s.ids("/v1/segment/ledger", 20)
    b.stop()
    s.stop()
    check(all(x % 2 == 1 for x in new), "the second node issued the old "
          "tag's numbers after loading the new one: %s" % new)
    run.unique([before, after])
    run.unique([old, new])


def loads(server):
    """A server's frond_segment_loads_total."""
    st, body = server.get("/metrics")
    check(st == 200, "/metrics: %d" % st)
    m = re.search(rb"^frond_segment_loads_total (\d+)", body, re.M)
    check(m is not None, "no frond_segment_loads_total in /metrics")
    return int(m.group(1))


# ---- multi: stores ----

@row("multi-convert",
     "turned a single database into member 0 of a multi: store and "
     "completed the tag through the multi: URI")
def multi_convert(run):
    d = run.subdir("db")
    single = sqlite_uri(d, "a.db")
    run.ok(["tag", "create", "orders", "--step", "1000", "--store", single],
           d)
    old = cli_ids(run, d, single, "orders", 5000)
    multi = multi_uri(d)
    run.ok(["tag", "create", "orders", "--step", "1000", "--store", multi], d)
    new = cli_ids(run, d, multi, "orders", 5000)
    run.unique([old, new])


def multi_served(run, d, n, name, store=None):
    s = run.serve(d, on_multi(d, store), name=name)
    ids = s.ids("/v1/segment/orders", n, batch=100)
    s.stop()
    return ids, s


def members_of(ids, n=2, step=STEP):
    """The members whose blocks are among ids (block (id-1)//step,
    modulo n)."""
    return {(i - 1) // step % n for i in ids}


def both_members(ids, step=STEP):
    """Blocks of both members among ids (block (id-1)//step, modulo 2)."""
    return members_of(ids, 2, step) == {0, 1}


@row("multi-empty-member",
     "put an empty database in place of a dead member of a three-member "
     "multi: store and completed the tag on it")
def multi_empty_member(run):
    d = run.subdir("db")
    multi = multi_uri(d, ("a.db", "b.db", "c.db"))
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", multi],
           d)
    first, _ = multi_served(run, d, 3000, "serve-1", multi)
    check(members_of(first, 3) == {0, 1, 2}, "every member should have "
          "served")
    os.remove(os.path.join(d, "b.db"))  # member 1 is gone: a new one
    r = run.frond(["tag", "create", "orders", "--step", str(STEP),
                   "--store", multi], d)
    if r.returncode == 0:  # accepted: what it serves now
        second, _ = multi_served(run, d, 2000, "serve-2", multi)
        run.unique([first, second])
    run.refused(r, "STORE_MEMBER_STALE", "member 1")
    # The node serves around it (the two others record each other's
    # blocks), and says why.
    second, s = multi_served(run, d, 1000, "serve-2", multi)
    run.refused(s.output(), "STORE_MEMBER_STALE", "member 1")
    check(members_of(second, 3) == {0, 2}, "members 0 and 2 should serve")
    run.ok(["tag", "repair-member", "1", "--store", multi], d)
    third, _ = multi_served(run, d, 3000, "serve-3", multi)
    check(members_of(third, 3) == {0, 1, 2}, "member 1 should serve after "
          "its repair")
    run.unique([first, second, third])


@row("multi-restored-member",
     "restored one multi: member from an older backup")
def multi_restored_member(run):
    d = run.subdir("db")
    multi = multi_uri(d)
    b = os.path.join(d, "b.db")
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", multi],
           d)
    first, _ = multi_served(run, d, 2000, "serve-1")
    backup(b, os.path.join(d, "b-backup.db"))
    second, _ = multi_served(run, d, 2000, "serve-2")
    restore(os.path.join(d, "b-backup.db"), b)
    third, s = multi_served(run, d, 2000, "serve-3")
    run.unique([first, second, third])
    run.refused(s.output(), "STORE_MEMBER_STALE", "member 1")
    run.ok(["tag", "repair-member", "1", "--store", multi], d)
    fourth, _ = multi_served(run, d, 2000, "serve-4")
    check(both_members(fourth), "member 1 should serve after its repair")
    run.unique([first, second, third, fourth])


@row("multi-plain-node",
     "left a node with the plain URI running on a database that became "
     "a multi: member")
def multi_plain_node(run):
    d = run.subdir("db")
    single = sqlite_uri(d, "a.db")
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", single],
           d)
    p = run.serve(run.subdir("p"), ["--store", single], name="plain")
    plain = p.ids("/v1/segment/orders", 500, batch=50)
    multi = multi_uri(d)
    # The fleet's one coordinator, the plain node's lease in a.db: two
    # would each hand out node 0 (COORDINATOR_MISMATCH).
    m = run.serve(run.subdir("m"), on_multi(d, multi)[:2] +
                  ["--coordinator", "lease+" + single,
                   "--segment-wait-ms", "5000"], name="multi")
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", multi],
           d)
    ids = m.ids("/v1/segment/orders", 3000, batch=50)
    refusal = None
    for _ in range(60):  # 3,000 more from the plain node, or its refusal
        st, body = p.get("/v1/segment/orders?count=50")
        if st != 200:
            refusal = body
            break
        plain += [int(x) for x in json.loads(body)["ids"]]
    ids += m.ids("/v1/segment/orders", 1000, batch=50)
    run.unique([plain, ids])
    check(refusal is not None, "the plain node kept allocating from a "
          "member database")
    run.refused(refusal, "STORE_MEMBER", "member 0")


@row("multi-range-over-step",
     "asked a multi: tag with a block of 100 for a range of 1,000")
def multi_range_over_step(run):
    d = run.subdir("db")
    multi = multi_uri(d)
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", multi],
           d)
    s = run.serve(d, on_multi(d, multi))
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


@row("multi-recreate-new-step",
     "deleted a multi: tag through a node's admin API and created it "
     "again with another step")
def multi_recreate_new_step(run):
    d = run.subdir("db")
    multi = multi_uri(d)
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", multi],
           d)
    # b may try to load between the delete and the create (the tag is
    # gone then): its next attempt, a backoff later, must be waited for.
    wait = ["--segment-wait-ms", "3000"]
    a = run.serve(run.subdir("a"), on_multi(d, multi) + wait, name="a")
    b = run.serve(run.subdir("b"), on_multi(d, multi) + wait, name="b")
    a_ids = a.ids("/v1/segment/orders", 300, batch=50)
    b_ids = b.ids("/v1/segment/orders", 300, batch=50)
    http_ok(a, "DELETE", "/v1/tags/orders")
    http_ok(a, "POST", "/v1/tags", {"tag": "orders", "step": 40})
    try:
        a_ids += a.ids("/v1/segment/orders", 1000, batch=20)
        b_ids += b.ids("/v1/segment/orders", 1000, batch=20)
    except Failure as e:
        run.unique([a_ids, b_ids])
        raise Failure("a node could not serve the re-created tag: %s" % e)
    run.unique([a_ids, b_ids])


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


# ---- multi: marks, conversions, spellings, Leaf readers ----

def take_away(path):
    """Make the SQLite member in directory path unreachable (as a database
    server that is down); returns how to bring it back."""
    os.rename(path, path + ".off")
    return lambda: os.rename(path + ".off", path)


def next_or_refused(run, cwd, store, tag, n):
    """(IDs, CompletedProcess) of `frond next --segment`: the IDs when it
    served, [] when it did not."""
    r = run.frond(["next", "--segment", tag, "--count", str(n),
                   "--store", store], cwd)
    return ([int(x) for x in r.stdout.split()] if r.returncode == 0
            else []), r


@row("multi-restored-member-holder-down",
     "restored one member of a two-member multi: store from an older "
     "backup and ran `frond next` while the other member, the one that "
     "records its blocks, was down")
def multi_restored_member_holder_down(run):
    d = run.subdir("db")
    m0 = run.subdir("m0")  # member 0 alone in a directory, to take away
    multi = "multi:%s|%s" % (sqlite_uri(m0, "a.db"), sqlite_uri(d, "b.db"))
    b = os.path.join(d, "b.db")
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", multi],
           d)
    first = cli_ids(run, d, multi, "orders", 2000)
    backup(b, os.path.join(d, "b-backup.db"))
    second = cli_ids(run, d, multi, "orders", 2000)
    restore(os.path.join(d, "b-backup.db"), b)
    back = take_away(m0)
    third, r = next_or_refused(run, d, multi, "orders", 2000)
    run.unique([first, second, third])
    run.refused(r, "STORE", "member 0")
    back()
    # Member 0 back: member 1 is found behind its marks, member 0 serves.
    fourth, r = next_or_refused(run, d, multi, "orders", 2000)
    run.unique([first, second, third, fourth])
    check("STORE_MEMBER_STALE" in r.stderr and "member 1" in r.stderr,
          "the restored member was not refused: %s" % r.stderr[-800:])
    run.ok(["tag", "repair-member", "1", "--store", multi], d)
    fifth = cli_ids(run, d, multi, "orders", 2000)
    check(both_members(fifth), "member 1 should serve after its repair")
    run.unique([first, second, third, fourth, fifth])


@row("multi-member-alone-restored",
     "ran a two-member multi: store on one member while the other was "
     "down, then restored that member from a backup taken before")
def multi_member_alone_restored(run):
    d = run.subdir("db")
    m0 = run.subdir("m0")
    multi = "multi:%s|%s" % (sqlite_uri(m0, "a.db"), sqlite_uri(d, "b.db"))
    b = os.path.join(d, "b.db")
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", multi],
           d)
    first = cli_ids(run, d, multi, "orders", 1000)
    backup(b, os.path.join(d, "b-backup.db"))
    back = take_away(m0)
    # Member 1 alone: nowhere to record its blocks.
    alone, r = next_or_refused(run, d, multi, "orders", 2000)
    back()
    restore(os.path.join(d, "b-backup.db"), b)
    later = cli_ids(run, d, multi, "orders", 3000)
    run.unique([first, alone, later])
    run.refused(r, "STORE", "member 0")


@row("multi-convert-older-copy",
     "turned a single database into a multi: store with a second member "
     "made from an older copy of it, and completed the tag")
def multi_convert_older_copy(run):
    d = run.subdir("db")
    single = sqlite_uri(d, "a.db")
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store",
            single], d)
    plain = cli_ids(run, d, single, "orders", 2000)
    backup(os.path.join(d, "a.db"), os.path.join(d, "b.db"))
    plain += cli_ids(run, d, single, "orders", 8000)
    multi = multi_uri(d)
    r = run.frond(["tag", "create", "orders", "--step", str(STEP),
                   "--store", multi], d)
    check(r.returncode == 0 or "TAG_EXISTS" in r.stderr,
          "tag create: %s" % r.stderr)
    served, _ = multi_served(run, d, 3000, "serve")
    run.unique([plain, served])


def mixed_multi(run):
    """A multi: store of PostgreSQL (member 0) and MariaDB (member 1):
    their tables compare tag names differently (MariaDB's collation takes
    "orders", "ORDERS" and "orders " for one)."""
    pg = run.postgres()
    my = run.mariadb()
    return pg, my, "multi:%s|%s" % (pg.uri, my.uri)


@row("multi-mixed-collation-restore",
     "on a multi: store of PostgreSQL and MariaDB, took IDs of one tag "
     "under two spellings MariaDB takes for one (orders, ORDERS), restored "
     "the MariaDB member's row from before, then deleted \"ORDERS \" and "
     "created orders again")
def multi_mixed_collation_restore(run):
    pg, my, multi = mixed_multi(run)
    cwd = run.subdir("cwd")
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", multi],
           cwd)
    first = cli_ids(run, cwd, multi, "orders", 1000)
    snap = my.sql("SELECT max_id FROM leaf_alloc WHERE biz_tag = "
                  "'orders'").split()[0]
    second, r = next_or_refused(run, cwd, multi, "ORDERS", 3000)
    check(r.returncode == 0, "ORDERS: %s" % r.stderr[-600:])
    my.sql("UPDATE leaf_alloc SET max_id = %s WHERE biz_tag = 'orders'"
           % snap)  # member 1 restored: its row as it was
    third, r = next_or_refused(run, cwd, multi, "orders", 3000)
    run.unique([first, second, third])
    check("STORE_MEMBER_STALE" in r.stderr and "member 1" in r.stderr,
          "the restored member was not refused: %s" % r.stderr[-800:])
    run.ok(["tag", "repair-member", "1", "--store", multi], cwd)
    # A delete under a spelling one member takes for the tag, and the
    # tag created again: every member's row goes, and comes back above.
    r = run.frond(["tag", "delete", "ORDERS ", "--store", multi], cwd)
    run.ok(["tag", "create", "orders", "--step", str(STEP), "--store", multi],
           cwd)
    fourth = cli_ids(run, cwd, multi, "orders", 2000)
    run.unique([first, second, third, fourth])
    check(r.returncode == 0, "delete: %s" % r.stderr[-600:])


@row("tag-recreate-spelling-mariadb",
     "deleted a tag as \"ORDERS \" (a spelling MariaDB takes for the row "
     "orders) and created orders again, on MariaDB and on a multi: store of "
     "PostgreSQL and MariaDB")
def tag_recreate_spelling_mariadb(run):
    pg, my, multi = mixed_multi(run)
    my.sql("CREATE DATABASE single")
    single = my.uri.rsplit("/", 1)[0] + "/single"
    cwd = run.subdir("cwd")
    lists = []
    for store in (single, multi):
        run.ok(["tag", "create", "orders", "--step", str(STEP), "--store",
                store], cwd)
        ids = cli_ids(run, cwd, store, "orders", 1000)
        run.ok(["tag", "delete", "ORDERS ", "--store", store], cwd)
        # Gone from every member: PostgreSQL's row is "orders" too.
        check(store != multi or pg.sql("SELECT count(*) FROM leaf_alloc "
                                       "WHERE biz_tag = 'orders'").strip()
              == "0", "the delete left member 0's row orders")
        run.ok(["tag", "create", "orders", "--step", str(STEP), "--store",
                store], cwd)
        ids += cli_ids(run, cwd, store, "orders", 1000)
        lists.append(ids)
    for ids in lists:
        run.unique([ids])


def leaf_reader(run, engine, conn_sql):
    """A Leaf node's load (UPDATE, its row count unchecked, then SELECT)
    while Frond deletes the tag and creates it again between the two
    statements: the UPDATE finds no row, the SELECT the new one. Leaf
    serves [max_id - its step, max_id) of what it read; its step is the
    row's for its first two loads, then doubles for each segment used up
    within 15 minutes (as these are), up to 1,000,000."""
    cwd = run.subdir("cwd")
    store = engine.uri
    run.ok(["tag", "create", "t", "--step", str(STEP), "--store", store], cwd)
    update, select, commit = conn_sql
    steps = [STEP, STEP] + [min(STEP << k, 1000000) for k in range(1, 5)]
    leaf = [select_range(update, select, commit, n) for n in steps[:-2]]
    frond_ids = cli_ids(run, cwd, store, "t", 150)
    leaf.append(select_range(update, select, commit, steps[-2]))
    run.ok(["tag", "delete", "t", "--store", store], cwd)
    update(steps[-1])  # no row: the tag is gone (Leaf does not check)
    run.ok(["tag", "create", "t", "--step", str(STEP), "--store", store], cwd)
    got = select(steps[-1])
    commit()
    if got is not None:
        leaf.append(got)
    frond_ids += cli_ids(run, cwd, store, "t", 150)
    run.unique([[i for lo, hi in leaf for i in range(lo, hi)], frond_ids])


def select_range(update, select, commit, n):
    update(n)
    got = select(n)
    commit()
    return got


class Psql:
    """One psql session, as a JDBC connection with autocommit off (a
    transaction per load), READ COMMITTED (PostgreSQL's default)."""

    def __init__(self, run, uri):
        self.p = subprocess.Popen(["psql", "-X", "-q", "-tA", "-d", uri],
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True,
                                  bufsize=1)
        run.on_close(self.close)

    def q(self, sql):
        self.p.stdin.write(sql + ";\n\\echo __END\n")
        self.p.stdin.flush()
        out = []
        while True:
            line = self.p.stdout.readline()
            check(line != "", "psql ended")
            line = line.rstrip("\n")
            if line == "__END":
                return out
            if line:
                out.append(line)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


@row("tag-recreate-leaf-reader-pg",
     "deleted a tag and created it again while a Leaf node sharing the "
     "PostgreSQL table was between its UPDATE and its SELECT")
def tag_recreate_leaf_reader_pg(run):
    pg = run.postgres()
    s = Psql(run, pg.uri)

    def select(n):
        r = s.q("SELECT max_id FROM leaf_alloc WHERE biz_tag = 't'")
        if not r:
            return None
        m = int(r[0])
        return (m - n, m)
    leaf_reader(run, pg, (
        lambda n: s.q("BEGIN; UPDATE leaf_alloc SET max_id = max_id + %d "
                      "WHERE biz_tag = 't'" % n),
        select, lambda: s.q("COMMIT")))


@row("tag-recreate-leaf-reader-mariadb",
     "deleted a tag and created it again while a Leaf node sharing the "
     "MariaDB table (READ COMMITTED) was between its UPDATE and its SELECT")
def tag_recreate_leaf_reader_mariadb(run):
    my = run.mariadb()
    c = my.connect()
    run.on_close(c.close)
    cur = c.cursor()
    cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")

    def select(n):
        cur.execute("SELECT max_id FROM leaf_alloc WHERE biz_tag = 't'")
        r = cur.fetchone()
        return None if r is None else (int(r[0]) - n, int(r[0]))
    leaf_reader(run, my, (
        lambda n: cur.execute("UPDATE leaf_alloc SET max_id = max_id + %d "
                              "WHERE biz_tag = 't'" % n),
        select, c.commit))
