#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
mistakes.py -- Frond's operator-mistakes suite, beside the fault suite.

Each row is something an operator can type or do: a default left as it
is, a misspelt variable, a copied configuration, an admin sequence. It is
played against real processes (frond, SQLite, PostgreSQL, MariaDB,
ZooKeeper on loopback) and must end either with every ID unique across
every process involved, or with a refusal carrying a stable error code.
Rows live in rows_*.py beside this file, one file per area.

usage: mistakes.py --list | --table | ROW...      (no ROW: every row)

Environment:
  FROND_MISTAKES_KEEP=1   keep every row's files
  FROND_BIN, FROND_BUILD  the frond binary and the build dir of the tools
"""
import glob
import importlib
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402


def load_rows():
    for path in sorted(glob.glob(os.path.join(HERE, "rows_*.py"))):
        importlib.import_module(os.path.basename(path)[:-3])
    names = [n for n, _, _ in common.ROWS]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        sys.exit("mistakes.py: rows named twice: %s" % ", ".join(sorted(dup)))
    return common.ROWS


def run_row(name, about, fn):
    t0 = time.monotonic()
    with common.Run(name) as run:
        fn(run)
        if not run.verdicts:
            raise common.Failure("the row reached no verdict (neither "
                                 "run.unique nor run.refused)")
    print("ok   %s (%.1fs): %s; %s" % (
        name, time.monotonic() - t0, about,
        ", ".join(run.verdicts) + (
            "; %d IDs checked, %d repeated" % (run.checked, run.duplicates)
            if run.checked else "")), flush=True)


def main(argv):
    rows = load_rows()
    if argv[:1] == ["--list"]:
        for name, _, _ in rows:
            print(name)
        return 0
    if argv[:1] == ["--table"]:
        for name, about, _ in rows:
            print("%s\t%s" % (name, about))
        return 0
    want = argv or [n for n, _, _ in rows]
    by_name = {n: (n, a, f) for n, a, f in rows}
    unknown = [w for w in want if w not in by_name]
    if unknown:
        print("unknown rows: %s" % ", ".join(unknown), file=sys.stderr)
        return 2
    failed = 0
    for w in want:
        try:
            run_row(*by_name[w])
        except Exception as e:  # every failure is reported the same way
            failed += 1
            print("FAIL %s: %s: %s" % (w, type(e).__name__, e), flush=True)
    print("%d passed, %d failed" % (len(want) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
