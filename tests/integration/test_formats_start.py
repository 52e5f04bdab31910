#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_formats_start.py -- what `frond serve` checks of its ID formats at
start and after: the start refuses what cannot work (a missing or open
key file, a seq format without a store, an order format too narrow for
the IDs); keys checked against their record at start, after a store
reconnect and again while serving; node-scoped formats on two servers;
formats from a file and from the environment.
"""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from formats_common import (DAILY, KEY1, KEY2, ORDERS, UUID7,  # noqa: E402
                            clean_env, error_of, key_file)


# ------------------------------------------------------------- start-up

def start_fails(args, env, code, want_rc=1):
    d = ft.tempdir()
    try:
        r = subprocess.run([ft.FROND_BIN, "serve", "--listen",
                            "127.0.0.1:%d" % ft.free_port(), "--resp-listen",
                            "off", "--data-dir", d, "--store",
                            "sqlite:///%s/f.db" % d] + args,
                           capture_output=True, text=True, timeout=60,
                           env=env, cwd=d)
        check(r.returncode == want_rc and code in r.stderr,
              "%s: exit %d, %r (wanted %d and %s)"
              % (args, r.returncode, r.stderr, want_rc, code))
        return r.stderr
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_start_refusals():
    d = ft.tempdir()
    try:
        open_keys = key_file(d, "1:%s\n" % KEY1, mode=0o644)
        err = start_fails(["--order-key-file", open_keys, "--format.o",
                           ORDERS], clean_env(), "KEY_INVALID")
        check("chmod" in err, "%r" % err)
        err = start_fails(["--format.o", ORDERS], clean_env(), "KEY_INVALID")
        check("order_key_file" in err, "%r" % err)
        err = start_fails(["--format.o", ORDERS],
                          clean_env(FROND_ORDER_KEY="2:" + KEY2),
                          "KEY_INVALID")
        check("version '1'" in err, "%r" % err)
        start_fails(["--store", "none", "--format.d", DAILY], clean_env(),
                    "store = none")
        err = start_fails(["--format.o", "order:digits=12,key=1"],
                          clean_env(FROND_ORDER_KEY="1:" + KEY1),
                          "ID_TOO_LARGE")
        check("format.o" in err, "%r" % err)
        start_fails(["--format.o", "order:digits=3"], clean_env(),
                    "FORMAT_INVALID", want_rc=2)
        start_fails(["--format.Bad", "uuid7"], clean_env(), "name",
                    want_rc=2)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_key_checked_at_start_and_after_reconnect():
    """Order numbers of one tag from servers sharing a PostgreSQL store: the
    first records its key's fingerprint in frond_meta; a second with another
    key does not start (KEY_MISMATCH, naming the first's fingerprint, its
    own and the record). The record is checked again when the store comes
    back (and every minute): replaced meanwhile (a database restored from
    elsewhere), the format answers KEY_MISMATCH, and every other ID is
    still served."""
    pg = ft.Postgres()
    srv = None
    d = ft.tempdir()
    try:
        for tag, step in (("orders", 100), ("ping", 1)):
            r = subprocess.run([ft.FROND_BIN, "tag", "create", tag, "--step",
                                str(step), "--store", pg.uri],
                               capture_output=True, text=True, timeout=60)
            check(r.returncode == 0, r.stderr)
        spec = "order:digits=8,key=1,tag=orders"
        with open(os.path.join(d, "a.keys"), "w") as f:
            f.write("1:%s\n" % KEY1)
        os.chmod(os.path.join(d, "a.keys"), 0o600)
        srv = ft.Server(store=pg.uri, env=clean_env(), extra=[
            "--order-key-file", os.path.join(d, "a.keys"), "--format.o",
            spec])
        st, _, body = srv.request("GET", "/v1/format/o?count=10")
        check(st == 200, "%d %r" % (st, body))
        m = re.search(r"format\.o: key fingerprint ([0-9a-f]{16})",
                      srv.output())
        check(m is not None, srv.output())
        fp = m.group(1)
        # Beside the lease's own rows (the layout, the node's holder).
        rows = pg.sql("SELECT name, value FROM frond_meta WHERE name LIKE "
                      "'key.%'").split()
        check(rows == ["key.order.d8.1.tag.orders|" + fp], "%r" % rows)
        # Another key: the start is refused, naming both and the record.
        err = start_fails(["--store", pg.uri, "--format.o", spec],
                          clean_env(FROND_ORDER_KEY="1:" + KEY2),
                          "KEY_MISMATCH")
        m = re.search(r"fingerprint ([0-9a-f]{16}) here", err)
        check(m is not None and m.group(1) != fp and fp in err and
              "format.o" in err and "frond_meta" in err, err)
        # The record changes under a running server: seen when the store
        # comes back (or at the minute's check, whichever is first).
        pg.sql("UPDATE frond_meta SET value = '0123456789abcdef' "
               "WHERE name LIKE 'key.%'")
        pg.stop()
        deadline = time.monotonic() + 60
        while srv.request("GET", "/readyz")[0] != 503:
            srv.request("GET", "/v1/segment/ping?count=5")  # loads fail
            check(time.monotonic() < deadline, "never not ready")
            time.sleep(0.05)
        pg.start()
        code = None
        while code != "KEY_MISMATCH":
            srv.request("GET", "/v1/segment/ping?count=5")  # loads work again
            st, _, body = srv.request("GET", "/v1/format/o?count=10")
            code = error_of(json.loads(body)) if st != 200 else None
            check(time.monotonic() < deadline + 60,
                  "no KEY_MISMATCH after the store came back (%d %r)" %
                  (st, body[:300]))
            time.sleep(0.05)
        check(st == 500 and "0123456789abcdef" in body.decode() and
              fp in body.decode(), "%d %r" % (st, body))
        st, _, body = srv.request("GET", "/v1/segment/ping?count=5")
        check(st == 200, "plain IDs: %d %r" % (st, body))
    finally:
        if srv is not None:
            srv.stop()
            srv.close()
        pg.close()
        shutil.rmtree(d, ignore_errors=True)


def test_key_record_checked_again():
    """A running server checks its keys' records again every refresh
    interval (shortened here): a record deleted by hand is recorded again,
    one changed to another fingerprint refuses the format (every other ID
    still served), and one put back lets it serve again."""
    d = ft.tempdir()
    srv = None
    db = os.path.join(d, "ids.db")
    store = "sqlite://" + db

    def meta(sql):
        con = sqlite3.connect(db)
        try:
            with con:
                return con.execute(sql).fetchall()
        finally:
            con.close()

    def until(what, cond, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            got = cond()
            if got:
                return got
            check(time.monotonic() < deadline, "no %s within %ds" %
                  (what, timeout))
            time.sleep(0.05)

    def answer():
        st, _, body = srv.request("GET", "/v1/format/o?count=5")
        return st, error_of(json.loads(body)) if st != 200 else None
    try:
        r = subprocess.run([ft.FROND_BIN, "tag", "create", "orders", "--step",
                            "100", "--store", store], capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 0, r.stderr)
        srv = ft.Server(store=store, env=clean_env(
            FROND_TEST_FACT_RECHECK_MS="200"), extra=[
            "--order-key-file", key_file(d, "1:%s\n" % KEY1), "--format.o",
            "order:digits=8,key=1,tag=orders"])
        check(answer()[0] == 200, "numbers: %r" % (answer(),))
        (fp,), = meta("SELECT value FROM frond_meta WHERE name = "
                      "'key.order.d8.1.tag.orders'")
        meta("DELETE FROM frond_meta WHERE name LIKE 'key.%'")
        until("record made again", lambda: meta(
            "SELECT value FROM frond_meta WHERE name LIKE 'key.%'") ==
            [(fp,)])
        meta("UPDATE frond_meta SET value = '0123456789abcdef' WHERE name "
             "LIKE 'key.%'")
        until("KEY_MISMATCH", lambda: answer() == (500, "KEY_MISMATCH"))
        check("refused from now on" in srv.output(), srv.output()[-2000:])
        st, _, body = srv.request("GET", "/v1/segment/orders?count=5")
        check(st == 200, "segment IDs: %d %r" % (st, body))
        meta("UPDATE frond_meta SET value = '%s' WHERE name LIKE 'key.%%'"
             % fp)
        until("numbers again", lambda: answer()[0] == 200)
    finally:
        if srv is not None:
            srv.stop()
            srv.close()
        shutil.rmtree(d, ignore_errors=True)


def test_node_scoped_two_servers():
    """uuid7, ulid and objectid with scope=node from two servers of node IDs
    1 and 2 whose random bits are forced equal (FROND_TEST_ID128_KEY): the
    built-in, random ones repeat each other, the node-scoped ones never do,
    and each decodes (by the format's name) to its node."""
    env = clean_env(FROND_TEST_ID128_KEY="07" * 16)
    names = {"u": "uuid7", "l": "ulid", "o": "objectid"}
    args = []
    for n, k in names.items():
        args += ["--format." + n, k + ":scope=node"]
    srvs = []
    try:
        for node in (1, 2):
            srvs.append(ft.Server(env=env, extra=args + [
                "--coordinator", "static:%d" % node]))

        def take(srv, path, n=6000):
            out = []
            c = srv.conn()
            while len(out) < n:
                st, _, body = srv.request("GET", "%s?count=1000" % path,
                                          conn=c)
                check(st == 200, "%s: %d %r" % (path, st, body[:200]))
                out += json.loads(body)["ids"]
            c.close()
            return out

        def both(path):
            outs = [None, None]
            ths = [threading.Thread(target=lambda i=i: outs.__setitem__(
                i, take(srvs[i], path))) for i in range(2)]
            for th in ths:
                th.start()
            for th in ths:
                th.join(120)
            check(None not in outs, "%s: a client failed" % path)
            return outs

        # Random bits forced equal: the random scope repeats.
        repeated = 0
        for path in ("/v1/uuid7", "/v1/ulid", "/v1/objectid"):
            a, b = both(path)
            repeated += len(set(a) & set(b))
        check(repeated > 0, "random bits forced equal, and no repeat")
        for n, kind in names.items():
            a, b = both("/v1/format/" + n)
            check(len(set(a) | set(b)) == len(a) + len(b),
                  "%s:scope=node repeated across nodes" % kind)
            check(a == sorted(a), "%s: one server's are not in order" % kind)
            for node, s in ((1, a[17]), (2, b[17])):
                st, _, body = srvs[0].request(
                    "GET", "/v1/decode/%s?format=%s" % (s, n))
                v = json.loads(body)
                check(st == 200 and v["node"] == node and v["format"] == kind,
                      "%s: %r" % (kind, v))
    finally:
        for srv in srvs:
            srv.stop()
            srv.close()


def test_formats_from_file_and_environment():
    """The same family from a config file and FROND_FORMAT_<NAME>; the
    key from FROND_ORDER_KEY."""
    d = ft.tempdir()
    try:
        conf = os.path.join(d, "frond.conf")
        with open(conf, "w") as f:
            f.write("format.ids = uuid7\nformat.orders = %s\n" % ORDERS)
        srv = ft.Server(threads=1, env=clean_env(
            FROND_ORDER_KEY="1:" + KEY1, FROND_FORMAT_SHORT="base62"),
            extra=["--config", conf])
        try:
            for name, pat in (("ids", UUID7), ("short", re.compile(
                    r"^[0-9A-Za-z]{11}$")), ("orders", re.compile(
                        r"^\d{8}-\d{21}$"))):
                st, _, b = srv.request("GET", "/v1/format/" + name)
                check(st == 200 and pat.match(json.loads(b)["ids"][0]),
                      "%s: %d %r" % (name, st, b))
        finally:
            srv.stop()
            srv.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    ft.main([
        test_start_refusals,
        test_key_checked_at_start_and_after_reconnect,
        test_key_record_checked_again,
        test_node_scoped_two_servers,
        test_formats_from_file_and_environment,
    ])
