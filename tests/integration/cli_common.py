# SPDX-License-Identifier: Apache-2.0
"""
cli_common.py -- what the tests of the `frond` command share: a run with
the FROND_* environment cleared, the checks of a usage error and of a
runtime failure, and the reading of `frond next`'s output.
"""
import operator
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

TWITTER_EPOCH = 1288834974657
FROND_EPOCH = 1735689600000  # 2025-01-01T00:00:00Z
INT64_MAX = 2**63 - 1
ID_LINES = re.compile(r"(?:[0-9]{1,19}\n)*")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROND_")}
    env.update(extra)
    return env


def frond(args, cwd, env=None, input=None, timeout=120):
    return ft.run(args, cwd=cwd, env=env or clean_env(), input=input,
                  timeout=timeout)


def start(args, cwd, env=None, stdout=subprocess.PIPE):
    return subprocess.Popen([ft.FROND_BIN] + list(args), cwd=cwd,
                            env=env or clean_env(), stdout=stdout,
                            stderr=subprocess.PIPE, text=True)


def ids_of(text):
    """The IDs of `frond next` output: every line a decimal number."""
    if not ID_LINES.fullmatch(text):
        bad = next(x for x in text.split("\n")[:-1]
                   if not re.fullmatch(r"[0-9]{1,19}", x))
        raise ft.Failure("not an ID line: %r" % bad)
    return [int(x) for x in text.split()]


def check_increasing(ids, what):
    if all(map(operator.lt, ids, ids[1:])):
        return
    for a, b in zip(ids, ids[1:]):
        check(b > a, "%s: %d is followed by %d" % (what, a, b))


def check_usage_error(args, cwd, expect=None):
    """Bad arguments: exit 2, nothing on stdout, one line on stderr that
    names the command."""
    r = frond(args, cwd)
    check(r.returncode == 2, "frond %s: exit %d, want 2 (stderr %r)"
          % (" ".join(args), r.returncode, r.stderr))
    check(r.stdout == "", "frond %s printed %r" % (" ".join(args), r.stdout))
    lines = r.stderr.splitlines()
    check(len(lines) == 1 and lines[0].startswith("frond"),
          "frond %s: want one stderr line, got %r" % (" ".join(args), r.stderr))
    if expect is not None:
        check(expect in lines[0],
              "frond %s: want %r in %r" % (" ".join(args), expect, lines[0]))
    return lines[0]


def check_failure(r, code, what):
    """A runtime failure: exit 1 and 'frond: CODE: message'."""
    check(r.returncode == 1, "%s: exit %d, want 1 (stderr %r)"
          % (what, r.returncode, r.stderr))
    line = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    check(line.startswith("frond: %s: " % code) and len(line) > len(code) + 9,
          "%s: want 'frond: %s: message', got %r" % (what, code, r.stderr))


def compose(layout_epoch, shift_time, shift_node, unix_ms, node, seq):
    return ((unix_ms - layout_epoch) << shift_time) | (node << shift_node) | seq
