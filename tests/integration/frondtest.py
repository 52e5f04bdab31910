# SPDX-License-Identifier: Apache-2.0
"""
frondtest.py -- shared helpers for Frond's integration tests.

Every test runs in its own temporary directory, talks only to 127.0.0.1,
and bounds every wait. Tests import this module from their own directory.
"""
import atexit
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

# Absolute, so that tests may run servers and tools from a temp dir.
FROND_BIN = os.path.abspath(os.environ.get("FROND_BIN", "build/frond"))
FROND_SRC = os.path.abspath(os.environ.get(
    "FROND_SRC", os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__))))))
FROND_BUILD = os.path.abspath(os.environ.get("FROND_BUILD",
                                             os.path.dirname(FROND_BIN)))


class Failure(Exception):
    pass


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


def _kill_leftovers():
    if os.environ.get(OWNER_VAR) != str(os.getpid()):
        return  # imported by a process this one started
    for pid, cmd in kill_marked(OWNER_VAR, os.getpid()):
        print("leftover killed: %d %s" % (pid, cmd[:200]), file=sys.stderr)


os.environ[OWNER_VAR] = str(os.getpid())
atexit.register(_kill_leftovers)
# A test stopped with SIGTERM or SIGHUP ends through SystemExit, so that
# its leftovers go too (SIGINT does already, as KeyboardInterrupt).
for _sig in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(_sig, lambda n, f: sys.exit(128 + n))


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


def _ephemeral_ports():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def free_port():
    """A free loopback port that stays free until a test binds it: drawn
    below the kernel's ephemeral range, so that no outgoing connection (a
    node's to its database, a load client's) is given it in between, as
    one from port 0 can be."""
    lo, _ = _ephemeral_ports()
    top = min(lo, 32768) - 1
    rnd = random.SystemRandom()
    for _ in range(200):
        port = rnd.randint(max(1024, top - 12000), top)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free port below the ephemeral range")


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


# ---------------------------------------------------------------- servers

import http.client
import signal


class Server:
    """A `frond serve` on a free loopback port in its own temp dir.

    extra: more flags; env: extra environment; tags: segment tags to create
    (name -> step) in the store before the server starts. resp: also
    listen for the Redis protocol on a free port (resp_port); otherwise
    resp_listen is off, so that no test takes the default port."""

    def __init__(self, extra=(), env=None, tags=None, threads=2, store=None,
                 resp=False):
        self.dir = tempdir("frond-http-")
        self.port = free_port()
        self.resp_port = free_port() if resp else None
        self.store = store or "sqlite:///%s/frond.db" % self.dir
        for name, step in (tags or {}).items():
            r = run(["tag", "create", name, "--step", str(step),
                     "--store", self.store], cwd=self.dir)
            check(r.returncode == 0, "tag create %s: %s" % (name, r.stderr))
        e = dict(os.environ)
        e.update(env or {})
        self.args = [FROND_BIN, "serve", "--listen",
                     "127.0.0.1:%d" % self.port, "--store", self.store,
                     "--data-dir", self.dir, "--threads", str(threads),
                     "--resp-listen", "127.0.0.1:%d" % self.resp_port
                     if resp else "off"]
        self.args += list(extra)
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

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Signal the server and wait; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failure("server did not exit within %ds" % timeout)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


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


class MariaDB:
    """A throwaway MariaDB (scripts/mariadb.sh) in a temp dir: TCP on a
    free loopback port and a unix socket in the dir; root without a
    password; the database `frond`. close() stops it and removes the dir.
    Fails clearly when MariaDB is missing."""

    dialect = "mysql"

    def __init__(self):
        need("mariadb", "mariadb-client")
        self.dir = tempdir("frond-my-")
        self.uri = None
        self.start()

    def _sh(self, *args):
        return subprocess.run([os.path.join(FROND_SRC, "scripts",
                                            "mariadb.sh")] + list(args),
                              capture_output=True, text=True, timeout=120)

    def start(self):
        r = self._sh("start", self.dir)
        if r.returncode != 0:
            raise Failure("MariaDB did not start: " + r.stderr.strip())
        self.uri = r.stdout.strip()
        self.port = int(self.uri.rsplit(":", 1)[1].split("/")[0])
        self.socket = os.path.join(self.dir, "mysql.sock")

    def stop(self):
        r = self._sh("stop", self.dir)
        check(r.returncode == 0, "MariaDB did not stop: " + r.stderr)

    def kill(self):
        r = self._sh("kill", self.dir)
        check(r.returncode == 0, "MariaDB did not die: " + r.stderr)

    def sql(self, sql):
        """Run statements as root in the database frond; the rows as
        tab-separated text, one line each (PyMySQL is not needed here)."""
        r = self._sh("sql", self.dir, sql)
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

    def close(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


# ---- the Redis protocol ----

class RespError(Exception):
    """An error reply ("-CODE message"), returned as a value by Resp."""

    def __init__(self, line):
        super().__init__(line)
        self.line = line
        self.code = line.split(" ", 1)[0]


class RespSet(list):
    """A RESP3 set (~), kept in the order sent."""


class Verbatim(bytes):
    """A RESP3 verbatim string (=), without its "txt:" prefix."""


class BigNumber(int):
    """A RESP3 big number (()."""


class Resp:
    """A raw RESP connection for tests that send exactly the bytes they
    mean: send() writes bytes; reply() reads one reply (ints, bytes, lists,
    None, str for status lines, RespError for errors, and after HELLO 3
    dicts for maps, RespSet, float, bool, BigNumber, Verbatim); closed()
    tells whether the server closed the connection."""

    def __init__(self, port, timeout=10.0):
        self.sock = socket.create_connection(("127.0.0.1", port),
                                             timeout=timeout)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def command(self, *args):
        """Send one command as a multibulk array and read its reply."""
        self.send(encode(*args))
        return self.reply()

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("connection closed by the server")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _blob(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RespError(rest.decode("utf-8", "replace"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._blob(n)
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        if t == b"%":
            out = {}
            for _ in range(int(rest)):
                k = self.reply()
                out[k] = self.reply()
            return out
        if t == b"~":
            return RespSet(self.reply() for _ in range(int(rest)))
        if t == b"_" and rest == b"":
            return None
        if t == b",":
            return float(rest)
        if t == b"#" and rest in (b"t", b"f"):
            return rest == b"t"
        if t == b"(":
            return BigNumber(int(rest))
        if t == b"=":
            data = self._blob(int(rest))
            if data[3:4] != b":":
                raise Failure("verbatim string without a format: %r" % data)
            return Verbatim(data[4:])
        raise Failure("not a RESP reply: %r" % line)

    def closed(self, timeout=5.0):
        """True when the server closes the connection within timeout (bytes
        that arrive meanwhile are added to self.buf, unparsed)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    return True
                self.buf += chunk
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def close(self):
        self.sock.close()


def encode(*args):
    """One command as a RESP multibulk array."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, bytes):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def postgres_later():
    """A PostgreSQL that is not running yet, for a store that cannot be
    reached at first and then can: (pg, uri). pg.start() starts it on the
    port of uri (scripts/pg.sh keeps the port it finds in its directory);
    pg.close() stops it and removes its directory, once started."""
    need("psql", "postgresql-client")
    pg = Postgres.__new__(Postgres)
    pg.dir, pg.uri = tempdir("frond-pg-"), None
    port = free_port()
    with open(os.path.join(pg.dir, "port"), "w") as f:
        f.write("%d\n" % port)
    return pg, "postgresql://postgres@127.0.0.1:%d/postgres" % port


def store_dir():
    """A fresh temporary directory holding the default store, ./frond.db,
    made first (an empty SQLite file is an empty database): `frond next`
    makes no store, and refuses to run where there is none."""
    d = tempdir()
    open(os.path.join(d, "frond.db"), "w").close()
    return d
