#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The audit log (audit_log) and `frond audit find`, against a real server:
every ID handed out over HTTP and RESP (singles, batches, ranges, INCRBY,
a MULTI/EXEC) is in exactly one line of its kind, with its protocol;
find answers for IDs inside and at the edges of ranges and for snowflake
IDs, and finds nothing beyond them; a rename and SIGHUP loses no record;
a log that cannot be written refuses IDs (audit_full = refuse) or drops
records loudly (drop), what it never took goes to stderr at the stop
(exit status 1), and a reopen that fails keeps the old file.
"""
import gzip
import json
import os
import re
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from respclient import Resp, RespError  # noqa: E402


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        check(time.monotonic() < deadline, "%s: not within %d s"
              % (what, timeout))
        time.sleep(0.02)


def lines(*paths):
    """The records of the logs: their whole lines. A line the server is
    still writing (no newline yet) is not a record yet."""
    out = []
    for p in paths:
        if os.path.exists(p):
            with open(p) as f:
                out += [json.loads(x) for x in f.read().split("\n")[:-1]]
    return out


def metric(s, name):
    status, body = ft.http_get(s.port, "/metrics")
    check(status == 200, "/metrics: %d" % status)
    m = re.search(r"^%s (\d+)" % name, body, re.M)
    return int(m.group(1)) if m else None


def get(s, path):
    status, _, body = s.request("GET", path)
    return status, json.loads(body) if body.startswith(b"{") else body


def ids_of(s, path):
    status, body = get(s, path)
    check(status == 200, "%s: %d %s" % (path, status, body))
    return [int(x) for x in body["ids"]]


def covered(recs, want, key, proto=None):
    """Every ID of want (tag or node -> IDs) lies in the lines of its key,
    and the lines' counts add up to exactly the IDs issued."""
    for k, ids in want.items():
        mine = [r for r in recs if r.get(key) == k and "format" not in r
                and (proto is None or r["proto"] == proto)]
        for i in ids:
            check(any(r["first"] <= i <= r["last"] for r in mine),
                  "%s %s: ID %d in no audit line: %s" % (key, k, i, mine))
        check(sum(r["count"] for r in mine) == len(ids),
              "%s %s: lines count %d IDs, %d issued" % (
                  key, k, sum(r["count"] for r in mine), len(ids)))


def find(*args):
    return ft.run(["audit", "find"] + [str(a) for a in args])


def test_every_path_recorded():
    """HTTP and RESP singles, batches, ranges, INCRBY and MULTI/EXEC each
    end up in the log with their protocol, and find answers for their
    IDs: inside a range, at both edges, and not one past it."""
    d = ft.tempdir()
    log = os.path.join(d, "audit.log")
    s = ft.Server(resp=True, tags={"orders": 100, "users": 1000},
                  extra=["--audit-log", log])
    try:
        http = {"orders": [], "users": []}
        flakes = []
        for _ in range(5):
            http["orders"] += ids_of(s, "/v1/segment/orders")
            flakes += ids_of(s, "/v1/snowflake")
        http["orders"] += ids_of(s, "/v1/segment/orders?count=150")
        flakes += ids_of(s, "/v1/snowflake?count=5000")
        status, rng = get(s, "/v1/segment/users/range?count=300")
        check(status == 200, "range: %d %s" % (status, rng))
        http["users"] += list(range(int(rng["start"]), int(rng["end"])))
        r = Resp(s.resp_port)
        resp = {"orders": [], "users": []}
        resp["orders"].append(r.command("INCR", "orders"))
        top = r.command("INCRBY", "users", 10)
        resp["users"] += list(range(top - 9, top + 1))
        resp["orders"] += [int(x) for x in r.command("ID.NEXT", "orders", 3)]
        check(r.command("MULTI") == "OK", "MULTI")
        r.command("INCR", "orders")
        r.command("ID.NEXT", "orders", 2)
        r.command("ID.RANGE", "users", 20)
        got = r.command("EXEC")
        resp["orders"] += [got[0]] + [int(x) for x in got[1]]
        start = int(got[2][0])
        resp["users"] += list(range(start, start + 20))
        flake = r.command("ID.SNOWFLAKE")
        flake = int(flake[0] if isinstance(flake, list) else flake)
        # Singles are written once their second is over.
        n = sum(map(len, http.values())) + sum(map(len, resp.values())) + \
            len(flakes) + 1
        wait_for(lambda: sum(x["count"] for x in lines(log)) == n, 10,
                 "audit lines of %d IDs" % n)
        recs = lines(log)
        covered(recs, http, "tag", "http")
        covered(recs, resp, "tag", "resp")
        covered(recs, {0: flakes + [flake]}, "node")
        for x in recs:
            check(x["client"] == "anonymous" and
                  x["remote"].startswith("127.0.0.1:") and
                  x["time"].endswith("Z") and "answered" not in x, str(x))
        ops = {(x["proto"], x["op"]) for x in recs}
        for want in (("http", "singles"), ("http", "batch"),
                     ("http", "range"), ("resp", "singles"),
                     ("resp", "batch"), ("resp", "range")):
            check(want in ops, "no %s line: %s" % (want, sorted(ops)))
        # A 5000-ID snowflake batch is one line per time unit's step.
        big = [x for x in recs if x.get("node") == 0 and x["op"] == "batch"]
        check(sum(x["count"] for x in big) == 5000 and len(big) == 2,
              "snowflake batch lines: %s" % big)

        # find: the HTTP range, inside and at its edges.
        first, last = http["users"][0], http["users"][-1]
        for i in (first, first + 150, last):
            f = find(i, "--tag", "users", "--log", log)
            check(f.returncode == 0 and
                  re.search(r"users %d: anonymous \(127\.0\.0\.1:\d+, "
                            r"http\) at .*: range %d\.\.%d, 300 IDs\n"
                            % (i, first, last), f.stdout),
                  "find %d: %s %s" % (i, f.stdout, f.stderr))
            check(f.stdout.count("\n") == 1, "find %d: %s" % (i, f.stdout))
        # One past the HTTP range is RESP's INCRBY (the next range).
        f = find(last + 1, "--tag", "users", "--log", log)
        check(f.returncode == 0 and "resp) at" in f.stdout and
              "range %d..%d" % (last + 1, last + 10) in f.stdout,
              "find %d: %s" % (last + 1, f.stdout))
        # Past everything handed out: nothing, exit 1.
        beyond = max(resp["users"]) + 1
        f = find(beyond, "--tag", "users", "--log", log)
        check(f.returncode == 1 and f.stdout == "" and
              "no audit record holds ID %d of tag users" % beyond in f.stderr,
              "find %d: %s %s" % (beyond, f.stdout, f.stderr))
        # A snowflake ID of the batch, and a single.
        f = find(flakes[7], "--log", log)
        check(f.returncode == 0 and re.search(
            r"node 0 %d: .* batch \d+\.\.\d+, \d+ IDs\n" % flakes[7],
            f.stdout), "find snowflake: %s %s" % (f.stdout, f.stderr))
        f = find(flake, "--log", log)
        check(f.returncode == 0 and "resp) at" in f.stdout and
              "singles %d..%d, 1 ID\n" % (flake, flake) in f.stdout,
              "find snowflake single: %s %s" % (f.stdout, f.stderr))
        # Another tag's ID of the same number is not this tag's.
        f = find(http["orders"][0], "--tag", "nosuch", "--log", log)
        check(f.returncode == 1, "find in another tag: %s" % f.stdout)
        check(metric(s, "frond_audit_writable") == 1, "writable")
    finally:
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def test_format_lines():
    """Format strings are found as the IDs under them: a format over
    snowflake IDs (decimal, uuid7 with scope=node) records the node and
    layout, and find answers for its IDs; a batch of a segment tag's
    strings that spans a gap between two segments is one line per run of
    consecutive IDs, each exact; random UUIDs have no ID to find."""
    import sqlite3
    d = ft.tempdir()
    log = os.path.join(d, "audit.log")
    s = ft.Server(tags={"orders": 100},
                  extra=["--audit-log", log, "--format.sf", "decimal",
                         "--format.u", "uuid7:scope=node",
                         "--format.od", "decimal:tag=orders",
                         "--format.r", "uuid7"])
    try:
        def strs(path):
            status, body = get(s, path)
            check(status == 200, "%s: %d %s" % (path, status, body))
            return body["ids"]
        sf = [int(x) for x in strs("/v1/format/sf?count=2")]
        sf1 = int(strs("/v1/format/sf")[0])
        u = strs("/v1/format/u?count=3")
        r = strs("/v1/format/r?count=2")
        od = [int(x) for x in strs("/v1/format/od?count=5")]
        # A gap: the next segment the server loads starts 1000 higher.
        db = sqlite3.connect(os.path.join(s.dir, "frond.db"), timeout=20)
        db.execute("UPDATE leaf_alloc SET max_id = max_id + 1000 "
                   "WHERE biz_tag = 'orders'")
        db.commit()
        db.close()
        od2 = [int(x) for x in strs("/v1/format/od?count=250")]
        check(any(b != a + 1 for a, b in zip(od2, od2[1:])),
              "no gap in the batch: %s" % od2)
        wait_for(lambda: sum(x["count"] for x in lines(log)) ==
                 2 + 1 + 3 + 2 + 5 + 250, 10, "the format lines")
        recs = lines(log)

        def of(fmt):
            return [x for x in recs if x.get("format") == fmt]
        for x in of("sf") + of("u"):
            check(x.get("node") == 0 and x.get("layout") and
                  "tag" not in x, "snowflake format line: %s" % x)
        for i in sf + [sf1]:
            f = find(i, "--log", log)
            check(f.returncode == 0 and
                  "node 0 (format sf) %d: anonymous" % i in f.stdout,
                  "find %d: %s %s" % (i, f.stdout, f.stderr))
        check("batch %d..%d, 2 IDs\n" % (sf[0], sf[1]) in
              find(sf[1], "--log", log).stdout, "batch line")
        # uuid7:scope=node: the snowflake ID under the string.
        dec = ft.run(["decode", "--format", "uuid7:scope=node", u[1]])
        check(dec.returncode == 0, "decode: %s" % dec.stderr)
        uid = int(json.loads(dec.stdout)["id"])
        f = find(uid, "--log", log)
        check(f.returncode == 0 and "(format u) %d:" % uid in f.stdout and
              "first" not in f.stderr, "find uuid7 %d: %s %s"
              % (uid, f.stdout, f.stderr))
        check(not any("node" in x or "first" in x for x in of("r")),
              "random UUIDs: %s" % of("r"))
        # --tag restricts to segment IDs: the snowflake format line is not
        # a tag's.
        check(find(sf[0], "--tag", "orders", "--log", log).returncode == 1,
              "--tag matched a snowflake format line")
        # The segment format batch: each line exact, together every ID.
        big = [x for x in of("od") if x["count"] > 5 or x["first"] > od[-1]]
        check(len(big) >= 2, "one line over a gap: %s" % big)
        for x in big:
            check(x["tag"] == "orders" and "node" not in x and
                  x["last"] - x["first"] + 1 == x["count"] and
                  int(x["first_string"]) == x["first"] and
                  int(x["last_string"]) == x["last"], "run line: %s" % x)
        check(sorted(i for x in big for i in range(x["first"], x["last"] + 1))
              == sorted(od2), "lines %s, IDs %s" % (big, od2))
        gap = next(b for a, b in zip(od2, od2[1:]) if b != a + 1)
        f = find(gap, "--tag", "orders", "--log", log)
        check(f.returncode == 0 and f.stdout.count("\n") == 1 and
              "orders (format od) %d:" % gap in f.stdout and
              "batch %d.." % gap in f.stdout,
              "find %d: %s %s" % (gap, f.stdout, f.stderr))
        f = find(gap - 1, "--tag", "orders", "--log", log)
        check(f.returncode == 1, "an ID of the gap found: %s" % f.stdout)
    finally:
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def test_rotation_loses_nothing():
    """Renamed, then SIGHUP, while requests keep coming: the old and the
    new file hold every ID once; find reads the rotated files (a gzip'd
    one too) beside the log, and skips a torn last line."""
    d = ft.tempdir()
    log = os.path.join(d, "audit.log")
    s = ft.Server(tags={"orders": 1000}, extra=["--audit-log", log])
    try:
        got = []
        for i in range(400):
            got += ids_of(s, "/v1/segment/orders?count=%d" % (1 + i % 3))
            if i == 100:
                os.rename(log, log + ".1")
                s.proc.send_signal(signal.SIGHUP)
            if i == 250:
                wait_for(lambda: metric(s, "frond_audit_reopens_total") == 1,
                         10, "reopen")
                os.rename(log, log + ".2")
                s.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: metric(s, "frond_audit_reopens_total") == 2, 10,
                 "second reopen")
        check(s.stop() == 0, "stop")
        # Which file a record lands in depends on when the writer acted
        # on each SIGHUP; that every one lands in one of them does not.
        check(os.path.getsize(log + ".1") > 0, "nothing before the rename")
        recs = lines(log, log + ".1", log + ".2")
        covered(recs, {"orders": got}, "tag")
        with open(log + ".2", "rb") as f, \
                gzip.open(log + ".2.gz", "wb") as g:
            g.write(f.read())
        os.unlink(log + ".2")
        with open(log, "a") as f:
            f.write('{"time":"2026-11-28T00:00:00.000Z","op":"ran')
        for i in (got[0], got[len(got) // 2], got[-1]):
            f = find(i, "--tag", "orders", "--log", log)
            check(f.returncode == 0 and f.stdout.count("\n") == 1 and
                  "orders %d:" % i in f.stdout,
                  "find %d: %s %s" % (i, f.stdout, f.stderr))
            check("1 lines skipped" in f.stderr, "torn line: %s" % f.stderr)
        f = find(got[len(got) // 2], "--tag", "orders", log + ".2.gz",
                 "--log", os.path.join(d, "nothing.log"))
        check(f.returncode == 1 and "nothing.log" in f.stderr,
              "a missing log is an error: %s" % f.stderr)
    finally:
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def test_disk_full_refuses():
    """A log on a full disk (/dev/full): IDs are refused with
    AUDIT_UNAVAILABLE over HTTP and RESP, nothing issued meanwhile is
    lost, and once the path is writable again (SIGHUP) IDs flow and every
    record of those issued before is in the new file."""
    d = ft.tempdir()
    log = os.path.join(d, "audit.log")
    os.symlink("/dev/full", log)
    s = ft.Server(resp=True, tags={"orders": 100},
                  extra=["--audit-log", log])
    try:
        first = ids_of(s, "/v1/segment/orders?count=2")

        def refused():
            status, body = get(s, "/v1/segment/orders")
            if status == 200:
                first.extend(int(x) for x in body["ids"])
                return False
            return status, body
        status, body = wait_for(refused, 10, "AUDIT_UNAVAILABLE")
        check(status == 503 and body["error"]["code"] == "AUDIT_UNAVAILABLE",
              "refusal: %d %s" % (status, body))
        status, body = get(s, "/v1/snowflake")
        check(status == 503, "snowflake while the log fails: %d" % status)
        r = Resp(s.resp_port).command("INCR", "orders")
        check(isinstance(r, RespError) and r.code == "AUDIT_UNAVAILABLE",
              "RESP: %r" % (r,))
        check(metric(s, "frond_audit_writable") == 0, "writable 0")
        check(metric(s, "frond_audit_refused_total") >= 3, "refused")
        check(metric(s, "frond_audit_write_errors_total") >= 1, "errors")
        os.unlink(log)
        s.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: get(s, "/v1/segment/orders")[0] == 200, 10,
                 "IDs again")
        # Singles are written once their second is over.
        wait_for(lambda: all(any(x["first"] <= i <= x["last"]
                                 for x in lines(log)) for i in first), 10,
                 "the IDs issued before, written")
        check(metric(s, "frond_audit_writable") == 1, "writable again")
        covered([x for x in lines(log) if x["first"] <= max(first)],
                {"orders": first}, "tag")
        check("audit log %s: No space left on device" % log in s.output(),
              "the failure logged: %s" % s.output())
    finally:
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def spilled(out):
    """The records a stop wrote to stderr instead of the log."""
    pre = "frond: audit record not written: "
    return [json.loads(x[len(pre):]) for x in out.splitlines()
            if x.startswith(pre)]


def test_disk_full_stop_spills():
    """audit_full = refuse, the log on a full disk (/dev/full) from the
    start: the ranges answered before the writer saw the failure have
    records only in memory. A clean stop writes every one of them to
    stderr (as the log's own JSON lines, after a prefix), says how many,
    and exits 1: no ID handed out is recorded nowhere, silently."""
    d = ft.tempdir()
    log = os.path.join(d, "audit.log")
    os.symlink("/dev/full", log)
    s = ft.Server(resp=True, tags={"orders": 1000},
                  extra=["--audit-log", log])
    try:
        answered, refused = [], 0
        for _ in range(200):
            status, body = get(s, "/v1/segment/orders/range?count=5")
            if status == 200:
                answered.append((int(body["start"]), int(body["end"]) - 1))
            else:
                check(status == 503 and
                      body["error"]["code"] == "AUDIT_UNAVAILABLE",
                      "refusal: %d %s" % (status, body))
                refused += 1
                if refused == 3:
                    break
        check(answered and refused == 3,
              "%d answered, %d refused" % (len(answered), refused))
        # RESP too: INCRBY is a range.
        top = Resp(s.resp_port).command("INCRBY", "orders", 7)
        check(isinstance(top, RespError) and
              top.code == "AUDIT_UNAVAILABLE", "RESP: %r" % (top,))
        rc = s.stop()
        out = s.output()
        recs = spilled(out)
        check(rc == 1, "exit status %d after unwritten records: %s"
              % (rc, out))
        for first, last in answered:
            check(any(x.get("tag") == "orders" and x["op"] == "range" and
                      x["first"] == first and x["last"] == last and
                      x["count"] == 5 for x in recs),
                  "range %d..%d neither in the log nor on stderr: %s"
                  % (first, last, recs))
        check(len(recs) == len(answered), "records on stderr: %s" % recs)
        check("%d records could not be written to it (at the stop)"
              % len(recs) in out and
              "stopped with %d audit records not in the audit log"
              % len(recs) in out, "the count logged: %s" % out)
    finally:
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def test_disk_full_drops_loudly():
    """audit_full = drop: IDs keep coming while the log fails; records
    beyond audit_buffer are dropped, counted and logged, and the log says
    how many once it can be written."""
    d = ft.tempdir()
    log = os.path.join(d, "audit.log")
    os.symlink("/dev/full", log)
    s = ft.Server(tags={"orders": 100000},
                  extra=["--audit-log", log, "--audit-full", "drop",
                         "--audit-buffer", "65536"])
    try:
        def dropped():
            ids_of(s, "/v1/segment/orders?count=2")
            return metric(s, "frond_audit_dropped_total")
        n = wait_for(dropped, 30, "records dropped")
        check(metric(s, "frond_audit_refused_total") == 0, "none refused")
        # Bounded by audit_buffer, give or take the lines being added.
        check(metric(s, "frond_audit_pending_bytes") <= 65536 + 4096,
              "bounded")
        os.unlink(log)
        s.proc.send_signal(signal.SIGHUP)
        ev = wait_for(lambda: [x for x in lines(log)
                               if x.get("event") == "dropped"], 10,
                      "the dropped line")
        check(sum(x["records"] for x in ev) >= n, "dropped: %s" % ev)
        check("records dropped" in s.output(), "logged: %s" % s.output())
    finally:
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def test_reopen_failure_keeps_old_file():
    """A SIGHUP whose path cannot be opened (its directory renamed away)
    keeps writing to the file open before, counts the failure, and opens
    the path once it can be."""
    d = ft.tempdir()
    sub = os.path.join(d, "logs")
    os.mkdir(sub)
    log = os.path.join(sub, "audit.log")
    s = ft.Server(tags={"orders": 100}, extra=["--audit-log", log])
    try:
        os.rename(sub, sub + ".old")
        s.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: metric(s, "frond_audit_reopen_failures_total"), 10,
                 "a failed reopen")
        got = ids_of(s, "/v1/segment/orders?count=3")
        old = os.path.join(sub + ".old", "audit.log")
        wait_for(lambda: any(x["first"] == got[0] for x in lines(old)), 10,
                 "the batch in the old file")
        os.mkdir(sub)
        wait_for(lambda: metric(s, "frond_audit_reopens_total") == 1, 10,
                 "reopened once the directory is back")
        more = ids_of(s, "/v1/segment/orders?count=3")
        wait_for(lambda: any(x["first"] == more[0] for x in lines(log)), 10,
                 "the next batch in the new file")
        check("cannot open it again" in s.output(), s.output())
    finally:
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def test_unopenable_path_stops_start():
    d = ft.tempdir()
    try:
        r = ft.run(["serve", "--listen", "127.0.0.1:%d" % ft.free_port(),
                    "--store", "none", "--resp-listen", "off",
                    "--data-dir", d, "--audit-log",
                    os.path.join(d, "no", "such", "audit.log")], cwd=d,
                   timeout=60)
        check(r.returncode == 1 and "cannot start: IO: audit_log" in r.stderr,
              "start: %d %s" % (r.returncode, r.stderr))
        # frond check says so first; a log its first start makes is ok.
        chk = ["check", "--listen", "127.0.0.1:%d" % ft.free_port(),
               "--store", "none", "--resp-listen", "off", "--data-dir", d,
               "--audit-log"]
        r = ft.run(chk + [os.path.join(d, "no", "such", "audit.log")], cwd=d)
        check(r.returncode == 1 and re.search(
            r"^FAIL access +IO: audit_log .*: this user cannot create it in "
            r"its directory: .*; a start refuses", r.stdout, re.M), r.stdout)
        log = os.path.join(d, "audit.log")
        r = ft.run(chk + [log], cwd=d)
        check(r.returncode == 0 and re.search(
            r"^ok +access +no clients_file; audit_log .*audit\.log \(made by "
            r"the first start\)", r.stdout, re.M), r.stdout)
        check(not os.path.exists(log), "check made the audit log")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    ft.main([test_every_path_recorded, test_format_lines,
             test_rotation_loses_nothing,
             test_disk_full_refuses, test_disk_full_stop_spills,
             test_disk_full_drops_loudly,
             test_reopen_failure_keeps_old_file,
             test_unopenable_path_stops_start])
