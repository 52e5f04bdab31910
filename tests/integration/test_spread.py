#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_spread.py -- bench/spread/run.sh on a small count, so that the
benchmark keeps working between its real runs: a throwaway PostgreSQL
(scripts/pg.sh, 127.0.0.1, a temp dir, stopped by the script), the IDs of
each write-spreading layout as a bigint primary key, and what the table
must show whatever the machine: plain IDs all in one range shard of 16
(max/mean 16), reversed ones spread over all of them, shard=4 ones spread
by user; every row present with a positive index size.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402


def test_spread_small():
    ft.tool("spread_gen")
    env = dict(os.environ, COUNT="20000", USERS="200")
    p = subprocess.run([os.path.join(ft.FROND_SRC, "bench", "spread",
                                     "run.sh"), ft.FROND_BUILD],
                       capture_output=True, text=True, timeout=600, env=env)
    check(p.returncode == 0, "run.sh failed:\n%s%s" % (p.stdout, p.stderr))
    rows = {}
    for line in p.stdout.splitlines():
        m = re.match(r"\| (plain|reverse|shard) \| ([\d.]+) \([\d.]+x\) \| "
                     r"([\d.]+) \([\d.]+x\) \| (\d+) \([\d.]+x\) \| "
                     r"([\d.]+)% \| ([\d.]+) \(", line)
        if m:
            rows[m.group(1)] = [float(x) for x in m.groups()[1:]]
    check(sorted(rows) == ["plain", "reverse", "shard"],
          "rows missing from:\n%s" % p.stdout)
    for kind, (_, mb, leaves, density, _) in rows.items():
        check(mb > 0 and leaves > 0 and 0 < density <= 100,
              "%s: index %.1f MB, %d leaves, density %.1f%%"
              % (kind, mb, leaves, density))
    check(rows["plain"][4] == 16.0,
          "plain IDs are time-ordered: one range shard takes every write "
          "(max/mean 16), got %.2f" % rows["plain"][4])
    check(rows["reverse"][4] < 1.5,
          "reversed IDs spread over the 16 shards, max/mean %.2f"
          % rows["reverse"][4])
    check(rows["shard"][4] < 2.5,
          "shard=4 IDs of 200 users spread over the 16 shards, max/mean "
          "%.2f" % rows["shard"][4])


if __name__ == "__main__":
    ft.main([test_spread_small])
