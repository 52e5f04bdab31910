# SPDX-License-Identifier: Apache-2.0
"""
common.py -- what every row of the mistakes suite uses.

A row is a mistake an operator can make (a setting, a copied file, an
admin sequence) played against real processes. It ends in one of two
verdicts, and must reach one:

  run.unique(lists)          every ID that every process answered, checked
                             for repeats: a repeat fails the row;
  run.refused(result, code)  the mistake was refused, with a stable error
                             code (and, where given, words naming both
                             sides) in what the process printed.

Everything a row starts (servers, databases, `frond` commands) is tracked
by its Run and killed when the row ends, passed or failed. Every wait is
bounded and waits for a condition, never for a fixed time.
"""
import glob
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import frondtest as ft  # noqa: E402

Failure = ft.Failure
check = ft.check


def clean_env(extra=None):
    """The environment with every FROND_* variable taken out (a row sets
    what it means to set), plus extra."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("FROND_")}
    e.update(extra or {})
    return e


class Proc:
    """A process a row started: its log in the row's directory."""

    def __init__(self, run, args, cwd, env, name):
        self.name = name
        self.args = args
        self.log_path = os.path.join(run.dir, "%s.log" % name)
        self.log = open(self.log_path, "w+")
        env = ft.sanitizer_env(env, os.path.join(run.dir, "sanitizer"))
        self.p = subprocess.Popen(args, cwd=cwd, env=env, stdout=self.log,
                                  stderr=subprocess.STDOUT,
                                  start_new_session=True)

    def output(self):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def alive(self):
        return self.p.poll() is None

    def wait(self, timeout=60):
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failure("%s did not exit within %ds" % (self.name, timeout))

    def kill(self, sig=signal.SIGKILL):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, sig)
            except ProcessLookupError:
                pass
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()

    def stop(self, timeout=30):
        """SIGTERM and wait: a clean stop, exit status returned."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Failure("%s did not stop within %ds" % (self.name, timeout))


class Server(Proc):
    """`frond serve` in directory cwd, with only its ports set (HTTP on a
    free port, RESP off unless resp=True) besides what the row gives:
    flags in args, variables in env. Nothing else is set but the wait for
    a segment (20 s, not 50 ms, unless the row sets it): the rows count
    IDs, not latency, and a loaded machine's store can be slower than a
    request's default wait. The point of most rows is the defaults that
    decide which IDs are issued."""

    def __init__(self, run, cwd, args=(), env=None, resp=False, name=None,
                 wait=True):
        self.port = ft.free_port()
        self.resp_port = ft.free_port() if resp else None
        argv = [ft.FROND_BIN, "serve", "--listen", "127.0.0.1:%d" % self.port,
                "--resp-listen",
                "127.0.0.1:%d" % self.resp_port if resp else "off"]
        if "--segment-wait-ms" not in args and \
                "FROND_SEGMENT_WAIT_MS" not in (env or {}):
            argv += ["--segment-wait-ms", "20000"]
        argv += list(args)
        Proc.__init__(self, run, argv, cwd, clean_env(env),
                      name or "serve-%d" % self.port)
        if wait:
            self.wait_up()

    def wait_up(self, timeout=60):
        """Until the HTTP port answers /livez, or the process exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                raise Failure("%s exited (%s) before it listened:\n%s" %
                              (self.name, self.p.returncode, self.output()))
            try:
                if self.get("/livez", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise Failure("%s did not listen within %ds:\n%s" %
                      (self.name, timeout, self.output()))

    def wait_ready(self, timeout=60):
        """Until /readyz answers 200 (store reached, node ID held)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.get("/readyz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            if not self.alive():
                raise Failure("%s exited: %s" % (self.name, self.output()))
            time.sleep(0.05)
        raise Failure("%s not ready within %ds:\n%s" %
                      (self.name, timeout, self.output()))

    def get(self, path, timeout=30, method="GET", body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port,
                                       timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def ids(self, path, n, batch=1000):
        """n IDs from a /v1 batch endpoint (path without ?count), as ints;
        an error answer fails the row with its body."""
        out = []
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            while len(out) < n:
                k = min(batch, n - len(out))
                sep = "&" if "?" in path else "?"
                c.request("GET", "%s%scount=%d" % (path, sep, k))
                r = c.getresponse()
                body = r.read()
                if r.status != 200:
                    raise Failure("%s %s: %d %s" % (self.name, path, r.status,
                                                    body[:300]))
                out += [int(x) for x in json.loads(body)["ids"]]
        finally:
            c.close()
        return out


class Run:
    """One row's world: a temp dir, the processes it started, its verdict.
    Use as a context manager; everything it started dies at the end."""

    def __init__(self, name):
        self.name = name
        self.dir = ft.tempdir("frond-mistake-%s-" % name)
        self.procs = []
        self.closers = []
        self.verdicts = []
        self.checked = 0
        self.duplicates = 0

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        for p in reversed(self.procs):
            p.kill()
            p.log.close()
        for c in reversed(self.closers):
            try:
                c()
            except Exception as e:  # a cleanup failure must not hide ev
                print("cleanup: %s" % e, file=sys.stderr)
        # Sanitizer reports of the row's processes fail the row.
        ft.read_sanitizer_logs("row %s" % self.name, sorted(glob.glob(
            os.path.join(self.dir, "sanitizer.*"))) +
            [p.log_path for p in self.procs])
        reports = ft.take_sanitizer_reports()
        if reports:
            print(ft.describe_reports(reports), file=sys.stderr)
        if et is None and not reports and \
                os.environ.get("FROND_MISTAKES_KEEP") != "1":
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            ft.keep_tempdir(self.dir)
            print("files kept in %s" % self.dir, file=sys.stderr)
        if reports and et is None:
            raise Failure("%d sanitizer report(s)" % len(reports))
        return False

    def subdir(self, name):
        d = os.path.join(self.dir, name)
        os.makedirs(d, exist_ok=True)
        return d

    def on_close(self, fn):
        """Run fn when the row ends (stop a database, ...)."""
        self.closers.append(fn)

    def serve(self, cwd, args=(), env=None, **kw):
        s = Server(self, cwd, args, env, **kw)
        self.procs.append(s)
        return s

    def start(self, args, cwd, env=None, name=None):
        """A `frond` command in the background (args without the binary)."""
        p = Proc(self, [ft.FROND_BIN] + list(args), cwd, clean_env(env),
                 name or "frond-%s-%d" % (args[0], len(self.procs)))
        self.procs.append(p)
        return p

    def frond(self, args, cwd, env=None, timeout=120, input=None):
        """A `frond` command to its end: CompletedProcess (text)."""
        return subprocess.run([ft.FROND_BIN] + list(args), cwd=cwd,
                              env=clean_env(env), input=input,
                              capture_output=True, text=True,
                              timeout=timeout)

    def ok(self, args, cwd, env=None, **kw):
        """A `frond` command that must succeed; its stdout."""
        r = self.frond(args, cwd, env, **kw)
        check(r.returncode == 0, "frond %s: exit %d: %s" %
              (" ".join(args), r.returncode, r.stderr.strip()))
        return r.stdout

    def postgres(self):
        pg = ft.Postgres()
        self.on_close(pg.close)
        return pg

    def mariadb(self):
        db = ft.MariaDB()
        self.on_close(db.close)
        return db

    # ---- verdicts

    def unique(self, lists, what="IDs"):
        """No ID in two places: lists is one list of IDs per process (or
        per request stream). Repeats fail the row, counted."""
        seen = {}
        dups = []
        total = 0
        for i, ids in enumerate(lists):
            total += len(ids)
            for x in ids:
                if x in seen:
                    dups.append(x)
                seen[x] = i
        self.checked += total
        self.duplicates += len(dups)
        self.verdicts.append("unique")
        check(total > 0, "no %s were collected: the row checked nothing" %
              what)
        check(not dups, "%d of %d %s were issued twice (first: %s)" %
              (len(dups), total, what, sorted(dups)[:5]))

    def refused(self, result, code, *words):
        """A CompletedProcess (or a Proc that exited, or an HTTP body) that
        must have failed with the stable code and mention every word."""
        if isinstance(result, Proc):
            rc = result.wait()
            text = result.output()
        elif isinstance(result, (bytes, str)):
            rc = 1
            text = result.decode() if isinstance(result, bytes) else result
        else:
            rc = result.returncode
            text = (result.stdout or "") + (result.stderr or "")
        check(rc != 0, "expected a refusal with %s, got exit 0:\n%s" %
              (code, text[-2000:]))
        check(code in text, "refused, but without the code %s:\n%s" %
              (code, text[-2000:]))
        for w in words:
            check(w in text, "the refusal does not name %r:\n%s" %
                  (w, text[-2000:]))
        self.verdicts.append("refused %s" % code)


def parallel(fns, timeout=300):
    """Run every fn in its own thread; their results in order. An exception
    in one is raised here after all have ended."""
    out = [None] * len(fns)
    errs = []

    def go(i, fn):
        try:
            out[i] = fn()
        except BaseException as e:  # re-raised below
            errs.append(e)

    ts = [threading.Thread(target=go, args=(i, f)) for i, f in enumerate(fns)]
    for t in ts:
        t.start()
    deadline = time.monotonic() + timeout
    for t in ts:
        t.join(max(0.0, deadline - time.monotonic()))
    check(not any(t.is_alive() for t in ts), "load still running after %ds" %
          timeout)
    if errs:
        raise errs[0]
    return out


ROWS = []


def row(name, about):
    """Register a row: name (ctest's mistakes/<name>) and what the operator
    did, in a sentence."""
    def reg(fn):
        ROWS.append((name, about, fn))
        return fn
    return reg


def zookeeper(run):
    """A throwaway ZooKeeper on loopback (frondtest.py), in the row's
    directory and stopped when the row ends; its "host:port"."""
    zk = ft.ZooKeeper(dir=run.subdir("zookeeper"))
    run.on_close(zk.close)
    return zk.address
