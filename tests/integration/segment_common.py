# SPDX-License-Identifier: Apache-2.0
"""
What the segment suites share, store by store (test_segment_sqlite.py,
test_segment_pg.py, test_segment_mysql.py, test_segment_multi.py) and
under failover (test_failover_pg.py, test_failover_mysql.py): Load, which
drives tests/tools/seg_load; Leaf's table and Leaf's own allocations; the
scenarios whose steps are the same on every store, each given a store
fixture from frondtest.py (uri, dialect, sql(); stop() and start() for
a server) and a temp dir.
"""
import bisect
import glob
import os
import queue
import shutil
import signal
import subprocess
import threading
import time

import frondtest as ft
import leafnode

IDS_PER_TAG = 1000000
PROCS, THREADS = 2, 4
TAGS = [("order", 1000), ("pay", 2000), ("slow-start", 10)]
# The tag of the failover scenarios.
FAILOVER_TAG = "fo"


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
LEAF_DDL["mysql"] = leafnode.DDL  # Leaf's own script, verbatim


def leaf_alloc(store, tag):
    """One allocation exactly as Leaf makes it: UPDATE then SELECT in one
    transaction. Returns Leaf's segment [max_id - step, max_id). On MySQL
    through PyMySQL with Leaf's own statements and its dynamic step
    (leafnode.py)."""
    if store.dialect == "mysql":
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


def scenario_store_down(store, workdir):
    """The database stops: IDs keep coming from the buffers, then
    SEGMENT_UNAVAILABLE; once it is back, serving resumes by itself."""
    store.sql(LEAF_DDL[store.dialect])
    store.sql("INSERT INTO leaf_alloc (biz_tag, max_id, step) "
              "VALUES ('down', 1, 2000)")
    # About 10,000 IDs/s with 2,000-ID segments: the buffers last well
    # under a second once the store is gone.
    ld = Load(store, os.path.join(workdir, "d"), ["down"], "-n", "0",
                  "-k", "-p", "100", "-m", "2000", "-r", "300")
    ld.wait_for(lambda l: l.startswith("count ") and int(l.split()[1])
                >= 5000, 60, "5000 IDs")
    store.stop()
    stopped_at = ld.count
    ld.wait_for(lambda l: l.startswith("count "), 5, "progress")
    line = ld.wait_for(lambda l: l.startswith("state error"), 60,
                       "an error while the database is down")
    ft.check(line.split()[2] == "SEGMENT_UNAVAILABLE",
             "expected SEGMENT_UNAVAILABLE, got: " + line)
    ft.check(ld.count > stopped_at, "no IDs served from the buffers after "
             "the database stopped (%d, %d)" % (stopped_at, ld.count))
    time.sleep(1)
    store.start()
    ld.wait_for(lambda l: l == "state ok", 60,
                "serving again after the database came back")
    resumed = ld.count
    ld.wait_for(lambda l: l.startswith("count ") and int(l.split()[1])
                > resumed + 5000, 60, "5000 more IDs")
    ld.p.send_signal(signal.SIGTERM)
    ld.finish(timeout=30)
    # The failures were logged with the engine's own words.
    ft.check("segment: tag \"down\": loading a segment failed" in ld.err
             and store.engine + ": " in ld.err,
             "no store failure in the log: " + ld.err[-500:])
    ids = ld.ids(0)[0]
    check_increasing(ids, "tag down across the outage")


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


# ---- failover of the store under load

def setup_tag(pair):
    pair.primary.sql(pair.ddl)
    pair.primary.sql("INSERT INTO leaf_alloc (biz_tag, max_id, step) "
                     "VALUES ('%s', 1, 1000)" % FAILOVER_TAG)
    # The standby applies what it received in its own time: a commit
    # acknowledged by a semi-synchronous replica is only in its relay log.
    # Until the table is there, a query on it fails: first the table,
    # then the row.
    deadline = time.monotonic() + 60
    for sql, what in (("SELECT count(*) FROM information_schema.tables "
                       "WHERE table_name = 'leaf_alloc' AND table_schema IN "
                       "('frond', 'public')", "table"),
                      ("SELECT count(*) FROM leaf_alloc", "row")):
        while pair.standby.sql(sql).strip() != "1":
            ft.check(time.monotonic() < deadline,
                     "the standby has no %s" % what)
            time.sleep(0.1)


def load(pair, workdir):
    # One thread, about 10,000 IDs/s, steps of at most 2,000: a store
    # allocation every 0.2 s or so, the buffers empty within a second.
    return Load(pair, os.path.join(workdir, "f"), [FAILOVER_TAG], "-n",
                "0", "-k", "-p", "100", "-m", "2000", "-r", "300")


def grow(ld, by, what):
    start = ld.count
    ld.wait_for(lambda l: l.startswith("count ") and int(l.split()[1])
                >= start + by, 120, what)


def finish(ld):
    ld.p.send_signal(signal.SIGTERM)
    ld.finish(timeout=60)
    line = ld.wait_for(lambda l: l.startswith("rollbacks "), 10, "rollbacks")
    ids = ld.ids(0)[0]
    check_increasing(ids, "tag %s across the failover" % FAILOVER_TAG)
    return int(line.split()[1]), ids


def nothing_lost(pair, workdir):
    """The standby has every acknowledged commit: nothing to catch."""
    setup_tag(pair)
    ld = load(pair, workdir)
    grow(ld, 5000, "5000 IDs before the failover")
    pair.fail_over()
    grow(ld, 20000, "20000 IDs after the promotion")
    rollbacks, ids = finish(ld)
    ft.check(rollbacks == 0, "the standby lost %d allocations"
             % rollbacks)
    ft.check("the row went back" not in ld.err, ld.err[-500:])
    row = int(pair.standby.sql("SELECT max_id FROM leaf_alloc WHERE "
                               "biz_tag = '%s'" % FAILOVER_TAG))
    ft.check(row > ids[-1], "the promoted row (%d) is not above the last "
             "ID served (%d)" % (row, ids[-1]))


def lost_writes(pair, workdir):
    """The standby stops receiving; the primary goes on allocating, then
    dies: those allocations exist nowhere else."""
    setup_tag(pair)
    ld = load(pair, workdir)
    grow(ld, 5000, "5000 IDs while the standby follows")
    pair.stop_replication()
    grow(ld, 20000, "20000 IDs the standby does not see")
    pair.fail_over()
    grow(ld, 20000, "20000 IDs after the promotion")
    rollbacks, ids = finish(ld)
    ft.check(rollbacks >= 1, "the guard caught nothing")
    ft.check("the row went back" in ld.err, ld.err[-500:])
    print("     the rollback guard caught %d range(s), %d IDs served"
          % (rollbacks, len(ids)))


def failover_scenario(make_pair, mode, fn):
    """A test of fn on a pair of make_pair(mode): a primary, its standby
    (or replica), uri naming the one to use; close() stops both."""
    def t():
        pair = make_pair(mode)
        workdir = ft.tempdir("frond-fo-")
        try:
            fn(pair, workdir)
        finally:
            pair.close()
            shutil.rmtree(workdir, ignore_errors=True)
    t.__name__ = "%s_%s" % (mode, fn.__name__)
    return t
