"""
frondtest.py -- shared helpers for Frond's integration tests.

Every test runs in its own temporary directory, talks only to 127.0.0.1,
and bounds every wait. Tests import this module from their own directory.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

FROND_BIN = os.environ.get("FROND_BIN", "build/frond")
FROND_SRC = os.environ.get("FROND_SRC", os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))
FROND_BUILD = os.environ.get("FROND_BUILD", os.path.dirname(FROND_BIN))


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def tempdir(prefix="frond-test-"):
    d = tempfile.mkdtemp(prefix=prefix)
    return d


def run(args, cwd=None, timeout=120, input=None, env=None):
    """Run frond (args without the binary); return CompletedProcess."""
    return subprocess.run([FROND_BIN] + list(args), cwd=cwd, input=input,
                          capture_output=True, text=True, timeout=timeout,
                          env=env)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout=30.0, host="127.0.0.1"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise Failure("nothing listens on %s:%d after %.0fs" % (host, port, timeout))


def need(program, package):
    """Fail clearly when a program the test needs is not installed."""
    if shutil.which(program) is None and not os.path.exists(program):
        raise Failure("%s is not installed (Debian package %s; "
                      "scripts/deps.sh test installs it)" % (program, package))


def main(tests):
    """Run test functions in order; print a closing line; exit non-zero on
    the first failure."""
    passed = failed = 0
    for t in tests:
        name = t.__name__
        t0 = time.monotonic()
        try:
            t()
            passed += 1
            print("ok   %s (%.1fs)" % (name, time.monotonic() - t0), flush=True)
        except Exception as e:  # report every kind of failure the same way
            failed += 1
            print("FAIL %s: %s: %s" % (name, type(e).__name__, e), flush=True)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


# ---- segment stores and tools ----

def tool(name):
    """Path of a program built from tests/tools (or bench)."""
    p = os.path.join(FROND_BUILD, name)
    check(os.path.exists(p), "%s is not built (looked in %s; set FROND_BUILD)"
          % (name, FROND_BUILD))
    return p


def read_i64(path):
    """The native int64 values in a file (a torn last value is dropped)."""
    import array
    with open(path, "rb") as f:
        data = f.read()
    a = array.array("q")
    a.frombytes(data[:len(data) - len(data) % 8])
    return a


class Postgres:
    """A throwaway PostgreSQL (scripts/pg.sh) in a temp dir; close() stops
    it and removes the dir. Fails clearly when PostgreSQL is missing."""

    def __init__(self):
        need("psql", "postgresql-client")
        self.dir = tempdir("frond-pg-")
        self.uri = None
        self.start()

    def _pg(self, *args):
        return subprocess.run([os.path.join(FROND_SRC, "scripts", "pg.sh")]
                              + list(args), capture_output=True, text=True,
                              timeout=120)

    def start(self):
        r = self._pg("start", self.dir)
        if r.returncode != 0:
            raise Failure("PostgreSQL did not start: " + r.stderr.strip())
        self.uri = r.stdout.strip()

    def stop(self):
        r = self._pg("stop", self.dir)
        check(r.returncode == 0, "PostgreSQL did not stop: " + r.stderr)

    def sql(self, sql):
        r = subprocess.run(["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1",
                            "-d", self.uri, "-c", sql], capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 0, "psql: %s: %s" % (sql, r.stderr.strip()))
        return r.stdout

    def close(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
