#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_cli.py -- the `frond` command as a user drives it: output formats,
exit codes, the high-water file across runs, kills and concurrent runs,
and a lease node killed. Its tools (decode, layouts, tags, bench) are in
test_cli_tools.py, what it makes of a configuration in
test_cli_config.py.

Every run happens in a fresh temporary directory with the FROND_*
environment variables cleared, so nothing outside the test leaks in.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from cli_common import (FROND_EPOCH, check_failure,  # noqa: E402
                        check_increasing, check_usage_error, clean_env, frond,
                        ids_of, start)


# ---------------------------------------------------------------- help

def test_version_and_help():
    d = ft.tempdir()
    r = frond(["--version"], d)
    lines = r.stdout.split("\n")
    check(r.returncode == 0 and lines[0] == "frond 0.1.0" and
          len(lines) == 5 and lines[4] == "" and
          lines[3].startswith("license: Apache-2.0 "),
          "--version: %r" % r.stdout)
    # The build line says how this binary was built: the build type and
    # sanitizers CMake recorded, asserts off exactly when NDEBUG is set.
    cache = os.path.join(ft.FROND_BUILD, "CMakeCache.txt")
    if os.path.exists(cache):
        with open(cache) as f:
            c = f.read()
        btype = re.search(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", c, re.M).group(1)
        san = "FROND_SANITIZE:BOOL=ON" in c
        want = "build: %s, GNU " % btype
        check(lines[1].startswith(want), "--version: %r, want %r..."
              % (lines[1], want))
        check(lines[1].endswith("sanitizers: " + ("address, undefined" if san
                                                  else "none")),
              "--version: %r with FROND_SANITIZE %s" % (lines[1], san))
        check(("asserts off" in lines[1]) == (btype in ("Release",
                                                        "RelWithDebInfo",
                                                        "MinSizeRel")),
              "--version: %r for a %s build" % (lines[1], btype))
    # The libraries line names the versions the process loaded.
    for lib, name in (("libuv", "libuv"), ("sqlite3", "SQLite"),
                      ("libpq", "libpq"), ("libsodium", "libsodium")):
        v = subprocess.run(["pkg-config", "--modversion", lib],
                           capture_output=True, text=True).stdout.strip()
        check("%s %s" % (name, v) in lines[2], "--version: %r lacks %s %s"
              % (lines[2], name, v))
    r = frond(["--help"], d)
    check(r.returncode == 0, "--help exit %d" % r.returncode)
    for cmd in ("next", "decode", "layouts", "tag", "bench"):
        check(re.search(r"^  %s " % cmd, r.stdout, re.M),
              "--help does not list %s" % cmd)
    for cmd in ("next", "decode", "layouts", "tag", "bench"):
        for args in (["help", cmd], [cmd, "--help"], [cmd, "-h"]):
            r = frond(args, d)
            check(r.returncode == 0 and r.stdout.startswith(
                "usage: frond %s" % cmd) and r.stderr == "",
                "frond %s: exit %d, %r" % (" ".join(args), r.returncode,
                                           r.stdout[:60]))
    for sub in ("create", "list", "get", "set-step", "delete"):
        r = frond(["tag", sub, "--help"], d)
        check(r.returncode == 0 and "frond tag %s" % sub in r.stdout,
              "tag %s --help: %r" % (sub, r.stdout[:80]))
    r = frond(["help", "tag", "create"], d)
    check(r.returncode == 0 and "frond tag create" in r.stdout,
          "help tag create: %r" % r.stdout[:80])
    check(os.listdir(d) == [], "--help wrote files: %s" % os.listdir(d))
    shutil.rmtree(d)


# ---------------------------------------------------------------- usage

def test_bad_arguments_exit_2():
    d = ft.tempdir()
    check_usage_error([], d, "missing command")
    check_usage_error(["nosuch"], d, "unknown command 'nosuch'")
    check_usage_error(["--nosuch"], d, "unknown option")
    check_usage_error(["help", "nosuch"], d, "unknown command")
    # next
    check_usage_error(["next", "--count", "abc"], d,
                      "frond next: --count: 'abc' is not a positive integer")
    check_usage_error(["next", "--count=0"], d, "'0' is not a positive")
    check_usage_error(["next", "--count", "-3"], d, "not a positive integer")
    check_usage_error(["next", "--count", "12x"], d, "not a positive integer")
    check_usage_error(["next", "--count", " 12"], d, "not a positive integer")
    check_usage_error(["next", "--count", "99999999999999999999"], d,
                      "too large")
    check_usage_error(["next", "--count="], d, "--count")
    check_usage_error(["next", "--count"], d, "--count needs a value")
    check_usage_error(["next", "--node", "1024"], d,
                      "'1024' is out of range 0..1023")
    check_usage_error(["next", "--layout", "instagram", "--node", "8192"], d,
                      "0..8191")
    check_usage_error(["next", "--node", "x"], d, "--node")
    check_usage_error(["next", "--layout", "nosuch"], d, "--layout")
    check_usage_error(["next", "--layout", "time=42,node=10,seq=12"], d,
                      "--layout")
    check_usage_error(["next", "--bogus"], d, "unknown option '--bogus'")
    check_usage_error(["next", "-x"], d, "unknown option '-x'")
    check_usage_error(["next", "5"], d, "unexpected argument '5'")
    check_usage_error(["next", "--no-high-water=1"], d, "takes no value")
    check_usage_error(["next", "--no-high-water", "--data-dir", d], d,
                      "--data-dir")
    # Static node 0 with nothing shared: its high-water file is all that
    # keeps two runs apart, so it cannot be left out.
    check_usage_error(["next", "--store", "none", "--no-high-water"], d,
                      "--no-high-water")
    check_usage_error(["next", "--node", "3", "--coordinator",
                       "zk://127.0.0.1:1/x"], d, "node = 3")
    check_usage_error(["next", "--store", "multi:sqlite:a.db|sqlite:b.db"],
                      d, "multi:")
    check_usage_error(["next", "--advertise", "nohost"], d, "advertise")
    check_usage_error(["next", "--config", os.path.join(d, "none.conf")], d,
                      "none.conf")
    check_usage_error(["next", "--segment", "a", "--layout", "twitter"], d,
                      "--segment")
    check_usage_error(["next", "--segment", "a", "--layout-change"], d,
                      "--segment")
    check_usage_error(["next", "--segment", "x" * 129], d, "--segment")
    # decode
    check_usage_error(["decode", "--layout", "nosuch", "1"], d, "--layout")
    check_usage_error(["decode", "--nosuch"], d, "unknown option")
    # layouts
    check_usage_error(["layouts", "extra"], d, "unexpected argument")
    check_usage_error(["layouts", "--json=yes"], d, "takes no value")
    # tag
    check_usage_error(["tag"], d, "missing subcommand")
    check_usage_error(["tag", "nosuch"], d, "unknown subcommand 'nosuch'")
    check_usage_error(["tag", "create"], d, "missing NAME")
    check_usage_error(["tag", "create", "a", "b"], d, "unexpected argument")
    check_usage_error(["tag", "create", "a", "--step", "0"], d, "--step")
    check_usage_error(["tag", "create", "a", "--step", "2147483648"], d,
                      "out of range 1..2147483647")
    check_usage_error(["tag", "create", "a", "--start", "0"], d, "--start")
    check_usage_error(["tag", "create", "x" * 129], d, "NAME")
    check_usage_error(["tag", "create", "a", "--description", "d" * 257], d,
                      "--description")
    check_usage_error(["tag", "list", "x"], d, "unexpected argument")
    check_usage_error(["tag", "get"], d, "missing NAME")
    check_usage_error(["tag", "set-step", "a"], d, "missing")
    check_usage_error(["tag", "set-step", "a", "abc"], d,
                      "N: 'abc' is not an integer")
    check_usage_error(["tag", "set-step", "a", "0"], d, "out of range")
    check_usage_error(["tag", "delete"], d, "missing NAME")
    check_usage_error(["tag", "delete", "a", "--store"], d, "needs a value")
    # bench
    check_usage_error(["bench", "--seconds", "0"], d, "--seconds")
    check_usage_error(["bench", "--reps", "abc"], d, "--reps")
    check_usage_error(["bench", "--layout", "nosuch"], d, "--layout")
    check_usage_error(["bench", "now"], d, "unexpected argument")
    check(os.listdir(d) == [], "a usage error wrote files: %s" % os.listdir(d))
    shutil.rmtree(d)


# ---------------------------------------------------------------- next

def test_next_prints_unique_increasing_ids():
    d = ft.store_dir()
    r = frond(["next"], d)
    check(r.returncode == 0 and len(ids_of(r.stdout)) == 1,
          "next: exit %d, %r" % (r.returncode, r.stdout))
    r = frond(["next", "--count", "100000"], d)
    check(r.returncode == 0 and r.stderr == "", "next: %r" % r.stderr)
    ids = ids_of(r.stdout)
    check(len(ids) == 100000, "want 100000 IDs, got %d" % len(ids))
    check_increasing(ids, "next --count 100000")
    now = int(time.time() * 1000)
    first_ms = (ids[0] >> 22) + FROND_EPOCH
    check(abs(first_ms - now) < 60000,
          "ID time %d is not near now %d" % (first_ms, now))
    check(all((i >> 12) & 1023 == 0 for i in ids[:1000]), "node is not 0")
    # Node 0 is leased in the default store, ./frond.db, and given back.
    check(os.path.exists(os.path.join(d, "frond.db")),
          "no node ID lease in ./frond.db: %s" % os.listdir(d))
    r = frond(["node", "list", "--json"], d)
    check(r.returncode == 0, "node list: %r" % r.stderr)
    rows = json.loads(r.stdout)
    check(len(rows) == 1 and rows[0]["node"] == 0 and not rows[0]["live"]
          and rows[0]["fence_ms"] >= (ids[-1] >> 22) + FROND_EPOCH,
          "node 0 not released with its high water: %r" % rows)
    shutil.rmtree(d)


def test_next_makes_no_store():
    """frond next run where the store is not (a relative store read from
    another directory than the servers') is refused, naming the absolute
    path and the ways on, and makes no file: a new store would lease node
    0 again, perhaps a running server's. frond check says the same."""
    home, srv = ft.tempdir(), ft.tempdir()
    db = os.path.join(home, "frond.db")
    for args in (["next"], ["next", "--count", "5", "--node", "3"],
                 ["next", "--segment", "orders"],
                 ["next", "--format", "base62"],
                 ["next", "--coordinator", "lease+sqlite:leases.db"]):
        r = frond(args, home)
        check_failure(r, "CONFIG", " ".join(args))
        want = db if "--coordinator" not in args else \
            os.path.join(home, "leases.db")
        for w in (want, "relative to the working directory", "--store",
                  "--store none", "frond tag create",
                  "no server on another store knows of"):
            check(w in r.stderr, "%s: the refusal does not name %r: %s"
                  % (args, w, r.stderr))
        check(r.stdout == "", "%s printed %r" % (args, r.stdout))
        check(not os.path.exists(db) and
              not os.path.exists(os.path.join(home, "leases.db")),
              "%s made a store: %r" % (args, os.listdir(home)))
    # frond node reads and sets what a store holds: it makes none either
    # (a list run here would leave a store a later next would lease in).
    for args in (["node", "list"], ["node", "layout", "--set", "twitter"]):
        r = frond(args, home)
        check_failure(r, "CONFIG", " ".join(args))
        check(db in r.stderr and "makes no store" in r.stderr, r.stderr)
        check(not os.path.exists(db), "%s made a store" % args)
    # A multi: store of SQLite members: each member that is not there.
    r = frond(["next", "--segment", "t", "--store",
               "multi:sqlite:m1.db|sqlite:m2.db"], home)
    check_failure(r, "CONFIG", "next on a multi: store")
    check(os.path.join(home, "m1.db") in r.stderr, r.stderr)
    check(not os.path.exists(os.path.join(home, "m1.db")) and
          not os.path.exists(os.path.join(home, "m2.db")),
          "next made a multi: store's members: %r" % os.listdir(home))
    # An absolute path that is not there either.
    r = frond(["next", "--store", "sqlite://" + os.path.join(srv, "x.db")],
              home)
    check_failure(r, "CONFIG", "next --store sqlite:///...")
    check(os.path.join(srv, "x.db") in r.stderr and
          "relative" not in r.stderr, r.stderr)
    # frond check, run as next would, says where the file would be.
    r = frond(["check", "--listen", "127.0.0.1:%d" % ft.free_port(),
               "--resp-listen", "off"], home)
    check(re.search(r"^ok +store .*no file yet, %s .*frond next refuses"
                    % re.escape(db), r.stdout, re.M), r.stdout)
    # The ways on: a one-off static node with its high-water file; the
    # store named from anywhere; the store made first.
    r = frond(["next", "--store", "none"], home)
    check(r.returncode == 0 and len(ids_of(r.stdout)) == 1, r.stderr)
    r = frond(["tag", "create", "orders"], srv)
    check(r.returncode == 0, r.stderr)
    r = frond(["next", "--count", "3", "--store",
               "sqlite://" + os.path.join(srv, "frond.db")], home)
    check(r.returncode == 0 and len(ids_of(r.stdout)) == 3, r.stderr)
    r = frond(["next", "--segment", "orders"], srv)
    check(r.returncode == 0 and ids_of(r.stdout) == [1], r.stderr)
    check(not os.path.exists(db), "a store was made in %s" % home)
    shutil.rmtree(home)
    shutil.rmtree(srv)


def test_next_node_and_layout():
    d = ft.store_dir()
    dirs = [d]

    def fresh():
        """A directory of its own: its store records one layout."""
        dirs.append(ft.store_dir())
        return dirs[-1]
    r = frond(["next", "--layout", "twitter", "--node", "37", "--count",
               "5000"], d)
    check(r.returncode == 0, "next --node 37: %r" % r.stderr)
    ids = ids_of(r.stdout)
    check(len(ids) == 5000, "want 5000 IDs")
    check_increasing(ids, "next --node 37")
    check(all((i >> 12) & 1023 == 37 for i in ids), "node field is not 37")
    check(os.path.exists(os.path.join(d, "frond-node-37.hw")),
          "the high-water file is not named after the node")
    r = frond(["decode", "--layout", "twitter", str(ids[0])], d)
    f = json.loads(r.stdout)
    check(f["node"] == 37 and f["datacenter"] == 1 and f["worker"] == 5,
          "decode of a node-37 ID: %r" % f)
    # Sonyflake: 10 ms units; the decoded time is a multiple of 10 ms.
    # The directory's store now records twitter: another layout there is
    # refused, naming both.
    r = frond(["next", "--layout", "sonyflake"], d)
    check_failure(r, "LAYOUT_MISMATCH", "another layout in the same store")
    check("'sonyflake'" in r.stderr and "'twitter'" in r.stderr,
          "the refusal does not name both layouts: %r" % r.stderr)
    s = fresh()
    r = frond(["next", "--layout", "sonyflake", "--node", "65535",
               "--no-high-water"], s)
    check(r.returncode == 0, "sonyflake: %r" % r.stderr)
    f = json.loads(frond(["decode", "--layout", "sonyflake",
                          r.stdout.strip()], d).stdout)
    check(f["node"] == 65535 and f["unix_ms"] % 10 == 0,
          "sonyflake decode: %r" % f)
    # Past what borrowing allows (25,600 IDs/s and 1 s ahead for
    # sonyflake), next waits for the clock instead of failing.
    r = frond(["next", "--layout", "sonyflake", "--count", "40000",
               "--no-high-water"], s)
    check(r.returncode == 0, "sonyflake 40000: %r" % r.stderr)
    ids = ids_of(r.stdout)
    check(len(ids) == 40000, "sonyflake: %d IDs" % len(ids))
    check_increasing(ids, "sonyflake")
    # An exhausted layout refuses rather than wrapping.
    r = frond(["next", "--layout", "baidu", "--no-high-water"], fresh())
    check_failure(r, "TIME_EXHAUSTED", "next --layout baidu")
    check(r.stdout == "", "baidu printed IDs: %r" % r.stdout)
    # A layout with less than a year left issues, and warns: 2^33 ms is
    # 99.4 days, 2^35 ms 397.7 days.
    epoch = int(time.time() * 1000) - 30 * 86400000
    for bits, warns in ((33, True), (35, False)):
        spec = "time=%d,node=10,seq=%d,unit=1ms,epoch=%d" % (bits, 53 - bits,
                                                            epoch)
        r = frond(["next", "--layout", spec, "--no-high-water"], fresh())
        check(r.returncode == 0 and len(ids_of(r.stdout)) == 1,
              "%s: %r" % (spec, r.stderr))
        if warns:
            m = re.fullmatch(r"frond: warn: layout 'custom' \(time=33,[^)]*\) "
                             r"runs out of time bits on \S+, in (\d+) days: "
                             r".*TIME_EXHAUSTED.*\n", r.stderr)
            check(m and 68 <= int(m.group(1)) <= 70,
                  "no warning for a layout with 69 days left: %r" % r.stderr)
        else:
            check(r.stderr == "", "a layout with 367 days left warned: %r"
                  % r.stderr)
    for x in dirs:
        shutil.rmtree(x)


def node_files(d):
    return sorted(f for f in os.listdir(d) if f.startswith("frond-node-"))


def test_data_dir_and_no_high_water():
    d, data = ft.store_dir(), ft.tempdir()
    # The lease's node cache file goes to the data directory; the lease
    # itself to the store.
    r = frond(["next", "--data-dir", data], d)
    check(r.returncode == 0, "--data-dir: %r" % r.stderr)
    check([f for f in node_files(data) if f.endswith(".cache")],
          "--data-dir: no node cache file in %s" % os.listdir(data))
    check(node_files(d) == [], "node files outside the data directory: %s"
          % os.listdir(d))
    # A static node ID keeps its high-water file there too.
    other = ft.tempdir()
    r = frond(["next", "--node", "3"], d, env=clean_env(FROND_DATA_DIR=other))
    check(r.returncode == 0, "FROND_DATA_DIR: %r" % r.stderr)
    check(os.path.exists(os.path.join(other, "frond-node-3.hw")),
          "FROND_DATA_DIR is not honoured: %s" % os.listdir(other))
    check(node_files(d) == [], "node files outside the data directory: %s"
          % os.listdir(d))
    # --no-high-water: no file in the data directory; the store keeps the
    # fence, so a run after it still starts above it.
    e = ft.store_dir()
    r = frond(["next", "--no-high-water", "--count", "10"], e)
    check(r.returncode == 0 and len(ids_of(r.stdout)) == 10,
          "--no-high-water: %r" % r.stderr)
    check(node_files(e) == [], "--no-high-water wrote %s" % node_files(e))
    last = ids_of(r.stdout)[-1]
    # The old spelling is still accepted.
    r = frond(["next", "--no-highwater", "--count", "3"], e)
    check(r.returncode == 0 and len(ids_of(r.stdout)) == 3
          and node_files(e) == [], "--no-highwater: %r" % r.stderr)
    check(ids_of(r.stdout)[0] > last, "--no-high-water repeated IDs")
    shutil.rmtree(e)
    r = frond(["next", "--data-dir", os.path.join(d, "missing", "dir")], d)
    check(r.returncode == 1 and r.stderr.startswith("frond: ")
          and r.stdout == "", "missing data dir: %d %r"
          % (r.returncode, r.stderr))
    for x in (d, data, other):
        shutil.rmtree(x)


def test_layout_change_asked():
    """A layout other than the recorded one is refused, naming both and
    what the switch would cost; nothing changes, so the recorded one still
    runs. Asked for (--layout-change), the switch happens above every old
    ID, and then the old layout is the one refused. Both where the record
    is the store's (the default lease) and the data directory's (a static
    node ID, --store none)."""
    for how in ([], ["--store", "none"]):
        d = ft.store_dir()
        r = frond(["next", "--count", "10"] + how, d)
        check(r.returncode == 0, "%s: first run: %r" % (how, r.stderr))
        old = ids_of(r.stdout)
        r = frond(["next", "--layout", "twitter"] + how, d)
        check_failure(r, "LAYOUT_MISMATCH", "%s: another layout" % how)
        for w in ("'twitter'", "'frond' would be locked out until",
                  "days", "--layout-change"):
            check(w in r.stderr, "%s: the refusal lacks %r: %r"
                  % (how, w, r.stderr))
        r = frond(["next", "--count", "10"] + how, d)
        check(r.returncode == 0 and ids_of(r.stdout)[0] > old[-1],
              "%s: the recorded layout after a refusal: %r" % (how, r.stderr))
        old = ids_of(r.stdout)
        r = frond(["next", "--count", "10", "--layout", "twitter",
                   "--layout-change"] + how, d)
        check(r.returncode == 0, "%s: the switch asked for: %r"
              % (how, r.stderr))
        check("locked out" in r.stderr, "%s: no warning: %r" % (how, r.stderr))
        new = ids_of(r.stdout)
        check(new[0] > old[-1], "%s: the switch went below the old IDs" % how)
        r = frond(["next"] + how, d)
        check_failure(r, "LAYOUT_MISMATCH", "%s: the old layout after the "
                      "switch" % how)
        # Asked for, it is still refused: frond's IDs pass twitter's only
        # in years.
        r = frond(["next", "--layout-change"] + how, d)
        check(r.returncode == 1 and r.stdout == "" and
              ("LAYOUT_INVALID" in r.stderr or "LAYOUT_MISMATCH" in r.stderr),
              "%s: switching back: %d %r" % (how, r.returncode, r.stderr))
        shutil.rmtree(d)


def test_runs_in_a_row_never_overlap():
    d = ft.store_dir()
    prev = -1
    for count in (200000, 1, 50000, 1000):
        r = frond(["next", "--count", str(count)], d)
        check(r.returncode == 0, "next: %r" % r.stderr)
        ids = ids_of(r.stdout)
        check(len(ids) == count, "want %d IDs" % count)
        check(ids[0] > prev, "run of %d starts at %d, not above %d"
              % (count, ids[0], prev))
        prev = ids[-1]
    shutil.rmtree(d)


def test_concurrent_runs_on_one_node():
    d = ft.store_dir()
    p = start(["next", "--count", "1000000000"], d)
    try:
        first = p.stdout.readline()
        check(re.fullmatch(r"[0-9]+\n", first), "first run: %r" % first)
        # A second run beside it gets a node ID of its own...
        r = frond(["next", "--count", "5"], d)
        check(r.returncode == 0 and len(ids_of(r.stdout)) == 5,
              "a second run beside it: %r" % r.stderr)
        check(all((i >> 12) & 1023 == 1 for i in ids_of(r.stdout)),
              "the second run is not node 1: %r" % r.stdout)
        # ...and node 0 typed by hand is refused, naming its holder.
        r = frond(["next", "--node", "0", "--count", "5"], d)
        check_failure(r, "NODE_IN_USE", "--node 0 beside the run on node 0")
        check("pid %d" % p.pid in r.stderr, "the holder is not named: %r"
              % r.stderr)
        check(r.stdout == "", "the refused run printed %r" % r.stdout)
        r = frond(["next", "--node", "1", "--count", "5"], d)
        check(r.returncode == 0 and len(ids_of(r.stdout)) == 5,
              "another node beside it: %r" % r.stderr)
        # SIGTERM stops the first run even while its pipe is full, closes
        # the generator cleanly and ends by the signal.
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=10)
        check(rc == -signal.SIGTERM, "SIGTERM: exit %r" % rc)
        rest = p.stdout.read()
        printed = ids_of(first + rest[:rest.rfind("\n") + 1])
        check_increasing(printed, "the interrupted run")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    t0 = time.monotonic()
    r = frond(["next", "--count", "1000"], d)
    took = time.monotonic() - t0
    check(r.returncode == 0, "after SIGTERM: %r" % r.stderr)
    check(ids_of(r.stdout)[0] > printed[-1],
          "the run after SIGTERM repeats IDs")
    check(took < 2.0, "a clean stop should let the next run start at once "
          "(took %.2fs)" % took)
    shutil.rmtree(d)


def test_closed_pipe_ends_quietly():
    d = ft.store_dir()
    p = start(["next", "--count", "1000000000"], d)
    line = p.stdout.readline()
    p.stdout.close()
    rc = p.wait(timeout=10)
    err = p.stderr.read()
    check(re.fullmatch(r"[0-9]+\n", line), "first line %r" % line)
    check(rc == -signal.SIGPIPE and err == "",
          "a closed pipe: exit %r, stderr %r" % (rc, err))
    r = frond(["next"], d)
    check(int(r.stdout) > int(line), "the next run repeats IDs")
    shutil.rmtree(d)


def kill9_rounds(d, layout, time_shift, rounds):
    """Start `frond next` at full speed, kill -9 it after 0.5 s of issuing,
    `rounds` times in one data dir, then restart once more. Every run must
    start above every ID printed before. Returns how far ahead of the wall
    clock (ms) each killed run's last ID was."""
    highest, aheads = -1, []
    for rnd in range(rounds):
        out_path = os.path.join(d, "run%d.txt" % rnd)
        with open(out_path, "w") as out:
            p = start(["next", "--count", "200000000"] + layout, d,
                      stdout=out)
            # After a kill the run first waits for the clock to pass the
            # reservation; give it 0.5 s of issuing, not of waiting.
            deadline = time.monotonic() + 30
            while os.path.getsize(out_path) == 0 and p.poll() is None:
                check(time.monotonic() < deadline, "round %d: no output" % rnd)
                time.sleep(0.01)
            time.sleep(0.5)
            killed_at = int(time.time() * 1000)
            p.kill()
            rc = p.wait(timeout=10)
        check(rc == -signal.SIGKILL, "kill -9: exit %r" % rc)
        with open(out_path) as f:
            text = f.read()
        text = text[:text.rfind("\n") + 1]  # a torn last line is not an ID
        ids = ids_of(text)
        check(len(ids) > 10000, "round %d: only %d IDs before the kill"
              % (rnd, len(ids)))
        check(ids[0] > highest, "round %d starts at or below an earlier ID"
              % rnd)
        check_increasing(ids, "killed run")
        highest = ids[-1]
        aheads.append((ids[-1] >> time_shift) + FROND_EPOCH - killed_at)
        print("     %s round %d: %d IDs, the last %+d ms from the kill"
              % (" ".join(layout) or "default", rnd, len(ids), aheads[-1]),
              flush=True)
        os.unlink(out_path)
    r = frond(["next", "--count", "1000"] + layout, d, timeout=60)
    check(r.returncode == 0, "restart after kill -9: %r" % r.stderr)
    ids = ids_of(r.stdout)
    check(len(ids) == 1000, "restart printed %d IDs" % len(ids))
    check(ids[0] > highest, "restart after kill -9 issued %d, not above %d"
          % (ids[0], highest))
    return aheads


def test_kill9_restart_never_repeats():
    """kill -9 while borrowing ahead at full speed, on a node ID of its own
    (static node 0, the high-water file alone: --store none): the restart
    must start above every ID the killed run printed."""
    d = ft.tempdir()
    kill9_rounds(d, ["--store", "none"], 22, 3)
    shutil.rmtree(d)
    # 256,000 IDs/s: any machine outruns it, so the killed runs have used
    # all their borrowing (IDs a full max_ahead in the future): the case
    # where a restart that forgot the reservation would repeat IDs at once.
    d = ft.tempdir()
    aheads = kill9_rounds(d, ["--store", "none", "--layout",
                              "time=43,node=12,seq=8"], 20, 2)
    check(max(aheads) > 500, "the killed runs did not borrow ahead (%r ms): "
          "the test does not test what it says" % aheads)
    shutil.rmtree(d)


def test_kill9_lease():
    """kill -9 of a run on a leased node ID: its lease stays live, so the
    next run takes another node ID at once; once the dead lease has run
    out, a later run gets the node ID back and starts above every ID the
    killed run printed. No ID twice."""
    d = ft.store_dir()
    lease = ["--coordinator", "lease+sqlite:frond.db?lease_ms=3000"]
    out_path = os.path.join(d, "killed.txt")
    with open(out_path, "w") as out:
        p = start(["next", "--count", "200000000"] + lease, d, stdout=out)
        deadline = time.monotonic() + 30
        while os.path.getsize(out_path) < 100000 and p.poll() is None:
            check(time.monotonic() < deadline, "the run printed nothing")
            time.sleep(0.01)
        p.kill()
        check(p.wait(timeout=10) == -signal.SIGKILL, "kill -9")
    with open(out_path) as f:
        text = f.read()
    killed = ids_of(text[:text.rfind("\n") + 1])
    check(all((i >> 12) & 1023 == 0 for i in killed), "the run was not node 0")
    r = frond(["next", "--count", "1000"] + lease, d)
    check(r.returncode == 0, "right after kill -9: %r" % r.stderr)
    beside = ids_of(r.stdout)
    check(all((i >> 12) & 1023 == 1 for i in beside),
          "the dead run's node 0 was taken while its lease was live")
    # The dead lease runs out within 3 s; node 0 comes back above it.
    deadline = time.monotonic() + 30
    while True:
        r = frond(["next", "--count", "1000"] + lease, d)
        check(r.returncode == 0, "later: %r" % r.stderr)
        later = ids_of(r.stdout)
        if (later[0] >> 12) & 1023 == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    check((later[0] >> 12) & 1023 == 0, "node 0 never came back")
    check(later[0] > max(killed), "node 0 came back at or below the killed "
          "run's IDs: %d <= %d" % (later[0], max(killed)))
    every = killed + beside + later
    check(len(set(every)) == len(every), "IDs issued twice")
    shutil.rmtree(d)


if __name__ == "__main__":
    ft.main([
        test_version_and_help,
        test_bad_arguments_exit_2,
        test_next_prints_unique_increasing_ids,
        test_next_makes_no_store,
        test_next_node_and_layout,
        test_data_dir_and_no_high_water,
        test_layout_change_asked,
        test_runs_in_a_row_never_overlap,
        test_concurrent_runs_on_one_node,
        test_closed_pipe_ends_quietly,
        test_kill9_restart_never_repeats,
        test_kill9_lease,
    ])
