# SPDX-License-Identifier: Apache-2.0
"""
rows_nodes.py -- node IDs: servers and commands that share a store or a
coordinator, started with default settings or with node IDs typed by hand.
"""
import os
import time

from common import Failure, check, ft, parallel, row, zookeeper


def up_or_exit(server, timeout=60):
    """Wait until a server started with wait=False either answers /livez
    (True) or exits (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not server.alive():
            return False
        try:
            if server.get("/livez", timeout=2)[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(0.05)
    raise Failure("%s neither listened nor exited within %ds:\n%s" %
                  (server.name, timeout, server.output()))


def printed_ids(text):
    """The IDs a `frond next` printed: its lines of digits only (its log
    holds stderr too)."""
    return [int(x) for x in text.split() if x.isdigit()]


def two_defaults(run, store):
    """Two servers with default settings (each in its own directory) on
    one store, loaded at the same time: every ID unique."""
    a = run.serve(run.subdir("a"), ["--store", store])
    b = run.serve(run.subdir("b"), ["--store", store])
    lists = parallel([lambda s=s: s.ids("/v1/snowflake", 20000)
                      for s in (a, b)])
    run.unique(lists)


@row("default-nodes-one-sqlite",
     "two servers with default settings, each in its own directory, on one "
     "SQLite store")
def default_nodes_one_sqlite(run):
    shared = run.subdir("shared")
    store = "--store=sqlite:///%s/frond.db" % shared
    a = run.serve(run.subdir("a"), [store])
    b = run.serve(run.subdir("b"), [store])
    lists = parallel([lambda s=s: s.ids("/v1/snowflake", 20000)
                      for s in (a, b)])
    run.unique(lists)


@row("default-nodes-one-postgres",
     "two servers with default settings, each in its own directory, on one "
     "PostgreSQL store")
def default_nodes_one_postgres(run):
    two_defaults(run, run.postgres().uri)


@row("default-nodes-one-mariadb",
     "two servers with default settings, each in its own directory, on one "
     "MariaDB store (no ZooKeeper anywhere)")
def default_nodes_one_mariadb(run):
    two_defaults(run, run.mariadb().uri)


@row("static-and-defaults-one-store",
     "a server with coordinator = static:3 and four with default settings "
     "on one store; then a server typed with node 0, which a default one "
     "holds")
def static_and_defaults_one_store(run):
    store = "--store=sqlite:///%s/frond.db" % run.subdir("shared")
    servers = [run.serve(run.subdir("static3"),
                         [store, "--coordinator", "static:3"])]
    for i in range(4):
        servers.append(run.serve(run.subdir("d%d" % i), [store]))
    lists = parallel([lambda s=s: s.ids("/v1/snowflake", 8000)
                      for s in servers])
    run.unique(lists)
    # The reverse: a node ID typed by hand that a default server holds.
    late = run.serve(run.subdir("node0"), [store, "--node", "0"], wait=False)
    if up_or_exit(late):
        more = parallel([lambda s=s: s.ids("/v1/snowflake", 8000)
                         for s in (servers[1], late)])
        run.unique(more)
        raise Failure("a server typed with node 0 started while a default "
                      "server held node 0")
    run.refused(late, "NODE_IN_USE", "node ID 0", "127.0.0.1:%d" %
                servers[1].port)


@row("static-twice-one-store",
     "a second `frond serve` with the same static:N as a running one, in "
     "its own directory, on one store")
def static_twice_one_store(run):
    store = "--store=sqlite:///%s/frond.db" % run.subdir("shared")
    a = run.serve(run.subdir("a"), [store, "--coordinator", "static:5"])
    b = run.serve(run.subdir("b"), [store, "--coordinator", "static:5"],
                  wait=False)
    if up_or_exit(b):
        lists = parallel([lambda s=s: s.ids("/v1/snowflake", 20000)
                          for s in (a, b)])
        run.unique(lists)
        raise Failure("the second static:5 server started")
    run.refused(b, "NODE_IN_USE", "node ID 5", "127.0.0.1:%d" % a.port,
                "pid %d" % a.p.pid)


@row("copied-config-second-host",
     "a configuration file with an explicit advertise copied to a second "
     "host: same identity, same settings, one store")
def copied_config_second_host(run):
    shared = run.subdir("shared")
    conf = os.path.join(run.dir, "frond.conf")
    with open(conf, "w") as f:
        f.write("# written once, copied to every host\n"
                "store = sqlite:///%s/frond.db\n"
                "advertise = 10.20.30.40:8080\n"
                "data_dir = .\n" % shared)
    hosts = []
    for h in ("host1", "host2"):
        hosts.append(run.serve(run.subdir(h), ["--config", conf],
                               wait=False))
    started = [s for s in hosts if up_or_exit(s)]
    if len(started) < 2:
        # A refusal is an answer too, as long as it says why.
        run.refused([s for s in hosts if s not in started][0], "NODE_IN_USE",
                    "10.20.30.40:8080")
        return
    lists = parallel([lambda s=s: s.ids("/v1/snowflake", 20000)
                      for s in started])
    run.unique(lists)



@row("no-node-bits-two-servers",
     "a Simpleflake-style layout (no node bits: time=41,node=0,seq=22) on "
     "two servers of one host, each with its own directory, store none")
def no_node_bits_two_servers(run):
    # Before 0 node bits were allowed the layout was refused at parse
    # (LAYOUT_INVALID); then each server's static node 0 was kept apart
    # only by its own directory's high-water lock, so both started and
    # repeated each other's IDs. Now both are refused CONFIG, naming the
    # setting that works: node 0 leased in one SQLite file on the host,
    # where the second server is refused (node 0 is the only row) and the
    # first's IDs are unique.
    lay = ["--store", "none", "--layout", "time=41,node=0,seq=22"]
    servers = [run.serve(run.subdir(h), lay, wait=False)
               for h in ("dir1", "dir2")]
    if all(up_or_exit(s) for s in servers):
        run.unique(parallel([lambda s=s: s.ids("/v1/snowflake", 20000)
                             for s in servers]))
        raise Failure("two servers issued under node 0")
    for s in servers:
        run.refused(s, "CONFIG", "no node bits", "registered nowhere",
                    "coordinator = lease+sqlite:///var/lib/frond/nodes.db")
    lay += ["--coordinator",
            "lease+sqlite:///%s/nodes.db" % run.subdir("host")]
    a = run.serve(run.subdir("dir1"), lay)
    b = run.serve(run.subdir("dir2"), lay, wait=False)
    if up_or_exit(b):
        run.unique(parallel([lambda s=s: s.ids("/v1/snowflake", 20000)
                             for s in (a, b)]))
        raise Failure("a second server took node 0")
    run.refused(b, "NODE_RANGE", "all 1 node IDs")
    run.unique([a.ids("/v1/snowflake", 40000)])


def next_beside_server(run, extra):
    """A default server in directory d, and `frond next` in d at the same
    time, with the same settings plus extra."""
    d = run.subdir("d")
    s = run.serve(d)
    s.ids("/v1/snowflake", 10)  # the server is issuing
    nxt = run.start(["next", "--count", "300000"] + extra, cwd=d,
                    name="frond-next")
    lists = parallel([lambda: s.ids("/v1/snowflake", 60000),
                      lambda: nxt.wait(120)])
    rc = lists[1]
    out = nxt.output()
    if rc != 0:
        raise Failure("frond next beside the server failed (exit %d): %s" %
                      (rc, out[-1500:]))
    ids = printed_ids(out)
    check(len(ids) == 300000, "frond next printed %d IDs, not 300000" %
          len(ids))
    run.unique([lists[0], ids])


@row("next-beside-server",
     "`frond next` run in a running server's directory, with the same "
     "settings")
def next_beside_server_same_dir(run):
    next_beside_server(run, [])


@row("next-no-high-water-beside-server",
     "`frond next --no-high-water` run beside a running server")
def next_no_high_water_beside_server(run):
    next_beside_server(run, ["--no-high-water"])


@row("next-from-another-directory",
     "`frond next --config /etc/frond/frond.conf` run from a home "
     "directory while the server runs in its own, the store named by the "
     "default relative path (sqlite:frond.db)")
def next_from_another_directory(run):
    conf = os.path.join(run.subdir("etc"), "frond.conf")
    with open(conf, "w") as f:
        f.write("# the store at its default, relative to the working "
                "directory\nstore = sqlite:frond.db\n")
    srvdir, home = run.subdir("var-lib-frond"), run.subdir("home")
    s = run.serve(srvdir, ["--config", conf])
    before = s.ids("/v1/snowflake", 1000)  # the server is issuing
    nxt = run.start(["next", "--config", conf, "--count", "200000"],
                    cwd=home, name="frond-next")
    lists = parallel([lambda: s.ids("/v1/snowflake", 200000),
                      lambda: nxt.wait(120)])
    if lists[1] == 0:  # it ran: beside the server, on a store of its own
        run.unique([before + lists[0], printed_ids(nxt.output())])
    run.refused(nxt, "CONFIG", os.path.join(home, "frond.db"), "--store",
                "frond tag create")
    check(not os.path.exists(os.path.join(home, "frond.db")),
          "frond next was refused, but made %s/frond.db" % home)
    # The server says which file its relative store is.
    check(os.path.join(srvdir, "frond.db") in s.output(),
          "the server's log does not name its store's file %s:\n%s"
          % (os.path.join(srvdir, "frond.db"), s.output()[-1500:]))
    # The way that works from anywhere: the store named by its path.
    r = run.frond(["next", "--config", conf, "--count", "100000", "--store",
                   "sqlite://%s/frond.db" % srvdir], home)
    check(r.returncode == 0, "frond next --store: %s" % r.stderr[-1500:])
    run.unique([before + lists[0] + s.ids("/v1/snowflake", 1000),
                printed_ids(r.stdout)])


def one_off_layout(run, env):
    """A server in d issues IDs and stops; `frond next --layout twitter`
    runs once in d; the server starts again in d."""
    d = run.subdir("d")
    s = run.serve(d, env=env)
    before = s.ids("/v1/snowflake", 5000)
    check(s.stop() == 0, "the server did not stop cleanly")
    r = run.frond(["next", "--layout", "twitter", "--count", "3"], cwd=d,
                  env=env)
    if r.returncode == 0:
        again = run.serve(d, env=env, wait=False, name="serve-again")
        if not up_or_exit(again):
            raise Failure("`frond next --layout twitter` was not refused; "
                          "it switched the directory's layout, and the "
                          "server no longer starts there:\n%s" %
                          again.output()[-1500:])
        raise Failure("`frond next --layout twitter` was not refused:\n%s" %
                      r.stderr)
    run.refused(r, "LAYOUT_MISMATCH", "twitter", "--layout-change")
    # Nothing was changed: the server starts again under its layout.
    again = run.serve(d, env=env, name="serve-again")
    run.unique([before, again.ids("/v1/snowflake", 5000)])


@row("layout-one-off",
     "`frond next --layout twitter` run once in a server's data directory "
     "(default settings)")
def layout_one_off(run):
    one_off_layout(run, None)


@row("layout-one-off-no-store",
     "`frond next --layout twitter` run once in the data directory of a "
     "server without a store (FROND_STORE=none)")
def layout_one_off_no_store(run):
    one_off_layout(run, {"FROND_STORE": "none"})


def sqlite_exec(path, *statements):
    """Statements run on the SQLite file at path, as a script would."""
    import sqlite3
    db = sqlite3.connect(path, timeout=30)
    try:
        for st in statements:
            db.execute(st)
        db.commit()
    finally:
        db.close()


@row("layout-change-stopped-halfway",
     "`frond node layout --set twitter` that fails in its second step, "
     "then one stopped between its steps (Ctrl-C, kill): the fleet is "
     "started again, under its old layout, with --layout-change")
def layout_change_stopped_halfway(run):
    d = run.subdir("d")
    store = os.path.join(d, "frond.db")
    s = run.serve(d)
    before = s.ids("/v1/snowflake", 5000)
    check(s.stop() == 0, "the server did not stop cleanly")
    # The second step fails: the database refuses one of its writes.
    sqlite_exec(store,
                "CREATE TRIGGER refuse BEFORE INSERT ON frond_meta WHEN "
                "NEW.name = 'layout_previous' BEGIN SELECT RAISE(ABORT, "
                "'refused'); END")
    r = run.frond(["node", "layout", "--set", "twitter"], cwd=d)
    check(r.returncode != 0, "the change went through: %s" % r.stdout)
    sqlite_exec(store, "DROP TRIGGER refuse")
    again = run.serve(d, wait=False, name="serve-after-failed-change")
    if not up_or_exit(again):
        raise Failure("a layout change that failed left the fleet unable "
                      "to start:\n%s" % again.output()[-1500:])
    before += again.ids("/v1/snowflake", 5000)
    check(again.stop() == 0, "the server did not stop cleanly")
    # Stopped between its steps: its mark stays in frond_meta.
    sqlite_exec(store, "UPDATE frond_meta SET value = 'changing:' || value "
                "WHERE name = 'layout'")
    refused = run.serve(d, wait=False, name="serve-marked")
    check(not up_or_exit(refused), "a server started under a layout change "
          "left unfinished")
    run.refused(refused, "COORD", "not finished", "frond node layout --set")
    # The operator starts the fleet under its layout, asking for it.
    fixed = run.serve(d, ["--layout-change"], wait=False,
                      name="serve-layout-change")
    if not up_or_exit(fixed):
        raise Failure("--layout-change with the fleet's own layout did not "
                      "finish or undo the change:\n%s"
                      % fixed.output()[-1500:])
    run.unique([before, fixed.ids("/v1/snowflake", 5000)])


def forked_lines(out):
    """The lines a seg_fork or gen_fork printed: the parent's IDs, the
    child's, and the child's refusals."""
    parent, child, refusals = [], [], []
    for line in out.splitlines():
        who, _, rest = line.partition(" ")
        if who == "parent":
            parent.append(rest)
        elif who == "child" and rest.startswith("error"):
            refusals.append(rest)
        elif who == "child":
            child.append(rest)
    return parent, child, refusals


@row("fork-without-atfork-handlers",
     "a program with a segment allocator, a snowflake generator or a "
     "UUIDv7, ULID or ObjectId generator forks with _Fork() or the raw "
     "fork system call (which run no pthread_atfork handler) and keeps "
     "using it in the child")
def fork_without_atfork_handlers(run):
    import subprocess
    import common
    d = run.subdir("db")
    store = "sqlite:%s" % os.path.join(d, "frond.db")
    run.ok(["tag", "create", "orders", "--step", "5000", "--store", store], d)
    build = os.environ.get("FROND_BUILD", "")
    for tool in ("seg_fork", "gen_fork"):
        check(os.path.exists(os.path.join(build, tool)),
              "%s is not built" % tool)

    def tool(args):
        r = subprocess.run([os.path.join(build, args[0])] + args[1:], cwd=d,
                           env=common.clean_env(), capture_output=True,
                           text=True, timeout=120)
        check(r.returncode == 0, "%s: %s" % (" ".join(args),
                                             r.stdout + r.stderr))
        return forked_lines(r.stdout)

    for how in ("_Fork", "syscall"):
        # The allocator: by the tag's name, then through a handle (the
        # inline call); each refused.
        parent, child, refusals = tool(["seg_fork", store, "orders", "2000",
                                        how])
        run.unique([parent, child])
        check(len(refusals) == 2, "seg_fork %s: the child was refused %d "
              "times of 2 (by name, by handle): %s"
              % (how, len(refusals), refusals))
        for r in refusals:
            run.refused(r, "FORKED", "fork()")
        # A snowflake generator refuses; the 128-bit ones take new keys.
        for kind in ("snowflake", "uuid7", "ulid", "objectid"):
            g = run.subdir("%s-%s" % (kind, how))
            parent, child, refusals = tool(["gen_fork", kind, "2000", how, g])
            run.unique([parent, child])
            if kind == "snowflake":
                check(refusals and not child, "gen_fork snowflake %s: the "
                      "child issued %d IDs" % (how, len(child)))
                run.refused(refusals[0], "FORKED", "fork()")
            else:
                check(len(child) == 2000, "gen_fork %s %s: the child "
                      "issued %d of 2000" % (kind, how, len(child)))


# ---- regions: a coordinator per region ----

def region_servers(run, zks, per_region, dcs=None):
    """per_region servers on each ZooKeeper address of zks (a region
    each), without a store, layout twitter (5 dc + 5 worker bits); dcs:
    each region's `datacenter` (None: the default, none)."""
    servers = []
    for r, zk in enumerate(zks):
        args = ["--store", "none", "--layout", "twitter", "--coordinator",
                "zk://%s/frond?report_ms=200&session_ms=4000&connect_ms=5000"
                % zk]
        if dcs is not None:
            args += ["--datacenter", str(dcs[r])]
        for k in range(per_region):
            servers.append(run.serve(run.subdir("region%d-%d" % (r, k)),
                                     args, name="region%d-%d" % (r, k)))
    return servers


@row("two-regions-zk-no-datacenter",
     "two regions, each with its own ZooKeeper, without datacenter=: "
     "nodes on each with the default settings, then each region given its "
     "datacenter, and a node started on one region's ZooKeeper with the "
     "other region's settings, or none")
def two_regions_zk_no_datacenter(run):
    zks = []
    for r in (0, 1):
        zk = ft.ZooKeeper(dir=run.subdir("zookeeper-region%d" % r))
        run.on_close(zk.close)
        zks.append(zk.address)
    # Each region's ZooKeeper hands out the layout's whole range, 0 first:
    # without datacenter= both regions hold node IDs 0 and 1 (docs/
    # repeats.md counts the repeats). With it, each holds its own dc bits.
    servers = region_servers(run, zks, 2, dcs=(0, 1))
    lists = parallel([lambda s=s: s.ids("/v1/snowflake", 20000)
                      for s in servers])
    for s, ids in zip(servers, lists):
        dc = int(s.name[6])
        check(all((i >> 17) & 31 == dc for i in ids[:100]),
              "%s issued IDs outside datacenter %d" % (s.name, dc))
    run.unique(lists)
    # Region 1's settings copied to a host of region 0; then a host with
    # none: both refused by the record region 0's ZooKeeper keeps.
    zk0 = "zk://%s/frond?report_ms=200&session_ms=4000&connect_ms=5000" % \
        zks[0]
    for name, extra, words in (
            ("other-region", ["--datacenter", "1"],
             ("datacenter=1", "datacenter=0")),
            ("no-datacenter", [], ("whole node range", "datacenter=0"))):
        late = run.serve(run.subdir(name), ["--store", "none", "--layout",
                                            "twitter", "--coordinator", zk0]
                         + extra, name=name, wait=False)
        if up_or_exit(late):
            more = parallel([lambda s=s: s.ids("/v1/snowflake", 20000)
                             for s in servers + [late]])
            run.unique(more)
            raise Failure("%s started on region 0's ZooKeeper" % name)
        run.refused(late, "DATACENTER_MISMATCH", *words)


# ---- two coordinators on one store ----

def second_coordinator(run, store, first, second, words):
    """A server on store with coordinator first (None: the default, the
    store's lease), loaded; then one with second on the same store: each
    coordinator hands out node 0, so it must be refused
    (COORDINATOR_MISMATCH naming words) or its IDs are counted."""
    args = ["--store", store] + (["--coordinator", first] if first else [])
    a = run.serve(run.subdir("first"), args, name="first")
    late = run.serve(run.subdir("second"),
                     ["--store", store, "--coordinator", second],
                     name="second", wait=False)
    if up_or_exit(late):
        lists = parallel([lambda s=s: s.ids("/v1/snowflake", 20000)
                          for s in (a, late)])
        run.unique(lists)
        raise Failure("a second coordinator started on the store")
    run.refused(late, "COORDINATOR_MISMATCH", *words)
    # frond check with the same settings says so before any start.
    r = run.frond(["check", "--store", store, "--coordinator", second,
                   "--listen", "127.0.0.1:%d" % ft.free_port(),
                   "--resp-listen", "off"], run.subdir("second"))
    fleet = [x for x in r.stdout.splitlines() if x.split()[1:2] == ["fleet"]]
    check(r.returncode == 1 and fleet and fleet[0].startswith("FAIL") and
          "COORDINATOR_MISMATCH" in fleet[0],
          "frond check does not refuse the second coordinator:\n%s%s"
          % (r.stdout, r.stderr))
    run.unique([a.ids("/v1/snowflake", 2000)])


@row("lease-and-zk-one-store",
     "two servers on one store, one on the default lease (the store's) and "
     "one given a ZooKeeper coordinator")
def lease_and_zk_one_store(run):
    zk = zookeeper(run)
    store = "sqlite:///%s/frond.db" % run.subdir("shared")
    second_coordinator(
        run, store, None,
        "zk://%s/frond?report_ms=200&session_ms=4000&connect_ms=5000" % zk,
        ("zk://", "lease+sqlite", "frond node coordinator"))


@row("two-lease-files-one-store",
     "two servers on one store, each given its own lease file as "
     "coordinator (a path typed differently on two hosts)")
def two_lease_files_one_store(run):
    shared = run.subdir("shared")
    store = "sqlite:///%s/frond.db" % shared
    second_coordinator(run, store,
                       "lease+sqlite:///%s/nodes-a.db" % shared,
                       "lease+sqlite:///%s/nodes-b.db" % shared,
                       ("nodes-a.db", "nodes-b.db"))


@row("regions-one-store",
     "two regions, each with its own ZooKeeper and datacenter, whose "
     "servers share one store")
def regions_one_store(run):
    store = "sqlite:///%s/frond.db" % run.subdir("shared")
    servers = []
    for r in (0, 1):
        zk = ft.ZooKeeper(dir=run.subdir("zookeeper-region%d" % r))
        run.on_close(zk.close)
        for k in range(2):
            servers.append(run.serve(
                run.subdir("region%d-%d" % (r, k)),
                ["--store", store, "--layout", "twitter", "--datacenter",
                 str(r), "--coordinator",
                 "zk://%s/frond?report_ms=200&session_ms=4000"
                 "&connect_ms=5000" % zk.address],
                name="region%d-%d" % (r, k)))
    lists = parallel([lambda s=s: s.ids("/v1/snowflake", 20000)
                      for s in servers])
    run.unique(lists)


@row("coordinator-change-lease-to-zk",
     "a fleet moved from the store's lease to ZooKeeper: the change tried "
     "while a server runs, then done with it stopped; a server left on the "
     "old lease started afterwards")
def coordinator_change_lease_to_zk(run):
    zk = "zk://%s/frond?report_ms=200&session_ms=4000&connect_ms=5000" % \
        zookeeper(run)
    shared = run.subdir("shared")
    store = "sqlite:///%s/frond.db" % shared
    lease = "lease+" + store
    old = run.serve(run.subdir("old"), ["--store", store], name="old")
    before = old.ids("/v1/snowflake", 20000)
    change = ["node", "coordinator", "--store", store, "--set", zk,
              "--from", lease]
    run.refused(run.frond(change, shared), "NODE_IN_USE", "stop")
    old.stop()
    out = run.ok(change, shared)
    check("floor" in out and "zk://" in out, "the change says nothing: %s"
          % out)
    new = run.serve(run.subdir("new"), ["--store", store, "--coordinator",
                                        zk], name="new")
    after = new.ids("/v1/snowflake", 20000)
    check(min(after) > max(before), "the new coordinator's node issued at "
          "or below the old one's last ID")
    late = run.serve(run.subdir("late"), ["--store", store], name="late",
                     wait=False)
    if up_or_exit(late):
        more = parallel([lambda s=s: s.ids("/v1/snowflake", 20000)
                         for s in (new, late)])
        run.unique([before, after] + more)
        raise Failure("a server on the replaced lease started")
    run.refused(late, "COORDINATOR_MISMATCH", "lease+sqlite", "zk://")
    run.unique([before, after])
