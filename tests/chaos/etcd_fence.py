#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
etcd_fence.py -- chaos_fence for the etcd coordinator: every interval,
read every node ID's fence from <prefix>/node/ (the "fence" of
"fence <ms> owner <host:port>", where any later holder reads it) and
append one record per node ID to OUT, as three native int64: the
CLOCK_MONOTONIC time the poll began, the node ID and the stored time
(unix ms), as tests/tools/chaos_fence.c does for ZooKeeper and the lease.

  etcd_fence.py HOST:PORT[,HOST:PORT...] PREFIX OUT [interval_ms]

A member that does not answer is passed over; a failed poll is skipped.
SIGTERM ends the program after one last poll.
"""
import base64
import json
import signal
import struct
import sys
import time
import urllib.request

stopping = False


def on_term(sig, frame):
    global stopping
    stopping = True


def b64(s):
    return base64.b64encode(s.encode()).decode()


def poll(endpoints, prefix):
    body = json.dumps({"key": b64(prefix + "/node/"),
                       "range_end": b64(prefix + "/node0")}).encode()
    for ep in endpoints:
        try:
            req = urllib.request.Request("http://%s/v3/kv/range" % ep,
                                         data=body, method="POST")
            with urllib.request.urlopen(req, timeout=1) as r:
                reply = json.loads(r.read())
        except (OSError, ValueError):
            continue
        if "error" in reply:
            continue
        out = []
        for kv in reply.get("kvs", []):
            key = base64.b64decode(kv["key"]).decode()
            value = base64.b64decode(kv.get("value", "")).decode().split()
            if len(value) >= 2 and value[0] == "fence":
                out.append((int(key.rsplit("/", 1)[1]), int(value[1])))
        return out
    return None


def main(argv):
    endpoints, prefix, path = argv[1].split(","), argv[2], argv[3]
    interval = (int(argv[4]) if len(argv) > 4 else 100) / 1000.0
    signal.signal(signal.SIGTERM, on_term)
    polls = failed = 0
    with open(path, "ab") as out:
        while True:
            last = stopping
            at = time.monotonic_ns()
            got = poll(endpoints, prefix)
            polls += 1
            if got is None:
                failed += 1
            else:
                for node, fence in got:
                    out.write(struct.pack("=qqq", at, node, fence))
                out.flush()
            if last:
                break
            time.sleep(interval)
    print("etcd_fence: %d polls, %d failed" % (polls, failed),
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
