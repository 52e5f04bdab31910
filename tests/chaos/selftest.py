#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
selftest.py -- the fault-injection suite's own instruments, tested.

A checker that cannot fail, or a proxy that does not cut, would make every
scenario pass for nothing. This feeds chaos_check streams with known
duplicates, order violations and IDs above a fence, and checks the counts;
and drives netproxy.py against a local echo server through each mode.
"""
import array
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet  # noqa: E402
from fleet import ft  # noqa: E402

LAYOUT = "time=41,node=10,seq=12,unit=1ms,epoch=1735689600000"
EPOCH = 1735689600000


def sf(ms, node, seq):
    """A snowflake ID of the default layout."""
    return ((ms - EPOCH) << 22) | (node << 12) | seq


def write_stream(d, name, batches):
    """batches: [(sent_ns, ids)] -> NAME.ids and NAME.rec as chaos_load."""
    ids, rec = array.array("q"), array.array("q")
    for sent, batch in batches:
        ids.extend(batch)
        rec.extend([sent, sent + 1000, len(batch), 0])
    rec.extend([batches[-1][0] + 5000, batches[-1][0] + 6000, 0, -5])
    with open(os.path.join(d, name + ".ids"), "wb") as f:
        ids.tofile(f)
    with open(os.path.join(d, name + ".rec"), "wb") as f:
        rec.tofile(f)
    return os.path.join(d, name)


def run_check(d, lines):
    path = os.path.join(d, "manifest")
    with open(path, "w") as f:
        f.write("tmp %s\nlayout frond %s\n" % (d, LAYOUT))
        f.write("\n".join(lines) + "\n")
    r = subprocess.run([ft.tool("chaos_check"), path], capture_output=True,
                       text=True, timeout=60)
    ft.check(r.returncode == 0, "chaos_check: %s" % r.stderr)
    out = {}
    for line in r.stdout.splitlines():
        if not line.startswith("example") and not line.startswith("failed "):
            k, v = line.split()
            out[k] = int(v)
    return out, r.stdout


def test_checker_counts():
    d = ft.tempdir("frond-chaos-self-")
    t = 1795400000000
    # Node a restarts at 1000 ns (its second incarnation); node b does not.
    a1 = write_stream(d, "a1", [
        (10, [sf(t, 0, 0), sf(t, 0, 1), sf(t, 0, 2)]),
        (20, [sf(t, 0, 3), sf(t - 1, 0, 9)]),  # goes back: order
        (2000, [sf(t + 1, 0, 0)]),             # second incarnation, above
    ])
    a2 = write_stream(d, "a2", [(30, [sf(t, 0, 10)])])
    # First ID of its stream, but below what a's first incarnation issued.
    a3 = write_stream(d, "a3", [(3000, [sf(t, 0, 5)])])
    b1 = write_stream(d, "b1", [
        (10, [sf(t, 1, 0), sf(t, 0, 1)]),  # sf(t, 0, 1) again: duplicate
        (40, [sf(t + 50, 1, 0)]),          # above the fence polled next
        (50, [sf(t, 2, 0)]),               # node ID 2 never had a fence
    ])
    # A static node ID (node 3 here): no coordinator, so no fence.
    c1 = write_stream(d, "c1", [(10, [sf(t + 500, 3, 0)])])
    s1 = write_stream(d, "s1", [(10, [5, 6, 7]), (20, [8])])
    s2 = write_stream(d, "s2", [(10, [7, 9])])  # 7 twice in one tag
    s3 = write_stream(d, "s3", [(10, [7, 8])])  # another tag: no duplicate
    # (poll began, node ID, fence): a poll before an ID arrived says
    # nothing about it; the first one after it does, not a later one.
    fence = array.array("q", [
        5, 0, t - 100, 5, 1, t - 100,
        5000, 1, t + 10, 10000, 0, t + 1000, 10000, 1, t + 100,
    ])
    with open(os.path.join(d, "fence.bin"), "wb") as f:
        fence.tofile(f)
    out, text = run_check(d, [
        "incarnation a 0 frond", "incarnation a 1000 frond",
        "incarnation b 0 frond",
        "stream a1 %s snowflake - a" % a1, "stream a2 %s snowflake - a" % a2,
        "stream a3 %s snowflake - a" % a3,
        "stream b1 %s snowflake - b" % b1,
        "static c", "stream c1 %s snowflake - c" % c1,
        "stream s1 %s segment orders a" % s1,
        "stream s2 %s segment orders b" % s2,
        "stream s3 %s segment events b" % s3,
        "fence %s" % os.path.join(d, "fence.bin")])
    want = {"ids": 21, "snowflake_ids": 13, "segment_ids": 8,
            "duplicates": 2, "duplicate_answers": 2, "order": 2,
            "order_restart": 1, "above_fence": 1, "unfenced": 1,
            "requests": 21, "failed_requests": 8}
    got = {k: out.get(k) for k in want}
    ft.check(got == want, "chaos_check counted %s, want %s\n%s" %
             (got, want, text))
    ft.check("example duplicate orders 7 x2" in text,
             "no example of the segment duplicate:\n" + text)
    ft.check("failed CLOCK_BEHIND 8" in text, "failed requests:\n" + text)
    import shutil
    shutil.rmtree(d, ignore_errors=True)


def test_checker_floor():
    """A barrier (a fleet-wide layout change): the nodes it names issue
    above everything any of them issued before it; other nodes and
    segment IDs are not bound by it."""
    d = ft.tempdir("frond-chaos-self-")
    t = 1795400000000
    c = write_stream(d, "c", [
        (10, [sf(t, 0, 100)]),
        (6000, [sf(t + 3, 0, 0)]),  # above c's own, below d's old: floor
        (7000, [sf(t + 9, 0, 0)]),  # above everything before: fine
    ])
    dd = write_stream(d, "d", [(10, [sf(t + 5, 1, 0)]),
                               (6000, [sf(t + 10, 1, 0)])])
    # Not named by the barrier: below d's old IDs after it, and fine.
    e = write_stream(d, "e", [(10, [sf(t, 2, 0)]), (6000, [sf(t + 1, 2, 0)])])
    g = write_stream(d, "g", [(10, [50]), (6000, [60])])
    out, text = run_check(d, [
        "incarnation c 0 frond", "incarnation c 5000 frond",
        "incarnation d 0 frond", "incarnation d 5000 frond",
        "incarnation e 0 frond", "incarnation e 5000 frond",
        "barrier 5000 c,d",
        "stream c %s snowflake - c" % c, "stream d %s snowflake - d" % dd,
        "stream e %s snowflake - e" % e, "stream g %s segment orders c" % g])
    want = {"ids": 9, "order": 1, "order_restart": 0, "order_floor": 1,
            "duplicates": 0}
    got = {k: out.get(k) for k in want}
    ft.check(got == want, "chaos_check counted %s, want %s\n%s" %
             (got, want, text))
    ft.check("example floor c[1]" in text, "no example of the floor:\n" +
             text)
    import shutil
    shutil.rmtree(d, ignore_errors=True)


class Echo:
    """A loopback echo server."""

    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(16)
        self.port = self.s.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.s.accept()
            except OSError:
                return
            threading.Thread(target=self.echo, args=(c,), daemon=True).start()

    @staticmethod
    def echo(c):
        try:
            while True:
                b = c.recv(4096)
                if not b:
                    break
                c.sendall(b)
        except OSError:
            pass
        c.close()


def roundtrip(port, data=b"ping", timeout=2.0):
    """Seconds an echo through the proxy takes, None on timeout, or the
    exception class on a reset."""
    t0 = time.monotonic()
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        c.sendall(data)
        got = b""
        while len(got) < len(data):
            b = c.recv(4096)
            if not b:
                return ConnectionResetError
            got += b
        c.close()
        return time.monotonic() - t0
    except socket.timeout:
        return None
    except (ConnectionResetError, BrokenPipeError):
        return ConnectionResetError


def test_netproxy_modes():
    echo = Echo()
    run = fleet.Run("selftest")
    try:
        p = fleet.Proxy(run, {"e": "127.0.0.1:%d" % echo.port})
        port = p.ports["e"]
        ft.check(isinstance(roundtrip(port), float), "pass does not pass")
        p.set("e", "delay", 300)
        dt = roundtrip(port)
        ft.check(isinstance(dt, float) and dt >= 0.55,
                 "delay 300 each way took %s s" % dt)
        p.set("e", "blackhole")
        ft.check(roundtrip(port, timeout=1.0) is None,
                 "blackhole let an answer through")
        # A connection opened during the partition flows once it heals.
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
        c.sendall(b"held")
        time.sleep(0.3)
        p.set("e", "pass")
        ft.check(c.recv(16) == b"held", "held bytes lost after heal")
        p.set("e", "reset")
        try:
            c.sendall(b"x")
            ft.check(c.recv(16) == b"", "reset left the connection open")
        except (ConnectionResetError, BrokenPipeError):
            pass
        c.close()
        ft.check(isinstance(roundtrip(port), float), "no pass after reset")
        p.set("e", "refuse")
        ft.check(roundtrip(port) is ConnectionResetError,
                 "refuse accepted a connection")
        p.set("*", "pass")
        stats = json.loads(query(p.ports["control"], "stats"))
        ft.check(stats["e"]["mode"] == "pass", "stats: %s" % stats)
    finally:
        run.close()
        echo.s.close()


def query(port, line):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall((line + "\n").encode())
    answer = s.makefile().readline()
    s.close()
    return answer


if __name__ == "__main__":
    ft.main([test_checker_counts, test_checker_floor, test_netproxy_modes])
