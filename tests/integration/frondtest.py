# SPDX-License-Identifier: Apache-2.0
"""
frondtest.py -- the integration tests' fixtures: the one place that starts
real servers, as Redis' tests/support/server.tcl is.

Every kind of server a test needs has one entry here, and each gets its
own temp dir and a free loopback port: Server (`frond serve`), Postgres,
MariaDB, ZooKeeper, and a SQLite store file (SqliteStore); Lease puts the
lease coordinator's table in any of the three databases; CoordTool drives
tests/tools/coord_tool. start_server(kind) is the same as a `with` block,
with_server(kind) as a decorator. Whatever a test program starts is
stopped when it ends, passed or failed: fixtures still open are closed,
and every process that carries the program's mark is killed.

A `frond` built with AddressSanitizer and UBSan writes its reports to
files (ASAN_OPTIONS and UBSAN_OPTIONS log_path): a Server's go to its own
dir, every other process's to the program's. They are read when a server
stops and after every test, and any report fails the test that stopped
its process (tests/lsan.supp's suppressed leaks are not reports). Closing
a server stops it with SIGTERM, as stop() does, so that LeakSanitizer
runs at its exit (test_fixtures.py shows each of these).

Tests talk only to 127.0.0.1 and bound every wait. Tests import this
module from their own directory; no test imports another.
"""
import atexit
import glob
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from ports import free_port  # noqa: F401 (ft.free_port)

# Absolute, so that tests may run servers and tools from a temp dir.
FROND_BIN = os.path.abspath(os.environ.get("FROND_BIN", "build/frond"))
FROND_SRC = os.path.abspath(os.environ.get(
    "FROND_SRC", os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))))
FROND_BUILD = os.path.abspath(os.environ.get("FROND_BUILD",
                                             os.path.dirname(FROND_BIN)))
SCRIPTS = os.path.join(FROND_SRC, "scripts")


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


# ---------------------------------------------------------------- leftovers
#
# Every process a test program starts, however it starts it (a server, a
# tool, a database through its control script, a daemon that detaches),
# inherits FRONDTEST_OWNER, the test program's pid. When the program ends,
# passed or failed, whatever is still alive with that mark is killed: no
# test needs code of its own for it. (The mark is not a FROND_* variable,
# which the server checks.) ctest's last test, tests/leftovers.py, finds
# anything left by a program that could not clean up (killed at its
# timeout) through FRONDTEST_SUITE, which ctest gives every test.

OWNER_VAR = "FRONDTEST_OWNER"


def marked(var, value):
    """Pids of the processes whose environment holds var=value."""
    want = ("%s=%s" % (var, value)).encode()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                env = f.read().split(b"\0")
        except OSError:  # gone, or not ours to read
            continue
        if want in env:
            out.append(int(d))
    return out


def kill_marked(var, value):
    """SIGKILL every process marked var=value; their pids and commands."""
    killed = []
    for pid in marked(var, value):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            os.kill(pid, signal.SIGKILL)
            killed.append((pid, cmd.strip()))
        except OSError:
            continue
    return killed


KEEP_VAR = "FRONDTEST_KEEP_TMP"
_tempdirs = []  # tempdir()'s, removed at exit
# A test failed, or the program was stopped (a signal, ^C, an exception
# out of main): its dirs are left to look into.
_keep_tempdirs = False


def _at_exit():
    """The program ends: close what is still open, kill what is still
    marked, and fail on sanitizer reports no test has answered for."""
    if os.environ.get(OWNER_VAR) != str(os.getpid()):
        return  # imported by a process this one started
    for fx in reversed(list(_open)):
        try:
            fx.close()
        except Exception as e:  # one failed close must not keep the rest
            print("closing %s at exit: %s" % (fx, e), file=sys.stderr)
    for pid, cmd in kill_marked(OWNER_VAR, os.getpid()):
        print("leftover killed: %d %s" % (pid, cmd[:200]), file=sys.stderr)
    reports = take_sanitizer_reports()
    if reports:
        print(describe_reports(reports), flush=True)
        print("FAIL sanitizer reports after the last test", flush=True)
    else:
        shutil.rmtree(SANITIZER_DIR, ignore_errors=True)
    # The temp dirs last, once what was killed is gone (bounded).
    if _keep_tempdirs or reports or os.environ.get(KEEP_VAR):
        for d in _tempdirs:
            if os.path.isdir(d):
                print("temp dir kept: %s" % d, file=sys.stderr)
    elif _tempdirs:
        deadline = time.monotonic() + 10
        while marked(OWNER_VAR, os.getpid()) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        for d in _tempdirs:
            shutil.rmtree(d, ignore_errors=True)
    if reports:
        sys.stderr.flush()
        os._exit(1)


os.environ[OWNER_VAR] = str(os.getpid())
atexit.register(_at_exit)
# A test stopped with SIGTERM or SIGHUP ends through SystemExit, so that
# its leftovers go too (SIGINT does already, as KeyboardInterrupt).
def _stopped(n, frame):
    global _keep_tempdirs
    _keep_tempdirs = True
    sys.exit(128 + n)


for _sig in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(_sig, _stopped)


# ----------------------------------------------------------- sanitizer logs
#
# ASan and LSan write a report to <log_path>.<pid> when log_path is set;
# so does UBSan built by clang. GCC's UBSan writes to stderr whatever
# log_path says, which is why a Server's own log is read too.

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "runtime error:", "WARNING: ThreadSanitizer",
                   "ERROR: ThreadSanitizer")
LSAN_SUPP = os.path.join(FROND_SRC, "tests", "lsan.supp")
_reports = []   # (what, text) read and not yet answered for
_read = set()   # sanitizer files already read


def set_option(options, key, value):
    """A sanitizer options string with key=value in place of any other."""
    kept = [o for o in (options or "").split(":")
            if o and not o.startswith(key + "=")]
    return ":".join(kept + ["%s=%s" % (key, value)])


def sanitizer_env(env, log_path):
    """env with every sanitizer report written to log_path.<pid>."""
    e = dict(env)
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        e[var] = set_option(e.get(var), "log_path", log_path)
    return e


def sanitizer_errors(text):
    """How many sanitizer reports text holds."""
    return sum(text.count(m) for m in SANITIZER_MARKS)


def read_sanitizer_logs(what, paths):
    """Read the sanitizer files and process logs in paths (each file
    once); remember every report, and return how many were found."""
    found = 0
    for path in paths:
        if path in _read or not os.path.isfile(path):
            continue
        _read.add(path)  # read once its process has exited
        with open(path, errors="replace") as f:
            text = f.read()
        if sanitizer_errors(text):
            first = min(text.find(m) for m in SANITIZER_MARKS
                        if m in text)
            _reports.append(("%s (%s)" % (what, path),
                             text[max(0, text.rfind("\n", 0, first)):]))
            found += 1
    return found


def take_sanitizer_reports():
    """Every report read since the last call, the program's own sanitizer
    dir included."""
    read_sanitizer_logs("a process of this test", sorted(
        glob.glob(os.path.join(SANITIZER_DIR, "sanitizer.*"))))
    out = list(_reports)
    del _reports[:]
    return out


def describe_reports(reports, limit=6000):
    return "\n".join("sanitizer report from %s:\n%s" % (what, text[:limit])
                     for what, text in reports)


# Every process this program starts reports into SANITIZER_DIR unless its
# fixture says otherwise; tests/lsan.supp applies to a direct run too.
SANITIZER_DIR = tempfile.mkdtemp(prefix="frond-sanitizer-")
os.environ.update(sanitizer_env(os.environ, os.path.join(SANITIZER_DIR,
                                                         "sanitizer")))
if "suppressions=" not in os.environ.get("LSAN_OPTIONS", ""):
    os.environ["LSAN_OPTIONS"] = set_option(
        os.environ.get("LSAN_OPTIONS"), "suppressions", LSAN_SUPP)


# ------------------------------------------------------ processes and ports

def tempdir(prefix="frond-test-"):
    """A temp dir of this test program's, removed when the program ends
    (_at_exit), kept when a test failed, the program was stopped, or
    FRONDTEST_KEEP_TMP is set (not a FROND_* variable: frond refuses
    those it does not know)."""
    d = tempfile.mkdtemp(prefix=prefix)
    _tempdirs.append(d)
    return d


def keep_tempdir(d):
    """The caller keeps d, a tempdir(), after the program ends."""
    if d in _tempdirs:
        _tempdirs.remove(d)


def run(args, cwd=None, timeout=120, input=None, env=None):
    """Run frond (args without the binary); return CompletedProcess."""
    return subprocess.run([FROND_BIN] + list(args), cwd=cwd, input=input,
                          capture_output=True, text=True, timeout=timeout,
                          env=env)


def wait_port(port, timeout=30.0, host="127.0.0.1"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise Failure("nothing listens on %s:%d after %.0fs" % (host, port, timeout))


def wait_for(what, cond, timeout):
    """Until cond() is true, polled every 0.1 s; a Failure naming what
    after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.1)
    check(cond(), "timed out waiting for " + what)


def need(program, package):
    """Fail clearly when a program the test needs is not installed."""
    if shutil.which(program) is None and not os.path.exists(program):
        raise Failure("%s is not installed (Debian package %s; "
                      "scripts/deps.sh test installs it)" % (program, package))


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


def debian_module(name, package):
    """Import a module Debian installs under /usr/lib/python3/dist-packages,
    which another python3 on PATH (a pyenv) does not search."""
    import importlib
    try:
        return importlib.import_module(name)
    except ImportError:
        pass
    if "/usr/lib/python3/dist-packages" not in sys.path:
        sys.path.append("/usr/lib/python3/dist-packages")
    try:
        return importlib.import_module(name)
    except ImportError:
        raise Failure("%s is not installed (Debian package %s; scripts/deps.sh"
                      " test installs it)" % (name, package))


def main(tests):
    """Run test functions in order; print a closing line; exit non-zero on
    the first failure. A sanitizer report read during a test (a server it
    stopped, any process it ran) fails that test."""
    global _keep_tempdirs
    passed = failed = 0
    _keep_tempdirs = True  # until the tests ran to the end: see below
    for t in tests:
        name = t.__name__
        t0 = time.monotonic()
        try:
            t()
            error = None
        except Exception as e:  # report every kind of failure the same way
            error = "%s: %s" % (type(e).__name__, e)
        reports = take_sanitizer_reports()
        if reports:
            print(describe_reports(reports), flush=True)
            error = (error + "; " if error else "") + \
                "%d sanitizer report(s)" % len(reports)
        if error is None:
            passed += 1
            print("ok   %s (%.1fs)" % (name, time.monotonic() - t0), flush=True)
        else:
            failed += 1
            print("FAIL %s: %s" % (name, error), flush=True)
    print("%d passed, %d failed" % (passed, failed))
    _keep_tempdirs = failed > 0
    sys.exit(1 if failed else 0)


# ------------------------------------------------------------------ servers
#
# A fixture has a temp dir, is open from its start until close() (which
# stops it and removes the dir), and is closed when the program ends if
# the test did not. start_server and with_server scope one to a block or
# to a test.

_open = []


class Fixture:
    """What every server fixture shares: its dir (made here, or given and
    then left in place) and its place among the open fixtures."""

    prefix = "frond-"

    def _begin(self, dir=None):
        self.own_dir = dir is None
        self.dir = tempdir(self.prefix) if dir is None else dir
        _open.append(self)

    def stop(self):
        pass

    def shutdown(self):
        """What close() does before the dir goes: stop()."""
        self.stop()

    def close(self):
        """Stop the server and remove its dir; again is a no-op."""
        if self not in _open:
            return
        try:
            self.shutdown()
        finally:
            _open.remove(self)
            if self.own_dir:
                shutil.rmtree(self.dir, ignore_errors=True)

    def cleanup(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def start_server(kind, **kw):
    """A server of one kind ("frond", "postgresql", "mariadb", "zookeeper",
    "sqlite"), started; as a `with` block, closed at the block's end."""
    return KINDS[kind](**kw)


def with_server(kind, **kw):
    """Decorate test(server): it gets a server of its own, closed after."""
    def wrap(fn):
        def t():
            with start_server(kind, **kw) as s:
                fn(s)
        t.__name__ = fn.__name__
        return t
    return wrap


class Server(Fixture):
    """A `frond serve` on a free loopback port in its own temp dir.

    extra: more flags; env: extra environment; tags: segment tags to create
    (name -> step) in the store before the server starts. resp: also
    listen for the Redis protocol on a free port (resp_port); otherwise
    resp_listen is off, so that no test takes the default port. Its
    sanitizer reports are read when it stops. With an admin token (the
    flag or FROND_ADMIN_TOKEN), request() sends it unless the headers
    give an Authorization (None: send none)."""

    prefix = "frond-http-"

    def __init__(self, extra=(), env=None, tags=None, threads=2, store=None,
                 resp=False):
        self._begin()
        self.port = free_port()
        self.resp_port = free_port() if resp else None
        self.store = store or "sqlite:///%s/frond.db" % self.dir
        for name, step in (tags or {}).items():
            r = run(["tag", "create", name, "--step", str(step),
                     "--store", self.store], cwd=self.dir)
            check(r.returncode == 0, "tag create %s: %s" % (name, r.stderr))
        e = dict(os.environ)
        e.update(env or {})
        e = sanitizer_env(e, os.path.join(self.dir, "sanitizer"))
        self.args = [FROND_BIN, "serve", "--listen",
                     "127.0.0.1:%d" % self.port, "--store", self.store,
                     "--data-dir", self.dir, "--threads", str(threads),
                     "--resp-listen", "127.0.0.1:%d" % self.resp_port
                     if resp else "off"]
        self.args += list(extra)
        self.token = e.get("FROND_ADMIN_TOKEN")
        for i, a in enumerate(self.args[:-1]):
            if a == "--admin-token":
                self.token = self.args[i + 1]
        self.log = open(os.path.join(self.dir, "server.log"), "w+")
        self.proc = subprocess.Popen(self.args, cwd=self.dir, env=e,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        try:
            wait_port(self.port, timeout=30)
            if resp:
                wait_port(self.resp_port, timeout=30)
        except Failure:
            self.stop()
            raise Failure("server did not start: %s" % self.output())

    def output(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def conn(self, timeout=10):
        return http.client.HTTPConnection("127.0.0.1", self.port,
                                          timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None):
        """One request; returns (status, headers dict lower-cased, body).
        A body is sent as JSON (Content-Type: application/json) unless the
        headers give a Content-Type."""
        c = conn or self.conn()
        headers = dict(headers or {})
        given = [k for k in headers if k.lower() == "authorization"]
        if not given and self.token:
            headers["Authorization"] = "Bearer " + self.token
        for k in given:
            if headers[k] is None:
                del headers[k]
        if body is not None and not any(k.lower() == "content-type"
                                        for k in headers):
            headers["Content-Type"] = "application/json"
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        if conn is None:
            c.close()
        return r.status, hdrs, data

    def raw(self, data, timeout=5.0):
        """Send bytes on a new connection; return all bytes until the
        server closes it or timeout passes."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        s.sendall(data)
        out = b""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except socket.timeout:
            pass
        s.close()
        return out

    def alive(self):
        return self.proc.poll() is None

    def _exited(self):
        """The process has exited: read its sanitizer reports."""
        self.log.flush()
        read_sanitizer_logs("frond serve on port %d" % self.port, sorted(
            glob.glob(os.path.join(self.dir, "sanitizer.*"))) +
            [self.log.name])

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Signal the server and wait; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self._exited()
            raise Failure("server did not exit within %ds" % timeout)
        self._exited()
        return rc

    def shutdown(self, timeout=15):
        """close() stops the server as stop() does, with SIGTERM, so that
        LeakSanitizer runs at its exit; one that has not exited within
        timeout is killed. Its reports are read either way."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._exited()
        self.log.close()


def split_responses(data):
    """Split a byte stream of HTTP/1.1 responses (all with Content-Length)
    into (status, headers, body) tuples."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            raise Failure("truncated response: %r" % data[:200])
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        hdrs = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length", "0"))
        out.append((status, hdrs, rest[:n]))
        data = rest[n:]
    return out


def serve(args, d, port, log, store="none"):
    """A bare `frond serve` process (Popen) in dir d on port, for a test
    that kills and restarts it in the same dir: HTTP only, one thread,
    store none unless given; output appended to the open file log."""
    return subprocess.Popen(
        [FROND_BIN, "serve", "--listen", "127.0.0.1:%d" % port,
         "--resp-listen", "off", "--store", store, "--threads", "1",
         "--data-dir", d] + list(args), cwd=d, stdout=log,
        stderr=subprocess.STDOUT)


def http_get(port, path, timeout=5, token=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers={"Authorization": "Bearer " + token}
                  if token else {})
        r = c.getresponse()
        return r.status, r.read().decode()
    finally:
        c.close()


def wait_serving(p, port, timeout, token=None):
    """Wait until the server answers a snowflake ID (asked with the admin
    token when given): the ID, or None if it exited or timeout passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and p.poll() is None:
        try:
            s, body = http_get(port, "/api/snowflake/get/x", timeout=2,
                               token=token)
            if s == 200:
                return int(body)
        except OSError:
            pass
        time.sleep(0.1)
    return None


class Database(Fixture):
    """A throwaway database server in a temp dir on a free loopback port,
    run by its control script in scripts/ (script(*args) calls it). With
    start=False it is made but not started: uri and port are known, and
    start() starts it there (the script keeps the port it finds in the
    dir), or another script command (a standby, a replica) does."""

    def __init__(self, start=True, dir=None):
        need(self.client, self.client_package)
        self._begin(dir)
        self.port = free_port()
        with open(os.path.join(self.dir, "port"), "w") as f:
            f.write("%d\n" % self.port)
        self.uri = self.uri_at(self.port)
        if start:
            self.start()

    def script(self, *args):
        return subprocess.run([os.path.join(SCRIPTS, self.script_name)]
                              + list(args), capture_output=True, text=True,
                              timeout=120)

    def start(self):
        r = self.script("start", self.dir)
        if r.returncode != 0:
            raise Failure("%s did not start: %s" % (self.name,
                                                    r.stderr.strip()))
        self.uri = r.stdout.strip()
        self.port = int(self.uri.rsplit(":", 1)[1].split("/")[0])

    def stop(self):
        """Stop it (the data stays); one that never started is stopped."""
        r = self.script("stop", self.dir)
        check(r.returncode == 0, "%s did not stop: %s" % (self.name,
                                                          r.stderr))

    def kill(self):
        r = self.script("kill", self.dir)
        check(r.returncode == 0, "%s did not die: %s" % (self.name, r.stderr))


class Postgres(Database):
    """A throwaway PostgreSQL (scripts/pg.sh); sql() runs statements as
    postgres."""

    name, prefix, script_name = "PostgreSQL", "frond-pg-", "pg.sh"
    client, client_package = "psql", "postgresql-client"
    dialect, engine = "pg", "postgresql"

    @staticmethod
    def uri_at(port):
        return "postgresql://postgres@127.0.0.1:%d/postgres" % port

    def sql(self, sql):
        r = subprocess.run(["psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1",
                            "-d", self.uri, "-c", sql], capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 0, "psql: %s: %s" % (sql, r.stderr.strip()))
        return r.stdout


def postgres_later():
    """A PostgreSQL that is not running yet, for a store that cannot be
    reached at first and then can: (pg, uri). pg.start() starts it on the
    port of uri; pg.close() stops it and removes its directory."""
    pg = Postgres(start=False)
    return pg, pg.uri


class MariaDB(Database):
    """A throwaway MariaDB (scripts/mariadb.sh): TCP on a free loopback
    port and a unix socket in the dir; root without a password; the
    database `frond`. sql() runs statements as root in it."""

    name, prefix, script_name = "MariaDB", "frond-my-", "mariadb.sh"
    client, client_package = "mariadb", "mariadb-client"
    dialect, engine = "mysql", "mysql"

    @staticmethod
    def uri_at(port):
        return "mysql://root@127.0.0.1:%d/frond" % port

    @property
    def socket(self):
        return os.path.join(self.dir, "mysql.sock")

    def sql(self, sql):
        """Run statements as root in the database frond; the rows as
        tab-separated text, one line each (PyMySQL is not needed here)."""
        r = self.script("sql", self.dir, sql)
        check(r.returncode == 0, "mariadb: %s: %s" % (sql, r.stderr.strip()))
        return r.stdout

    def connect(self, **kw):
        """A PyMySQL connection (autocommit off, as JDBC under MyBatis)."""
        pymysql = debian_module("pymysql", "python3-pymysql")
        args = dict(host="127.0.0.1", port=self.port, user="root",
                    database="frond", autocommit=False, connect_timeout=10,
                    read_timeout=60, write_timeout=60)
        args.update(kw)
        return pymysql.connect(**args)


# A coordinator URI's fast timings for tests: sessions of 2 s.
ZK_FAST = "report_ms=200&session_ms=2000&connect_ms=3000"


class ZooKeeper(Fixture):
    """A throwaway standalone ZooKeeper (scripts/zk.sh) on a free loopback
    port; tick_ms: its tick (sessions of 2 to 20 ticks; zk.sh's default
    200). address is "host:port"; uri(name) a coordinator URI on it."""

    prefix = "frond-zk-"

    def __init__(self, port=None, tick_ms=None, dir=None):
        self.script_path = os.path.join(SCRIPTS, "zk.sh")
        need(self.script_path, "zookeeper")
        need("java", "default-jre-headless")
        self.tick_ms = tick_ms
        self._begin(dir)
        self.start(port or free_port())

    def start(self, port=None):
        env = dict(os.environ)
        if port:
            env["ZK_PORT"] = str(port)
        if self.tick_ms:
            env["ZK_TICK_MS"] = str(self.tick_ms)
        r = subprocess.run([self.script_path, "start", self.dir],
                           capture_output=True, text=True, timeout=90,
                           env=env)
        check(r.returncode == 0,
              "ZooKeeper did not start: %s" % r.stderr.strip())
        self.address = r.stdout.strip()
        self.port = int(self.address.rsplit(":", 1)[1])

    def stop(self):
        subprocess.run([self.script_path, "stop", self.dir], timeout=30)

    def pid(self):
        with open(os.path.join(self.dir, "pid")) as f:
            return int(f.read())

    def uri(self, name="frond", extra=ZK_FAST):
        return "zk://%s/%s?%s" % (self.address, name, extra)


class SqliteStore(Fixture):
    """A SQLite store file in a temp dir; sql() runs statements in the
    sqlite3 shell."""

    prefix, dialect = "frond-sqlite-", "sqlite"

    def __init__(self):
        self._begin()
        self.path = os.path.join(self.dir, "frond.db")
        self.uri = "sqlite://" + self.path

    def sql(self, sql):
        need("sqlite3", "sqlite3")
        r = subprocess.run(["sqlite3", "-batch", "-cmd", ".timeout 20000",
                            self.path, sql], capture_output=True, text=True,
                           timeout=60)
        check(r.returncode == 0, "sqlite3: %s: %s" % (sql, r.stderr))
        return r.stdout


KINDS = {"frond": Server, "postgresql": Postgres, "mariadb": MariaDB,
         "zookeeper": ZooKeeper, "sqlite": SqliteStore}


def store_dir():
    """A fresh temporary directory holding the default store, ./frond.db,
    made first (an empty SQLite file is an empty database): `frond next`
    makes no store, and refuses to run where there is none."""
    d = tempdir()
    open(os.path.join(d, "frond.db"), "w").close()
    return d
