#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
Segment mode on a real SQLite file shared by several processes: no
duplicate, per-thread order, a Leaf-made table, Leaf's own allocations
interleaved, and restart after kill -9. test_segment_pg.py runs the same
scenarios on PostgreSQL, plus the store going away and coming back.
"""
import glob
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402

IDS_PER_TAG = 1000000
PROCS, THREADS = 2, 4
TAGS = [("order", 1000), ("pay", 2000), ("slow-start", 10)]


class Sqlite:
    """A SQLite store file; sql() runs statements in the sqlite3 shell."""

    dialect = "sqlite"

    def __init__(self):
        ft.need("sqlite3", "sqlite3")
        self.dir = ft.tempdir("frond-sqlite-")
        self.path = os.path.join(self.dir, "frond.db")
        self.uri = "sqlite://" + self.path

    def sql(self, sql):
        r = subprocess.run(["sqlite3", "-batch", "-cmd", ".timeout 20000",
                            self.path, sql], capture_output=True, text=True,
                           timeout=60)
        ft.check(r.returncode == 0, "sqlite3: %s: %s" % (sql, r.stderr))
        return r.stdout

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


# Leaf's MySQL DDL, adapted per dialect (no ENGINE, no ON UPDATE; no
# backticks or display widths for PostgreSQL).
LEAF_DDL = {
    "sqlite": "CREATE TABLE `leaf_alloc` ("
              "`biz_tag` varchar(128) NOT NULL DEFAULT '',"
              "`max_id` bigint(20) NOT NULL DEFAULT '1',"
              "`step` int(11) NOT NULL,"
              "`description` varchar(256) DEFAULT NULL,"
              "`update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,"
              "PRIMARY KEY (`biz_tag`))",
    "pg": "CREATE TABLE leaf_alloc ("
          "biz_tag varchar(128) NOT NULL DEFAULT '',"
          "max_id bigint NOT NULL DEFAULT '1',"
          "step int NOT NULL,"
          "description varchar(256) DEFAULT NULL,"
          "update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,"
          "PRIMARY KEY (biz_tag))",
}
import leafnode  # noqa: E402
LEAF_DDL["mysql"] = leafnode.DDL  # Leaf's own script, verbatim


def leaf_alloc(store, tag):
    """One allocation exactly as Leaf makes it: UPDATE then SELECT in one
    transaction. Returns Leaf's segment [max_id - step, max_id). On MySQL
    through PyMySQL with Leaf's own statements and its dynamic step
    (leafnode.py)."""
    if store.dialect == "mysql":
        import leafnode
        if getattr(store, "leaf", None) is None:
            store.leaf = leafnode.LeafNode(store.connect())
        return store.leaf.next_segment(tag)
    begin = "BEGIN IMMEDIATE" if store.dialect == "sqlite" else "BEGIN"
    out = store.sql("%s; UPDATE leaf_alloc SET max_id = max_id + step "
                    "WHERE biz_tag = '%s'; SELECT max_id, step FROM "
                    "leaf_alloc WHERE biz_tag = '%s'; COMMIT;"
                    % (begin, tag, tag))
    max_id, step = (int(x) for x in out.strip().split("|"))
    return (max_id - step, max_id)


class Load:
    """A running seg_load process; its stdout lines are queued."""

    def __init__(self, store, prefix, tags, *opts):
        self.prefix = prefix
        self.p = subprocess.Popen([ft.tool("seg_load")] + list(opts)
                                  + [store.uri, prefix] + list(tags),
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.count = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def wait_for(self, pred, timeout, what):
        """Consume lines until pred(line) holds; return that line."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            if line is None:
                raise ft.Failure("seg_load ended while waiting for %s: %s"
                                 % (what, self.p.stderr.read()))
            if line.startswith("count "):
                self.count = int(line.split()[1])
            if pred(line):
                return line
        raise ft.Failure("no %s within %.0fs" % (what, timeout))

    def finish(self, timeout=120):
        try:
            self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise ft.Failure("seg_load did not finish within %ds" % timeout)
        self.err = self.p.stderr.read()
        ft.check(self.p.returncode == 0, "seg_load failed (%d): %s"
                 % (self.p.returncode, self.err))

    def kill(self):
        """Stop the process if it still runs: a failed check must not
        leave it behind."""
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def ids(self, tag_index):
        """Per-thread ID lists of one tag."""
        return [ft.read_i64(f) for f in
                sorted(glob.glob("%s.*.%d" % (self.prefix, tag_index)))]


def check_increasing(ids, what):
    for i in range(1, len(ids)):
        if ids[i] <= ids[i - 1]:
            raise ft.Failure("%s: ID %d after %d (position %d)"
                             % (what, ids[i], ids[i - 1], i))


def scenario_many_processes(store, workdir):
    """2 processes x 4 threads x 3 tags, 1M IDs per tag, on a table made by
    Leaf's DDL, with Leaf allocations interleaved on one tag."""
    store.sql(LEAF_DDL[store.dialect])
    for tag, step in TAGS:
        store.sql("INSERT INTO leaf_alloc (biz_tag, max_id, step, "
                  "description) VALUES ('%s', 1, %d, 'test')" % (tag, step))
    per_thread = IDS_PER_TAG // (PROCS * THREADS)
    loads = [Load(store, os.path.join(workdir, "p%d" % i),
                  [t for t, _ in TAGS], "-t", str(THREADS),
                  "-n", str(per_thread), "-m", "100000", "-w", "3000")
             for i in range(PROCS)]
    leaf = []
    for _ in range(20):  # Leaf nodes allocating beside Frond's
        leaf.append(leaf_alloc(store, "order"))
        time.sleep(0.02)
    for ld in loads:
        ld.finish()
    leaf.sort()
    for a, b in zip(leaf, leaf[1:]):
        ft.check(a[1] <= b[0], "Leaf segments overlap: %r %r" % (a, b))
    for k, (tag, _) in enumerate(TAGS):
        every = []
        for i, ld in enumerate(loads):
            for t, ids in enumerate(ld.ids(k)):
                ft.check(len(ids) == per_thread, "process %d thread %d tag "
                         "%s: %d IDs, expected %d" % (i, t, tag, len(ids),
                                                      per_thread))
                check_increasing(ids, "process %d thread %d tag %s"
                                 % (i, t, tag))
                every.extend(ids)
        ft.check(len(every) == IDS_PER_TAG, "tag %s: %d IDs" % (tag,
                                                                 len(every)))
        every.sort()
        for i in range(1, len(every)):
            if every[i] == every[i - 1]:
                raise ft.Failure("tag %s: ID %d issued twice"
                                 % (tag, every[i]))
        ft.check(every[0] >= 1, "tag %s: ID %d below 1" % (tag, every[0]))
        if tag == "order":
            import bisect
            for lo, hi in leaf:
                j = bisect.bisect_left(every, lo)
                ft.check(j == len(every) or every[j] >= hi,
                         "ID %d is inside Leaf's segment [%d, %d)"
                         % (every[min(j, len(every) - 1)], lo, hi))


def scenario_kill9(store, workdir):
    """kill -9 mid-run; after restart every new ID is above the old ones."""
    store.sql(LEAF_DDL[store.dialect])
    store.sql("INSERT INTO leaf_alloc (biz_tag, max_id, step) "
              "VALUES ('killed', 1, 500)")
    # Unthrottled on a shared machine: a store slower than 50 ms now and
    # then is not what this is about, so the calls may wait 5 s for it.
    ld = Load(store, os.path.join(workdir, "k1"), ["killed"], "-t", "2",
              "-n", "0", "-w", "5000")
    ld.wait_for(lambda l: l.startswith("count ") and int(l.split()[1])
                >= 20000, 60, "20000 IDs")
    os.kill(ld.p.pid, signal.SIGKILL)
    ld.p.wait(timeout=30)
    before = [i for ids in ld.ids(0) for i in ids]
    ft.check(len(before) > 0, "no IDs written before kill -9")
    again = Load(store, os.path.join(workdir, "k2"), ["killed"], "-t", "2",
                 "-n", "5000", "-w", "5000")
    again.finish()
    after = [i for ids in again.ids(0) for i in ids]
    ft.check(len(after) == 10000, "%d IDs after restart" % len(after))
    ft.check(min(after) > max(before), "after restart: ID %d is not above "
             "%d issued before kill -9" % (min(after), max(before)))
    ft.check(len(set(before) | set(after)) == len(before) + len(after),
             "duplicate across kill -9")


def scenario_simultaneous_open(store, workdir):
    """Eight processes open one fresh SQLite file at the same moment, 20
    times over: every one of them gets the store (switching the file to WAL
    can meet a lock that the busy timeout does not wait for)."""
    for r in range(20):
        uri = "sqlite:///%s/fresh-%d.db" % (workdir, r)
        procs = [subprocess.Popen([ft.FROND_BIN, "tag", "list", "--store", uri],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(8)]
        for p in procs:
            out, errs = p.communicate(timeout=60)
            ft.check(p.returncode == 0,
                     "round %d: a process could not open the store: %s"
                     % (r, errs.strip()))


def run_scenarios(make_store, scenarios):
    def wrap(fn):
        def t():
            store = make_store()
            workdir = ft.tempdir("frond-seg-")
            try:
                fn(store, workdir)
            finally:
                store.close()
                shutil.rmtree(workdir, ignore_errors=True)
        t.__name__ = fn.__name__.replace("scenario_", "")
        return t
    ft.main([wrap(fn) for fn in scenarios])


if __name__ == "__main__":
    run_scenarios(Sqlite, [scenario_many_processes, scenario_kill9,
                           scenario_simultaneous_open])
