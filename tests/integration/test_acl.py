#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_acl.py -- named clients (clients_file) on a real server, over HTTP and
the Redis protocol: a client scoped to some tags is refused another, a
read-only client is refused issuing, tag changes need the admin right on
the tag, snowflake and the other IDs need formats=, wrong secrets and
unknown names are 401 / WRONGPASS, failures are counted per client, the
file is read again on SIGHUP (a bad one kept out), a bad file stops the
start, and no secret reaches the log or --print-config.
"""
import json
import os
import re
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from respclient import Resp, RespError  # noqa: E402

TOKEN = "acl-admin-token-0123456789"
TAGS = {"orders:eu": 100, "orders:us": 100, "invoices": 100}
SRV = None
DIR = None
SECRETS = {}


def add(name, *flags):
    """`frond clients add`: the file's line; the secret kept in SECRETS."""
    path = os.path.join(DIR, name + ".secret")
    r = ft.run(["clients", "add", name, "--secret-file", path] + list(flags))
    check(r.returncode == 0, "clients add %s: %r" % (name, r.stderr))
    with open(path) as f:
        SECRETS[name] = f.read().strip()
    check(len(SECRETS[name]) == 43, SECRETS[name])
    check(SECRETS[name] not in r.stdout, "the secret is not on stdout")
    return r.stdout


def write_clients(text):
    path = os.path.join(DIR, "clients.conf")
    with open(path + ".new", "w") as f:
        f.write(text)
    os.chmod(path + ".new", 0o600)
    os.rename(path + ".new", path)
    return path


LINES = {}


def srv():
    global SRV, DIR
    if SRV is None:
        DIR = ft.tempdir("frond-acl-")
        LINES["payments"] = add("payments", "--rights", "issue,read",
                                "--tags", "orders:*")
        LINES["dash"] = add("dash", "--rights", "read")
        LINES["ops"] = add("ops", "--rights", "admin,read", "--tags",
                           "orders:*")
        LINES["ids"] = add("ids", "--rights", "issue", "--formats",
                           "snowflake,uuid7")
        LINES["fmt"] = add("fmt", "--rights", "issue", "--formats", "*")
        LINES["shop"] = add("shop", "--rights", "issue", "--tags",
                            "orders:*", "--formats", "ordb")
        path = write_clients("# the clients\n\n" + "".join(LINES.values()))
        SRV = ft.Server(resp=True, tags=TAGS,
                        extra=["--admin-token", TOKEN, "--clients-file", path,
                               "--format.ordb", "base62:tag=orders:eu",
                               "--format.daily", "seq:tag=invoices,digits=6"])
    return SRV


def bearer(name):
    return {"Authorization": "Bearer %s:%s" % (name, SECRETS[name])}


def get(name, path, method="GET", body=None):
    h = bearer(name) if name else {"Authorization": None}
    st, hdrs, b = srv().request(method, path, body, h)
    return st, hdrs, b


def err(b):
    return json.loads(b)["error"]


def test_http_scopes():
    s = srv()
    st, _, b = get("payments", "/v1/segment/orders:eu?count=2")
    check(st == 200 and len(json.loads(b)["ids"]) == 2, (st, b))
    st, _, b = get("payments", "/api/segment/get/orders:us")
    check(st == 200 and b.isdigit(), (st, b))
    st, _, b = get("payments", "/v1/segment/orders:eu/range?count=10")
    check(st == 200, (st, b))
    # Another tag, and IDs its formats= does not name.
    for path in ("/v1/segment/invoices", "/v1/segment/invoices/range",
                 "/v1/snowflake", "/v1/uuid7"):
        st, _, b = get("payments", path)
        check(st == 403 and err(b)["code"] == "FORBIDDEN" and
              "payments" in err(b)["message"], (path, st, b))
    st, _, b = get("payments", "/v1/segment/invoices")
    check("invoices" in err(b)["message"] and
          "orders:*" in err(b)["message"], b)
    # Read only: decode, layout, tags, the page; never an ID.
    for path in ("/v1/layout", "/v1/decode/12345", "/v1/tags", "/"):
        st, _, b = get("dash", path)
        check(st == 200, (path, st, b[:200]))
    for path in ("/v1/segment/orders:eu", "/v1/snowflake"):
        st, _, b = get("dash", path)
        check(st == 403 and "dash" in b.decode(), (path, st, b))
    # Leaf's paths answer as Leaf does (500), the code in Frond-Error.
    st, h, b = get("dash", "/api/snowflake/get/x")
    check(st == 500 and h.get("frond-error") == "FORBIDDEN", (st, h, b))
    # formats=: snowflake and uuid7, nothing else, and no segment tag.
    st, _, b = get("ids", "/v1/snowflake?count=3")
    check(st == 200 and len(json.loads(b)["ids"]) == 3, (st, b))
    st, _, b = get("ids", "/v1/uuid7")
    check(st == 200, (st, b))
    for path in ("/v1/ulid", "/v1/segment/orders:eu"):
        st, _, b = get("ids", path)
        check(st == 403, (path, st, b))
    # Every client reads the layout (ID clients learn max_range there).
    st, _, b = get("ids", "/v1/layout")
    check(st == 200 and "max_range" in json.loads(b), (st, b))
    # The frond:// store, as a named client: its tags, not another.
    base = "frond://127.0.0.1:%d?token=payments:%s" % (s.port,
                                                      SECRETS["payments"])
    r = ft.run(["next", "--segment", "orders:eu", "--count", "2", "--store",
                base])
    check(r.returncode == 0 and len(r.stdout.split()) == 2, r)
    r = ft.run(["next", "--segment", "invoices", "--store", base])
    check(r.returncode == 1 and "FORBIDDEN" in r.stderr and
          SECRETS["payments"] not in r.stderr, r.stderr)
    # The admin token is the client admin, with every right.
    st, _, b = s.request("GET", "/v1/segment/invoices")
    check(st == 200, (st, b))


def test_http_admin_right():
    new = json.dumps({"tag": "orders:new", "step": 10})
    st, _, b = get("payments", "/v1/tags", "POST", new)
    check(st == 403 and "admin" in err(b)["message"], (st, b))
    st, _, b = get("dash", "/v1/tags", "POST", new)
    check(st == 403, (st, b))
    st, _, b = get("ops", "/v1/tags", "POST", new)
    check(st == 201, (st, b))
    st, _, b = get("ops", "/v1/tags", "POST",
                   json.dumps({"tag": "other", "step": 10}))
    check(st == 403 and "other" in err(b)["message"], (st, b))
    st, _, b = get("ops", "/v1/tags/orders:new", "PATCH", '{"step": 20}')
    check(st == 200, (st, b))
    st, _, b = get("ops", "/v1/tags/invoices", "DELETE")
    check(st == 403, (st, b))
    # ops may change orders:* but not issue from them.
    st, _, b = get("ops", "/v1/segment/orders:new")
    check(st == 403, (st, b))
    st, _, b = get("payments", "/v1/segment/orders:new")
    check(st == 200, (st, b))


def test_http_unauthorized():
    st, h, b = get(None, "/v1/snowflake")
    check(st == 401 and err(b)["code"] == "UNAUTHORIZED" and
          h["www-authenticate"] == "Bearer", (st, h, b))
    for auth in ("Bearer payments:" + "A" * 43, "Bearer nobody:secret",
                 "Bearer " + TOKEN[:-1], "Basic dXNlcjpwYXNz",
                 "Bearer payments:" + SECRETS["dash"]):
        st, h, b = srv().request("GET", "/v1/segment/orders:eu", None,
                                 {"Authorization": auth})
        check(st == 401 and 'error="invalid_token"' in h["www-authenticate"],
              (auth, st, h, b))
    # The probes and /metrics stay open (open_reads); the page does not.
    for path in ("/livez", "/healthz", "/readyz", "/metrics"):
        st, _, b = get(None, path)
        check(st in (200, 503), (path, st))
    st, _, b = get(None, "/")
    check(st == 401, st)


def test_resp():
    s = srv()
    c = Resp(s.resp_port)
    try:
        r = c.command("INCR", "orders:eu")
        check(isinstance(r, RespError) and r.code == "NOAUTH", r)
        r = c.command("AUTH", "payments", "wrong")
        check(isinstance(r, RespError) and r.code == "WRONGPASS", r)
        r = c.command("AUTH", "nobody", SECRETS["payments"])
        check(isinstance(r, RespError) and r.code == "WRONGPASS", r)
        check(c.command("AUTH", "payments", SECRETS["payments"]) == "OK", "")
        check(isinstance(c.command("INCR", "orders:eu"), int), "INCR")
        for cmd in (("INCR", "invoices"), ("ID.NEXT", "invoices", "2"),
                    ("ID.RANGE", "invoices", "5"), ("INCRBY", "invoices", "3"),
                    ("ID.SNOWFLAKE",), ("ID.UUID",)):
            r = c.command(*cmd)
            check(isinstance(r, RespError) and r.code == "NOPERM" and
                  "payments" in r.line, (cmd, r))
        check(isinstance(c.command("ID.TAGS"), list), "ID.TAGS: read")
        # A refused AUTH leaves the connection as it was.
        r = c.command("AUTH", "dash", "wrong")
        check(isinstance(r, RespError), r)
        check(isinstance(c.command("INCR", "orders:eu"), int), "still")
        # MULTI/EXEC: each queued command is checked as it runs.
        check(c.command("MULTI") == "OK", "MULTI")
        c.command("INCR", "orders:eu")
        c.command("INCR", "invoices")
        r = c.command("EXEC")
        check(isinstance(r, list) and isinstance(r[0], int) and
              isinstance(r[1], RespError) and r[1].code == "NOPERM", r)
        # Another client on the same connection; then admin_token's.
        check(c.command("AUTH", "dash", SECRETS["dash"]) == "OK", "dash")
        r = c.command("INCR", "orders:eu")
        check(isinstance(r, RespError) and r.code == "NOPERM", r)
        check(isinstance(c.command("ID.DECODE", "12345"), (list, dict)),
              "ID.DECODE: read")
        check(c.command("AUTH", TOKEN) == "OK", "AUTH <token>")
        check(isinstance(c.command("INCR", "invoices"), int), "admin")
        check(c.command("RESET") == "RESET", "RESET")
        r = c.command("INCR", "invoices")
        check(isinstance(r, RespError) and r.code == "NOAUTH", r)
    finally:
        c.close()


def test_format_needs_its_tag():
    """A format drawn from a segment tag (tag=, seq) hands out that tag's
    IDs: it needs the format's right and the tag's. Before, formats=*
    alone took IDs of every tag behind a format."""
    srv()
    for name, path in (("fmt", "/v1/format/ordb?count=3"),
                       ("fmt", "/v1/format/daily"),
                       ("shop", "/v1/format/daily")):
        st, _, b = get(name, path)
        check(st == 403 and err(b)["code"] == "FORBIDDEN" and
              name in err(b)["message"], (name, path, st, b))
    st, _, b = get("fmt", "/v1/format/ordb")
    check("orders:eu" in err(b)["message"], b)
    st, _, b = get("fmt", "/v1/uuid7")
    check(st == 200, ("formats=* without a tag", st, b))
    st, _, b = get("shop", "/v1/format/ordb?count=2")
    check(st == 200, ("the format and its tag granted", st, b))
    c = Resp(srv().resp_port)
    try:
        check(c.command("AUTH", "fmt", SECRETS["fmt"]) == "OK", "AUTH")
        r = c.command("ID.FORMAT", "ordb", "2")
        check(isinstance(r, RespError) and r.code == "NOPERM", r)
    finally:
        c.close()


def metric(text, client, reason):
    for line in text.splitlines():
        if line.startswith('frond_auth_failures_total{client="%s",reason='
                           '"%s"} ' % (client, reason)):
            return int(line.split()[-1])
    return 0


def test_failures_counted():
    _, _, m = get(None, "/metrics")
    m = m.decode()
    check(metric(m, "payments", "forbidden") >= 8, m)
    check(metric(m, "payments", "wrong_secret") >= 2, m)
    check(metric(m, "dash", "forbidden") >= 3, m)
    check(metric(m, "", "unknown_client") >= 2, m)
    check(metric(m, "", "missing") >= 1, m)
    before = metric(m, "ids", "wrong_secret")
    get(None, "/v1/snowflake")
    srv().request("GET", "/v1/snowflake", None,
                  {"Authorization": "Bearer ids:nope"})
    _, _, m = get(None, "/metrics")
    check(metric(m.decode(), "ids", "wrong_secret") == before + 1, m)
    # A name nobody has counts under "", never as its own series.
    srv().request("GET", "/v1/snowflake", None,
                  {"Authorization": "Bearer made-up-name:x"})
    _, _, m = get(None, "/metrics")
    check("made-up-name" not in m.decode(), "unbounded label")


def wait_status(name, path, want, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st, _, _ = get(name, path)
        if st == want:
            return True
        time.sleep(0.05)
    return False


def test_reload():
    s = srv()
    c = Resp(s.resp_port)
    try:
        check(c.command("AUTH", "dash", SECRETS["dash"]) == "OK", "dash")
        check(isinstance(c.command("ID.TAGS"), list), "dash reads")
        # payments moves to invoices; dash is gone.
        narrowed = LINES["payments"].replace("tags=orders:*",
                                             "tags=invoices")
        write_clients(narrowed + LINES["ops"] + LINES["ids"])
        s.proc.send_signal(signal.SIGHUP)
        check(wait_status("payments", "/v1/segment/invoices", 200),
              "reload: payments not moved to invoices")
        st, _, _ = get("payments", "/v1/segment/orders:eu")
        check(st == 403, st)
        st, _, _ = get("dash", "/v1/layout")
        check(st == 401, st)
        r = c.command("ID.TAGS")
        check(isinstance(r, RespError) and r.code == "NOAUTH",
              "a removed client's connection: %r" % (r,))
        # A rotated secret logs out the connections that gave the old one.
        check(c.command("AUTH", "ids", SECRETS["ids"]) == "OK", "ids")
        old_ids = SECRETS["ids"]
        os.remove(os.path.join(DIR, "ids.secret"))  # add never overwrites
        rotated = add("ids", "--rights", "issue", "--formats",
                      "snowflake,uuid7")
        write_clients(narrowed + LINES["ops"] + rotated)
        s.proc.send_signal(signal.SIGHUP)
        check(wait_status("ids", "/v1/snowflake", 200),
              "reload: the new secret of ids")
        r = c.command("ID.SNOWFLAKE")
        check(isinstance(r, RespError) and r.code == "NOAUTH",
              "a rotated secret's connection: %r" % (r,))
        st, _, _ = srv().request("GET", "/v1/snowflake", None,
                                 {"Authorization": "Bearer ids:" + old_ids})
        check(st == 401, "the old secret: %d" % st)
        LINES["ids"] = rotated
        # A bad file is refused, and the clients in use stay.
        write_clients(narrowed + "broken line here\n")
        s.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while "stay in use" not in s.output() and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        out = s.output()
        check("clients.conf:2:" in out and "stay in use" in out, out[-2000:])
        st, _, _ = get("ids", "/v1/snowflake")
        check(st == 200, "the old set stays: %d" % st)
        _, _, m = get(None, "/metrics")
        check('frond_clients_reloads_total{result="refused"} 1' in
              m.decode(), m)
    finally:
        c.close()


def test_no_secret_shown():
    s = srv()
    out = s.output()
    check(out, "no log")
    for name, secret in SECRETS.items():
        check(secret not in out, "secret of %s in the log" % name)
    check(TOKEN not in out, "the admin token in the log")
    check("refused" in out, "refusals are logged: %s" % out[-1000:])
    r = ft.run(["serve", "--admin-token", TOKEN, "--clients-file",
                os.path.join(DIR, "clients.conf"), "--print-config",
                "--store", "none"])
    check(TOKEN not in r.stdout + r.stderr, r.stdout)
    for secret in SECRETS.values():
        check(secret not in r.stdout + r.stderr, r.stdout)
    check("clients.conf" in r.stdout, r.stdout)


def test_bad_file_stops_start():
    d = ft.tempdir("frond-acl-bad-")
    try:
        bad_file(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def bad_file(d):
    bad = os.path.join(d, "c.conf")
    with open(bad, "w") as f:
        f.write("# ok\npay cert=x rights=issue,writ\n")
    os.chmod(bad, 0o600)
    r = ft.run(["serve", "--listen", "127.0.0.1:%d" % ft.free_port(),
                "--resp-listen", "off", "--store", "none", "--data-dir", d,
                "--clients-file", bad], cwd=d, timeout=60)
    check(r.returncode != 0 and "CONFIG" in r.stderr and
          "c.conf:2: unknown right 'writ'" in r.stderr, r.stderr)
    r = ft.run(["clients", "check", bad])
    check(r.returncode == 1 and "c.conf:2:" in r.stderr, r.stderr)
    # frond check fails where the start did, with the same words.
    chk = ["check", "--listen", "127.0.0.1:%d" % ft.free_port(),
           "--resp-listen", "off", "--store", "none", "--data-dir", d,
           "--clients-file", bad]
    r = ft.run(chk, cwd=d)
    check(r.returncode == 1 and re.search(
        r"^FAIL config +CONFIG: .*c\.conf:2: unknown right 'writ'",
        r.stdout, re.M), r.stdout)
    with open(bad, "w") as f:
        f.write("pay cert=x rights=issue\n")
    os.chmod(bad, 0o666)
    r = ft.run(["clients", "check", bad])
    check(r.returncode == 1 and "any user" in r.stderr, r.stderr)
    r = ft.run(chk, cwd=d)
    check(r.returncode == 1 and re.search(r"^FAIL config +CONFIG: .*any user",
                                          r.stdout, re.M), r.stdout)
    os.chmod(bad, 0o600)
    r = ft.run(["clients", "check", bad])
    check(r.returncode == 0 and "1 client" in r.stdout, r)
    r = ft.run(chk, cwd=d)
    check(r.returncode == 0 and re.search(r"^ok +access +.*c\.conf: 1 client;"
                                          r" no audit_log", r.stdout, re.M),
          r.stdout)
    # A clients file is a credential: it lets a server listen beyond
    # loopback, where --print-config no longer refuses it.
    r = ft.run(["serve", "--listen", "0.0.0.0:%d" % ft.free_port(),
                "--store", "none", "--resp-listen", "off",
                "--clients-file", bad, "--print-config"], cwd=d)
    check(r.returncode == 0, r.stderr)


def test_open_reads_off():
    d = ft.tempdir("frond-acl-closed-")
    path = os.path.join(d, "c.conf")
    with open(path, "w") as f:
        f.write("pay cert=x rights=issue\n")
    os.chmod(path, 0o600)
    s = ft.Server(extra=["--clients-file", path, "--open-reads", "off"])
    try:
        for p in ("/metrics", "/readyz", "/livez"):
            st, _, _ = s.request("GET", p)
            check(st == 401, (p, st))
    finally:
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def test_clients_hash():
    r = ft.run(["clients", "hash"], input="short\n")
    check(r.returncode == 2 and "too short" in r.stderr, r.stderr)
    secret = "s" * 40
    r = ft.run(["clients", "hash"], input=secret + "\n")
    check(r.returncode == 0 and r.stdout.startswith("secret=blake2b:") and
          len(r.stdout.strip()) == len("secret=blake2b:") + 64, r.stdout)
    r2 = ft.run(["clients", "hash"], input=secret)
    check(r2.stdout == r.stdout, "the newline is not the secret's")
    r = ft.run(["clients", "add", "bad/name"])
    check(r.returncode == 2 and "bad/name" in r.stderr, r.stderr)


if __name__ == "__main__":
    try:
        ft.main([test_http_scopes, test_http_admin_right,
                 test_http_unauthorized, test_resp, test_format_needs_its_tag,
                 test_failures_counted,
                 test_reload, test_no_secret_shown, test_bad_file_stops_start,
                 test_open_reads_off, test_clients_hash])
    finally:
        if SRV is not None:
            SRV.close()
        if DIR is not None:
            shutil.rmtree(DIR, ignore_errors=True)
