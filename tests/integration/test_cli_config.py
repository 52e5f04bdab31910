#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_cli_config.py -- what the `frond` command makes of a configuration
before it starts anything: unknown FROND_* variables refused, what
`frond serve --print-config` checks, and `frond check`, its rows and the
shared facts it reads.

Every run happens in a fresh temporary directory with the FROND_*
environment variables cleared, so nothing outside the test leaks in.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from cli_common import check_usage_error, clean_env, frond  # noqa: E402




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
                    "node", "layout", "fleet", "high-water", "clock", "keys", "tags"],
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
        test_unknown_variable_refused,
        test_print_config_checks,
        test_check,
        test_check_shared_facts,
    ])
