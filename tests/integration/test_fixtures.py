#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_fixtures.py -- frondtest.py keeps what it promises: a sanitizer
report fails the test in which the process that wrote it stopped.

Each case runs as a test program of its own (this file with --case), so
that its failure is seen from outside:

- a report in a Server's dir, read when the test stops the server;
- a real leak (a library preloaded into an ASan build that allocates and
  forgets), found by LeakSanitizer when a `with` block closes the server:
  closing stops it with SIGTERM, so that LeakSanitizer runs;
- the same leak in a process a test runs (not a server), read after the
  test;
- a server started and closed with nothing to report passes;
- the temp dirs a program made go when it ends, but for a failed test's,
  a stopped program's, and all with FRONDTEST_KEEP_TMP set.
"""
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import Server, check  # noqa: E402

PLANTED = "==4242==ERROR: AddressSanitizer: heap-use-after-free on address"
LEAK_C = b"""
#include <stdlib.h>
#include <string.h>
static void leak(void) __attribute__((constructor));
static void leak(void) {
  char *volatile p = malloc(4321);
  memset(p, 1, 4321);
  p = NULL;
}
"""


def sanitized():
    """The frond under test is built with AddressSanitizer."""
    r = ft.run(["--version"])
    return "sanitizers: address" in r.stdout


def leak_preload(d):
    """LD_PRELOAD for a process that leaks 4321 bytes at its start: the
    leaking library, after the ASan runtime when that is a shared one."""
    src, lib = os.path.join(d, "leak.c"), os.path.join(d, "leak.so")
    with open(src, "wb") as f:
        f.write(LEAK_C)
    r = subprocess.run(["cc", "-shared", "-fPIC", "-O0", "-o", lib, src],
                       capture_output=True, text=True)
    check(r.returncode == 0, "cc leak.so: %s" % r.stderr)
    libs = subprocess.run(["ldd", ft.FROND_BIN], capture_output=True,
                          text=True).stdout.split("\n")
    first = [ln.split("=>")[1].split()[0] for ln in libs
             if "libasan.so" in ln and "=>" in ln]
    return " ".join(first + [lib])


# ------------------------------------------------- the cases, each a program

def case_planted():
    s = Server()
    with open(os.path.join(s.dir, "sanitizer.4242"), "w") as f:
        f.write("=" * 60 + "\n" + PLANTED + " 0x602000000010\n")
    s.stop()
    s.close()


def case_leak_close():
    d = ft.tempdir()
    with Server(env={"LD_PRELOAD": leak_preload(d)}) as s:
        st, _, _ = s.request("GET", "/v1/snowflake")
        check(st == 200, "snowflake: %d" % st)


def case_leak_process():
    d = ft.tempdir()
    e = dict(os.environ, LD_PRELOAD=leak_preload(d))
    ft.run(["--version"], env=e)  # its status is LeakSanitizer's


def case_clean():
    with Server() as s:
        st, _, _ = s.request("GET", "/v1/snowflake")
        check(st == 200, "snowflake: %d" % st)


def case_tmp_pass():
    with open(os.path.join(ft.tempdir(), "kept?"), "w") as f:
        f.write("a test's file\n")


def case_tmp_fail():
    case_tmp_pass()
    check(False, "failed on purpose")


def case_tmp_server():
    case_tmp_pass()
    case_clean()


def case_tmp_stopped():
    case_tmp_pass()
    os.kill(os.getpid(), signal.SIGTERM)  # its handler ends the program
    check(False, "still running after SIGTERM")


CASES = {"planted": case_planted, "leak_close": case_leak_close,
         "leak_process": case_leak_process, "clean": case_clean,
         "tmp_pass": case_tmp_pass, "tmp_fail": case_tmp_fail,
         "tmp_server": case_tmp_server, "tmp_stopped": case_tmp_stopped}


# --------------------------------------------------------------- the tests

def left_in_tmp(case, env=None):
    """Run one case as a test program with a TMPDIR of its own: (exit
    status, output, the test dirs left in it)."""
    d = ft.tempdir()
    e = dict(os.environ, TMPDIR=d, **(env or {}))
    if not env:
        e.pop(ft.KEEP_VAR, None)
    try:
        r = subprocess.run([sys.executable, os.path.abspath(__file__),
                            "--case", case], capture_output=True, text=True,
                           timeout=120, env=e)
        left = [n for n in os.listdir(d) if n.startswith("frond-test-")]
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return r.returncode, r.stdout + r.stderr, left


def program(case):
    """Run one case as a test program: (exit status, output)."""
    return left_in_tmp(case)[:2]


def failed_by(case, marks):
    rc, out = program(case)
    check(rc == 1, "%s: exit %d, not 1:\n%s" % (case, rc, out))
    check("FAIL case_%s: 1 sanitizer report(s)" % case in out,
          "%s: the test is not failed by its report:\n%s" % (case, out))
    for m in marks:
        check(m in out, "%s: %r not shown:\n%s" % (case, m, out))


def test_planted_report_fails_the_test():
    failed_by("planted", [PLANTED, "frond serve on port"])


def test_leak_at_close_fails_the_test():
    if not sanitized():
        print("skip: frond is not built with AddressSanitizer")
        return
    failed_by("leak_close", ["ERROR: LeakSanitizer", "4321 byte(s)",
                             "frond serve on port"])


def test_leak_of_a_process_fails_the_test():
    if not sanitized():
        print("skip: frond is not built with AddressSanitizer")
        return
    failed_by("leak_process", ["ERROR: LeakSanitizer", "4321 byte(s)",
                               "a process of this test"])


def test_clean_server_passes():
    rc, out = program("clean")
    check(rc == 0 and "1 passed, 0 failed" in out,
          "clean: exit %d:\n%s" % (rc, out))


def test_temp_dirs_removed_at_exit():
    """A program's ft.tempdir() dirs go when it ends; a failed test's stay,
    named, to look into, and so do a stopped program's and all with
    FRONDTEST_KEEP_TMP set (a server starts with it: frond refuses the
    FROND_* variables it does not know)."""
    rc, out, left = left_in_tmp("tmp_pass")
    check(rc == 0, "tmp_pass: exit %d:\n%s" % (rc, out))
    check(left == [], "left after a pass: %s" % left)
    rc, out, left = left_in_tmp("tmp_fail")
    check(rc == 1 and len(left) == 1 and "temp dir kept: " in out and
          left[0] in out, "after a failure, exit %d, left %s:\n%s"
          % (rc, left, out))
    rc, out, left = left_in_tmp("tmp_server", {ft.KEEP_VAR: "1"})
    check(rc == 0 and len(left) == 1 and left[0] in out,
          "%s: exit %d, left %s:\n%s" % (ft.KEEP_VAR, rc, left, out))
    rc, out, left = left_in_tmp("tmp_stopped")
    check(rc == 128 + signal.SIGTERM and len(left) == 1 and left[0] in out,
          "stopped: exit %d, left %s:\n%s" % (rc, left, out))


# Another test program draws first the ports this one was given, then any
# port: it must be given none of them, though nothing listens on them yet.
OTHER_PROGRAM = """
import random, sys
sys.path.insert(0, %r)
import frondtest as ft
import ports
mine = [int(x) for x in sys.argv[1:]]
class Drawn:
    def randint(self, lo, hi):
        return mine.pop() if mine else random.randint(lo, hi)
ports.random.SystemRandom = Drawn
print(ft.free_port())
"""


def test_free_port_reserved_across_programs():
    ports = [ft.free_port() for _ in range(20)]
    check(len(set(ports)) == 20, "ports given twice: %s" % ports)
    r = subprocess.run([sys.executable, "-c",
                        OTHER_PROGRAM % os.path.dirname(ft.__file__)] +
                       [str(p) for p in ports],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "the other program: %s" % r.stderr)
    other = int(r.stdout)
    check(other not in ports,
          "port %d was given to this program and then to another" % other)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--case"]:
        ft.main([CASES[sys.argv[2]]])
    ft.main([test_planted_report_fails_the_test,
             test_leak_at_close_fails_the_test,
             test_leak_of_a_process_fails_the_test,
             test_clean_server_passes,
             test_temp_dirs_removed_at_exit,
             test_free_port_reserved_across_programs])
