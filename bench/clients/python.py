#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
bench/clients/python.py -- the Python client's segment handle beside
Python's bare counters, in one run, and its server calls per million IDs.

    bench/clients/python.py [path/to/frond] [--ids N] [--reps R]

Starts `frond serve` (default build/frond, a release build: make) on a
free loopback port in a temp dir with one tag, then, in this process, on
one thread:

  itertools.count   next(c): the cheapest counter Python has
  locked int        with lock: n += 1 -- what a thread-safe counter costs
  Segment.next()    a leased tag's next ID (clients/python)

each N IDs (default 2,000,000) a repetition, R repetitions (default 7)
interleaved, and prints each one's median ns/ID and its ratio to both
references. Then the server calls per million IDs: over the whole run
(the range size ramping up from min_range) and at the steady rate after
it (5 x max_range IDs once the size has reached max_range).
"""
import itertools
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "clients", "python", "src"))
import frond  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def serve(binary, d):
    store = "sqlite:///%s/frond.db" % d
    subprocess.run([binary, "tag", "create", "bench", "--step", "100000",
                    "--store", store], check=True, capture_output=True)
    port = free_port()
    p = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:%d" % port,
                          "--resp-listen", "off", "--store", store,
                          "--data-dir", d], cwd=d, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port,
                                   timeout=1).read()
            return p, "http://127.0.0.1:%d" % port
        except OSError:
            if time.monotonic() > deadline or p.poll() is not None:
                p.kill()
                sys.exit("frond serve did not start")
            time.sleep(0.05)


def per_id(fn, n):
    t0 = time.perf_counter_ns()
    fn(n)
    return (time.perf_counter_ns() - t0) / n


def main():
    args = sys.argv[1:]
    binary = os.path.join(SRC, "build", "frond")
    n, reps = 2000000, 7
    while args:
        a = args.pop(0)
        if a == "--ids":
            n = int(args.pop(0))
        elif a == "--reps":
            reps = int(args.pop(0))
        else:
            binary = a
    d = tempfile.mkdtemp(prefix="frond-bench-py-")
    proc, url = serve(binary, d)
    try:
        client = frond.Client([url])
        seg = client.tag("bench")
        seg.next()  # the first range

        def count_loop(k, c=itertools.count()):
            nx = next
            for _ in range(k):
                nx(c)

        lock = threading.Lock()
        box = [0]

        def locked_loop(k):
            for _ in range(k):
                with lock:
                    box[0] += 1

        def seg_loop(k):
            nx = seg.next
            for _ in range(k):
                nx()

        rows = {"itertools.count": [], "locked int": [],
                "Segment.next()": []}
        fns = {"itertools.count": count_loop, "locked int": locked_loop,
               "Segment.next()": seg_loop}
        for _ in range(reps):
            for name, fn in fns.items():
                rows[name].append(per_id(fn, n))
        med = {k: statistics.median(v) for k, v in rows.items()}
        print("Python %s, %d IDs x %d repetitions, one thread, medians"
              % (sys.version.split()[0], n, reps))
        print("| counter | ns/ID | IDs/s | itertools.count / it | "
              "locked int / it |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for k, v in med.items():
            print("| %s | %.1f | %.2f M | %.2f | %.2f |" % (
                k, v, 1e3 / v, med["itertools.count"] / v,
                med["locked int"] / v))
        st = client.stats()
        issued = st["tags"]["bench"]["issued"]
        print("\nserver calls per million IDs over the run (ramp-up from "
              "min_range %d included): %.2f (%d calls, %d IDs)"
              % (1000, st["calls"] * 1e6 / issued, st["calls"], issued))
        # Steady: once ranges are max_range long.
        while seg.stats()["range_size"] < 1000000:
            seg_loop(100000)
        before = client.stats()["calls"]
        seg_loop(5000000)
        calls = client.stats()["calls"] - before
        print("server calls per million IDs at the steady rate (5,000,000 "
              "IDs, ranges of %d): %.2f" % (seg.stats()["range_size"],
                                            calls / 5.0))
        client.close()
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
