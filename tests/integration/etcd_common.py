# SPDX-License-Identifier: Apache-2.0
"""
etcd_common.py -- a throwaway etcd cluster for the etcd coordinator's
tests: Etcd(members=3) starts that many etcd members (Debian's
etcd-server) on free loopback ports in a temp dir, waits until every one
reports healthy, and can kill (-9), restart, pause (SIGSTOP) and resume
members; close() stops them all, also when a test fails (a frondtest
fixture: closed at the end of its block, or at exit).
"""
import json
import os
import shutil
import signal
import ssl
import subprocess
import time
import urllib.request

import frondtest as ft
from frondtest import Failure, check

# An etcd coordinator URI's fast timings for tests: leases of 2 s.
ETCD_FAST = "report_ms=200&session_ms=2000&connect_ms=3000"


class Etcd(ft.Fixture):
    """members etcd processes forming one cluster on loopback. uri(prefix)
    is a coordinator URI on all of them; endpoints(which) names some.
    tls: (CA file, certificate, key, client certificate, client key): the
    client port speaks TLS and wants a client certificate of that CA."""

    prefix = "frond-etcd-"

    def __init__(self, members=3, tls=None):
        ft.need("etcd", "etcd-server")
        self._begin()
        self.tls = tls
        self.n = members
        self.procs = [None] * members
        # A port free when drawn may be taken before etcd binds it, by a
        # process that is not a test's: then the cluster starts again on
        # other ports.
        for attempt in range(3):
            self._configure()
            for i in range(members):
                self.start(i, wait=False)
            try:
                self.wait_healthy()
                return
            except Failure as e:
                if attempt == 2 or "address already in use" not in str(e):
                    raise
                self.stop()
                for i in range(members):
                    shutil.rmtree(os.path.join(self.dir, "m%d" % i),
                                  ignore_errors=True)
                    for log in ("m%d.log" % i, "m%d.err" % i):
                        if os.path.exists(os.path.join(self.dir, log)):
                            os.unlink(os.path.join(self.dir, log))

    def _configure(self):
        """Free ports for every member, and the command lines on them."""
        scheme = "https" if self.tls else "http"
        members, tls = self.n, self.tls
        self.client = [ft.free_port() for _ in range(members)]
        self.peer = [ft.free_port() for _ in range(members)]
        self.token = "frond-test-%d-%d" % (os.getpid(), self.client[0])
        cluster = ",".join("m%d=http://127.0.0.1:%d" % (i, self.peer[i])
                           for i in range(members))
        self.args = []
        for i in range(members):
            self.args.append([
                "etcd", "--name", "m%d" % i,
                "--data-dir", os.path.join(self.dir, "m%d" % i),
                "--listen-client-urls",
                "%s://127.0.0.1:%d" % (scheme, self.client[i]),
                "--advertise-client-urls",
                "%s://127.0.0.1:%d" % (scheme, self.client[i]),
                "--listen-peer-urls", "http://127.0.0.1:%d" % self.peer[i],
                "--initial-advertise-peer-urls",
                "http://127.0.0.1:%d" % self.peer[i],
                "--initial-cluster", cluster,
                "--initial-cluster-token", self.token,
                "--initial-cluster-state", "new",
                # Fast elections on a loaded machine: 100 ms beats, a
                # leader missed for 1 s is replaced.
                "--heartbeat-interval", "100", "--election-timeout", "1000",
                "--logger", "zap",
                "--log-outputs", os.path.join(self.dir, "m%d.log" % i)])
            if tls:
                self.args[-1] += ["--trusted-ca-file", tls[0],
                                  "--cert-file", tls[1], "--key-file", tls[2],
                                  "--client-cert-auth"]

    def start(self, i, wait=True):
        """Start member i (again: its data dir is kept, so it rejoins)."""
        check(self.procs[i] is None or self.procs[i].poll() is not None,
              "member %d is running" % i)
        self.procs[i] = subprocess.Popen(
            self.args[i], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.dir, "m%d.err" % i), "ab"))
        if wait:
            self.wait_healthy([i])

    def health(self, i):
        ctx = None
        if self.tls:
            ctx = ssl.create_default_context(cafile=self.tls[0])
            ctx.load_cert_chain(self.tls[3], self.tls[4])
        try:
            with urllib.request.urlopen(
                    "%s://127.0.0.1:%d/health" % (
                        "https" if self.tls else "http", self.client[i]),
                    timeout=1, context=ctx) as r:
                return json.loads(r.read()).get("health") == "true"
        except (OSError, ValueError):
            return False

    def wait_healthy(self, which=None, timeout=60):
        """Until every member in which (all) answers healthy: it has a
        leader and its quorum."""
        which = range(self.n) if which is None else which
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.health(i) for i in which):
                return
            for i in which:
                p = self.procs[i]
                if p is not None and p.poll() is not None:
                    raise Failure("etcd member %d exited: %s" % (
                        i, self.log_tail(i)))
            time.sleep(0.1)
        raise Failure("etcd members %s not healthy after %ds: %s" % (
            list(which), timeout, self.log_tail(which[0] if which else 0)))

    def log_tail(self, i):
        try:
            with open(os.path.join(self.dir, "m%d.log" % i)) as f:
                return f.read()[-1500:]
        except OSError:
            return "(no log)"

    def kill(self, i):
        """kill -9 member i."""
        p = self.procs[i]
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.kill()
            p.wait(30)

    def pause(self, i):
        self.procs[i].send_signal(signal.SIGSTOP)

    def resume(self, i):
        self.procs[i].send_signal(signal.SIGCONT)

    def stop(self):
        for i in range(self.n):
            p = self.procs[i]
            if p is None or p.poll() is not None:
                continue
            p.send_signal(signal.SIGCONT)
            p.terminate()
        for i in range(self.n):
            p = self.procs[i]
            if p is None:
                continue
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(20)

    def endpoints(self, which=None):
        which = range(self.n) if which is None else which
        return ",".join("127.0.0.1:%d" % self.client[i] for i in which)

    def uri(self, prefix="/frond", extra=ETCD_FAST, which=None):
        return "etcd://%s%s%s" % (self.endpoints(which), prefix,
                                  "?" + extra if extra else "")

    def ctl(self, *args, user=None):
        """etcdctl on every live member: its stdout."""
        ft.need("etcdctl", "etcd-client")
        live = [i for i in range(self.n)
                if self.procs[i] is not None and self.procs[i].poll() is None]
        cmd = ["etcdctl", "--endpoints", self.endpoints(live),
               "--dial-timeout", "3s", "--command-timeout", "10s"]
        if self.tls:
            cmd += ["--cacert", self.tls[0], "--cert", self.tls[3],
                    "--key", self.tls[4]]
        if user:
            cmd += ["--user", user]
        env = dict(os.environ, ETCDCTL_API="3")
        r = subprocess.run(cmd + list(args), capture_output=True, text=True,
                           timeout=60, env=env)
        check(r.returncode == 0, "etcdctl %s: %s" % (args, r.stderr))
        return r.stdout

    def get(self, key):
        """The value of key ("" when absent)."""
        out = self.ctl("get", key, "--print-value-only")
        return out[:-1] if out.endswith("\n") else out

    def enable_auth(self, user, password, prefix):
        """Authentication on: root, and user with read and write on the
        keys under prefix only."""
        self.ctl("user", "add", "root:rootpw")
        self.ctl("role", "add", "frond")
        self.ctl("role", "grant-permission", "frond", "--prefix=true",
                 "readwrite", prefix + "/")
        self.ctl("user", "add", "%s:%s" % (user, password))
        self.ctl("user", "grant-role", user, "frond")
        self.ctl("auth", "enable")

    cleanup = ft.Fixture.close


def make_certs(d):
    """In directory d: a CA (ca.pem), a certificate it signed for
    127.0.0.1 (server.pem, .key), a client one (client.pem, .key), and a
    CA that signed neither (wrongca.pem); made by openssl, EC P-256."""
    ft.need("openssl", "openssl")

    def openssl(*args):
        r = subprocess.run(["openssl"] + list(args), cwd=d,
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "openssl %s: %s" % (args[0], r.stderr))

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    for ca in ("ca", "wrongca"):
        openssl("req", "-x509", *ec, "-keyout", ca + ".key", "-out",
                ca + ".pem", "-days", "3", "-subj", "/CN=" + ca)
    for name, san in (("server", "DNS:localhost,IP:127.0.0.1"),
                      ("client", "DNS:frond")):
        openssl("req", "-new", *ec, "-keyout", name + ".key", "-out",
                name + ".csr", "-subj", "/CN=" + name)
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write("subjectAltName=%s\n" % san)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem",
                "-CAkey", "ca.key", "-CAcreateserial", "-out", name + ".pem",
                "-days", "3", "-extfile", name + ".ext")
        os.chmod(os.path.join(d, name + ".key"), 0o600)


def with_etcd(members=3, tls=None):
    """Decorate test(etcd): a cluster of its own, closed after."""
    def wrap(fn):
        def t():
            with Etcd(members, tls) as e:
                fn(e)
        t.__name__ = fn.__name__
        return t
    return wrap
