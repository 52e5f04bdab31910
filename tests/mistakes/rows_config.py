# SPDX-License-Identifier: Apache-2.0
"""
rows_config.py -- configuration mistakes: a misspelt variable, a key given
twice, a configuration `--print-config` passes and `serve` refuses, a
store that can never work, and `frond check` before a start.

A start that should be refused is watched until it exits or listens: a
server that listens on a configuration it should have refused fails the
row, as does one that neither exits nor listens (retrying for ever).
"""
import json
import os
import time

import common
from common import check, row

import frondtest as ft

TAG = "orders"


def start_outcome(proc, port, timeout=30):
    """Until the process exits ("exited") or its HTTP port answers /livez
    ("listening"); "running" when neither happened within timeout (a
    start that retries for ever)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            return "exited"
        try:
            if proc.get("/livez", timeout=2)[0] == 200:
                return "listening"
        except OSError:
            pass
        time.sleep(0.05)
    return "running"


def must_refuse_start(run, cwd, args, code, *words, env=None, timeout=30):
    """`frond serve` with args must exit non-zero, quickly, with code and
    words; listening or retrying fails the row."""
    s = run.serve(cwd, args, env=env, wait=False)
    t0 = time.monotonic()
    got = start_outcome(s, s.port, timeout)
    check(got == "exited", "frond serve %s: %s after %.1fs instead of "
          "exiting:\n%s" % (" ".join(args), got, time.monotonic() - t0,
                            s.output()[-2000:]))
    run.refused(s, code, *words)
    return s


def pg_password_role(run, pg, role, password):
    """A role that logs in with a password (scram) over TCP, the rest of
    the server staying "trust"; pg.sh's cluster lives in pg.dir/data."""
    pg.sql("CREATE ROLE %s LOGIN PASSWORD '%s'" % (role, password))
    pg.sql("GRANT ALL ON DATABASE postgres TO %s" % role)
    pg.sql("GRANT ALL ON SCHEMA public TO %s" % role)
    hba = os.path.join(pg.dir, "data", "pg_hba.conf")
    with open(hba) as f:
        old = f.read()
    with open(hba, "w") as f:
        f.write("host all %s 127.0.0.1/32 scram-sha-256\n" % role + old)
    pg.sql("SELECT pg_reload_conf()")
    host = pg.uri.split("@", 1)[1]
    return "postgresql://%s:%%s@%s" % (role, host)


@row("config-misspelt-store-variable",
     "two nodes meant to share PostgreSQL, started with FROND_STORE_URI "
     "(FROND_STORE misspelt): each fell back to its own SQLite file")
def misspelt_store_variable(run):
    pg = run.postgres()
    env = {"FROND_STORE_URI": pg.uri}
    lists = []
    for i in range(2):
        d = run.subdir("node%d" % i)
        r = run.frond(["tag", "create", TAG, "--step", "1000"], d, env=env)
        if r.returncode != 0:
            run.refused(r, "CONFIG", "FROND_STORE_URI", "FROND_STORE")
            s = must_refuse_start(run, d, [], "CONFIG", "FROND_STORE_URI",
                                  "did you mean FROND_STORE?", env=env)
            continue
        s = run.serve(d, ["--node", str(i)], env=env)
        s.wait_ready()
        lists.append(s.ids("/v1/segment/%s" % TAG, 3000))
    if lists:
        run.unique(lists, "segment IDs of tag %s" % TAG)


@row("config-key-twice",
     "a configuration file giving store twice (and format.orders twice): "
     "the last line won silently")
def key_twice(run):
    d = run.subdir("node")
    conf = os.path.join(d, "frond.conf")
    with open(conf, "w") as f:
        f.write("# shared store\nstore = sqlite:shared.db\nnode = 1\n\n"
                "# later, someone's local test\nstore = sqlite:local.db\n")
    must_refuse_start(run, d, ["--config", conf], "CONFIG", "store",
                      "line 2", "line 6")
    with open(conf, "w") as f:
        f.write("format.orders = order:digits=12\n"
                "format.orders = order:digits=14\n")
    must_refuse_start(run, d, ["--config", conf], "CONFIG", "format.orders",
                      "line 1", "line 2")


def print_config_refuses(run, args, code, *words):
    d = run.subdir("print")
    r = run.frond(["serve", "--print-config"] + args, d)
    run.refused(r, code, *words)
    # And the start itself refuses with the same code.
    must_refuse_start(run, d, args, code, *words)


@row("config-print-bad-store-uri",
     "--print-config on a store URI that can never work")
def print_bad_store_uri(run):
    print_config_refuses(run, ["--store", "postgres:/db.example/frond"],
                         "STORE_URI", "postgres:/db.example/frond")


@row("config-print-bad-layout",
     "--print-config on a layout of 64 bits")
def print_bad_layout(run):
    print_config_refuses(run, ["--layout", "time=42,node=10,seq=12"],
                         "LAYOUT_INVALID", "time 42", "64")


@row("config-print-wildcard-no-token",
     "--print-config on listen = 0.0.0.0 without an admin token")
def print_wildcard_no_token(run):
    d = run.subdir("print")
    port = ft.free_port()
    r = run.frond(["serve", "--print-config", "--listen",
                   "0.0.0.0:%d" % port, "--resp-listen", "off"], d)
    run.refused(r, "INVAL", "admin_token", "0.0.0.0:%d" % port)


@row("store-sqlite-missing-directory",
     "a SQLite store in a directory that does not exist: retried every 3 s "
     "for ever, as if the database were down")
def sqlite_missing_directory(run):
    d = run.subdir("node")
    missing = os.path.join(run.dir, "no-such-dir", "frond.db")
    must_refuse_start(run, d, ["--store", "sqlite://" + missing],
                      "STORE_PERMANENT", missing, "unable to open",
                      "does not exist")


@row("store-pg-unknown-database",
     "a PostgreSQL store naming a database that does not exist")
def pg_unknown_database(run):
    pg = run.postgres()
    d = run.subdir("node")
    uri = pg.uri.rsplit("/", 1)[0] + "/no_such_db"
    must_refuse_start(run, d, ["--store", uri], "STORE_PERMANENT",
                      "3D000", "no_such_db")


@row("store-pg-bad-password",
     "a PostgreSQL store with a wrong password")
def pg_bad_password(run):
    pg = run.postgres()
    d = run.subdir("node")
    uri = pg_password_role(run, pg, "frond_pw", "right")
    # The right password works, so that the refusal below is the password's.
    run.ok(["tag", "create", TAG, "--store", uri % "right"], d)
    s = must_refuse_start(run, d, ["--store", uri % "wrong"],
                          "STORE_PERMANENT", "28P01", "frond_pw")
    check("wrong" not in s.output(), "the password is shown:\n%s" %
          s.output())


@row("store-mysql-unknown-database",
     "a MariaDB store naming a database that does not exist")
def mysql_unknown_database(run):
    db = run.mariadb()
    d = run.subdir("node")
    must_refuse_start(run, d, ["--store", "mysql://root@127.0.0.1:%d/nope"
                               % db.port], "STORE_PERMANENT", "1049")


@row("store-mysql-bad-password",
     "a MariaDB store with a wrong password")
def mysql_bad_password(run):
    db = run.mariadb()
    d = run.subdir("node")
    db.sql("CREATE USER 'frond_pw'@'%' IDENTIFIED BY 'right'; "
           "GRANT ALL ON frond.* TO 'frond_pw'@'%'")
    uri = "mysql://frond_pw:%%s@127.0.0.1:%d/frond" % db.port
    run.ok(["tag", "create", TAG, "--store", uri % "right"], d)
    s = must_refuse_start(run, d, ["--store", uri % "wrong"],
                          "STORE_PERMANENT", "1045", "frond_pw")
    check("wrong" not in s.output(), "the password is shown:\n%s" %
          s.output())


# ---- frond check

def check_cmd(run, cwd, args, env=None):
    return run.frond(["check"] + list(args), cwd, env=env)


@row("check-good-configuration",
     "frond check before starting a node on a good configuration: a "
     "shared PostgreSQL store and a lease coordinator")
def check_good(run):
    pg = run.postgres()
    d = run.subdir("node")
    port = ft.free_port()
    args = ["--store", pg.uri, "--coordinator", "lease+" + pg.uri,
            "--listen", "127.0.0.1:%d" % port, "--resp-listen", "off"]
    r = check_cmd(run, d, args)
    check(r.returncode == 0, "frond check refused a good configuration "
          "(exit %d):\n%s" % (r.returncode, r.stdout + r.stderr))
    for what in ("config", "store", "coordinator", "layout", "clock",
                 "node"):
        check("ok   %s" % what in r.stdout or "warn %s" % what in r.stdout,
              "frond check has no line for %s:\n%s" % (what, r.stdout))
    # Read only: it claimed nothing, so a node starts and takes node 0.
    s = run.serve(d, args[:4])
    s.wait_ready()
    ids = s.ids("/v1/snowflake", 1000)
    run.unique([ids], "snowflake IDs")
    check(all((x >> 12) & 1023 == 0 for x in ids), "the node after "
          "frond check is not node 0")


@row("check-bad-configurations",
     "frond check on each configuration a start refuses or that could "
     "repeat an ID: it must fail, naming why")
def check_bad(run):
    pg = run.postgres()
    d = run.subdir("node")
    conf = os.path.join(d, "twice.conf")
    with open(conf, "w") as f:
        f.write("store = sqlite:a.db\nstore = sqlite:b.db\n")
    missing = os.path.join(run.dir, "no-such-dir", "frond.db")
    pw = pg_password_role(run, pg, "frond_pw", "right")
    cases = [
        ([], {"FROND_STORE_URI": pg.uri}, "CONFIG",
         ["FROND_STORE_URI", "FROND_STORE"]),
        (["--config", conf], None, "CONFIG", ["line 1", "line 2"]),
        (["--store", "postgres:/x"], None, "STORE_URI", []),
        (["--layout", "time=42,node=10,seq=12"], None, "LAYOUT_INVALID", []),
        (["--listen", "0.0.0.0:%d" % ft.free_port()], None, "INVAL",
         ["admin_token"]),
        (["--store", "sqlite://" + missing], None, "STORE_PERMANENT",
         ["does not exist"]),
        (["--store", pw % "wrong"], None, "STORE_PERMANENT", ["28P01"]),
    ]
    for args, env, code, words in cases:
        r = check_cmd(run, d, args + ["--resp-listen", "off"], env=env)
        run.refused(r, code, "FAIL", *words)
    # The fleet's layout differs from this node's.
    lease = "lease+" + pg.uri
    s = run.serve(d, ["--coordinator", lease, "--layout", "twitter",
                      "--store", "none"])
    s.wait_ready()
    s.stop()
    r = check_cmd(run, d, ["--coordinator", lease, "--store", "none",
                           "--resp-listen", "off"])
    run.refused(r, "LAYOUT_MISMATCH", "FAIL", "twitter")
    # A live process holds the node ID this one would use.
    s = run.serve(d, ["--node", "5", "--store", "none"])
    r = check_cmd(run, d, ["--node", "5", "--store", "none",
                           "--resp-listen", "off"])
    run.refused(r, "NODE_IN_USE", "FAIL", "5")
    s.stop()
    # The data directory's high-water file of node 6 was written under the
    # twitter layout, whose IDs today are far above any of frond's: a start
    # under frond has no ID above them for years.
    s = run.serve(d, ["--node", "6", "--store", "none", "--layout",
                      "twitter"])
    s.stop()
    # Another layout than the file's is refused unless asked for...
    r = check_cmd(run, d, ["--node", "6", "--store", "none",
                           "--resp-listen", "off"])
    run.refused(r, "LAYOUT_MISMATCH", "FAIL", "high-water", "--layout-change")
    must_refuse_start(run, d, ["--node", "6", "--store", "none"],
                      "LAYOUT_MISMATCH")
    # ... and asked for, it has no ID above the old ones for years.
    r = check_cmd(run, d, ["--node", "6", "--store", "none",
                           "--layout-change", "--resp-listen", "off"])
    run.refused(r, "LAYOUT_INVALID", "FAIL", "high-water")
    must_refuse_start(run, d, ["--node", "6", "--store", "none",
                               "--layout-change"], "LAYOUT_INVALID")
    r = check_cmd(run, d, ["--node", "5", "--store", "none", "--json",
                           "--resp-listen", "off"])
    check(r.returncode == 0, "check --json after the node stopped: %s"
          % (r.stdout + r.stderr))
    rows = json.loads(r.stdout)
    check(isinstance(rows, list) and all(
        x.get("status") in ("ok", "warn", "fail", "skip") for x in rows),
        "check --json: %r" % rows)


@row("frond-store-two-stores",
     "a C program's frond:// store lists two servers that serve two "
     "different stores (a staging server pasted beside production's), each "
     "with the tag orders")
def frond_store_two_stores(run):
    srvs, names = [], []
    for name in ("prod", "staging"):
        d = run.subdir(name)
        store = "sqlite://%s/ids.db" % d
        run.ok(["tag", "create", TAG, "--store", store], d)
        srvs.append(run.serve(d, ["--store", store], name=name))
    for s in srvs:
        st, body = s.get("/v1/layout")
        check(st == 200, "%s: %d %s" % (s.name, st, body[:300]))
        names.append(json.loads(body)["store"])
    check(names[0] != names[1], "two stores, one name: %r" % names)
    both = ",".join("127.0.0.1:%d" % s.port for s in srvs)
    d = run.subdir("client")
    lists = []
    for order in (both, ",".join(reversed(both.split(",")))):
        r = run.frond(["next", "--segment", TAG, "--count", "2000",
                       "--store", "frond://" + order], d)
        if r.returncode == 0:
            lists.append([int(x) for x in r.stdout.split()])
            continue
        run.refused(r, "STORE_MISMATCH", names[0], names[1])
    if lists:
        # Served from either store: both hand out 1, 2, 3, ...
        run.unique(lists + [srvs[0].ids("/v1/segment/%s" % TAG, 2000)],
                   "segment IDs")
        raise common.Failure("frond://%s served: nothing refused two stores"
                             % both)
