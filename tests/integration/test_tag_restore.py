#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""frond tag restore: a store restored from a backup taken mid-run, on
SQLite, PostgreSQL, MariaDB and a multi: store.

Each engine: a server hands out IDs of three tags (with an audit log), a
real dump is taken while it serves, it hands out more, /metrics is
scraped, the server stops and the dump is restored. Before: a server
started on the restored store hands out IDs it handed out already
(counted). After: the plan alone changes nothing; the plan from the
audit log, applied, and (from the same dump again) the plan from the
scraped metrics, applied, leave a restarted server with no repeat. Bad
sources are refused with their codes, and nothing is applied."""

import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402

TAGS = {"orders": 100, "invoices": 37, "chat": 1000}
ROUNDS = 6  # requests of each tag before the dump, and again after


def issue(srv, rounds, batch=40):
    """rounds requests of each tag (singles and batches): their IDs."""
    got = []
    for i in range(rounds):
        for tag in TAGS:
            count = 1 if i % 2 == 0 else min(batch, TAGS[tag])
            for _ in range(50):  # a load still on its way: asked again
                s, _, b = srv.request("GET", "/v1/segment/%s?count=%d&as=text"
                                      % (tag, count))
                if s != 503 or b"SEGMENT_UNAVAILABLE" not in b:
                    break
            ft.check(s == 200, "%s: %d %r" % (tag, s, b))
            ids = [int(x) for x in b.decode().split()]
            ft.check(len(ids) == count, "%s: %r" % (tag, b))
            got += [(tag, x) for x in ids]
    return got


def rows(store):
    r = ft.run(["tag", "list", "--json", "--store", store])
    ft.check(r.returncode == 0, "tag list: %s" % r.stderr)
    return {t["tag"]: t["max_id"] for t in json.loads(r.stdout)}


def restore_cmd(store, *args):
    return ft.run(["tag", "restore", "--store", store] + list(args))


def start(store, audit=None, nodes=()):
    extra = ["--metrics-tags", ",".join(TAGS)] + list(nodes)
    if audit:
        extra += ["--audit-log", audit]
    return ft.Server(store=store, extra=extra)


def repeats(first, second):
    seen = set(first)
    return sum(1 for x in second if x in seen)


def highest_of(ids):
    return {t: max([x for tag, x in ids if tag == t] or [0]) for t in TAGS}


def scenario(store, dump, load, work, nodes=()):
    """The whole story on one store: dump() takes a backup, load() puts it
    back; work is a temp dir for the audit log, the scrape, the dump;
    nodes: how the servers get a node ID."""
    for tag, step in TAGS.items():
        r = ft.run(["tag", "create", tag, "--step", str(step),
                    "--store", store])
        ft.check(r.returncode == 0, "create %s: %s" % (tag, r.stderr))
    audit = os.path.join(work, "audit.log")
    scrape = os.path.join(work, "metrics.txt")
    with start(store, audit, nodes) as srv:
        first = issue(srv, ROUNDS)
        dump()
        # Past every row the dump holds (read after it: at or above it),
        # so that IDs allocated after the backup were handed out.
        dumped = rows(store)
        for _ in range(300):
            high = highest_of(first)
            if all(high[t] > dumped[t] for t in TAGS):
                break
            first += issue(srv, 2, batch=200)
        ft.check(all(high[t] > dumped[t] for t in TAGS),
                 "IDs did not pass the dump's rows: %r %r" % (high, dumped))
        s, _, body = srv.request("GET", "/metrics")
        ft.check(s == 200, "metrics: %d" % s)
        with open(scrape, "wb") as f:
            f.write(body)
        text = body.decode()
        ft.check(re.search(r'^frond_store_info\{store="[0-9a-f]{32}"\} 1$',
                           text, re.M), "no frond_store_info")
        for tag in TAGS:
            ft.check('frond_segment_buffer_last_id{tag="%s",buffer="current"}'
                     % tag in text, "no last_id of %s" % tag)
        ft.check(srv.stop() == 0, "server exit: %s" % srv.output())
    ft.check(len(set(first)) == len(first), "repeats in the first run")
    highest = highest_of(first)

    # Before: the restored store hands out again what it handed out.
    load()
    with start(store, nodes=nodes) as srv:
        before = issue(srv, ROUNDS * 2)
    n = repeats(first, before)
    print("   %s: %d of %d IDs repeated without tag restore"
          % (store.split(":")[0], n, len(before)), flush=True)
    ft.check(n > 0, "no repeat before: the test shows nothing")

    # The plan from the audit log changes nothing.
    load()
    was = rows(store)
    r = restore_cmd(store, "audit:" + audit, "--nodes", "1", "--json")
    ft.check(r.returncode == 0, "plan: %s %s" % (r.stdout, r.stderr))
    plan = {p["tag"]: p for p in json.loads(r.stdout)}
    for tag in TAGS:
        p = plan[tag]
        # One node, two buffers of the largest step it may have grown to
        # (a multi: store's step is fixed: the row's).
        step = TAGS[tag] if store.startswith("multi:") else 1000000
        ft.check(p["highest_seen"] == highest[tag] and
                 p["to"] == highest[tag] + 1 + 2 * step and
                 p["action"] == "advance" and p["max_id"] == was[tag],
                 "plan of %s: %r (highest %d)" % (tag, p, highest[tag]))
    ft.check(rows(store) == was, "the plan changed the store")

    # After, from the audit log: applied, no repeat.
    r = restore_cmd(store, "audit:" + audit, "--nodes", "1", "--apply")
    ft.check(r.returncode == 0 and r.stdout.count("advanced") == len(TAGS),
             "apply: %s %s" % (r.stdout, r.stderr))
    now = rows(store)
    for tag in TAGS:
        ft.check(now[tag] > highest[tag], "%s at %d" % (tag, now[tag]))
    r = restore_cmd(store, "audit:" + audit, "--nodes", "1", "--apply",
                    "--json")
    ft.check(r.returncode == 0 and all(
        p["action"] == "none" for p in json.loads(r.stdout)),
        "again: %s %s" % (r.stdout, r.stderr))
    ft.check(rows(store) == now, "applied twice moved again")
    with start(store, nodes=nodes) as srv:
        after = issue(srv, ROUNDS * 2)
    ft.check(repeats(first, after) == 0, "repeats after the audit's plan")

    # After, from the scraped metrics, on the same dump again. A multi:
    # store's segments do not increase: a node's buffers do not bound
    # what it handed out from earlier ones, so the audit log is needed.
    load()
    extra = []
    if store.startswith("multi:"):
        r = restore_cmd(store, "metrics:" + scrape, "--apply")
        ft.check(r.returncode == 1 and "audit log" in r.stderr,
                 "multi: scrapes alone: %d %s" % (r.returncode, r.stderr))
        ft.check(rows(store) == was, "multi: scrapes alone moved rows")
        extra = ["audit:" + audit, "--nodes", "1"]
    r = restore_cmd(store, "metrics:" + scrape, "--apply", "--json", *extra)
    ft.check(r.returncode == 0, "metrics: %s %s" % (r.stdout, r.stderr))
    for p in json.loads(r.stdout):
        ft.check(p["action"] == "advanced" and p["highest_seen"] >=
                 highest[p["tag"]], "metrics plan: %r (highest %r)" % (p, highest))
    with start(store, nodes=nodes) as srv:
        after = issue(srv, ROUNDS * 2)
    ft.check(repeats(first, after) == 0, "repeats after the metrics' plan")
    return audit, scrape


def refusals(store, audit, scrape, work):
    """Bad sources: their codes, and nothing applied."""
    was = rows(store)

    def refused(args, code, rc=1):
        r = restore_cmd(store, *(args + ["--apply"]))
        ft.check(r.returncode == rc and code in r.stderr,
                 "%r: want %s, got %d %s" % (args, code, r.returncode,
                                             r.stderr))
        ft.check(rows(store) == was, "%r changed the store" % args)

    refused(["audit:" + os.path.join(work, "nope.log")], "frond: IO:")
    other = os.path.join(work, "other.txt")
    with open(scrape) as f:
        text = f.read()
    with open(other, "w") as f:
        f.write(re.sub(r'store="[0-9a-f]{32}"', 'store="%s"' % ("ab" * 16),
                       text))
    refused(["metrics:" + scrape, "metrics:" + other], "STORE_MISMATCH")
    refused(["metrics:" + other], "STORE_MISMATCH")
    junk = os.path.join(work, "junk.txt")
    with open(junk, "w") as f:
        f.write("<html>not metrics</html>\n")
    refused(["metrics:" + junk], "frond: INVAL:")
    stray = os.path.join(work, "stray.log")
    shutil.copy(audit, stray)
    with open(stray, "a") as f:
        f.write('{"time":"2026-01-01T00:00:00.000Z","client":"c",'
                '"proto":"http","op":"range","tag":"refunds","first":1,'
                '"last":99999,"count":99999}\n')
    refused(["audit:" + stray], "TAG_NOT_FOUND")
    refused(["metrics:" + scrape, "http://127.0.0.1:%d" % ft.free_port()],
            "frond: STORE")
    refused(["file:" + scrape], "not audit:FILE", rc=2)
    refused(["https://127.0.0.1:1"], "metrics:FILE", rc=2)
    refused(["audit:"], "no file", rc=2)


def test_sqlite():
    with Work() as work:
        db = os.path.join(work, "frond.db")
        store = "sqlite:///" + db
        bak = os.path.join(work, "backup.db")

        def dump():
            r = subprocess.run(["sqlite3", db, ".backup '%s'" % bak],
                               capture_output=True, text=True, timeout=60)
            ft.check(r.returncode == 0, "backup: %s" % r.stderr)

        def load():
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(db + suffix):
                    os.remove(db + suffix)
            shutil.copy(bak, db)

        audit, scrape = scenario(store, dump, load, work)
        refusals(store, audit, scrape, work)
        # A running node's metrics, fetched: the same plan as its scrape.
        load()
        with start(store) as srv:
            r = restore_cmd("sqlite:///" + bak, "http://127.0.0.1:%d"
                            % srv.port, "--json")
            ft.check(r.returncode == 0, "url: %s %s" % (r.stdout, r.stderr))
            plan = {p["tag"]: p for p in json.loads(r.stdout)}
            ft.check(all(plan[t]["from"].startswith("http://") for t in TAGS
                         if plan[t]["action"] != "not seen"),
                     "url plan: %r" % plan)


def test_postgresql():
    with Work() as work, ft.start_server("postgresql") as pg:
        bak = os.path.join(work, "dump.sql")

        def dump():
            r = subprocess.run(["pg_dump", "--clean", "--if-exists", "-f",
                                bak, pg.uri], capture_output=True, text=True,
                               timeout=120)
            ft.check(r.returncode == 0, "pg_dump: %s" % r.stderr)

        def load():
            r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1",
                                "-d", pg.uri, "-f", bak], capture_output=True,
                               text=True, timeout=120)
            ft.check(r.returncode == 0, "restore: %s" % r.stderr)

        audit, scrape = scenario(pg.uri, dump, load, work)
        refusals(pg.uri, audit, scrape, work)


class Work:
    """A temp dir, removed at the block's end."""

    def __enter__(self):
        self.dir = ft.tempdir()
        return self.dir

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def mariadb_args(my):
    return ["-h", "127.0.0.1", "-P", str(my.port), "-u", "root"]


def test_mariadb():
    with Work() as work, ft.start_server("mariadb") as my:
        bak = os.path.join(work, "dump.sql")

        def dump():
            with open(bak, "w") as f:
                r = subprocess.run(["mariadb-dump"] + mariadb_args(my) +
                                   ["--single-transaction", "frond"],
                                   stdout=f, stderr=subprocess.PIPE,
                                   text=True, timeout=120)
            ft.check(r.returncode == 0, "mariadb-dump: %s" % r.stderr)

        def load():
            with open(bak) as f:
                r = subprocess.run(["mariadb"] + mariadb_args(my) + ["frond"],
                                   stdin=f, capture_output=True, text=True,
                                   timeout=120)
            ft.check(r.returncode == 0, "restore: %s" % r.stderr)

        audit, scrape = scenario(my.uri, dump, load, work)
        refusals(my.uri, audit, scrape, work)


def test_multi():
    """A multi: store of two SQLite members, both restored from one
    backup (a whole multi: store restored is advanced like one
    database)."""
    with Work() as work:
        dbs = [os.path.join(work, "m%d.db" % i) for i in range(2)]
        store = "multi:" + "|".join("sqlite:///" + d for d in dbs)

        def dump():
            for d in dbs:
                r = subprocess.run(["sqlite3", d, ".backup '%s.bak'" % d],
                                   capture_output=True, text=True, timeout=60)
                ft.check(r.returncode == 0, "backup: %s" % r.stderr)

        def load():
            for d in dbs:
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(d + suffix):
                        os.remove(d + suffix)
                shutil.copy(d + ".bak", d)

        nodes = ["--coordinator", "lease+sqlite:///%s/nodes.db" % work]
        audit, scrape = scenario(store, dump, load, work, nodes)
        refusals(store, audit, scrape, work)


if __name__ == "__main__":
    ft.main([test_sqlite, test_postgresql, test_mariadb, test_multi])
