#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
TLS on the HTTP and RESP ports (tls_listen, resp_tls_listen), with real
clients: curl, Python's ssl, redis-cli --tls, redis-py and node-redis;
client certificates (mTLS) good, missing and from a wrong CA; TLS 1.1 and
weak ciphers refused, sslscan showing nothing below the bar; certificates
an operator gets wrong refused at start naming the file; SIGHUP reloads
the certificate while an open connection goes on, and a bad one keeps the
old. The HTTP checks of test_http.py that exercise the connection layer
(pipelining, half-close, back-pressure, a request byte by byte, timeouts)
run again over TLS.

Certificates are made at test time by openssl into a temp dir; an expired
one under faketime.
"""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

TOKEN = "tls-test-token-0123456789"
TAGS = {"orders": 1000}


def openssl(*args, cwd, faketime=None):
    cmd = ["openssl"] + list(args)
    if faketime:
        cmd = ["faketime", faketime] + cmd
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, "openssl %s: %s" % (" ".join(args), r.stderr))


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:P-256", "-nodes", "-keyout", name + ".key",
            "-out", name + ".pem", "-days", "3", "-subj", "/CN=" + name,
            cwd=d)


def make_cert(d, name, ca, cn, san=None, days="3", faketime=None):
    """name.pem and name.key, signed by ca."""
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:P-256", "-nodes", "-keyout", name + ".key",
            "-out", name + ".csr", "-subj", "/CN=" + cn if cn else "/O=x",
            cwd=d)
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w") as f:
        if san != "none":  # "none": a certificate without alternative names
            f.write("subjectAltName=%s\n" %
                    (san or "DNS:localhost,IP:127.0.0.1"))
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem",
            "-CAkey", ca + ".key", "-CAcreateserial", "-out", name + ".pem",
            "-days", days, "-extfile", ext, cwd=d, faketime=faketime)
    os.chmod(os.path.join(d, name + ".key"), 0o600)


class Certs:
    """A CA, a server certificate it signed, a client one, and a wrong
    CA with a client certificate of its own."""

    def __init__(self):
        self.dir = ft.tempdir("frond-tls-")
        d = self.dir
        make_ca(d, "ca")
        make_ca(d, "wrongca")
        make_cert(d, "server", "ca", "localhost")
        make_cert(d, "client", "ca", "payments", san="DNS:payments")
        make_cert(d, "cnonly", "ca", "cn-only", san="none")
        # The requester chose the CN, the CA checked the alternative name.
        make_cert(d, "mixed", "ca", "payments", san="DNS:intruder")
        make_cert(d, "spiffe", "ca", None,
                  san="URI:spiffe://example.org/ns/pay/sa/api")
        make_cert(d, "stranger", "wrongca", "payments")

    def path(self, name):
        return os.path.join(self.dir, name)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


CERTS = None


def certs():
    global CERTS
    if CERTS is None:
        CERTS = Certs()
    return CERTS


class TlsServer(ft.Server):
    """ft.Server with HTTPS on tls_port and RESP over TLS on
    resp_tls_port."""

    def __init__(self, extra=(), mtls=False, tls_host="127.0.0.1", **kw):
        c = certs()
        self.tls_port = ft.free_port()
        self.resp_tls_port = ft.free_port()
        args = ["--tls-listen", "%s:%d" % (tls_host, self.tls_port),
                "--resp-tls-listen", "127.0.0.1:%d" % self.resp_tls_port,
                "--tls-cert", kw.pop("cert", c.path("server.pem")),
                "--tls-key", kw.pop("key", c.path("server.key"))]
        if mtls:
            args += ["--tls-ca", c.path("ca.pem")]
        super().__init__(extra=args + list(extra), **kw)
        try:
            ft.wait_port(self.tls_port, timeout=30)
            ft.wait_port(self.resp_tls_port, timeout=30)
        except ft.Failure:
            self.stop()
            raise ft.Failure("TLS ports not open: %s" % self.output())

    def context(self, client=None):
        ctx = ssl.create_default_context(cafile=certs().path("ca.pem"))
        if client:
            ctx.load_cert_chain(certs().path(client + ".pem"),
                                certs().path(client + ".key"))
        return ctx

    def tls_socket(self, port=None, client=None, timeout=30):
        raw = socket.create_connection(("127.0.0.1", port or self.tls_port),
                                       timeout=timeout)
        return self.context(client).wrap_socket(raw,
                                                server_hostname="localhost")


def metric(s, name):
    body = s.request("GET", "/metrics")[2].decode()
    m = re.search(r"^%s (\S+)$" % re.escape(name), body, re.M)
    return float(m.group(1)) if m else 0.0


def curl(*args):
    r = subprocess.run(["curl", "-sS"] + list(args), capture_output=True,
                       text=True, timeout=60)
    return r


def recv_all(s, until=None, deadline_s=30):
    out = b""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            d = s.recv(1 << 20)
        except (ConnectionError, ssl.SSLError):
            break
        if not d:
            break
        out += d
        if until is not None and until(out):
            break
    return out


# ------------------------------------------------------------------ HTTP

def test_https_curl():
    """Single IDs, a batch, a segment tag and an admin change over HTTPS,
    verified against the CA; the plain port serves beside it."""
    ft.need("curl", "curl")
    s = TlsServer(extra=["--admin-token", TOKEN], tags=TAGS)
    try:
        ca = certs().path("ca.pem")
        base = "https://localhost:%d" % s.tls_port
        auth = ["-H", "Authorization: Bearer " + TOKEN]
        r = curl("-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca,
                 base + "/v1/snowflake")
        check(r.stdout == "401", ("IDs need a credential", r))
        r = curl("-f", "--cacert", ca, *auth, base + "/v1/snowflake")
        check(r.returncode == 0 and len(json.loads(r.stdout)["ids"]) == 1, r)
        r = curl("-f", "--cacert", ca, *auth, base + "/v1/snowflake?count=100")
        ids = json.loads(r.stdout)["ids"]
        check(len(set(ids)) == 100, r)
        r = curl("-f", "--cacert", ca, *auth, base + "/api/segment/get/orders")
        check(r.returncode == 0 and r.stdout.isdigit(), r)
        # Keep-alive: several requests on one connection.
        r = curl("-f", "--cacert", ca, *auth, base + "/livez", base + "/livez",
                 base + "/v1/snowflake", "-w", "%{num_connects}\n")
        check(r.returncode == 0 and r.stdout.split()[-1] == "0", r)
        body = '{"tag": "invoices", "step": 50, "start": 1000}'
        r = curl("-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca,
                 "-H", "Content-Type: application/json", "--data", body,
                 base + "/v1/tags")
        check(r.stdout == "401", r)
        r = curl("-f", "--cacert", ca, "-H", "Authorization: Bearer " + TOKEN,
                 "-H", "Content-Type: application/json", "--data", body,
                 base + "/v1/tags")
        check(r.returncode == 0 and json.loads(r.stdout)["tag"] == "invoices",
              r)
        r = curl("-f", "--cacert", ca, *auth, base + "/v1/segment/invoices?count=2")
        check(json.loads(r.stdout)["ids"] == ["1000", "1001"], r)
        # Without the CA the certificate is not trusted; plain HTTP on the
        # TLS port is told so, and served nothing.
        r = curl(base + "/livez")
        check(r.returncode != 0, "an untrusted certificate was accepted")
        r = curl("--max-time", "10", "-w", "\n%{http_code}",
                 "http://127.0.0.1:%d/livez" % s.tls_port)
        check(r.stdout.endswith("\n400") and "ok" not in r.stdout and
              "plain HTTP sent to a TLS port" in r.stdout, r)
        check(s.request("GET", "/livez")[0] == 200, "plain port")
        check(metric(s, 'frond_tls_handshakes_total{result="ok"}') >= 7,
              "handshakes not counted")
        check(metric(s, 'frond_tls_handshakes_total{result="failed"}') >= 2,
              "failed handshakes not counted")
        check(metric(s, "frond_tls_certificate_expiry_timestamp_seconds") >
              time.time(), "expiry gauge")
    finally:
        s.close()


def test_http_over_tls():
    """test_http.py's connection-layer checks, over TLS: pipelined
    requests in order, a half-close (close_notify) answered in full, a
    request sent byte by byte, an oversized request refused, and a large
    batch pipelined without reading held in bounded memory."""
    s = TlsServer(store="none", extra=["--idle-timeout-ms", "5000"])
    try:
        n = 200
        reqs = b"".join(b"GET /v1/decode/%d HTTP/1.1\r\nHost: a\r\n\r\n" % i
                        for i in range(n))
        reqs += b"GET /livez HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        c = s.tls_socket()
        c.sendall(reqs)
        rs = ft.split_responses(recv_all(c))
        c.close()
        check(len(rs) == n + 1, "got %d answers" % len(rs))
        for i in range(n):
            check(rs[i][0] == 200 and json.loads(rs[i][2])["id"] == str(i),
                  "answer %d out of order" % i)
        # Half-close: close_notify after the requests; every answer comes.
        req = (b"GET /v1/snowflake?count=5000&format=text HTTP/1.1\r\n"
               b"Host: a\r\n\r\n")
        rs = ft.split_responses(half_close(s, req * 50))
        check(len(rs) == 50 and all(r[0] == 200 for r in rs),
              "%d of 50 answers" % len(rs))
        # Plain text to the TLS ports: an answer in plain words, closed.
        for port, send, want in (
                (s.tls_port, b"GET /v1/snowflake HTTP/1.1\r\nHost: a\r\n\r\n",
                 b"HTTP/1.1 400 Bad Request\r\n"),
                (s.resp_tls_port, b"*1\r\n$4\r\nPING\r\n",
                 b"-ERR plain text sent to a TLS port: connect with TLS")):
            c = socket.create_connection(("127.0.0.1", port), timeout=30)
            c.sendall(send)
            out = recv_all(c)
            c.close()
            check(out.startswith(want), out)
            if port == s.tls_port:
                r = ft.split_responses(out)
                check(len(r) == 1 and json.loads(r[0][2])["error"]["code"] ==
                      "BAD_REQUEST" and b"https://" in r[0][2], out)
        # A request byte by byte.
        c = s.tls_socket()
        one = b"GET /livez HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
        for b in one:
            c.sendall(bytes([b]))
        out = recv_all(c)
        check(out.startswith(b"HTTP/1.1 200") and out.endswith(b"ok\n"), out)
        c.close()
        # A head larger than the server takes is refused, then closed.
        c = s.tls_socket()
        c.sendall(b"GET /livez HTTP/1.1\r\nHost: a\r\nX: " + b"a" * 70000)
        out = recv_all(c)
        check(re.match(rb"HTTP/1.1 4\d\d", out), out[:200])
        c.close()
        # Back-pressure: 40 batches of 100,000 IDs pipelined, not read.
        req = (b"GET /v1/snowflake?count=100000&format=text HTTP/1.1\r\n"
               b"Host: a\r\n\r\n")
        nb = 40
        c = s.tls_socket()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        base = rss_kb(s.proc.pid)
        c.sendall(req * nb)
        time.sleep(1.0)
        grown = rss_kb(s.proc.pid) - base
        check(grown < 64 * 1024, "server grew by %d KiB for %d MB of unread "
              "answers" % (grown, nb * 2))
        ids = set()
        data = b""
        got = 0
        deadline = time.monotonic() + 120
        while got < nb and time.monotonic() < deadline:
            d = c.recv(1 << 20)
            check(d, "closed after %d answers" % got)
            data += d
            while True:
                head, sep, rest = data[:300].partition(b"\r\n\r\n")
                if not sep:
                    break
                clen = int(head.split(b"Content-Length: ")[1]
                           .split(b"\r\n")[0])
                hl = len(head) + 4
                if len(data) < hl + clen:
                    break
                ids.update(data[hl:hl + clen].split())
                data = data[hl + clen:]
                got += 1
        c.close()
        check(got == nb and len(ids) == nb * 100000,
              "%d answers, %d distinct IDs" % (got, len(ids)))
    finally:
        s.close()


def half_close(s, data):
    """Send data over TLS, then close_notify with the socket left open
    for reading (a TLS half-close); return the plaintext until the server
    closes."""
    inc, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = s.context().wrap_bio(inc, outb, server_hostname="localhost")
    sock = socket.create_connection(("127.0.0.1", s.tls_port), timeout=30)

    def pump():
        d = outb.read()
        if d:
            sock.sendall(d)
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            pump()
            d = sock.recv(65536)
            check(d, "closed in the handshake")
            inc.write(d)
    obj.write(data)
    try:
        obj.unwrap()
    except ssl.SSLWantReadError:
        pass
    pump()
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        d = sock.recv(1 << 20)
        if not d:
            break
        inc.write(d)
        while True:
            try:
                chunk = obj.read(1 << 20)
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                break
            if not chunk:
                break
            out += chunk
    sock.close()
    return out


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_handshake_timeout():
    """A client that connects and never finishes its handshake is closed
    after header_timeout_ms, counted as a header timeout."""
    s = TlsServer(store="none", extra=["--header-timeout-ms", "500"])
    try:
        before = metric(s, "frond_connections_header_timeouts_total")
        c = socket.create_connection(("127.0.0.1", s.tls_port), timeout=30)
        c.sendall(b"\x16\x03\x01\x00")  # the start of a ClientHello
        t0 = time.monotonic()
        out = recv_all(c, deadline_s=20)
        check(out == b"" and time.monotonic() - t0 < 15,
              "half a handshake was not closed: %r" % out)
        c.close()
        check(metric(s, "frond_connections_header_timeouts_total") > before,
              "not counted")
    finally:
        s.close()


# ------------------------------------------------------------------ RESP

def test_redis_clients_over_tls():
    """redis-cli --tls, redis-py (ssl=True) and node-redis over TLS."""
    ft.need("redis-cli", "redis-tools")
    s = TlsServer(tags=TAGS, extra=["--admin-token", TOKEN])
    try:
        ca = certs().path("ca.pem")
        r = subprocess.run(["redis-cli", "--tls", "--cacert", ca, "-p",
                            str(s.resp_tls_port), "-a", TOKEN,
                            "--no-auth-warning", "-r", "100", "INCR",
                            "orders"], capture_output=True, text=True,
                           timeout=60)
        got = [int(x) for x in r.stdout.split()]
        check(r.returncode == 0 and len(got) == 100 and
              got == sorted(set(got)), r)
        r = subprocess.run(["redis-cli", "--tls", "--cacert", ca, "-p",
                            str(s.resp_tls_port), "INCR", "orders"],
                           capture_output=True, text=True, timeout=60)
        check("NOAUTH" in r.stdout + r.stderr, "no AUTH: %r" % r)
        redis = ft.debian_module("redis", "python3-redis")
        cl = redis.Redis(host="127.0.0.1", port=s.resp_tls_port, ssl=True,
                         ssl_ca_certs=ca, ssl_check_hostname=False,
                         password=TOKEN, socket_timeout=30)
        check(cl.ping(), "PING")
        p = cl.pipeline(transaction=False)
        for _ in range(1000):
            p.incr("orders")
        got = p.execute()
        check(len(got) == 1000 and got == sorted(set(got)) and got[0] > 0,
              "pipelined INCR")
        cl.close()
        node = shutil.which("node")
        ft.need("npm", "npm")
        root = subprocess.run(["npm", "root", "-g"], capture_output=True,
                              text=True, timeout=60).stdout.strip()
        suite = os.path.join(root, "frond-client-suite")
        check(node and os.path.isdir(os.path.join(suite, "node_modules",
                                                  "redis4")),
              "node-redis is not installed (scripts/deps.sh test)")
        script = """
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
const require = createRequire(process.argv[2] + "/package.json");
const { createClient } = require("redis4");
const c = createClient({ socket: { host: "127.0.0.1", port: +process.argv[3],
  tls: true, ca: readFileSync(process.argv[4]), servername: "localhost" },
  password: process.argv[5] });
c.on("error", (e) => { console.error(e); process.exit(1); });
await c.connect();
const ids = [];
for (let i = 0; i < 50; i++) ids.push(await c.incr("orders"));
console.log(JSON.stringify(ids));
await c.quit();
"""
        path = os.path.join(s.dir, "tls.mjs")
        with open(path, "w") as f:
            f.write(script)
        r = subprocess.run([node, path, suite, str(s.resp_tls_port), ca,
                            TOKEN], capture_output=True, text=True,
                           timeout=120)
        check(r.returncode == 0, "node-redis over TLS: %s" % r.stderr[-2000:])
        got = json.loads(r.stdout)
        check(len(got) == 50 and got == sorted(set(got)), got)
    finally:
        s.close()


# ------------------------------------------------------------------ mTLS

def test_mtls():
    """With tls_ca, a client certificate it signed is required: one from
    the CA passes (its CN, or a SPIFFE URI, named in the log), none or one
    from another CA is refused in the handshake; and such a listener may
    be beyond loopback without admin_token."""
    ft.need("curl", "curl")
    s = TlsServer(mtls=True, store="none", extra=["--log-level", "debug"])
    try:
        c = certs()
        base = "https://localhost:%d" % s.tls_port
        ok = curl("-f", "--cacert", c.path("ca.pem"), "--cert",
                  c.path("client.pem"), "--key", c.path("client.key"),
                  base + "/v1/snowflake")
        check(ok.returncode == 0 and json.loads(ok.stdout)["ids"], ok)
        ok = curl("-f", "--cacert", c.path("ca.pem"), "--cert",
                  c.path("spiffe.pem"), "--key", c.path("spiffe.key"),
                  base + "/livez")
        check(ok.returncode == 0, ok)
        for name in ("cnonly", "mixed"):
            ok = curl("-f", "--cacert", c.path("ca.pem"), "--cert",
                      c.path(name + ".pem"), "--key", c.path(name + ".key"),
                      base + "/livez")
            check(ok.returncode == 0, ok)
        none = curl("--cacert", c.path("ca.pem"), base + "/livez")
        check(none.returncode != 0 and "ok" not in none.stdout, none)
        wrong = curl("--cacert", c.path("ca.pem"), "--cert",
                     c.path("stranger.pem"), "--key", c.path("stranger.key"),
                     base + "/livez")
        check(wrong.returncode != 0 and "ok" not in wrong.stdout, wrong)
        r = subprocess.run(["redis-cli", "--tls", "--cacert", c.path("ca.pem"),
                            "--cert", c.path("client.pem"), "--key",
                            c.path("client.key"), "-p",
                            str(s.resp_tls_port), "ID.SNOWFLAKE"],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0 and r.stdout.strip().isdigit(), r)
        r = subprocess.run(["redis-cli", "--tls", "--cacert", c.path("ca.pem"),
                            "-p", str(s.resp_tls_port), "PING"],
                           capture_output=True, text=True, timeout=60)
        check("PONG" not in r.stdout, r)
        log = s.output()
        check("certificate of 'payments'" in log,
              "CN not taken: " + log[-2000:])
        check("certificate of 'spiffe://example.org/ns/pay/sa/api'" in log,
              "URI SAN not taken")
        check("certificate of 'cn-only'" in log, "CN without SAN not taken")
        check("certificate of 'intruder'" in log,
              "the CN taken over the alternative name")
        check(metric(s, 'frond_tls_handshakes_total{result="failed"}') >= 3,
              "refused handshakes not counted")
    finally:
        s.close()
    # Beyond loopback: tls_ca stands for admin_token on a TLS listener.
    common = ["--store", "none", "--resp-listen", "off", "--tls-cert",
              c.path("server.pem"), "--tls-key", c.path("server.key")]
    wide = "0.0.0.0:%d" % ft.free_port()
    r = ft.run(["serve", "--print-config", "--tls-listen", wide] + common)
    check(r.returncode == 1 and "INVAL" in r.stderr and "tls_ca" in r.stderr,
          r.stderr)
    r = ft.run(["serve", "--print-config", "--tls-listen", wide,
                "--tls-ca", c.path("ca.pem")] + common)
    check(r.returncode == 0, r.stderr)


def test_mtls_beyond_loopback_changes_no_tag():
    """A TLS listener with tls_ca may be beyond loopback without a
    credential: a client certificate lets a client take IDs there, never
    change tags, whatever Host it sends (before, Host: 127.0.0.1 was
    enough to create a tag). Bound to 0.0.0.0, reached on 127.0.0.1."""
    ft.need("curl", "curl")
    s = TlsServer(mtls=True, tls_host="0.0.0.0")
    try:
        c = certs()
        base = "https://localhost:%d" % s.tls_port
        who = ["--cacert", c.path("ca.pem"), "--cert", c.path("client.pem"),
               "--key", c.path("client.key")]
        ok = curl("-f", *who, base + "/v1/snowflake")
        check(ok.returncode == 0 and json.loads(ok.stdout)["ids"], ok)
        r = curl(*who, "-w", "\n%{http_code}", "-X", "POST",
                 "-H", "Host: 127.0.0.1:%d" % s.tls_port,
                 "-H", "Content-Type: application/json",
                 "-d", '{"tag":"stolen","step":10}', base + "/v1/tags")
        check(r.stdout.endswith("\n403") and "loopback" in r.stdout,
              "a tag change over mTLS without a credential: %r" % r.stdout)
        r = curl(*who, "-w", "\n%{http_code}", base + "/v1/tags/stolen")
        check(not r.stdout.endswith("\n200"), "the tag was made: %r" %
              r.stdout)
    finally:
        s.close()


def sanitized():
    """A sanitizer's quarantine keeps freed memory: RSS says little."""
    return "sanitizers: none" not in ft.run(["--version"]).stdout


def vm_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise ft.Failure("no VmRSS for %d" % pid)


def test_keyupdate_flood_bounded():
    """A TLS 1.3 client asking for key updates and never reading: each
    makes the server queue a KeyUpdate of its own. What OpenSSL has to
    send counts against the output high-water mark, so the server stops
    reading and its memory stays bounded (before: 3 million requests
    held about 70 MB until the client left)."""
    s = TlsServer(store="none", extra=["--threads", "1"])
    p = None
    try:
        before = vm_rss_kb(s.proc.pid)
        p = subprocess.Popen([ft.tool("tls_keyupdate"), str(s.tls_port),
                              "3000000"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline()  # once it is done or stopped
        check(line.startswith("sent "), "tls_keyupdate: %r" % line)
        # The server stopped reading (or closed) long before 3 million;
        # memory is checked where a sanitizer's quarantine does not hide it.
        check(int(line.split()[1]) < 3000000, "the server read every one")
        grown = vm_rss_kb(s.proc.pid) - before
        check(grown < 32 * 1024 or sanitized(), "%s key updates unread: the "
              "server grew by %d kB" % (line.split()[1], grown))
    finally:
        if p is not None:
            p.stdin.close()
            p.wait(timeout=60)
        s.close()


# ----------------------------------------------------------- the bar

def test_protocols_and_ciphers():
    """TLS 1.1 and below, CBC and non-forward-secret ciphers are refused;
    sslscan finds nothing below TLS 1.2 with ECDHE and an AEAD."""
    ft.need("sslscan", "sslscan")
    s = TlsServer(store="none")
    try:
        def s_client(*args):
            return subprocess.run(
                ["openssl", "s_client", "-connect", "127.0.0.1:%d" %
                 s.tls_port] + list(args), input="", capture_output=True,
                text=True, timeout=30)
        r = s_client("-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0")
        check("Cipher is (NONE)" in r.stdout and
              "protocol version" in r.stderr, r.stdout + r.stderr)
        for weak in ("AES128-GCM-SHA256", "ECDHE-RSA-AES128-SHA",
                     "ECDHE-ECDSA-AES128-SHA256", "DHE-RSA-AES128-GCM-SHA256"):
            r = s_client("-tls1_2", "-cipher", weak)
            check("Cipher is (NONE)" in r.stdout, "%s accepted: %s"
                  % (weak, r.stdout[-600:]))
        r = s_client("-tls1_2", "-CAfile", certs().path("ca.pem"))
        check(re.search(r"Cipher is ECDHE-ECDSA-AES\d+-GCM", r.stdout) and
              "Verify return code: 0" in r.stdout, r.stdout[-800:])
        r = s_client("-tls1_3")
        check("TLSv1.3" in r.stdout, r.stdout[-800:])
        r = subprocess.run(["sslscan", "--no-colour", "127.0.0.1:%d" %
                            s.tls_port], capture_output=True, text=True,
                           timeout=120)
        check(r.returncode == 0, r.stderr)
        out = r.stdout
        for old in ("SSLv2", "SSLv3", "TLSv1.0", "TLSv1.1"):
            check(re.search(r"^%s\s+disabled" % re.escape(old), out, re.M),
                  "%s not disabled:\n%s" % (old, out))
        accepted = re.findall(r"^(?:Preferred|Accepted)\s+(\S+)\s+\d+ bits\s+"
                              r"(\S+)", out, re.M)
        check(accepted, "no cipher found:\n" + out)
        for proto, cipher in accepted:
            check(proto in ("TLSv1.2", "TLSv1.3"), out)
            check(("GCM" in cipher or "CHACHA20" in cipher) and
                  (proto == "TLSv1.3" or cipher.startswith("ECDHE-")),
                  "%s %s below the bar" % (proto, cipher))
        check(re.search(r"renegotiation not supported", out), out)
    finally:
        s.close()


def test_start_refusals():
    """Certificates an operator gets wrong stop the start with CONFIG and
    the file named."""
    c = certs()
    d = c.dir
    make_cert(d, "expired", "ca", "localhost", days="1",
              faketime="2024-01-01 00:00:00")
    port = ft.free_port()

    def start(*args):
        return ft.run(["serve", "--store", "none", "--listen",
                       "127.0.0.1:%d" % ft.free_port(), "--resp-listen",
                       "off", "--tls-listen", "127.0.0.1:%d" % port,
                       "--data-dir", d] + list(args), timeout=60)
    cases = [
        (("--tls-cert", c.path("expired.pem"), "--tls-key",
          c.path("expired.key")), "expired"),
        (("--tls-cert", c.path("server.pem"), "--tls-key",
          c.path("client.key")), "does not match"),
        (("--tls-cert", c.path("nothere.pem"), "--tls-key",
          c.path("server.key")), "no such file"),
        (("--tls-cert", c.path("server.key"), "--tls-key",
          c.path("server.key")), "not a PEM certificate"),
        (("--tls-cert", c.path("server.pem"),), "needs tls_cert and tls_key"),
        (("--tls-cert", c.path("server.pem"), "--tls-key",
          c.path("server.key"), "--tls-ca", c.path("server.key")),
         "no PEM certificate"),
    ]
    for args, words in cases:
        r = start(*args)
        check(r.returncode == 1 and "CONFIG" in r.stderr and words in r.stderr,
              "%s: %s" % (args, r.stderr))
    r = ft.run(["serve", "--print-config", "--store", "none",
                "--tls-cert", c.path("server.pem")])
    check(r.returncode == 1 and "no TLS listener" in r.stderr, r.stderr)
    # frond check loads the files as a start would.
    r = ft.run(["check", "--store", "none", "--data-dir", d,
                "--resp-listen", "off", "--listen",
                "127.0.0.1:%d" % ft.free_port(), "--tls-listen",
                "127.0.0.1:%d" % port, "--tls-cert", c.path("expired.pem"),
                "--tls-key", c.path("expired.key")])
    check(r.returncode != 0 and re.search(r"FAIL\s+listen\s+CONFIG: tls_cert "
                                          r"\S+expired.pem expired", r.stdout),
          r.stdout + r.stderr)


# ------------------------------------------------------------ reload

def peer_cn(s):
    c = s.tls_socket()
    cert = c.getpeercert()
    c.close()
    return dict(x[0] for x in cert["subject"])["commonName"]


def test_sighup_reload():
    """SIGHUP swaps in a new certificate for new connections while an
    open one goes on; a bad certificate at reload keeps the old one."""
    c = certs()
    d = ft.tempdir("frond-tls-reload-")
    for name in ("server.pem", "server.key"):
        shutil.copy(c.path(name), os.path.join(d, name))
    s = TlsServer(store="none", cert=os.path.join(d, "server.pem"),
                  key=os.path.join(d, "server.key"))
    try:
        check(peer_cn(s) == "localhost", "first certificate")
        old = s.tls_socket()
        old.sendall(b"GET /livez HTTP/1.1\r\nHost: a\r\n\r\n")
        check(recv_all(old, until=lambda o: o.endswith(b"ok\n"))
              .endswith(b"ok\n"), "old connection")
        make_cert(c.dir, "renewed", "ca", "renewed.localhost")
        shutil.copy(c.path("renewed.pem"), os.path.join(d, "server.pem"))
        shutil.copy(c.path("renewed.key"), os.path.join(d, "server.key"))
        s.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while "SIGHUP: TLS certificate" not in s.output() and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        check("reloaded" in s.output(), s.output())
        check(peer_cn(s) == "renewed.localhost", "not reloaded")
        old.sendall(b"GET /v1/snowflake HTTP/1.1\r\nHost: a\r\n\r\n")
        out = recv_all(old, until=lambda o: o.rstrip().endswith(b"]}"))
        check(b'"ids"' in out, "the open connection was dropped: %r" % out)
        # A key that is not the certificate's: the renewed one stays.
        shutil.copy(c.path("client.key"), os.path.join(d, "server.key"))
        s.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while "not reloaded" not in s.output() and time.monotonic() < deadline:
            time.sleep(0.05)
        check("not reloaded, the old one stays in use" in s.output() and
              "does not match" in s.output(), s.output())
        check(peer_cn(s) == "renewed.localhost", "old certificate dropped")
        check(metric(s, 'frond_tls_reloads_total{result="ok"}') == 1 and
              metric(s, 'frond_tls_reloads_total{result="failed"}') == 1,
              "reloads not counted")
        old.sendall(b"GET /livez HTTP/1.1\r\nHost: a\r\n\r\n")
        check(recv_all(old, until=lambda o: o.endswith(b"ok\n"))
              .endswith(b"ok\n"), "old connection after a failed reload")
        old.close()
        # A key any user can read is loaded, and said so at each reload.
        check("any user" not in s.output(), s.output())
        key = os.path.join(d, "server.key")
        shutil.copy(c.path("renewed.key"), key)
        os.chmod(key, 0o644)
        s.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while "any user" not in s.output() and time.monotonic() < deadline:
            time.sleep(0.05)
        check(re.search(r"warn.*SIGHUP: tls_key \S+server.key can be read by "
                        r"any user of this host \(mode 0644\)", s.output()),
              s.output())
        r = ft.run(["check", "--store", "none", "--data-dir", d,
                    "--resp-listen", "off", "--listen",
                    "127.0.0.1:%d" % ft.free_port(), "--tls-listen",
                    "127.0.0.1:%d" % ft.free_port(), "--tls-cert",
                    os.path.join(d, "server.pem"), "--tls-key", key])
        check(r.returncode == 0 and re.search(
            r"^warn listen +CONFIG: tls_key .* any user", r.stdout, re.M),
            r.stdout + r.stderr)
        check(s.stop() == 0, "exit status")
    finally:
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def main():
    try:
        ft.main([test_https_curl, test_http_over_tls, test_handshake_timeout,
                 test_redis_clients_over_tls, test_mtls,
                 test_mtls_beyond_loopback_changes_no_tag,
                 test_keyupdate_flood_bounded,
                 test_protocols_and_ciphers, test_start_refusals,
                 test_sighup_reload])
    finally:
        if CERTS is not None:
            CERTS.close()


if __name__ == "__main__":
    main()
