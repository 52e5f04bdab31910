# SPDX-License-Identifier: Apache-2.0
"""
rows_formats.py -- mistakes with ID formats: order numbers and keyed
sequences whose key or parameters differ between the processes that share
them, daily sequences on a multi: store, and the 128-bit formats whose
uniqueness rests on random bits.
"""
import json
import os
import re
import threading
import time

from common import check, row, parallel, zookeeper, Failure

KEY1 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
KEY2 = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100"


def _frond_ok(run, d, *args):
    r = run.frond(list(args), d)
    check(r.returncode == 0, "frond %s: exit %d: %s" %
          (" ".join(args), r.returncode, r.stderr.strip()))
    return r.stdout


def _orders_store(run):
    """A SQLite store in its own directory with the tag orders (step
    100): (the directory, the store's URI)."""
    d = run.subdir("db")
    store = "sqlite://%s/ids.db" % d
    _frond_ok(run, d, "tag", "create", "orders", "--step", "100", "--store",
              store)
    return d, store


def _to_the_end(srv, name, seed, cap=400):
    """Batches of 20 to 255 strings of format `name` until the period is
    used up (SEQUENCE_EXHAUSTED); every string answered."""
    got = []
    for i in range(cap):
        n = 20 + (seed * 7919 + i * 104729) % 236
        st, body = srv.get("/v1/format/%s?count=%d" % (name, n), timeout=60)
        if st == 503 and json.loads(body)["error"]["code"] == \
                "SEQUENCE_EXHAUSTED":
            return got
        check(st == 200, "%s %s: %d %s" % (srv.name, name, st, body[:300]))
        got += json.loads(body)["ids"]
    raise Failure("%s: not used up after %d batches" % (name, cap))


@row("seq-multi-typo-batches",
     "one node's multi: URI names member b of three at a path that does "
     "not exist (it serves from members a and c alone); a daily sequence is "
     "taken in batches to the end of the day from that node and a correct "
     "one")
def seq_multi_typo_batches(run):
    d = run.subdir("db")
    store = "multi:sqlite://%s/a.db|sqlite://%s/b.db|sqlite://%s/c.db" % (
        d, d, d)
    typo = ("multi:sqlite://%s/a.db|sqlite://%s/dbb/b.db|sqlite://%s/c.db"
            % (d, d, d))
    day = time.strftime("%Y%m%d", time.gmtime())
    tags = ["t%d" % i for i in range(6)]
    # A multi: store hands out no node IDs: the fleet's lease is named.
    args = ["--segment-wait-ms", "20000",
            "--coordinator", "lease+sqlite://%s/nodes.db" % d]
    for t in tags:
        _frond_ok(run, d, "tag", "create", t, "--step", "100", "--store",
                  store)
        # The day's row exists on every member (the node with the typo
        # cannot make it: that needs every member).
        _frond_ok(run, d, "tag", "create", "%s:%s" % (t, day), "--step",
                  "10", "--store", store)
        args += ["--format." + t, "seq:tag=%s,digits=4" % t]
    srvs = [run.serve(run.subdir("n1"), ["--store", typo] + args),
            run.serve(run.subdir("n2"), ["--store", store] + args)]
    lists = []
    for t in tags:
        outs = [None] * 4

        def go(i, t=t):
            outs[i] = _to_the_end(srvs[i % 2], t, i)
        ths = [threading.Thread(target=go, args=(i,)) for i in range(4)]
        for th in ths:
            th.start()
        for th in ths:
            th.join(300)
        check(None not in outs, "%s: a client failed" % t)
        got = sum(outs, [])
        if any(x[:8] != day for x in got):
            raise Failure("the UTC day changed during the row: run it again")
        # Each tag's numbers are their own: named by the tag.
        lists.append(["%s %s" % (t, x) for x in got])
    run.unique(lists, "numbers of one day")


def _key_file(d, text):
    path = os.path.join(d, "order.keys")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


def _node(run, name, keys, spec, args):
    """A server in its own directory with its own key file and format.o."""
    d = run.subdir(name)
    return run.serve(d, ["--order-key-file", _key_file(d, keys),
                         "--format.o", spec] + list(args), name=name,
                     wait=False)


def _up_or_exited(srv, timeout=60):
    """True once srv listens, False once it has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not srv.alive():
            return False
        try:
            if srv.get("/livez", timeout=2)[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(0.05)
    raise Failure("%s neither listened nor exited within %ds:\n%s" %
                  (srv.name, timeout, srv.output()))


def _numbers(srv, n, batch=500):
    out = []
    while len(out) < n:
        st, body = srv.get("/v1/format/o?count=%d" % min(batch, n - len(out)))
        check(st == 200, "%s: %d %s" % (srv.name, st, body[:300]))
        out += json.loads(body)["ids"]
    return out


def _fingerprint(srv):
    m = re.search(r"format\.o: key fingerprint ([0-9a-f]{16})", srv.output())
    check(m is not None, "%s logged no fingerprint:\n%s" %
          (srv.name, srv.output()[-2000:]))
    return m.group(1)


def _second_refused_or_unique(run, a, b, per=3000):
    """a serves (started first, it made the record); b must be refused with
    KEY_MISMATCH naming a's fingerprint, another one of its own and the
    record; if b serves instead, both issue per numbers and the verdict is
    theirs."""
    check(_up_or_exited(a), "%s did not start:\n%s" % (a.name, a.output()))
    if _up_or_exited(b):
        run.unique(parallel([lambda: _numbers(a, per),
                             lambda: _numbers(b, per)]), "order numbers")
        raise Failure("%s served with another key: nothing refused it" %
                      b.name)
    fa = _fingerprint(a)
    m = re.search(r"fingerprint ([0-9a-f]{16}) here", b.output())
    check(m is not None and m.group(1) != fa,
          "%s's refusal names no fingerprint of its own:\n%s" %
          (b.name, b.output()[-2000:]))
    run.refused(b, "KEY_MISMATCH", "format.o", fa, "key.order.")


@row("order-key-per-host",
     "two servers share a store and issue order numbers of one tag, each "
     "with its own key file (a key generated per host)")
def order_key_per_host(run):
    d, store = _orders_store(run)
    spec = "order:digits=6,key=1,tag=orders"
    a = _node(run, "a", "1:%s\n" % KEY1, spec, ["--store", store])
    check(_up_or_exited(a), "a did not start:\n%s" % a.output())
    b = _node(run, "b", "1:%s\n" % KEY2, spec, ["--store", store])
    _second_refused_or_unique(run, a, b)
    check("frond_meta" in b.output(), "the refusal does not say where")


@row("order-rounds-changed",
     "one of two servers sharing a store runs an order format with "
     "rounds=10 under the same key version as the other's default 8")
def order_rounds_changed(run):
    d, store = _orders_store(run)
    a = _node(run, "a", "1:%s\n" % KEY1, "order:digits=6,key=1,tag=orders",
              ["--store", store])
    check(_up_or_exited(a), "a did not start:\n%s" % a.output())
    b = _node(run, "b", "1:%s\n" % KEY1,
              "order:digits=6,key=1,rounds=10,tag=orders", ["--store", store])
    _second_refused_or_unique(run, a, b)


@row("order-key-rotated-one-node",
     "a key is rotated on one server only: it issues key=2 while the other "
     "still issues key=1, both sharing a store and a tag")
def order_key_rotated_one_node(run):
    d, store = _orders_store(run)
    a = _node(run, "a", "1:%s\n" % KEY1, "order:digits=6,key=1,tag=orders",
              ["--store", store])
    b = _node(run, "b", "1:%s\n2:%s\n" % (KEY1, KEY2),
              "order:digits=6,key=2,tag=orders", ["--store", store])
    for s in (a, b):
        check(_up_or_exited(s), "%s refused the rotation:\n%s" %
              (s.name, s.output()[-2000:]))
    lists = parallel([lambda: _numbers(a, 3000), lambda: _numbers(b, 3000)])
    check(all(x[0] == "1" for x in lists[0]) and
          all(x[0] == "2" for x in lists[1]), "versions: %r %r" %
          (lists[0][:2], lists[1][:2]))
    run.unique(lists, "order numbers")


@row("order-snowflake-key-per-host-zk",
     "two servers without a store, node IDs from ZooKeeper, issue order "
     "numbers of snowflake IDs, each with its own key file")
def order_snowflake_key_per_host_zk(run):
    zk = "zk://%s/mistakes?report_ms=200&session_ms=4000&connect_ms=5000" % \
        zookeeper(run)
    spec = "order:digits=19,key=1"
    args = ["--store", "none", "--coordinator", zk]
    a = _node(run, "a", "1:%s\n" % KEY1, spec, args)
    check(_up_or_exited(a), "a did not start:\n%s" % a.output())
    b = _node(run, "b", "1:%s\n" % KEY2, spec, args)
    _second_refused_or_unique(run, a, b, per=2000)
    check("ZooKeeper" in b.output(), "the refusal does not say where")


@row("node-scoped-forced-random",
     "two servers (node IDs 1 and 2) issue uuid7, ulid and objectid with "
     "scope=node while their random bits are equal (forced, as two "
     "processes that seeded from one snapshot would draw them)")
def node_scoped_forced_random(run):
    env = {"FROND_TEST_ID128_KEY": "07" * 16}
    args = []
    for kind in ("uuid7", "ulid", "objectid"):
        args += ["--format." + kind, kind + ":scope=node"]
    srvs = [run.serve(run.subdir("n%d" % node), args +
                      ["--coordinator", "static:%d" % node], env=env)
            for node in (1, 2)]

    def take(srv, kind, n=6000):
        out = []
        while len(out) < n:
            st, body = srv.get("/v1/format/%s?count=1000" % kind)
            check(st == 200, "%s %s: %d %s" % (srv.name, kind, st,
                                               body[:300]))
            out += json.loads(body)["ids"]
        return out
    lists = []
    for kind in ("uuid7", "ulid", "objectid"):
        lists += parallel([lambda s=s, k=kind: take(s, k) for s in srvs])
    run.unique(lists, "UUIDs, ULIDs and ObjectIds")


# ---- key records: spellings of a tag, records edited, multi: members ----

def _spelling_pair(run, store, d, tag_a, tag_b, name):
    """a issues order numbers of tag_a with KEY1; b of tag_b, a spelling
    the store takes for the same row, with KEY2: b must be refused."""
    a = _node(run, name + "-a", "1:%s\n" % KEY1,
              "order:digits=6,key=1,tag=%s" % tag_a, ["--store", store])
    check(_up_or_exited(a), "%s-a did not start:\n%s" % (name, a.output()))
    b = _node(run, name + "-b", "1:%s\n" % KEY2,
              "order:digits=6,key=1,tag=%s" % tag_b, ["--store", store])
    _second_refused_or_unique(run, a, b)


@row("order-key-tag-spelling-mariadb",
     "two servers on one MariaDB store issue order numbers of one tag "
     "under spellings its collation takes for one (orders.eu and "
     "ORDERS.EU, orders and \"orders \"), each with its own key")
def order_key_tag_spelling_mariadb(run):
    my = run.mariadb()
    d = run.subdir("db")
    for t in ("orders.eu", "orders"):
        _frond_ok(run, d, "tag", "create", t, "--step", "100", "--store",
                  my.uri)
    _spelling_pair(run, my.uri, d, "orders.eu", "ORDERS.EU", "dotted")
    _spelling_pair(run, my.uri, d, "orders", "orders ", "space")


def _meta(path, sql):
    import sqlite3
    con = sqlite3.connect(path)
    try:
        with con:
            return con.execute(sql).fetchall()
    finally:
        con.close()


@row("order-key-record-deleted",
     "deleted the key records from frond_meta by hand while a server "
     "issued order numbers, then started a second server with another key")
def order_key_record_deleted(run):
    d = run.subdir("db")
    db = os.path.join(d, "ids.db")
    store = "sqlite://%s" % db
    _frond_ok(run, d, "tag", "create", "orders", "--step", "100", "--store",
              store)
    spec = "order:digits=6,key=1,tag=orders"
    env = {"FROND_TEST_FACT_RECHECK_MS": "300"}
    ad = run.subdir("a")
    a = run.serve(ad, ["--order-key-file", _key_file(ad, "1:%s\n" % KEY1),
                       "--format.o", spec, "--store", store], env=env,
                  name="a")
    got = _numbers(a, 200)
    _meta(db, "DELETE FROM frond_meta WHERE name LIKE 'key.%'")
    # The running server finds its record gone and records it again (at
    # its next check, every FROND_TEST_FACT_RECHECK_MS here); nothing else
    # would. Waited for, bounded: without the re-check it never comes.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and \
            not _meta(db, "SELECT 1 FROM frond_meta WHERE name LIKE 'key.%'"):
        time.sleep(0.05)
    b = _node(run, "b", "1:%s\n" % KEY2, spec, ["--store", store])
    if _up_or_exited(b):
        run.unique(parallel([lambda: got + _numbers(a, 20000),
                             lambda: _numbers(b, 20000)]), "order numbers")
        raise Failure("b served with another key: nothing refused it")
    run.refused(b, "KEY_MISMATCH", "format.o", _fingerprint(a))
    run.unique([got + _numbers(a, 2000)], "order numbers")


@row("multi-key-record-one-member",
     "a multi: member lost its key record (restored from before the "
     "format); a server with a wrong key was refused; then the fleet's "
     "servers, with the right key, restarted")
def multi_key_record_one_member(run):
    d = run.subdir("db")
    store = "multi:sqlite://%s/a.db|sqlite://%s/b.db" % (d, d)
    args = ["--store", store, "--coordinator",
            "lease+sqlite://%s/nodes.db" % d]
    _frond_ok(run, d, "tag", "create", "orders", "--step", "100", "--store",
              store)
    spec = "order:digits=6,key=1,tag=orders"
    a = _node(run, "a", "1:%s\n" % KEY1, spec, args)
    check(_up_or_exited(a), "a did not start:\n%s" % a.output())
    got = _numbers(a, 500)
    a.stop()
    _meta(os.path.join(d, "a.db"), "DELETE FROM frond_meta")
    w = _node(run, "w", "1:%s\n" % KEY2, spec, args)
    check(not _up_or_exited(w), "the server with another key served")
    run.refused(w, "KEY_MISMATCH", "format.o")
    c = _node(run, "c", "1:%s\n" % KEY1, spec, args)
    if not _up_or_exited(c):
        raise Failure("the fleet's key is refused after the wrong one was "
                      "tried:\n%s" % c.output()[-1500:])
    run.unique([got, _numbers(c, 3000)], "order numbers")


def _sharded(srv, users, per):
    """per strings of format o for each user key, as "user value" pairs."""
    out = []
    for u in users:
        st, body = srv.get("/v1/format/o?count=%d&key=%s" % (per, u))
        check(st == 200, "%s: %d %s" % (srv.name, st, body[:300]))
        out += ["%s %s" % (u, x) for x in json.loads(body)["ids"]]
    return out


@row("shard-bits-changed-one-node",
     "of two servers sharing a store and a tag, one is given shard=5 where "
     "the other runs shard=4 under the same key (a user's IDs would land on "
     "two shards, and one string decode to two IDs)")
def shard_bits_changed_one_node(run):
    d, store = _orders_store(run)
    a = _node(run, "a", "1:%s\n" % KEY1, "decimal:shard=4,key=1,tag=orders",
              ["--store", store])
    check(_up_or_exited(a), "a did not start:\n%s" % a.output())
    b = _node(run, "b", "1:%s\n" % KEY1, "decimal:shard=5,key=1,tag=orders",
              ["--store", store])
    users = ["user-%d" % i for i in range(20)]
    if _up_or_exited(b):
        got = parallel([lambda: _sharded(a, users, 50),
                        lambda: _sharded(b, users, 50)])
        run.unique([[x.split()[1] for x in g] for g in got], "shard strings")
        raise Failure("b served shard=5 beside a's shard=4: nothing refused "
                      "it, and a user's IDs now land on two shards")
    run.refused(b, "KEY_MISMATCH", "format.o", "shard=4,key=1",
                "shard=5,key=1")
    run.unique([[x.split()[1] for x in _sharded(a, users, 20)]],
               "shard strings")
