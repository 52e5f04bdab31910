#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
leftovers.py -- the test suite's last step: no process the suite started
outlives it.

ctest gives every test FRONDTEST_SUITE=<build dir>, and every process a
test starts inherits it. This runs after every other test (a ctest
fixture cleanup): anything still alive with the mark was left behind by a
test (one killed at its timeout, or one that did not clean up). It is
killed, named, and the step fails.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "integration"))
import frondtest as ft  # noqa: E402

mark = os.environ.get("FRONDTEST_SUITE")
if not mark:
    sys.exit("leftovers.py: FRONDTEST_SUITE is not set (run it from ctest)")
killed = ft.kill_marked("FRONDTEST_SUITE", mark)
for pid, cmd in killed:
    print("left running by the suite, killed: %d %s" % (pid, cmd[:300]))
print("%d processes left running" % len(killed))
sys.exit(1 if killed else 0)
