#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench/scale/scale.py -- a server with many tags and many connections:
start time, memory and idle CPU with a million tags (start time again
on a multi: store of two SQLite files), the first ID of
100,000 distinct tags beside the store's own transaction rate, memory of
idle connections after a large batch each, and range leases beside single
IDs. Run it through bench/scale/run.sh, which builds the release.

Environment: TAGS (1000000), USED (100000), CONNS (10000), IDLE_S (30),
IDLE_LONG_S (240: idle CPU after use is averaged over a window that
holds a refresh of the tag list), WRK_ARGS ("-t1 -c16 -d5s"). Everything runs on loopback in a temp dir and
is stopped at the end; every wait is bounded.
"""
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

FROND = os.environ.get("FROND_BIN", "build/frond")
BENCH_STORE = os.path.join(os.path.dirname(FROND), "bench_store")
TAGS = int(os.environ.get("TAGS", 1000000))
USED = int(os.environ.get("USED", 100000))
CONNS = int(os.environ.get("CONNS", 10000))
IDLE_S = float(os.environ.get("IDLE_S", 30))
IDLE_LONG_S = float(os.environ.get("IDLE_LONG_S", 240))
WRK_ARGS = os.environ.get("WRK_ARGS", "-t1 -c16 -d5s").split()
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

rows = []  # (what, goal, value, note)


def row(what, goal, value, note=""):
    rows.append((what, goal, value, note))
    print("  %-58s %s %s" % (what, value, note), flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def http(port, path, timeout=30):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n"
              % path.encode())
    out = b""
    while True:
        c = s.recv(1 << 16)
        if not c:
            break
        out += c
    s.close()
    head, _, body = out.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def metric(port, name):
    _, body = http(port, "/metrics")
    m = re.search(r"^%s (\S+)$" % re.escape(name), body.decode(), re.M)
    return float(m.group(1)) if m else None


def rss_mb(pid):
    with open("/proc/%d/statm" % pid) as f:
        return int(f.read().split()[1]) * PAGE / 1e6


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / TICK


def idle_cpu_pct(pid, seconds):
    c0, t0 = cpu_s(pid), time.monotonic()
    time.sleep(seconds)
    return 100.0 * (cpu_s(pid) - c0) / (time.monotonic() - t0)


class Server:
    def __init__(self, d, store, extra=()):
        self.port, self.resp = free_port(), free_port()
        self.log = open(os.path.join(d, "serve-%d.log" % self.port), "w")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [FROND, "serve", "--listen", "127.0.0.1:%d" % self.port,
             "--resp-listen", "127.0.0.1:%d" % self.resp, "--store", store,
             "--data-dir", d, "--threads", "1", "--log-level", "warn"] +
            list(extra), stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if http(self.port, "/readyz", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.01)
        else:
            self.stop()
            sys.exit("scale.py: the server never became ready")
        self.ready_s = time.monotonic() - self.t0

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def make_store(uri, files, n):
    """n tags t0000000.. in leaf_alloc of each file (created by frond
    through uri, a store or a multi: of them), step 1000."""
    r = subprocess.run([FROND, "tag", "create", "seed", "--step", "1000",
                        "--store", uri],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("scale.py: tag create: " + r.stderr)
    for path in files:
        db = sqlite3.connect(path)
        db.execute("DELETE FROM leaf_alloc")
        db.executemany("INSERT INTO leaf_alloc (biz_tag, max_id, step, "
                       "description) VALUES (?, 1, 1000, '')",
                       (("t%07d" % i,) for i in range(n)))
        db.commit()
        db.close()


def store_tps(d):
    """Allocations per second straight against d/ref.db, a copy of the
    benchmark's store (the same table of TAGS rows), one connection."""
    r = subprocess.run([BENCH_STORE, "sqlite://%s/ref.db" % d, "1000", "3"],
                       capture_output=True, text=True, timeout=600)
    m = re.search(r"^\s*median\s+([0-9.]+)", r.stdout, re.M)
    return float(m.group(1)) if m else float("nan"), r.stdout


def first_ids(port, n, conns=8, depth=500):
    """INCR of n distinct tags over RESP, pipelined; returns seconds."""
    socks = [socket.create_connection(("127.0.0.1", port), timeout=120)
             for _ in range(conns)]
    t0 = time.monotonic()
    next_tag = 0
    while next_tag < n:
        pending = []
        for s in socks:
            k = min(depth, n - next_tag)
            if k <= 0:
                break
            cmd = b"".join(b"*2\r\n$4\r\nINCR\r\n$8\r\nt%07d\r\n" % i
                           for i in range(next_tag, next_tag + k))
            next_tag += k
            s.sendall(cmd)
            pending.append((s, k))
        for s, k in pending:
            got, buf = 0, b""
            while got < k:
                buf += s.recv(1 << 16)
                while b"\r\n" in buf:
                    line, buf = buf.split(b"\r\n", 1)
                    if not line.startswith(b":"):
                        sys.exit("scale.py: INCR failed: %r" % line)
                    got += 1
    dt = time.monotonic() - t0
    for s in socks:
        s.close()
    return dt


def batch_conns(port, n, count=100000):
    """n keep-alive connections, one batch of count IDs each, left open."""
    socks = []
    req = (b"GET /v1/segment/conn?count=%d&as=text HTTP/1.1\r\n"
           b"Host: b\r\n\r\n" % count)
    buf = bytearray(1 << 20)
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        s.sendall(req)
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(4096)
        h, _, rest = head.partition(b"\r\n\r\n")
        if not h.startswith(b"HTTP/1.1 200"):
            sys.exit("scale.py: batch: %r" % h[:200])
        left = int(re.search(rb"(?i)content-length: *(\d+)", h).group(1))
        left -= len(rest)
        while left > 0:
            left -= s.recv_into(buf, min(left, len(buf)))
        socks.append(s)
    return socks


def wrk(port, path):
    r = subprocess.run(["wrk"] + WRK_ARGS + ["http://127.0.0.1:%d%s"
                                              % (port, path)],
                       capture_output=True, text=True, timeout=300)
    m = re.search(r"Requests/sec:\s*([0-9.]+)", r.stdout)
    return float(m.group(1)) if m else float("nan")


def main():
    d = tempfile.mkdtemp(prefix="frond-bench-scale-")
    try:
        print("bench/scale: %d tags, %d used, %d connections; 2 cores; "
              "frond threads=1; SQLite in a temp dir" %
              (TAGS, USED, CONNS), flush=True)
        store = "sqlite://%s/tags.db" % d
        make_store(store, [store[len("sqlite://"):]], TAGS)
        shutil.copy(os.path.join(d, "tags.db"), os.path.join(d, "ref.db"))
        tps, _ = store_tps(d)

        s = Server(d, store)
        row("%d tags in SQLite: start to ready" % TAGS, "<= 3 s",
            "%.2f s" % s.ready_s)
        rss0 = rss_mb(s.proc.pid)
        row("RSS after start", "<= 300 MB", "%.0f MB" % rss0)
        row("idle CPU, %d tags (none used), %.0f s" % (TAGS, IDLE_S),
            "<= 1 %", "%.2f %%" % idle_cpu_pct(s.proc.pid, IDLE_S))
        loads0 = metric(s.port, "frond_segment_loads_total") or 0
        dt = first_ids(s.resp, USED)
        loads = (metric(s.port, "frond_segment_loads_total") or 0) - loads0
        row("first ID from %d distinct tags" % USED, "store-bound",
            "%.0f tags/s" % (USED / dt),
            "(%.1f s; %d loads = %.0f store tx/s; the store alone on a "
            "copy of the same table, 1 connection: %.0f tx/s)"
            % (dt, loads, loads / dt, tps))
        row("RSS after one ID from each of %d tags" % USED, "<= 600 MB",
            "%.0f MB" % rss_mb(s.proc.pid))
        row("idle CPU, %d tags (%d used), %.0f s" % (TAGS, USED,
                                                     IDLE_LONG_S),
            "<= 1 %", "%.2f %%" % idle_cpu_pct(s.proc.pid, IDLE_LONG_S))
        s.stop()

        members = [os.path.join(d, "m%d.db" % i) for i in range(2)]
        multi = "multi:" + "|".join("sqlite://" + m for m in members)
        make_store(multi, members, TAGS)
        s = Server(d, multi)
        row("%d tags in a multi: of two SQLite files: start to ready" % TAGS,
            "<= 3 s", "%.2f s" % s.ready_s)
        s.stop()

        empty = "sqlite://%s/empty.db" % d
        subprocess.run([FROND, "tag", "create", "conn", "--step", "10000000",
                        "--store", empty], check=True, capture_output=True)
        s = Server(d, empty, ["--max-connections", str(CONNS + 100)])
        time.sleep(2)  # let the clock thread fall asleep
        row("idle CPU, no tag used, %.0f s" % IDLE_S, "<= 0.1 %",
            "%.2f %%" % idle_cpu_pct(s.proc.pid, IDLE_S))
        single = wrk(s.port, "/v1/segment/conn")
        ranged = wrk(s.port, "/v1/segment/conn/range?count=1000000")
        row("range lease of 1,000,000 IDs over HTTP (wrk %s)"
            % " ".join(WRK_ARGS), "reported",
            "%.3g IDs/s" % (ranged * 1e6),
            "(%.0f leases/s; single IDs: %.0f IDs/s; ratio %.0fx)"
            % (ranged, single, ranged * 1e6 / single))
        rss0 = rss_mb(s.proc.pid)
        t0 = time.monotonic()
        socks = batch_conns(s.port, CONNS)
        dt = time.monotonic() - t0
        time.sleep(1)
        rss1 = rss_mb(s.proc.pid)
        held = metric(s.port, "frond_connection_buffer_bytes") or 0
        row("%d idle connections after one 100,000-ID batch each" % CONNS,
            "<= 16 KiB each, <= 200 MB",
            "%.1f KiB each, %.0f MB in all" %
            ((rss1 - rss0) * 1e6 / 1024 / CONNS, rss1 - rss0),
            "(RSS %.0f -> %.0f MB; buffers held %.0f B each; batches "
            "took %.1f s)" % (rss0, rss1, held / CONNS, dt))
        for c in socks:
            c.close()
        s.stop()
        print("\n| what | goal | this run |\n| --- | --- | --- |")
        for what, goal, value, note in rows:
            print("| %s | %s | **%s** %s |" % (what, goal, value, note))
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
