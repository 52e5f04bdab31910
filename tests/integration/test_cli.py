#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_cli.py -- the `frond` command as a user drives it: output formats,
exit codes, the high-water file across runs, kills and concurrent runs,
tag administration against a SQLite store, unknown FROND_* variables
refused, what `frond serve --print-config` checks, and `frond check`.

Every run happens in a fresh temporary directory with the FROND_*
environment variables cleared, so nothing outside the test leaks in.
"""
import json
import operator
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

TWITTER_EPOCH = 1288834974657
FROND_EPOCH = 1735689600000  # 2025-01-01T00:00:00Z
INT64_MAX = 2**63 - 1
ID_LINES = re.compile(r"(?:[0-9]{1,19}\n)*")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROND_")}
    env.update(extra)
    return env


def frond(args, cwd, env=None, input=None, timeout=120):
    return ft.run(args, cwd=cwd, env=env or clean_env(), input=input,
                  timeout=timeout)


def start(args, cwd, env=None, stdout=subprocess.PIPE):
    return subprocess.Popen([ft.FROND_BIN] + list(args), cwd=cwd,
                            env=env or clean_env(), stdout=stdout,
                            stderr=subprocess.PIPE, text=True)


def ids_of(text):
    """The IDs of `frond next` output: every line a decimal number."""
    if not ID_LINES.fullmatch(text):
        bad = next(x for x in text.split("\n")[:-1]
                   if not re.fullmatch(r"[0-9]{1,19}", x))
        raise ft.Failure("not an ID line: %r" % bad)
    return [int(x) for x in text.split()]


def check_increasing(ids, what):
    if all(map(operator.lt, ids, ids[1:])):
        return
    for a, b in zip(ids, ids[1:]):
        check(b > a, "%s: %d is followed by %d" % (what, a, b))


def check_usage_error(args, cwd, expect=None):
    """Bad arguments: exit 2, nothing on stdout, one line on stderr that
    names the command."""
    r = frond(args, cwd)
    check(r.returncode == 2, "frond %s: exit %d, want 2 (stderr %r)"
          % (" ".join(args), r.returncode, r.stderr))
    check(r.stdout == "", "frond %s printed %r" % (" ".join(args), r.stdout))
    lines = r.stderr.splitlines()
    check(len(lines) == 1 and lines[0].startswith("frond"),
          "frond %s: want one stderr line, got %r" % (" ".join(args), r.stderr))
    if expect is not None:
        check(expect in lines[0],
              "frond %s: want %r in %r" % (" ".join(args), expect, lines[0]))
    return lines[0]


def check_failure(r, code, what):
    """A runtime failure: exit 1 and 'frond: CODE: message'."""
    check(r.returncode == 1, "%s: exit %d, want 1 (stderr %r)"
          % (what, r.returncode, r.stderr))
    line = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    check(line.startswith("frond: %s: " % code) and len(line) > len(code) + 9,
          "%s: want 'frond: %s: message', got %r" % (what, code, r.stderr))


def compose(layout_epoch, shift_time, shift_node, unix_ms, node, seq):
    return ((unix_ms - layout_epoch) << shift_time) | (node << shift_node) | seq


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


# ---------------------------------------------------------------- decode

def test_decode_fields():
    d = ft.store_dir()
    ms = 1704067200000  # 2024-01-01T00:00:00.000Z
    id_ = compose(TWITTER_EPOCH, 22, 12, ms + 123, (3 << 5) | 7, 42)
    r = frond(["decode", "--layout", "twitter", str(id_)], d)
    check(r.returncode == 0, "decode: %r" % r.stderr)
    # The fields every front shows (/v1/decode, ID.DECODE), in this order.
    want = ('{"id":"%d","time":"2024-01-01T00:00:00.123Z","unix_ms":%d,'
            '"time_units":%d,"node":103,"datacenter":3,"worker":7,'
            '"sequence":42,"layout":"time=41,dc=5,worker=5,seq=12,unit=1ms,'
            'epoch=%d"}\n'
            % (id_, ms + 123, ms + 123 - TWITTER_EPOCH, TWITTER_EPOCH))
    check(r.stdout == want, "decode:\n got %r\nwant %r" % (r.stdout, want))
    # Unsplit node: datacenter 0, worker the node.
    id2 = compose(FROND_EPOCH, 22, 12, FROND_EPOCH + 86400000, 1023, 4095)
    r = frond(["decode", str(id2), "0", str(INT64_MAX)], d)
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and len(lines) == 3, "decode 3 IDs: %r" % r.stdout)
    f = json.loads(lines[0])
    check(f == {"id": str(id2), "time": "2025-01-02T00:00:00.000Z",
                "unix_ms": FROND_EPOCH + 86400000, "time_units": 86400000,
                "node": 1023, "datacenter": 0, "worker": 1023,
                "sequence": 4095,
                "layout": "time=41,node=10,seq=12,unit=1ms,epoch=%d"
                % FROND_EPOCH}, "decode frond: %r" % f)
    f = json.loads(lines[1])
    check(f["unix_ms"] == FROND_EPOCH and f["sequence"] == 0 and
          f["node"] == 0, "decode 0: %r" % f)
    f = json.loads(lines[2])
    check(f["id"] == str(INT64_MAX) and f["sequence"] == 4095,
          "decode max: %r" % f)
    # From stdin, one per line, same output as from the arguments.
    r2 = frond(["decode"], d, input="%d\n0\r\n%d\n" % (id2, INT64_MAX))
    check(r2.returncode == 0 and r2.stdout == r.stdout,
          "decode from stdin differs: %r" % r2.stdout)
    # A pipe from next: every ID decodes to now, node 0, increasing.
    ids = frond(["next", "--count", "100", "--no-high-water"], d).stdout
    r = frond(["decode"], d, input=ids)
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    check(len(rows) == 100 and [x["id"] for x in rows] == ids.split(),
          "next | decode lost IDs")
    shutil.rmtree(d)


def test_decode_malformed_ids():
    d = ft.tempdir()
    for bad, why in (("", "empty"), ("abc", "not a decimal"),
                     ("-1", "negative"), ("12x", "not a decimal"),
                     ("+5", "not a decimal"), ("0x10", "not a decimal"),
                     (" 7", "not a decimal"), ("1.5", "not a decimal"),
                     ("9223372036854775808", "too large"),
                     ("99999999999999999999999", "too large")):
        line = check_usage_error(["decode", "1", bad, "2"], d, why)
        check(line.startswith("frond decode: '%s'" % bad),
              "decode %r: %r" % (bad, line))
    # stdin: lines before the bad one are printed, then exit 2 naming it.
    r = frond(["decode"], d, input="1\n2\nx\n3\n")
    check(r.returncode == 2 and len(r.stdout.splitlines()) == 2,
          "stdin with a bad line: exit %d, %r" % (r.returncode, r.stdout))
    check(r.stderr.strip() == "frond decode: line 3: 'x' is not a decimal "
          "number", "stdin error: %r" % r.stderr)
    r = frond(["decode"], d, input="1\n\n2\n")
    check(r.returncode == 2 and "line 2" in r.stderr, "empty line: %r"
          % r.stderr)
    r = frond(["decode"], d, input="")
    check(r.returncode == 0 and r.stdout == "", "empty stdin: %r" % r.stdout)
    shutil.rmtree(d)


# ---------------------------------------------------------------- layouts

def test_layouts():
    d = ft.tempdir()
    r = frond(["layouts"], d)
    check(r.returncode == 0, "layouts: %r" % r.stderr)
    rows = {line.split()[0]: line for line in r.stdout.splitlines()[1:]}
    check(set(rows) >= {"frond", "twitter", "sonyflake", "baidu",
                        "instagram"}, "presets: %s" % sorted(rows))
    tw = rows["twitter"].split()
    check(tw[1:8] == ["41/5+5/12", "1ms", "2010-11-04T01:42:54.657Z",
                      "4096000", "1024", "69.7", "2080-07-10"],
          "twitter row: %r" % tw)
    check(rows["sonyflake"].split()[1:3] == ["39/16/8", "10ms"],
          "sonyflake row: %r" % rows["sonyflake"])
    check(rows["frond"].split()[1] == "41/10/12" and
          "EXHAUSTED" not in rows["frond"], "frond row: %r" % rows["frond"])
    check("2024-11-20" in rows["baidu"] and "EXHAUSTED" in rows["baidu"],
          "baidu row must say it ran out: %r" % rows["baidu"])
    r = frond(["layouts", "--json"], d)
    presets = json.loads(r.stdout)
    byname = {p["name"]: p for p in presets}
    check(len(presets) == len(rows), "--json has %d presets" % len(presets))
    check(byname["baidu"]["exhausted"] is True and
          byname["baidu"]["end"].startswith("2024-11-20"),
          "baidu json: %r" % byname["baidu"])
    check(byname["twitter"]["exhausted"] is False and
          byname["twitter"]["ids_per_second"] == 4096000 and
          byname["twitter"]["dc_bits"] == 5 and
          byname["twitter"]["epoch_ms"] == TWITTER_EPOCH,
          "twitter json: %r" % byname["twitter"])
    # Every spec printed is accepted back as --layout.
    for p in presets:
        r = frond(["decode", "--layout", p["spec"], "4194304"], d)
        check(r.returncode == 0, "spec %r not accepted: %r"
              % (p["spec"], r.stderr))
    shutil.rmtree(d)


# ---------------------------------------------------------------- tags

def test_tag_commands():
    d = ft.tempdir()
    store = "sqlite://" + os.path.join(d, "ids.db")
    s = ["--store", store]
    r = frond(["tag", "create", "order", "--step", "10", "--start", "100",
               "--description", 'orders "A" \\ B'] + s, d)
    check(r.returncode == 0, "tag create: %d %r" % (r.returncode, r.stderr))
    check_failure(frond(["tag", "create", "order"] + s, d), "TAG_EXISTS",
                  "creating a tag twice")
    r = frond(["tag", "create", "user", "--description=people"], d,
              env=clean_env(FROND_STORE=store))
    check(r.returncode == 0, "FROND_STORE: %r" % r.stderr)
    rows = json.loads(frond(["tag", "list", "--json"] + s, d).stdout)
    check([x["tag"] for x in rows] == ["order", "user"], "list: %r" % rows)
    check(rows[0]["max_id"] == 100 and rows[0]["step"] == 10 and
          rows[0]["description"] == 'orders "A" \\ B',
          "list --json order: %r" % rows[0])
    check(rows[1]["step"] == 2000 and rows[1]["max_id"] == 1,
          "default step/start: %r" % rows[1])
    table = frond(["tag", "list"] + s, d).stdout.splitlines()
    check(table[0].split()[:4] == ["tag", "max_id", "step", "description"]
          and table[1].split()[:3] == ["order", "100", "10"],
          "tag list table: %r" % table)
    got = json.loads(frond(["tag", "get", "order", "--json"] + s, d).stdout)
    check(got["tag"] == "order" and got["step"] == 10, "get: %r" % got)
    # Segment IDs: the first run starts at --start, runs never overlap.
    r = frond(["next", "--segment", "order", "--count", "25"] + s, d)
    check(r.returncode == 0, "next --segment: %r" % r.stderr)
    first = ids_of(r.stdout)
    check(first == list(range(100, 125)), "segment IDs: %r" % first)
    r = frond(["next", "--segment", "order", "--count", "5"], d,
              env=clean_env(FROND_STORE=store))
    second = ids_of(r.stdout)
    check(len(second) == 5 and second[0] > first[-1],
          "second run %r overlaps %r" % (second, first[-5:]))
    check_increasing(second, "second segment run")
    check_failure(frond(["next", "--segment", "nosuch"] + s, d),
                  "TAG_NOT_FOUND", "next --segment nosuch")
    r = frond(["tag", "set-step", "order", "500"] + s, d)
    check(r.returncode == 0, "set-step: %r" % r.stderr)
    got = json.loads(frond(["tag", "get", "order", "--json"] + s, d).stdout)
    check(got["step"] == 500, "set-step did not stick: %r" % got)
    check_failure(frond(["tag", "set-step", "nosuch", "5"] + s, d),
                  "TAG_NOT_FOUND", "set-step nosuch")
    check_failure(frond(["tag", "get", "nosuch"] + s, d), "TAG_NOT_FOUND",
                  "get nosuch")
    r = frond(["tag", "delete", "order"] + s, d)
    check(r.returncode == 0, "delete: %r" % r.stderr)
    check_failure(frond(["tag", "delete", "order"] + s, d), "TAG_NOT_FOUND",
                  "deleting twice")
    rows = json.loads(frond(["tag", "list", "--json"] + s, d).stdout)
    check([x["tag"] for x in rows] == ["user"], "after delete: %r" % rows)
    r = frond(["tag", "list", "--store", "nosuch://x"], d)
    check_failure(r, "STORE_URI", "an unknown store scheme")
    shutil.rmtree(d)


def display_width(text):
    """Columns text takes on a terminal, by Unicode's data (not wcwidth):
    wide and full-width characters 2, combining marks 0."""
    import unicodedata
    return sum(0 if unicodedata.combining(ch) else
               2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def test_tag_list_table():
    """A description with a newline stays on its row, escaped; names of
    several bytes a character, wide characters and combining marks are
    padded by the columns they take, so every column lines up."""
    d = ft.tempdir()
    s = ["--store", "sqlite://" + os.path.join(d, "ids.db")]
    for name, desc in (("order", "line one\nline two\ttab"),
                       ("\u8ba2\u5355", "\u4e2d\u6587"),
                       ("cafe\u0301", "caf\u00e9 \x01 \u0085"),
                       ("x", "-")):
        r = frond(["tag", "create", name, "--description", desc] + s, d)
        check(r.returncode == 0, "tag create %r: %r" % (name, r.stderr))
    out = frond(["tag", "list"] + s, d, env=clean_env(LANG="C",
                                                     LC_ALL="C")).stdout
    lines = out.splitlines()
    check(len(lines) == 5, "one line per tag and a header: %r" % lines)
    check("line one\\nline two\\ttab" in out and "\\x01" in out and
          "\\u{85}" in out, "control characters not escaped: %r" % out)
    # The right edge of max_id and step, and where description and
    # updated start, in display columns, are the same on every line.
    header = lines[0]
    cols = [display_width(header[:header.index(h) + len(h)])
            for h in ("max_id", "step")]
    starts = [display_width(header[:header.index(h)])
              for h in ("description", "updated")]
    for line in lines[1:]:
        m = re.match(r"^(.*?\S)( +)(\d+)( +)(\d+)  ", line)
        check(m, "row %r" % line)
        check([display_width(line[:m.end(3)]), display_width(line[:m.end(5)])]
              == cols, "numbers not aligned: %r in %r" % (line, lines))
        date = re.search(r"\d{4}-\d\d-\d\d", line)
        check(display_width(line[:date.start()]) == starts[1],
              "updated not aligned: %r in %r" % (line, lines))
        check(display_width(line[:m.end()]) == starts[0],
              "description not aligned: %r in %r" % (line, lines))
    got = frond(["tag", "get", "order"] + s, d).stdout
    check("description  line one\\nline two\\ttab\n" in got,
          "tag get: %r" % got)
    shutil.rmtree(d)


# ---------------------------------------------------------------- bench

def test_bench_table():
    """The figures bench promises, each beside its reference. Speed is not
    asserted here (benchmarks are not timed tests), only that every row is
    measured and the sustained run reaches the layout's bound region."""
    d = ft.tempdir()
    r = frond(["bench", "--seconds", "1", "--reps", "1"], d, timeout=300)
    check(r.returncode == 0, "bench: %d %r" % (r.returncode, r.stderr))
    rows = {}
    for line in r.stdout.splitlines():
        m = re.match(r"(next, 1 thread|next, 2 threads|next_n\(1000\), per ID|"
                     r"sustained next, 1 thread)\s+([0-9.]+)\s+\S+\s+"
                     r"([0-9.]+)\s+\S+\s+([0-9.]+)(x|% of bound)", line)
        if m:
            rows[m.group(1)] = [float(m.group(i)) for i in (2, 3, 4)]
    check(len(rows) == 4, "bench rows: %r" % r.stdout)
    for name, (ns, ref, ratio) in rows.items():
        check(ns > 0 and ref > 0 and ratio > 0, "%s: %r" % (name, rows[name]))
    check(abs(rows["sustained next, 1 thread"][1] - 1e9 / 4096000) < 0.01,
          "the sustained reference is not the frond layout's bound")
    check(os.listdir(d) == [], "bench wrote files: %s" % os.listdir(d))
    check_failure(frond(["bench", "--layout", "baidu"], d), "TIME_EXHAUSTED",
                  "bench on an exhausted layout")
    shutil.rmtree(d)


# ------------------------------------------------- the environment, check

def test_unknown_variable_refused():
    """A FROND_* variable Frond does not read stops every subcommand that
    reads FROND_* variables before it does anything, naming the nearest
    one it reads; --help still answers, and a subcommand that reads none
    runs."""
    d = ft.tempdir()
    cases = [(["tag", "create", "orders"], "FROND_STORE_URI", "FROND_STORE"),
             (["next", "--segment", "orders"], "FROND_STORE_URI",
              "FROND_STORE"),
             (["next"], "FROND_DATADIR", "FROND_DATA_DIR"),
             (["node", "list"], "FROND_COORDINATR", "FROND_COORDINATOR"),
             (["decode", "--format", "order:digits=12,key=1", "1"],
              "FROND_ORDER_KEYS", "FROND_ORDER_KEY")]
    for args, var, near in cases:
        r = frond(args, d, env=clean_env(**{var: "sqlite:elsewhere.db"}))
        check(r.returncode == 2 and r.stdout == "" and
              "CONFIG: unknown variable %s; did you mean %s?" % (var, near)
              in r.stderr,
              "frond %s with %s: exit %d: %r" % (" ".join(args), var,
                                                 r.returncode, r.stderr))
    check(os.listdir(d) == [], "refused runs left files: %r" % os.listdir(d))
    # frond check says it as its first check, and exits 1.
    r = frond(["check"], d, env=clean_env(FROND_STORE_URI="x"))
    check(r.returncode == 1 and re.match(
        r"FAIL config +CONFIG: unknown variable FROND_STORE_URI; did you "
        r"mean FROND_STORE\?", r.stdout), r.stdout)
    env = clean_env(FROND_STORE_URI="x")
    r = frond(["tag", "--help"], d, env=env)
    check(r.returncode == 0 and "usage" in r.stdout, r.stderr)
    r = frond(["layouts"], d, env=env)
    check(r.returncode == 0, "layouts reads no variable: %r" % r.stderr)
    # The variables Frond documents pass: the suites' own, test hooks.
    r = frond(["tag", "list", "--json"], d, env=clean_env(
        FROND_BIN="x", FROND_TEST_WEDGE_MS="1", FROND_CHAOS_KEEP="1",
        FROND_STORE="sqlite:ok.db"))
    check(r.returncode == 0, r.stderr)
    shutil.rmtree(d)


# What a start refuses before it reaches anything: (flags, code).
PREFLIGHT_REFUSALS = [
    (lambda port: ["--store", "mysql://h/"], "STORE_URI"),
    (lambda port: ["--node", "1024"], "NODE_RANGE"),
    (lambda port: ["--coordinator", "zk://h:1/a/b"], "INVAL"),
    (lambda port: ["--listen", "0.0.0.0:%d" % port], "INVAL"),
    (lambda port: ["--layout", "time=50,node=10,seq=12"], "LAYOUT_INVALID"),
    (lambda port: ["--format.x", "order:digits=12,key=1"], "KEY_INVALID"),
]


def test_print_config_checks():
    """--print-config prints the configuration, then runs the checks a
    start makes before it reaches anything: exit 1, naming the code, where
    the start refuses; 0 where it would go on."""
    d = ft.tempdir()
    base = ["--listen", "127.0.0.1:%d" % ft.free_port(), "--resp-listen",
            "off"]
    r = frond(["serve", "--print-config"] + base, d)
    check(r.returncode == 0 and r.stderr == "", r.stderr)
    for bad, code in PREFLIGHT_REFUSALS:
        r = frond(["serve", "--print-config"] + base + bad(1), d)
        check(r.returncode == 1 and "node = " in r.stdout and
              "frond serve: %s: " % code in r.stderr and
              "(a start would refuse it)" in r.stderr,
              "print-config %r: exit %d %r" % (bad(1), r.returncode,
                                               r.stderr))
        # The start refuses the same way.
        r = frond(["serve", "--store", "none", "--data-dir", d] + base +
                  bad(1), d, timeout=60)
        check(r.returncode == 1 and "cannot start: %s: " % code in r.stderr,
              "serve %r: exit %d %r" % (bad(1), r.returncode, r.stderr))
    check(os.listdir(d) == [], "--print-config made files: %r"
          % os.listdir(d))
    shutil.rmtree(d)


def test_check():
    """frond check: one line per check, exit 0 on a good configuration,
    1 with a FAIL naming why; --json; the configuration checks are those
    of --print-config, which exits 1 where a start would refuse."""
    d = ft.tempdir()
    port = ft.free_port()
    base = ["--listen", "127.0.0.1:%d" % port, "--resp-listen", "off"]
    r = frond(["check"] + base, d)
    check(r.returncode == 0, "check: exit %d: %s%s" % (r.returncode,
                                                      r.stdout, r.stderr))
    names = [line.split()[1] for line in r.stdout.splitlines()]
    check(names == ["config", "data_dir", "listen", "access", "store",
                    "coordinator",
                    "node", "layout", "high-water", "clock", "keys", "tags"],
          names)
    check(all(line.split()[0] in ("ok", "warn")
              for line in r.stdout.splitlines()), r.stdout)
    check(os.listdir(d) in ([], ["frond-node-0.hw.lock"]),
          "check made files: %r" % os.listdir(d))
    r = frond(["check", "--json"] + base, d)
    rows = json.loads(r.stdout)
    check(r.returncode == 0 and [x["check"] for x in rows] == names and
          all(set(x) == {"check", "status", "code", "message"} for x in rows),
          rows)
    # A FAIL: exit 1, its line names the code and why; later checks that
    # need it are skipped.
    missing = os.path.join(d, "no-such-dir", "f.db")
    r = frond(["check", "--store", "sqlite://" + missing] + base, d)
    check(r.returncode == 1 and re.search(
        r"^FAIL store +STORE_PERMANENT: .*does not exist", r.stdout, re.M),
        r.stdout)
    r = frond(["check", "--layout", "time=50,node=10,seq=12"] + base, d)
    check(r.returncode == 1 and re.search(r"^FAIL config +LAYOUT_INVALID: ",
                                          r.stdout, re.M) and
          re.search(r"^skip store ", r.stdout, re.M), r.stdout)
    r = frond(["check", "--json", "--data-dir", missing] + base, d)
    rows = {x["check"]: x for x in json.loads(r.stdout)}
    check(r.returncode == 1 and rows["data_dir"]["status"] == "fail" and
          rows["data_dir"]["code"] == "IO", rows)
    # The same configuration checks as --print-config.
    for bad, code in PREFLIGHT_REFUSALS:
        r = frond(["check"] + base + bad(port), d)
        check(r.returncode == 1 and re.search(r"^FAIL config +%s: " % code,
                                              r.stdout, re.M),
              "check %r: %s" % (bad(port), r.stdout))
    check_usage_error(["check", "--print-config"], d, "frond check")
    shutil.rmtree(d)


def test_check_shared_facts():
    """frond check reads the facts the fleet records in its store, and
    fails where a start, or the next allocation, would refuse: a key whose
    fingerprint differs from the record (KEY_MISMATCH), a tag loaded below
    the floor its deleted namesake left (TAG_FLOOR), a plain store URI on a
    database that became a multi: member (STORE_MEMBER). Reading writes
    nothing."""
    ft.need("sqlite3", "sqlite3")
    d = ft.store_dir()
    base = ["--listen", "127.0.0.1:%d" % ft.free_port(), "--resp-listen",
            "off"]
    keys = []
    for i, k in enumerate(("00" * 32, "11" * 32)):
        p = os.path.join(d, "k%d" % i)
        with open(p, "w") as f:
            f.write("1:%s\n" % k)
        os.chmod(p, 0o600)
        keys.append(p)
    spec = "order:digits=19,key=1"
    fmt = ["--format.o", spec]
    # Nothing recorded yet: ok, the first start records it.
    r = frond(["check"] + base + fmt + ["--order-key-file", keys[0]], d)
    check(r.returncode == 0 and re.search(r"^ok +keys .*1 recorded by the "
                                          r"first start", r.stdout, re.M),
          r.stdout)
    # Recorded where the node IDs are claimed (the lease in ./frond.db).
    r = frond(["next", "--format", spec, "--key-file", keys[0]], d)
    check(r.returncode == 0, r.stderr)
    r = frond(["check"] + base + fmt + ["--order-key-file", keys[0]], d)
    check(r.returncode == 0 and re.search(r"^ok +keys .*1 agree", r.stdout,
                                          re.M), r.stdout)
    r = frond(["check"] + base + fmt + ["--order-key-file", keys[1]], d)
    check(r.returncode == 1 and re.search(
        r"^FAIL keys +KEY_MISMATCH: format\.o: .*key\.order\.d19\.1\."
        r"snowflake", r.stdout, re.M), r.stdout)
    # A tag loaded by hand below the floor its deleted namesake left.
    store = "sqlite://%s/frond.db" % d
    for args in (["tag", "create", "orders", "--step", "10"],
                 ["next", "--segment", "orders", "--count", "25"],
                 ["tag", "delete", "orders"]):
        r = frond(args + ["--store", store], d)
        check(r.returncode == 0, "%s: %s" % (args, r.stderr))
    r = subprocess.run(["sqlite3", os.path.join(d, "frond.db"),
                        "INSERT INTO leaf_alloc (biz_tag, max_id, step) "
                        "VALUES ('orders', 1, 10)"], capture_output=True,
                       text=True)
    check(r.returncode == 0, r.stderr)
    r = frond(["check"] + base, d)
    check(r.returncode == 1 and re.search(
        r"^FAIL tags +TAG_FLOOR: 1 tag is below .*orders.* frond tag "
        r"advance orders --to \d+$", r.stdout, re.M), r.stdout)
    # A plain URI on a member of a multi: store.
    m = os.path.join(d, "m")
    os.mkdir(m)
    multi = "multi:sqlite://%s/a.db|sqlite://%s/b.db" % (m, m)
    r = frond(["tag", "create", "t", "--step", "10", "--store", multi], m)
    check(r.returncode == 0, r.stderr)
    r = frond(["check"] + base + ["--store", "sqlite://%s/a.db" % m,
                                  "--coordinator", "lease+sqlite://%s/n.db"
                                  % m], m)
    check(r.returncode == 1 and re.search(
        r"^FAIL tags +STORE_MEMBER: ", r.stdout, re.M), r.stdout)
    shutil.rmtree(d)


if __name__ == "__main__":
    ft.main([
        test_version_and_help,
        test_bad_arguments_exit_2,
        test_next_prints_unique_increasing_ids,
        test_next_node_and_layout,
        test_data_dir_and_no_high_water,
        test_layout_change_asked,
        test_runs_in_a_row_never_overlap,
        test_concurrent_runs_on_one_node,
        test_closed_pipe_ends_quietly,
        test_kill9_restart_never_repeats,
        test_kill9_lease,
        test_check_shared_facts,
        test_decode_fields,
        test_decode_malformed_ids,
        test_layouts,
        test_tag_commands,
        test_tag_list_table,
        test_bench_table,
        test_unknown_variable_refused,
        test_print_config_checks,
        test_check,
    ])
