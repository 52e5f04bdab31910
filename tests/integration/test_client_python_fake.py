#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_client_python_fake.py -- the Python client (clients/python) against
servers faked in the test's process (fakefrond.py), where a test says
what the server answers and when: range answers that are malformed or
below an earlier one, asyncio calls that wait for a held answer (no
executor thread held, a burst on small ranges, woken calls cancelled),
a load that ends whatever fails, and the store's identity checked across
servers. The real server's tests: test_client_python.py.
"""
import asyncio
import concurrent.futures
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from fakefrond import FakeServer, FakeStore  # noqa: E402
from frondtest import check  # noqa: E402
from client_python_common import (  # noqa: E402
    expect_error, frond, increasing, wait_for)


def test_bad_range_answers():
    """A range's start and end are strings of decimal digits within
    int64, nothing else: BAD_RESPONSE."""
    f = FakeServer(FakeStore())
    try:
        c = frond.Client([f.url], retries=0)
        for bad in [("9007199254740993", "9007199254741993"),
                    ('""', '"1000"'), ("1993.7", "2993.7"),
                    ('"1993.7"', '"2993.7"'), ('"1_000"', '"2000"'),
                    ('"-5"', '"995"'), ('" 5"', '"1005"'),
                    ('"+5"', '"1005"'), ('"\u0661"', '"1001"'),
                    ('"9223372036854775808"', '"9223372036854776808"'),
                    ('"0x10"', '"1016"'), ("null", '"1000"'),
                    ('["1"]', '"1001"')]:
            f.bad = bad
            e = expect_error("BAD_RESPONSE", c.range, "t", 1000)
            check("decimal digits" in e.message, e.message)
            expect_error("BAD_RESPONSE", frond.Client([f.url], retries=0)
                         .tag("t").next)
        f.bad = ('"9223372036854774807"', '"9223372036854775807"')
        check(c.range("t", 1000) == (2 ** 63 - 1001, 2 ** 63 - 1),
              "the largest range")
        f.bad = None
        s, e = c.range("t", 10)
        check(e - s == 10, "a good answer after bad ones")
        c.close()
    finally:
        f.close()


def test_refused_range_dropped():
    """A range below one the same server leased before is refused with
    BAD_RESPONSE and its IDs are counted as dropped, as the Go and Java
    clients count them. Before, they were counted nowhere."""
    f = FakeServer(FakeStore())
    f.bad = ('"1001"', '"1011"')  # every answer [1001, 1011)
    try:
        c = frond.Client([f.url], retries=0, min_range=10, max_range=10,
                         validity=0)
        seg = c.tag("t")
        ids = [seg.next() for _ in range(10)]
        check(ids == list(range(1001, 1011)), "IDs %r" % ids)
        # The preload (at 1009) was refused; this call's load, if the
        # preload had ended, too: the call fails with one's error.
        e = expect_error("BAD_RESPONSE", seg.next)
        check("below 1011" in e.message, e.message)
        e = expect_error("BAD_RESPONSE", seg.next)
        check("below 1011" in e.message, e.message)
        st = seg.stats()
        check(f.ranges >= 3, "%d answers: the test tests nothing"
              % f.ranges)
        check(st["ranges"] == 1 and st["issued"] == 10 and
              st["buffered"] == 0, "stats %r" % st)
        check(st["dropped"] == 10 * (f.ranges - 1), "stats %r after %d "
              "answers: the %d refused ranges' IDs not all dropped"
              % (st, f.ranges, f.ranges - 1))
        c.close()
    finally:
        f.close()


def test_async_waits_hold_no_thread():
    """Coroutines waiting for a range hold no thread of the event loop's
    executor: while the server holds its answer and 50 calls wait, a job
    given to the default executor (two threads) runs at once, and every
    call gets its ID once the answer comes. Before, each waiting call
    held an executor thread for its whole wait, and the loop's other
    executor work (its getaddrinfo among it) waited behind them."""
    f = FakeServer(FakeStore())
    gate = threading.Event()
    f.hold = gate

    async def run():
        loop = asyncio.get_running_loop()
        pool = concurrent.futures.ThreadPoolExecutor(2)
        loop.set_default_executor(pool)
        async with frond.AsyncClient([f.url], min_range=100, max_range=100,
                                     timeout=60, retries=0) as ac:
            seg = ac.tag("t")
            calls = [asyncio.ensure_future(seg.next()) for _ in range(50)]
            for _ in range(3):
                await asyncio.sleep(0)  # each call runs to its wait
            t0 = time.monotonic()
            while f.held < 1 and time.monotonic() - t0 < 30:
                await asyncio.sleep(0.01)
            check(f.held == 1, "%d requests held: want the one load's"
                  % f.held)
            try:
                job = await asyncio.wait_for(
                    loop.run_in_executor(None, lambda: 42), 20)
            except asyncio.TimeoutError:
                job = None
            waiting = sum(not c.done() for c in calls)
            gate.set()
            got = await asyncio.gather(*calls, return_exceptions=True)
            return job, waiting, got

    try:
        job, waiting, got = asyncio.run(run())
    finally:
        gate.set()
        f.close()
    check(job == 42, "a job of the loop's executor waited 20 s behind "
          "the calls waiting for a range")
    check(waiting == 50, "%d of 50 calls still waited as the job ran"
          % waiting)
    ids = [v for v in got if isinstance(v, int)]
    check(len(ids) == 50 and len(set(ids)) == 50,
          "the calls got %r" % got[:5])


def test_async_burst_small_ranges():
    """A burst of 1,500 coroutines on an empty handle whose ranges hold 3
    IDs: each load wakes as many waiting calls as its range can serve
    (and one more), not every one. The calls' looks at the buffers are
    counted: woken all at once, they looked again some 1,500 times a
    load, 500 loads (and most failed with TIMEOUT once the machine was
    busy). Every call gets its ID, each once."""
    f = FakeServer(FakeStore(step=3))
    looks = [0]

    async def run():
        async with frond.AsyncClient([f.url], min_range=3,
                                     max_range=3) as ac:
            seg = ac.tag("t")
            inner = seg._seg
            step = inner._step

            def counted(wait, w):
                looks[0] += 1
                return step(wait, w)
            inner._step = counted
            return await asyncio.gather(
                *(seg.next() for _ in range(1500)), return_exceptions=True)

    try:
        got = asyncio.run(run())
    finally:
        f.close()
    bad = [v for v in got if not isinstance(v, int)]
    check(not bad, "%d of 1500 calls failed: %r" % (len(bad), bad[:3]))
    check(len(set(got)) == 1500, "%d distinct IDs of 1500" % len(set(got)))
    check(looks[0] <= 20 * 1500, "%d looks at the buffers for 1500 calls "
          "of %d ranges: every waiting call was woken by every load"
          % (looks[0], f.ranges))


def test_async_woken_cancelled():
    """Calls woken by a load and cancelled before they look pass their
    turn on: with ranges of 3 IDs, the four calls a load wakes are
    cancelled, and the four behind them get the range's IDs (the last
    one starts the next load), not their deadline's TIMEOUT."""
    f = FakeServer(FakeStore(step=3))
    gates = [threading.Event(), threading.Event()]

    async def run():
        async with frond.AsyncClient([f.url], min_range=3,
                                     max_range=3) as ac:
            seg = ac.tag("t")
            inner = seg._seg
            lease, loads = inner._lease, [0]

            def gated(size):
                loads[0] += 1
                gates[min(loads[0], 2) - 1].wait(60)
                return lease(size)
            inner._lease = gated
            calls = [asyncio.ensure_future(seg.next()) for _ in range(8)]
            t0 = time.monotonic()
            while len(inner._watchers) < 8 and time.monotonic() - t0 < 30:
                await asyncio.sleep(0.01)
            check(len(inner._watchers) == 8, "8 calls do not wait")
            for c in calls[:4]:
                c.cancel()
            gates[0].set()
            # The loop waits here (its calls cannot run) until the load
            # has woken the four oldest calls.
            t0 = time.monotonic()
            while inner._next is None and time.monotonic() - t0 < 30:
                time.sleep(0.001)
            check(inner._next is not None, "the first load did not end")
            t0 = time.monotonic()  # the deadline of a call: 13 s
            while sum(c.done() for c in calls[4:]) < 3 and \
                    time.monotonic() - t0 < 10:
                await asyncio.sleep(0.01)
            got = sorted(c.result() for c in calls[4:] if c.done())
            gates[1].set()
            rest = await asyncio.gather(*calls[4:], return_exceptions=True)
            return got, rest

    try:
        got, rest = asyncio.run(run())
    finally:
        for g in gates:
            g.set()
        f.close()
    check(got == [1, 2, 3], "the calls behind the cancelled ones got %r "
          "of the first range (1, 2, 3) while the next load was held"
          % got)
    check(sorted(rest) == [1, 2, 3, 4], "they got %r" % rest)


class Stop(BaseException):
    """Not an Exception: what stops a thread (gevent's GreenletExit)."""


def test_load_ends_whatever_fails():
    """A range load that cannot start (no thread to be had) or that
    stops on a BaseException ends all the same: the call waiting for it
    fails with UNAVAILABLE at once, and the next call loads again. A load
    left marked as on its way would stop every later load: each call
    would wait for its deadline and fail with TIMEOUT."""
    from frond import _segment
    f = FakeServer(FakeStore())
    hook = threading.excepthook
    fails = []
    c = None

    class NoThread(threading.Thread):
        def start(self):
            if fails and fails.pop() == "start":
                raise RuntimeError("can't start new thread")
            super().start()

    class Threads:
        """The client's threading module, its Thread replaced (the fake
        server's threads are not)."""
        Thread = NoThread

        def __getattr__(self, name):
            return getattr(threading, name)

    try:
        # Each wait of a call bounded near 30 s: the old code's TIMEOUT
        # would take that long, the fixed code none of it.
        c = frond.Client([f.url], retries=0, timeout=29.0, backoff_max=0.0,
                         min_range=10, max_range=10)
        t = c.tag("t")
        _segment.threading = Threads()
        fails.append("start")
        t0 = time.monotonic()
        e = expect_error("UNAVAILABLE", t.next)
        check("could not start" in e.message and "t:" in e.message,
              e.message)
        check(time.monotonic() - t0 < 20, "the failure took %.1f s"
              % (time.monotonic() - t0))
        ids = [t.next() for _ in range(25)]
        check(ids == list(range(ids[0], ids[0] + 25)), "after it: %r"
              % ids[:5])
        # A preload that cannot start: its call's ID is handed out all
        # the same, and a later call loads again.
        fails.append("start")
        more = [t.next() for _ in range(40)]
        check(not fails, "no load was started")
        increasing(ids + more, "IDs after a preload that could not start")
        # A BaseException in a load (on a tag not loaded yet): its thread
        # stops with it (threading.excepthook is told), the call waiting
        # gets UNAVAILABLE, the next call loads again.
        _segment.threading = threading
        lease = c._lease_range
        seen = []

        def stopping(name, size):
            if not seen:
                seen.append(1)
                raise Stop("stopped")
            return lease(name, size)

        c._lease_range = stopping
        threading.excepthook = lambda a: seen.append(a.exc_type)
        u = c.tag("u")
        t0 = time.monotonic()
        e = expect_error("UNAVAILABLE", u.next)
        check("stopped" in e.message and "u:" in e.message, e.message)
        check(time.monotonic() - t0 < 20, "the failure took %.1f s"
              % (time.monotonic() - t0))
        wait_for(lambda: Stop in seen, 10, "the Stop passed on to its "
                 "thread")
        check(u.next() > 0, "a load after the stop")
    finally:
        _segment.threading = threading
        threading.excepthook = hook
        if c is not None:
            c.close()
        f.close()


def test_store_identity():
    """store_id: servers of one store answer from their own buffers, so
    ranges from two of them are unique but not in order: after a
    failover to a server that has served before, no error and no
    duplicate. Servers of different stores, or several that do not name
    theirs, are refused with STORE_MISMATCH."""
    st = FakeStore(step=1000)
    a, b = FakeServer(st), FakeServer(st)
    try:
        # Another process took from B first: B buffers the lower segment.
        other = frond.Client([b.url])
        check(other.range("t", 10)[0] == 1, "B's first range")
        other.close()
        c = frond.Client([a.url, b.url], min_range=100, max_range=100,
                         retries=2, backoff=0.01)
        seg = c.tag("t")
        ids = [seg.next() for _ in range(150)]
        check(min(ids) > 1000, "from A, above B's buffer: %d" % min(ids))
        a.kill()
        errors = []
        for _ in range(3000):
            try:
                ids.append(seg.next())
            except frond.FrondError as e:
                errors.append(e)
        check(not errors, "%d errors after the failover, first %s"
              % (len(errors), errors[:1]))
        check(len(set(ids)) == len(ids) == 3150, "%d IDs, %d distinct"
              % (len(ids), len(set(ids))))
        check(min(ids[150:]) < min(ids[:150]), "B's IDs are lower: the "
              "test did not test what it means to")
        increasing(ids[:150], "from A")
        increasing([i for i in ids[150:] if i <= 1000], "B's buffer")
        c.close()
    finally:
        a.close()
        b.close()
    # Different stores: the first pins; the other's ranges are refused,
    # naming both servers and both stores.
    x, y = FakeServer(FakeStore()), FakeServer(FakeStore())
    try:
        c = frond.Client([x.url, y.url], retries=3, backoff=0.01)
        c.range("t", 10)
        x.fail = True
        e = expect_error("STORE_MISMATCH", c.range, "t", 10)
        for part in (x.url, y.url, x.store.id, y.store.id):
            check(part in e.message, "%s not in %r" % (part, e.message))
        check(y.ranges >= 1, "the other server was asked")
        x.fail = False
        check(c.range("t", 10)[1] > 0, "the pinned store again")
        c.close()
    finally:
        x.close()
        y.close()
    # Servers that name no store: one alone is trusted, two are not.
    p, q = FakeServer(st, names_store=False), FakeServer(st,
                                                         names_store=False)
    try:
        c = frond.Client([p.url])
        check(c.tag("t").next() > 0, "one server without a store")
        c.close()
        c = frond.Client([p.url, q.url], retries=1, backoff=0.01)
        e = expect_error("STORE_MISMATCH", c.tag("t").next)
        check("does not name its store" in e.message, e.message)
        c.close()
    finally:
        p.close()
        q.close()


if __name__ == "__main__":
    ft.main([test_bad_range_answers, test_refused_range_dropped,
             test_async_waits_hold_no_thread, test_async_burst_small_ranges,
             test_async_woken_cancelled, test_load_ends_whatever_fails,
             test_store_identity])
