#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_client_python.py -- the Python client (clients/python) against real
`frond serve` processes: snowflake IDs, segment IDs from leased ranges,
formats and decoding, typed errors with their codes, bad input, timeouts,
uniqueness across threads, asyncio tasks and processes, a server
restarted under load, a server killed under load (the client carries on
from its buffer and the other server), ranges dropped when too old, the
range size adapting to the rate, the page's program run as written, and
the package installed the usual way (pip, no network). Against servers
faked in the test's process: test_client_python_fake.py.

The client is imported from the source tree (clients/python/src); the
install test installs it into a virtual environment of Debian's python3.
"""
import asyncio
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from client_python_common import (  # noqa: E402
    PKG, SRC, expect_error, frond, increasing, wait_for)

TAGS = {"orders": 1000, "small": 10}


def url(s):
    return "http://127.0.0.1:%d" % s.port


def restart(s):
    """Start s again on its port, store and data dir, as a restart would."""
    e = ft.sanitizer_env(dict(os.environ), os.path.join(s.dir, "sanitizer"))
    s.proc = subprocess.Popen(s.args, cwd=s.dir, env=e, stdout=s.log,
                              stderr=subprocess.STDOUT)
    ft.wait_port(s.port, timeout=30)


def test_ids_formats_decode():
    s = ft.Server(tags=TAGS, extra=["--format.u", "ulid"])
    try:
        with frond.Client([url(s)]) as c:
            a, b = c.next(), c.next()
            check(isinstance(a, int) and b > a, "snowflake %r %r" % (a, b))
            batch = c.next_batch(100)
            check(len(set(batch)) == 100 and batch[0] > b, "batch")
            increasing(batch, "next_batch")
            d = c.decode(a)
            check(d["id"] == str(a) and d["node"] >= 0, "decode %r" % d)
            orders = c.tag("orders")
            check(c.tag("orders") is orders, "one handle per tag")
            ids = [orders.next() for _ in range(5000)]
            check(ids == list(range(ids[0], ids[0] + 5000)),
                  "one client, one server: consecutive within ranges")
            st = c.stats()
            check(st["tags"]["orders"]["issued"] == 5000, "stats %r" % st)
            check(st["calls"] <= 12, "%d calls for 5000 IDs" % st["calls"])
            u = c.format("u", 3)
            check(len(u) == 3 and all(len(x) == 26 for x in u) and
                  u == sorted(u), "ulids %r" % u)
            check(c.decode(u[0])["format"] == "ulid", "decode a ULID")
    finally:
        s.stop()
        s.close()


def test_errors_and_bad_input():
    s = ft.Server(tags=TAGS)
    try:
        c = frond.Client([url(s)], retries=1, timeout=5)
        expect_error("TAG_NOT_FOUND", c.tag("nope").next, status=404)
        expect_error("TAG_INVALID", c.tag, "")
        expect_error("TAG_INVALID", c.tag, "x" * 129)
        expect_error("TAG_INVALID", c.tag("a\x01b").next, status=400)
        expect_error("COUNT_INVALID", c.next_batch, 0)
        expect_error("COUNT_INVALID", c.next_batch, "3")
        expect_error("COUNT_INVALID", c.next_batch, 10 ** 9, status=400)
        expect_error("ID_INVALID", c.decode, "not-an-id", status=400)
        expect_error("FORMAT_NOT_FOUND", c.format, "nosuch", status=404)
        # A tag with '/' or '?' is one path segment, never another URL.
        expect_error("TAG_NOT_FOUND", c.tag("a/../../v1/snowflake").next)
        # 4xx are never retried.
        before = c.stats()["calls"]
        expect_error("TAG_NOT_FOUND", c.tag("nope2").next)
        check(c.stats()["calls"] - before == 1, "a 404 was retried")
        # The handle stays usable: the next call asks again.
        expect_error("TAG_NOT_FOUND", c.tag("nope").next)
        check(c.tag("orders").next() >= 1, "a good tag after bad ones")
        expect_error("INVAL", frond.Client, ["ftp://x"])
        expect_error("INVAL", frond.Client, [url(s)], timeout=0)
        expect_error("INVAL", c.tag, "other", preload=1.5)
        c.close()
        expect_error("CLOSED", c.next)
        expect_error("CLOSED", c.tag, "orders")
    finally:
        s.stop()
        s.close()


class Silent:
    """A listener that accepts and never answers: every call times out."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]

    def close(self):
        self.sock.close()


class Garbage(http.server.BaseHTTPRequestHandler):
    """200 with a body that is not JSON."""

    def do_GET(self):
        body = b"<html>not frond</html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_unavailable_timeout_bad_response():
    dead = ft.free_port()
    c = frond.Client(["http://127.0.0.1:%d" % dead], retries=2,
                     backoff=0.01)
    e = expect_error("UNAVAILABLE", c.next, status=0)
    check(str(dead) in e.message, "the message names the server: %s" % e)
    check(c.stats()["calls"] == 3, "1 + 2 retries: %r" % c.stats())
    sil = Silent()
    try:
        c = frond.Client(["http://127.0.0.1:%d" % sil.port], timeout=0.3,
                         retries=1, backoff=0.01)
        t0 = time.monotonic()
        expect_error("TIMEOUT", c.next)
        check(time.monotonic() - t0 < 10, "a timeout took %.1f s"
              % (time.monotonic() - t0))
        expect_error("TIMEOUT", c.tag("orders").next)
    finally:
        sil.close()
    h = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Garbage)
    t = threading.Thread(target=h.serve_forever, daemon=True)
    t.start()
    try:
        c = frond.Client(["http://127.0.0.1:%d" % h.server_port])
        expect_error("BAD_RESPONSE", c.next, status=200)
        expect_error("BAD_RESPONSE", c.tag("orders").next)
    finally:
        h.shutdown()
        h.server_close()


def test_idle_connection_closed():
    """A keep-alive connection the server closed while idle is opened
    again on the same server: no error, no failover."""
    import select
    a = ft.Server(tags=TAGS, extra=["--idle-timeout-ms", "200"])
    b = ft.Server(store=a.store)
    try:
        c = frond.Client([url(a), url(b)])
        first = c.next()
        sock = c._local.conns[0].sock

        def closed():
            r, _, _ = select.select([sock], [], [], 0.1)
            return bool(r) and sock.recv(1, socket.MSG_PEEK) == b""
        wait_for(closed, 30, "the server closing the idle connection")
        check(c.next() > first, "after the idle close")
        st = c.stats()
        check(st["failovers"] == 0 and st["retries"] == 0, "%r" % st)
        c.close()
    finally:
        for s in (b, a):
            s.stop()
            s.close()


def test_threads_and_asyncio():
    s = ft.Server(tags=TAGS)
    try:
        c = frond.Client([url(s)], min_range=50)
        seg = c.tag("small")
        per = {}

        def worker(k):
            per[k] = [seg.next() for _ in range(5000)]
            per[k] += [c.next() for _ in range(50)]
        ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
        check(len(per) == 8, "threads did not finish")
        seen = set()
        for k, ids in per.items():
            increasing(ids[:5000], "thread %d's segment IDs" % k)
            increasing(ids[5000:], "thread %d's snowflake IDs" % k)
            seen.update(ids)
        check(len(seen) == 8 * 5050, "%d distinct of %d" % (len(seen),
                                                            8 * 5050))

        async def many():
            async with frond.AsyncClient([url(s)], min_range=20) as ac:
                t = ac.tag("small")
                check(ac.tag("small") is t, "one async handle per tag")
                got = await asyncio.gather(*(t.next() for _ in range(3000)))
                sf = await asyncio.gather(*(ac.next() for _ in range(20)))
                more = await ac.next_batch(5)
                return got, sf + more, ac.stats()
        got, sf, st = asyncio.run(many())
        check(len(set(got)) == 3000 and not set(got) & seen,
              "asyncio: %d distinct, %d seen by the threads"
              % (len(set(got)), len(set(got) & seen)))
        check(len(set(sf)) == 25 and not set(sf) & seen, "asyncio snowflake")
        check(st["tags"]["small"]["issued"] == 3000, "%r" % st)
        c.close()
    finally:
        s.stop()
        s.close()


CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import frond
c = frond.Client([sys.argv[2]], min_range=100)
t = c.tag("orders")
ids = [t.next() for _ in range(int(sys.argv[3]))]
assert ids == sorted(set(ids))
print(json.dumps({"ids": ids, "snowflake": c.next_batch(10)}))
"""


def test_processes():
    s = ft.Server(tags=TAGS)
    try:
        ps = [subprocess.Popen([sys.executable, "-c", CHILD,
                                os.path.join(PKG, "src"), url(s), "20000"],
                               stdout=subprocess.PIPE, text=True)
              for _ in range(4)]
        seen = set()
        for p in ps:
            out, _ = p.communicate(timeout=300)
            check(p.returncode == 0, "a child failed: %s" % out[-500:])
            got = json.loads(out)
            ids = got["ids"] + got["snowflake"]
            check(not seen & set(ids), "an ID given to two processes")
            seen.update(ids)
        check(len(seen) == 4 * 20010, "%d distinct" % len(seen))
        # fork(): the child leases its own ranges, never its parent's.
        c = frond.Client([url(s)])
        seg = c.tag("orders")
        mine = [seg.next() for _ in range(10)]
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                got = [seg.next() for _ in range(10)] + [c.next()]
                os.write(w, json.dumps(got).encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r) as f:
            child = json.loads(f.read() or "[]")
        os.waitpid(pid, 0)
        mine += [seg.next() for _ in range(10)]
        check(len(child) == 11 and not set(child) & set(mine) and
              not set(child) & seen, "after fork: %r and %r" % (child, mine))
        check(child[0] > max(mine[:10]) + 900, "the child's first ID %d "
              "is from its own range" % child[0])
        c.close()
    finally:
        s.stop()
        s.close()


def run_load(client, tag, until, errors, rate=None):
    """Take IDs of tag (and a snowflake ID every 100) until until() says
    stop, at most rate a second; every ID into a list, every error
    counted."""
    seg = client.tag(tag)
    got = []
    n = 0
    t0 = time.monotonic()
    deadline = t0 + 120
    while not until() and time.monotonic() < deadline:
        try:
            got.append(seg.next())
            n += 1
            if n % 100 == 0:
                got.append(client.next())
                if rate:
                    time.sleep(max(0.0, t0 + n / rate - time.monotonic()))
        except frond.FrondError as e:
            errors.append(e)
    return got


def test_server_restarted():
    """A restart under load: IDs from the buffer go on (two ranges of
    100,000 at 20,000 IDs a second: 5 to 10 s of them, more than a
    restart takes), the client reconnects, nothing is given twice, and
    the caller sees no error."""
    s = ft.Server(tags=TAGS, threads=1)
    try:
        c = frond.Client([url(s)], min_range=100000, max_range=100000,
                         retries=8, backoff=0.05)
        stop = threading.Event()
        errors, out = [], []
        t = threading.Thread(target=lambda: out.append(
            run_load(c, "orders", stop.is_set, errors, rate=20000)))
        t.start()
        wait_for(lambda: c.stats()["tags"].get("orders", {})
                 .get("issued", 0) > 3000, 60, "IDs before the restart")
        check(s.stop() == 0, "frond serve did not stop cleanly")
        restart(s)
        mark = c.stats()["tags"]["orders"]["ranges"]
        wait_for(lambda: c.stats()["tags"]["orders"]["ranges"] >= mark + 1,
                 60, "a range from the restarted server")
        stop.set()
        t.join(120)
        ids = out[0]
        seg = [i for i in ids if i < 2 ** 40]
        increasing(seg, "segment IDs across the restart")
        check(len(set(ids)) == len(ids), "a duplicate across the restart")
        check(not errors, "the client saw %d errors, first %s"
              % (len(errors), errors[:1]))
        c.close()
    finally:
        s.stop()
        s.close()


def names_store(s):
    """Does the server name its store (store_id) in /v1/layout?"""
    status, body = ft.http_get(s.port, "/v1/layout")
    return status == 200 and "store" in json.loads(body)


def test_server_killed_failover():
    """Two servers on one store; the first killed with SIGKILL under
    load: the client carries on from its buffer, then from the other.
    With servers that do not name their store, two of them are refused
    (STORE_MISMATCH) and one is used."""
    a = ft.Server(tags=TAGS, threads=1)
    b = ft.Server(store=a.store, threads=1)
    try:
        if not names_store(a):
            c = frond.Client([url(a), url(b)], retries=1, backoff=0.01)
            e = expect_error("STORE_MISMATCH", c.tag("orders").next)
            check("does not name its store" in e.message, e.message)
            check(c.next() > 0, "snowflake IDs need no store")
            c.close()
            return
        c = frond.Client([url(a), url(b)], min_range=500, max_range=500,
                         retries=4, backoff=0.02, timeout=2)
        stop = threading.Event()
        errors, out = [], []
        t = threading.Thread(target=lambda: out.append(
            run_load(c, "orders", stop.is_set, errors)))
        t.start()
        wait_for(lambda: c.stats()["tags"].get("orders", {})
                 .get("ranges", 0) >= 3, 60, "ranges from the first")
        a.stop(sig=signal.SIGKILL)
        mark = c.stats()["tags"]["orders"]["ranges"]
        wait_for(lambda: c.stats()["tags"]["orders"]["ranges"] >= mark + 3,
                 60, "ranges from the second server")
        stop.set()
        t.join(120)
        st = c.stats()
        check(st["failovers"] >= 1, "no failover: %r" % st)
        ids = out[0]
        check(len(set(ids)) == len(ids), "a duplicate across the failover")
        check(not errors, "the client saw %d errors, first %s"
              % (len(errors), errors[:1]))
        c.close()
    finally:
        for s in (b, a):
            s.stop()
            s.close()


def test_validity_and_adaptive_size():
    s = ft.Server(tags=TAGS)
    try:
        c = frond.Client([url(s)], validity=0.5, min_range=100,
                         max_range=1600, target=30)
        seg = c.tag("orders")
        first = seg.next()
        wait_for(lambda: seg.stats()["dropped"] >= 99, 30,
                    "the range dropped after its validity")
        second = seg.next()
        st = seg.stats()
        check(second >= first + 100 and st["ranges"] >= 2,
              "after the drop: %d after %d, %r" % (second, first, st))
        # A fast reader doubles the size up to max_range.
        c2 = frond.Client([url(s)], min_range=100, max_range=1600,
                          target=30)
        fast = c2.tag("orders")
        for _ in range(20000):
            fast.next()
        check(fast.stats()["range_size"] == 1600, "%r" % fast.stats())
        c.close()
        c2.close()
    finally:
        s.stop()
        s.close()


def test_server_max_range():
    """A server whose max_range is below the client's: the client learns
    the bound from COUNT_INVALID and stays within it; no error reaches
    the caller."""
    s = ft.Server(tags=TAGS, extra=["--max-range", "4000"])
    try:
        c = frond.Client([url(s)], min_range=1000, target=30)
        seg = c.tag("orders")
        errors = 0
        ids = []
        for _ in range(30000):
            try:
                ids.append(seg.next())
            except frond.FrondError:
                errors += 1
        st = seg.stats()
        check(errors == 0 and st["range_size"] <= 4000 and
              len(set(ids)) == 30000, "%d errors, %r" % (errors, st))
        c.close()
    finally:
        s.stop()
        s.close()


def test_size_not_grown_by_failures():
    """Failed loads leave the range size as it was: after an outage the
    client does not ask for its largest range."""
    s = ft.Server(tags=TAGS)
    try:
        c = frond.Client([url(s)], min_range=100, max_range=1000000,
                         target=30, retries=0, timeout=1, validity=0)
        seg = c.tag("orders")
        while seg.stats()["ranges"] < 3:
            seg.next()
        size = seg.stats()["range_size"]
        s.stop()
        errors = 0
        deadline = time.monotonic() + 60
        while errors < 8 and time.monotonic() < deadline:
            try:
                seg.next()
            except frond.FrondError:
                errors += 1
        check(errors == 8, "no errors with the server stopped")
        after = seg.stats()["range_size"]
        check(after <= 2 * size, "range size %d after 8 failed loads, %d "
              "before" % (after, size))
        c.close()
    finally:
        s.stop()
        s.close()


def test_page_program():
    """docs/clients/python.md's program, run as written against a server
    named by FROND_SERVERS."""
    with open(os.path.join(SRC, "docs", "clients", "python.md")) as f:
        page = f.read()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    check(blocks, "docs/clients/python.md has no python block")
    s = ft.Server(tags={"orders": 1000})
    try:
        env = dict(os.environ, FROND_SERVERS=url(s),
                   PYTHONPATH=os.path.join(PKG, "src"))
        r = subprocess.run([sys.executable, "-c", blocks[0]], env=env,
                           capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "the page's program: %s %s" % (r.stdout,
                                                                r.stderr))
        check(re.search(r"^order \d+$", r.stdout, re.M) and
              re.search(r"^event \d+", r.stdout, re.M),
              "the page's program printed %r" % r.stdout)
    finally:
        s.stop()
        s.close()


def test_pip_install():
    """pip installs the package from the checkout, with no network
    (Debian's setuptools builds it), and the installed copy works."""
    py = "/usr/bin/python3"
    ft.need(py, "python3")
    r = subprocess.run([py, "-c", "import setuptools, venv, ensurepip"],
                       capture_output=True, text=True)
    check(r.returncode == 0, "Debian's python3 lacks setuptools or venv "
          "(python3-setuptools, python3-venv): %s" % r.stderr)
    d = tempfile.mkdtemp(prefix="frond-pyclient-")
    try:
        build = os.path.join(d, "src")
        shutil.copytree(PKG, build)
        venv = os.path.join(d, "venv")
        r = subprocess.run([py, "-m", "venv", "--system-site-packages",
                            venv], capture_output=True, text=True,
                           timeout=300)
        check(r.returncode == 0, "venv: %s" % r.stderr)
        r = subprocess.run([os.path.join(venv, "bin", "pip"), "install",
                            "--no-index", "--no-build-isolation", build],
                           capture_output=True, text=True, timeout=300,
                           cwd=d)
        check(r.returncode == 0, "pip install: %s %s" % (r.stdout[-2000:],
                                                         r.stderr[-2000:]))
        r = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                            "import frond, sys; print(frond.__version__, "
                            "frond.__file__)"], capture_output=True,
                           text=True, timeout=60, cwd=d)
        check(r.returncode == 0 and r.stdout.startswith(
            frond.__version__ + " " + venv), "installed: %s %s"
            % (r.stdout, r.stderr))
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    ft.need(ft.FROND_BIN, "frond (build it first)")
    ft.main([test_ids_formats_decode, test_errors_and_bad_input,
             test_unavailable_timeout_bad_response,
             test_idle_connection_closed, test_threads_and_asyncio,
             test_processes, test_server_restarted,
             test_server_killed_failover, test_validity_and_adaptive_size,
             test_server_max_range, test_size_not_grown_by_failures,
             test_page_program, test_pip_install])
