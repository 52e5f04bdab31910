# SPDX-License-Identifier: Apache-2.0
"""
What the Python client's suites share (test_client_python.py against real
servers, test_client_python_fake.py against servers faked in the test's
process): the client imported from the source tree (clients/python/src),
and the checks both make of its answers.
"""
import os
import sys

import frondtest as ft
from frondtest import check

SRC = os.path.abspath(ft.FROND_SRC)
PKG = os.path.join(SRC, "clients", "python")
sys.path.insert(0, os.path.join(PKG, "src"))
import frond  # noqa: E402


def wait_for(cond, timeout, what):
    """frondtest's wait_for, in this suite's order of arguments."""
    ft.wait_for(what, cond, timeout)


def expect_error(code, fn, *args, status=None, **kw):
    """fn(*args, **kw) raises FrondError code (with HTTP status, when
    given) and a message; returns it."""
    try:
        got = fn(*args, **kw)
    except frond.FrondError as e:
        check(e.code == code, "%s%r: %s, expected %s" % (
            getattr(fn, "__name__", fn), args, e, code))
        if status is not None:
            check(e.status == status, "%s: status %d, expected %d"
                  % (code, e.status, status))
        check(str(e).startswith(code + ": ") and e.message, "message %r"
              % str(e))
        return e
    raise ft.Failure("%r gave %r, expected %s" % (args, got, code))


def increasing(ids, what):
    for a, b in zip(ids, ids[1:]):
        check(b > a, "%s: %d after %d" % (what, b, a))
