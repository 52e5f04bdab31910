#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
timing.py -- where a ctest run's time went: its wall time, the time of its
tests by suite (the first part of their names: unit, integration, chaos,
mistakes, fuzz) and its slowest tests, from the JUnit file that
`ctest --output-junit` writes. `make check` and `make check-fast` print it
after every run and append the summary line to a log beside the file
(timing.log), so that a change in the suite's time shows.

usage: timing.py JUNIT_XML [WHAT]     WHAT names the run in the log
"""
import collections
import os
import sys
import time
import xml.etree.ElementTree as ET

SLOWEST = 12


def main(argv):
    if len(argv) not in (1, 2):
        sys.exit(__doc__.strip().splitlines()[-1])
    path, what = argv[0], (argv[1:] or ["ctest"])[0]
    try:
        suite = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        sys.exit("timing.py: %s: %s" % (path, e))
    cases = [(float(c.get("time", 0)), c.get("name"), c.get("status"))
             for c in suite.iter("testcase")]
    wall = float(suite.get("time", 0))
    total = sum(t for t, _, _ in cases)
    by = collections.Counter()
    for t, name, _ in cases:
        by[name.split("/")[0]] += t
    summary = "%s: %d tests, %.0f s wall, %.0f s of tests (%s)" % (
        what, len(cases), wall, total, ", ".join(
            "%s %.0f s" % kv for kv in by.most_common()))
    print(summary)
    print("slowest:")
    for t, name, status in sorted(cases, reverse=True)[:SLOWEST]:
        print("  %6.1f s  %s%s" % (t, name,
                                   "" if status == "run" else " (" +
                                   str(status) + ")"))
    log = os.path.join(os.path.dirname(os.path.abspath(path)), "timing.log")
    with open(log, "a") as f:
        f.write("%s %s; slowest %s\n" % (
            suite.get("timestamp") or time.strftime("%Y-%m-%dT%H:%M:%S"),
            summary, ", ".join("%s %.0f s" % (n, t) for t, n, _ in
                               sorted(cases, reverse=True)[:3])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
