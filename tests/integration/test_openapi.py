#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_openapi.py -- docs/openapi.yaml is a valid OpenAPI 3.1 description,
says what the reference says, and what running servers answer.

- It is validated by a real OpenAPI 3.1 validator,
  @seriousme/openapi-schema-validator (the OpenAPI Initiative's JSON
  schemas, with ajv), pinned by tests/openapi/package-lock.json and
  installed with `npm ci` into the build directory (nothing global). The
  validator is shown to reject broken copies.
- Its paths and methods are those of docs/reference/http.md (which
  test_docs_protocols ties to the router), its version the project's, its error
  codes those of frond.h and docs/reference/errors.md.
- Three servers (a normal one with an admin token, one with store = none,
  one whose store cannot be reached) are driven through every operation
  and, as far as a test can cause them, every status it documents, errors
  included; each answer's status, Content-Type, documented headers and
  body are checked against the description (python3-jsonschema, JSON
  Schema 2020-12). Answers to requests the server cannot frame are checked
  against the `default` answer.
"""
import copy
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

SRC = ft.FROND_SRC
SPEC_PATH = os.path.join(SRC, "docs", "openapi.yaml")
TOKEN = "openapi-test-token"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch",
           "trace")

# Documented answers a test cannot cause: the snowflake generator fails
# only when the wall clock is far behind, the node ID is lost or the
# layout has run out.
UNREACHABLE = {
    ("/api/snowflake/get/{key}", "get", "500"),
    ("/api/snowflake/get/{key}", "post", "500"),
    ("/v1/snowflake", "get", "500"),
    ("/v1/snowflake", "get", "503"),
}


def load_spec():
    import yaml
    with open(SPEC_PATH, encoding="utf-8") as f:
        return yaml.safe_load(f)


SPEC = None


def spec():
    global SPEC
    if SPEC is None:
        SPEC = load_spec()
    return SPEC


def deref(node):
    """node with every local $ref replaced by its target (the description
    has no cycles)."""
    if isinstance(node, dict):
        if "$ref" in node:
            ref = node["$ref"]
            check(ref.startswith("#/"), "non-local $ref %s" % ref)
            target = spec()
            for part in ref[2:].split("/"):
                target = target[part]
            rest = {k: v for k, v in node.items() if k != "$ref"}
            out = deref(copy.deepcopy(target))
            out.update(deref(rest))
            return out
        return {k: deref(v) for k, v in node.items()}
    if isinstance(node, list):
        return [deref(v) for v in node]
    return node


def schema_check(schema, value, what):
    import jsonschema
    v = jsonschema.Draft202012Validator(schema)
    errors = sorted(v.iter_errors(value), key=lambda e: list(e.path))
    check(not errors, "%s: %s (value %r)" % (what, "; ".join(
        "%s at %s" % (e.message, list(e.path)) for e in errors[:3]),
        value if len(repr(value)) < 300 else repr(value)[:300] + "..."))


# ------------------------------------------------------------ the validator

def validator():
    """Path of validate-api, installed with npm ci into the build dir."""
    ft.need("node", "nodejs")
    ft.need("npm", "npm")
    d = os.path.join(os.path.abspath(ft.FROND_BUILD), "openapi-validator")
    lock = os.path.join(SRC, "tests", "openapi", "package-lock.json")
    with open(lock, "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    exe = os.path.join(d, "node_modules", ".bin", "validate-api")
    stamp = os.path.join(d, "installed.sha256")
    if os.path.exists(exe) and os.path.exists(stamp) and \
            open(stamp).read() == want:
        return exe
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(SRC, "tests", "openapi", name), d)
    r = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit",
                        "--no-fund", "--loglevel=error"], cwd=d,
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0 and os.path.exists(exe),
          "npm ci of the OpenAPI validator failed (it needs the npm "
          "registry): %s" % (r.stderr[-2000:] or r.stdout[-2000:]))
    with open(stamp, "w") as f:
        f.write(want)
    return exe


def validate_file(path):
    r = subprocess.run([validator(), path], capture_output=True, text=True,
                       timeout=120)
    try:
        out = json.loads(r.stdout)
    except ValueError:
        raise ft.Failure("validate-api printed %r %r" % (r.stdout, r.stderr))
    return r.returncode, out


def test_valid_openapi_31():
    check(spec()["openapi"].startswith("3.1."), "not OpenAPI 3.1: %s"
          % spec()["openapi"])
    rc, out = validate_file(SPEC_PATH)
    check(rc == 0 and out.get("valid") is True,
          "docs/openapi.yaml is not valid OpenAPI 3.1:\n%s"
          % json.dumps(out, indent=1)[:4000])


def test_validator_rejects():
    """The validator is not a rubber stamp: three broken copies fail."""
    import yaml
    text = open(SPEC_PATH, encoding="utf-8").read()
    d = ft.tempdir()
    try:
        broken = {
            "no info.version": text.replace("\n  version: 0.1.0\n", "\n", 1),
            "a dangling $ref": text.replace(
                "#/components/schemas/TagPatch",
                "#/components/schemas/NoSuchSchema", 1),
            "a response without description": text.replace(
                "        '204':\n          description: Deleted; no body.\n",
                "        '204': {}\n", 1),
        }
        for what, body in broken.items():
            check(body != text, "could not break the copy: %s" % what)
            yaml.safe_load(body)  # still YAML: the validator must see it
            p = os.path.join(d, "broken.yaml")
            with open(p, "w", encoding="utf-8") as f:
                f.write(body)
            rc, out = validate_file(p)
            check(rc != 0 and out.get("valid") is False,
                  "the validator accepted %s" % what)
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------- the reference

def reference_endpoints():
    """{path: {methods}} from the headings of docs/reference/http.md."""
    out = {}
    with open(os.path.join(SRC, "docs", "reference", "http.md"),
              encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    for line in text.split("\n"):
        if line.startswith("### "):
            for m, p in re.findall(r"`([A-Z]+) (/[^`]*)`", line):
                out.setdefault(p, set()).add(m.lower())
    check(len(out) >= 12, "no endpoints found in docs/reference/http.md")
    return out


def test_matches_reference():
    ref = reference_endpoints()
    paths = spec()["paths"]
    check(set(paths) == set(ref), "paths: the reference has %s, openapi.yaml "
          "%s" % (sorted(set(ref) - set(paths)), sorted(set(paths) - set(ref))))
    for p, methods in ref.items():
        ops = {m for m in paths[p] if m in METHODS}
        if methods == {"any"}:
            check("get" in ops, "%s takes any method; openapi.yaml lacks GET"
                  % p)
        else:
            check(ops == methods, "%s: the reference has %s, openapi.yaml %s"
                  % (p, sorted(methods), sorted(ops)))
        for m in ops:
            check("default" in paths[p][m]["responses"],
                  "%s %s has no default (framing) answer" % (m.upper(), p))
    with open(os.path.join(SRC, "CMakeLists.txt")) as f:
        version = re.search(r"project\(frond VERSION ([0-9.]+)",
                            f.read()).group(1)
    check(spec()["info"]["version"] == version, "info.version %s, the "
          "project is %s" % (spec()["info"]["version"], version))
    # Error codes: the library's and the HTTP front's, no more.
    with open(os.path.join(SRC, "include", "frond.h")) as f:
        lib = re.findall(r'XX\(\d+, (\w+), "', f.read())
    with open(os.path.join(SRC, "docs", "reference", "errors.md"),
              encoding="utf-8") as f:
        errors = f.read()
    http = errors.split("## HTTP codes", 1)[1].split("\n## ", 1)[0]
    front = re.findall(r"^\| `([A-Z_]+)` \| \d{3} \|", http, re.M)
    check(len(lib) >= 20 and len(front) >= 8, "codes not found")
    enum = spec()["components"]["schemas"]["ErrorCode"]["enum"]
    check(sorted(enum) == sorted(set(lib) | set(front)),
          "ErrorCode: missing %s, extra %s" % (
              sorted((set(lib) | set(front)) - set(enum)),
              sorted(set(enum) - set(lib) - set(front))))


# --------------------------------------------------------- live answers

class Checker:
    """Sends requests to a server and checks every answer against the
    description; remembers which documented answers it has seen."""

    def __init__(self):
        self.seen = set()

    def answer(self, template, method, status, headers, body, framing=False):
        op = spec()["paths"][template][method]
        key = "default" if framing else str(status)
        check(key in op["responses"], "%s %s answered %d, which openapi.yaml "
              "does not document for it: %r" % (method.upper(), template,
                                                status, body[:200]))
        self.seen.add((template, method, key))
        resp = deref(op["responses"][key])
        what = "%s %s -> %d" % (method.upper(), template, status)
        for name, h in resp.get("headers", {}).items():
            v = headers.get(name.lower())
            if h.get("required"):
                check(v is not None, "%s: no %s header" % (what, name))
            if v is not None:
                schema_check(h["schema"], v, "%s header %s" % (what, name))
        content = resp.get("content")
        if not content:
            check(body == b"", "%s: a body where none is documented: %r"
                  % (what, body[:100]))
            return
        ct = headers.get("content-type")
        check(ct in content, "%s: Content-Type %r, documented %s"
              % (what, ct, sorted(content)))
        schema = content[ct]["schema"]
        if ct.startswith("application/json"):
            try:
                value = json.loads(body)
            except ValueError:
                raise ft.Failure("%s: not JSON: %r" % (what, body[:200]))
        else:
            value = body.decode("utf-8")
        schema_check(schema, value, what)

    def request(self, srv, template, method, path, want, body=None,
                headers=None, framing=False):
        if body is not None and not isinstance(body, bytes):
            body = json.dumps(body).encode()
            headers = dict(headers or {}, **{"Content-Type":
                                             "application/json"})
        st, hdrs, data = srv.request(method.upper(), path, body=body,
                                     headers=headers)
        check(st == want, "%s %s: %d %r, expected %d" % (method.upper(), path,
                                                         st, data[:200], want))
        self.answer(template, method, st, hdrs, data, framing)
        return st, hdrs, data


def raw_answer(srv, data):
    out = srv.raw(data)
    resps = ft.split_responses(out)
    check(len(resps) == 1, "one answer expected to %r, got %r" % (data[:60],
                                                                 out[:300]))
    return resps[0]


ORDER_KEY = "1:" + "2a" * 32


def formats(c):
    """ID formats: named formats (their errors included), the built-ins,
    and decoding every shape."""
    import datetime
    auth = {"Authorization": "Bearer " + TOKEN}
    f = ft.Server(threads=1, tags={"orders": 100},
                  env={"FROND_ORDER_KEY": ORDER_KEY},
                  extra=["--admin-token", TOKEN,
                         "--format.orders",
                         "order:digits=19,check=damm,key=1,prefix=%Y%m%d-",
                         "--format.daily", "seq:tag=orders,digits=3",
                         "--format.tiny", "order:digits=6,key=1,tag=tiny",
                         "--format.lost", "seq:tag=nope,digits=6",
                         "--format.short", "base62"])
    try:
        r = lambda *args, **kw: c.request(f, *args, **kw)  # noqa: E731
        t = "/v1/format/{name}"
        _, _, b = r(t, "get", "/v1/format/orders?count=3", 200)
        orders = json.loads(b)["ids"]
        check(len(orders) == 3 and len(set(orders)) == 3, "orders: %r" % b)
        r(t, "get", "/v1/format/short?count=2&format=text", 200)
        r(t, "get", "/v1/format/orders?count=0", 400)
        r(t, "get", "/v1/format/orders?format=xml", 400)
        r(t, "get", "/v1/format/nope", 404)
        _, _, b = r(t, "get", "/v1/format/lost", 404)
        check(b'"TAG_NOT_FOUND"' in b, "a seq format's missing base: %r" % b)
        # A tag above what 6 digits hold: ID_TOO_LARGE.
        c.request(f, "/v1/tags", "post", "/v1/tags", 201,
                  body={"tag": "tiny", "step": 10, "start": 1000000},
                  headers=auth)
        _, _, b = r(t, "get", "/v1/format/tiny", 500)
        check(b'"ID_TOO_LARGE"' in b, "tiny: %r" % b)
        # Today's period made by hand near its end: the sequence runs out
        # (3 digits: numbers up to 999) and says so, never wraps.
        for _ in range(2):
            day = datetime.datetime.now(datetime.timezone.utc)
            period = day.strftime("%Y%m%d")
            c.request(f, "/v1/tags", "post", "/v1/tags", 201,
                      body={"tag": "orders:" + period, "step": 5,
                            "start": 996}, headers=auth)
            _, _, b = r(t, "get", "/v1/format/daily?count=4", 200)
            if json.loads(b)["ids"][0] == period + "996":
                break
        check(json.loads(b)["ids"] == [period + n for n in
                                       ("996", "997", "998", "999")],
              "daily: %r" % b)
        _, _, b = r(t, "get", "/v1/format/daily", 503)
        check(b'"SEQUENCE_EXHAUSTED"' in b, "daily: %r" % b)
        # The built-ins.
        for kind in ("uuid7", "uuid4", "ulid", "objectid"):
            _, _, b = r("/v1/" + kind, "get", "/v1/%s?count=3" % kind, 200)
            r("/v1/" + kind, "get", "/v1/%s?format=text" % kind, 200)
            r("/v1/" + kind, "get", "/v1/%s?count=x" % kind, 400)
            one = json.loads(b)["ids"][0]
            _, _, d = r("/v1/decode/{string}", "get", "/v1/decode/" + one,
                        200)
            check(json.loads(d)["format"] == kind, "decode %s: %r"
                  % (one, d))
            # They issue IDs: refused to a page of another site.
            r("/v1/" + kind, "get", "/v1/" + kind, 403,
              headers={"Sec-Fetch-Site": "cross-site"})
        r(t, "get", "/v1/format/orders", 403,
          headers={"Origin": "http://evil.example"})
        # Decoding: base62, order numbers by name and by trying the
        # server's formats, a sequence number by name; errors.
        d = "/v1/decode/{string}"
        _, _, b = r(t, "get", "/v1/format/short", 200)
        r(d, "get", "/v1/decode/" + json.loads(b)["ids"][0], 200)
        for path in ("/v1/decode/%s?format=orders" % orders[0],
                     "/v1/decode/" + orders[1]):
            _, _, b = r(d, "get", path, 200)
            v = json.loads(b)
            check(v["format"] == "order" and v["key_version"] == "1",
                  "order: %r" % b)
        _, _, b = r(d, "get", "/v1/decode/%s996?format=daily" % period, 200)
        check(json.loads(b)["sequence"] == "996", "seq: %r" % b)
        r(d, "get", "/v1/decode/%s996?format=nope" % period, 404)
        r(d, "get", "/v1/decode/%s?format=short" % orders[0], 400)
        r(d, "get", "/v1/decode/%ZZ", 400)
    finally:
        f.stop()
        f.close()


def quotas(c):
    """429 QUOTA_EXCEEDED on every path that issues IDs: a client of one
    ID a second, asked again until refused (each refusal issues nothing),
    and asked for two at once (above the burst: no Retry-After)."""
    s = ft.Server(threads=1, tags={"orders": 100},
                  extra=["--quota-client", "anonymous=1/1",
                         "--format.q", "uuid7"])
    try:
        paths = [("/api/snowflake/get/{key}", "/api/snowflake/get/k"),
                 ("/api/segment/get/{tag}", "/api/segment/get/orders"),
                 ("/v1/snowflake", "/v1/snowflake"),
                 ("/v1/segment/{tag}", "/v1/segment/orders"),
                 ("/v1/segment/{tag}/range", "/v1/segment/orders/range"),
                 ("/v1/format/{name}", "/v1/format/q"),
                 ("/v1/uuid7", "/v1/uuid7"), ("/v1/uuid4", "/v1/uuid4"),
                 ("/v1/ulid", "/v1/ulid"), ("/v1/objectid", "/v1/objectid")]
        for template, path in paths:
            for m in (("get", "post") if path.startswith("/api") else
                      ("get",)):
                for _ in range(100):
                    st, h, b = s.request(m.upper(), path)
                    if st == 429:
                        break
                    check(st == 200, "%s %s: %d %r" % (m, path, st, b))
                check(st == 429 and "retry-after" in h and
                      (b"QUOTA_EXCEEDED" in b or
                       h.get("frond-error") == "QUOTA_EXCEEDED"),
                      "%s %s: %d %r %r" % (m, path, st, h, b))
                c.answer(template, m, st, h, b)
            if not path.startswith("/api"):
                c.request(s, template, "get", path + "?count=2", 429)
    finally:
        s.stop()
        s.close()


def test_live():
    c = Checker()
    auth = {"Authorization": "Bearer " + TOKEN}
    a = ft.Server(threads=1, tags={"orders": 100},
                  extra=["--admin-token", TOKEN])
    try:
        r = lambda *args, **kw: c.request(a, *args, **kw)  # noqa: E731
        # Leaf's paths, any method.
        for m in ("get", "post"):
            r("/api/snowflake/get/{key}", m, "/api/snowflake/get/k", 200)
            r("/api/snowflake/get/{key}", m, "/api/snowflake/get/", 404)
            r("/api/segment/get/{tag}", m, "/api/segment/get/orders", 200)
            _, h, _ = r("/api/segment/get/{tag}", m, "/api/segment/get/nope",
                        500)
            check(h.get("frond-error") == "TAG_NOT_FOUND", "Frond-Error %r"
                  % h.get("frond-error"))
            r("/api/segment/get/{tag}", m, "/api/segment/get/%ZZ", 500)
            r("/api/segment/get/{tag}", m, "/api/segment/get/a/b", 404)
        _, _, sid = r("/api/snowflake/get/{key}", "get",
                      "/api/snowflake/get/k", 200)
        sid = sid.decode()
        for m in ("get", "post"):
            _, _, b = r("/decodeSnowflakeId", m,
                        "/decodeSnowflakeId?snowflakeId=" + sid, 200)
            check(b"workerId" in b, "decode: %r" % b)
            _, _, b = r("/decodeSnowflakeId", m,
                        "/decodeSnowflakeId?snowflakeId=abc", 200)
            check(b"errorMsg" in b, "bad decode: %r" % b)
            r("/decodeSnowflakeId", m, "/decodeSnowflakeId", 400)
        # /v1 IDs.
        r("/v1/snowflake", "get", "/v1/snowflake", 200)
        _, _, b = r("/v1/snowflake", "get", "/v1/snowflake?count=5&format=text",
                    200)
        check(len(b.split()) == 5, "5 IDs: %r" % b)
        _, _, b = r("/v1/snowflake", "get", "/v1/snowflake?count=4&as=text",
                    200)
        check(len(b.split()) == 4, "4 IDs as text: %r" % b)
        _, _, b = r("/v1/snowflake", "get", "/v1/snowflake?count=3", 200,
                    headers={"Accept": "text/plain"})
        check(len(b.split()) == 3 and b"{" not in b, "Accept: %r" % b)
        r("/v1/snowflake", "get", "/v1/snowflake?count=0", 400)
        r("/v1/snowflake", "get", "/v1/snowflake?format=xml", 400)
        r("/v1/snowflake", "get", "/v1/snowflake?as=xml", 400)
        r("/v1/segment/{tag}", "get", "/v1/segment/orders?count=3", 200)
        r("/v1/segment/{tag}", "get", "/v1/segment/orders?format=text", 200)
        r("/v1/segment/{tag}", "get", "/v1/segment/orders?count=x", 400)
        r("/v1/segment/{tag}", "get", "/v1/segment/%ZZ", 400)
        r("/v1/segment/{tag}", "get", "/v1/segment/nope", 404)
        r("/v1/segment/{tag}/range", "get",
          "/v1/segment/orders/range?count=500", 200)
        r("/v1/segment/{tag}/range", "get",
          "/v1/segment/orders/range?count=5&format=text", 200)
        r("/v1/segment/{tag}/range", "get",
          "/v1/segment/orders/range?count=0", 400)
        r("/v1/segment/{tag}/range", "get", "/v1/segment/nope/range", 404)
        r("/v1/decode/{string}", "get", "/v1/decode/" + sid, 200)
        r("/v1/decode/{string}", "get", "/v1/decode/-1", 400)
        r("/v1/decode/{string}", "get", "/v1/decode/x", 400)
        r("/v1/layout", "get", "/v1/layout", 200)
        # Tags: reads are open, writes need the token.
        new = {"tag": "invoices", "step": 10, "start": 5,
               "description": "caf\u00e9 \"quoted\""}
        schema_check(deref(spec()["components"]["schemas"]["TagCreate"]),
                     new, "the request body sent")
        schema_check(deref(spec()["components"]["schemas"]["TagPatch"]),
                     {"step": 20}, "the request body sent")
        r("/v1/tags", "get", "/v1/tags", 200)
        r("/v1/tags", "post", "/v1/tags", 401, body=new, headers={"Authorization": None})
        r("/v1/tags", "post", "/v1/tags", 201, body=new, headers=auth)
        r("/v1/tags", "post", "/v1/tags", 409, body=new, headers=auth)
        r("/v1/tags", "post", "/v1/tags", 400, body=b"{", headers=auth)
        r("/v1/tags", "post", "/v1/tags", 400, body={"tag": "z", "step": 0},
          headers=auth)
        r("/v1/tags", "post", "/v1/tags", 413, body=b"x" * 5000,
          headers=auth)
        r("/v1/tags/{tag}", "get", "/v1/tags/invoices", 200)
        r("/v1/tags/{tag}", "get", "/v1/tags/nope", 404)
        r("/v1/tags/{tag}", "get", "/v1/tags/%ZZ", 400)
        r("/v1/tags/{tag}", "patch", "/v1/tags/invoices", 401,
          body={"step": 20}, headers={"Authorization": None})
        _, _, b = r("/v1/tags/{tag}", "patch", "/v1/tags/invoices", 200,
                    body={"step": 20}, headers=auth)
        check(json.loads(b)["step"] == 20, "PATCH: %r" % b)
        r("/v1/tags/{tag}", "patch", "/v1/tags/nope", 404, body={"step": 20},
          headers=auth)
        r("/v1/tags/{tag}", "patch", "/v1/tags/invoices", 400,
          body={"step": "x"}, headers=auth)
        r("/v1/tags/{tag}", "patch", "/v1/tags/invoices", 413,
          body=b"x" * 5000, headers=auth)
        adv = "/v1/tags/{tag}/advance"
        schema_check(deref(spec()["components"]["schemas"]["TagAdvance"]),
                     {"to": 5000}, "the request body sent")
        r(adv, "post", "/v1/tags/invoices/advance", 401, body={"to": 5000},
          headers={"Authorization": None})
        _, _, b = r(adv, "post", "/v1/tags/invoices/advance", 200,
                    body={"to": 5000}, headers=auth)
        check(json.loads(b)["max_id"] == 5000, "advance: %r" % b)
        r(adv, "post", "/v1/tags/invoices/advance", 409, body={"to": 10},
          headers=auth)
        r(adv, "post", "/v1/tags/nope/advance", 404, body={"to": 10},
          headers=auth)
        r(adv, "post", "/v1/tags/invoices/advance", 400, body={"step": 1},
          headers=auth)
        r(adv, "post", "/v1/tags/invoices/advance", 413, body=b"x" * 5000,
          headers=auth)
        r(adv, "post", "/v1/tags/invoices/advance", 415,
          body=json.dumps({"to": 6000}).encode(),
          headers=dict(auth, **{"Content-Type": "text/plain"}))
        r("/v1/tags/{tag}", "delete", "/v1/tags/invoices", 401,
          headers={"Authorization": None})
        r("/v1/tags/{tag}", "delete", "/v1/tags/invoices", 204, headers=auth)
        # Created again, below its floor: refused, naming it.
        _, _, b = r("/v1/tags", "post", "/v1/tags", 409,
                    body=dict(new, start=1), headers=auth)
        check(b"TAG_FLOOR" in b and b"5000" in b, "below the floor: %r" % b)
        r("/v1/tags/{tag}", "delete", "/v1/tags/invoices", 404, headers=auth)
        r("/v1/tags/{tag}", "delete", "/v1/tags/%ZZ", 400, headers=auth)
        # What a web page makes a browser send: refused where IDs are
        # issued or tags changed; tag bodies must be JSON.
        page = {"Sec-Fetch-Site": "cross-site"}
        for m in ("get", "post"):
            r("/api/snowflake/get/{key}", m, "/api/snowflake/get/k", 403,
              headers=page)
            r("/api/segment/get/{tag}", m, "/api/segment/get/orders", 403,
              headers={"Sec-Fetch-Site": "same-site"})
        r("/v1/snowflake", "get", "/v1/snowflake", 403, headers=page)
        r("/v1/segment/{tag}", "get", "/v1/segment/orders", 403,
          headers={"Origin": "http://evil.example"})
        r("/v1/tags", "post", "/v1/tags", 403, body=new,
          headers=dict(auth, **page))
        r("/v1/tags", "post", "/v1/tags", 415, body=json.dumps(new).encode(),
          headers=dict(auth, **{"Content-Type": "text/plain"}))
        r("/v1/tags/{tag}", "patch", "/v1/tags/orders", 403,
          body={"step": 20}, headers=dict(auth, Origin="null"))
        r("/v1/tags/{tag}", "patch", "/v1/tags/orders", 415,
          body=b'{"step": 20}', headers=dict(
              auth, **{"Content-Type": "application/x-www-form-urlencoded"}))
        r("/v1/tags/{tag}/advance", "post", "/v1/tags/orders/advance", 403,
          body={"to": 10 ** 6}, headers=dict(auth, Origin="null"))
        r("/v1/tags/{tag}", "delete", "/v1/tags/orders", 403,
          headers=dict(auth, **page))
        # Health, metrics, status.
        r("/livez", "get", "/livez", 200)
        r("/healthz", "get", "/healthz", 200)
        r("/readyz", "get", "/readyz", 200)
        r("/readyz", "get", "/readyz?kind=segment", 200)
        r("/readyz", "get", "/readyz?kind=uuid", 400)
        r("/metrics", "get", "/metrics", 200)
        r("/", "get", "/", 200)
        # What no operation covers: an unknown path, a method an endpoint
        # does not take, requests that cannot be framed.
        error = deref(spec()["components"]["responses"]["Error"])
        st, h, b = a.request("GET", "/nope")
        check(st == 404, "unknown path: %d" % st)
        schema_check(error["content"]["application/json"]["schema"],
                     json.loads(b), "404 for an unknown path")
        st, h, b = a.request("PUT", "/v1/layout")
        check(st == 405 and h.get("allow") == "GET, HEAD", "PUT: %d %r"
              % (st, h))
        schema_check(error["content"]["application/json"]["schema"],
                     json.loads(b), "405")
        for data, want in ((b"GARBAGE\r\n\r\n", 400),
                           (b"GET /v1/layout HTTP/2.0\r\n\r\n", 505),
                           (b"POST /v1/tags HTTP/1.1\r\nHost: x\r\n"
                            b"Transfer-Encoding: gzip\r\n\r\n", 501),
                           (b"GET /v1/layout HTTP/1.1\r\nX: " + b"a" * 9000
                            + b"\r\n\r\n", 431)):
            st, h, b = raw_answer(a, data)
            check(st == want, "%r: %d, expected %d" % (data[:30], st, want))
            c.answer("/v1/layout", "get", st, h, b, framing=True)
    finally:
        a.stop()
        a.close()

    # store = none: segment IDs and tags are unavailable.
    b_ = ft.Server(threads=1, store="none")
    try:
        r = lambda *args, **kw: c.request(b_, *args, **kw)  # noqa: E731
        r("/v1/segment/{tag}", "get", "/v1/segment/orders", 503)
        r("/v1/segment/{tag}/range", "get", "/v1/segment/orders/range",
          503)
        for m in ("get", "post"):
            _, h, body = r("/api/segment/get/{tag}", m,
                           "/api/segment/get/orders", 500)
            check(body == b"Result{id=-1, status=EXCEPTION}",
                  "not initialised: %r" % body)
        r("/v1/tags", "get", "/v1/tags", 503)
        r("/v1/tags", "post", "/v1/tags", 503, body={"tag": "t", "step": 1})
        r("/v1/tags/{tag}", "get", "/v1/tags/t", 503)
        r("/v1/tags/{tag}", "patch", "/v1/tags/t", 503, body={"step": 2})
        r("/v1/tags/{tag}", "delete", "/v1/tags/t", 503)
        r("/v1/tags/{tag}/advance", "post", "/v1/tags/t/advance", 503,
          body={"to": 2})
    finally:
        b_.stop()
        b_.close()

    # A store that cannot be reached (node IDs not from it): not ready, IDs
    # still served.
    port = ft.free_port()
    c_ = ft.Server(threads=1, store="postgresql://frond@127.0.0.1:%d/frond"
                   "?connect_timeout=2" % port,
                   extra=["--coordinator", "static:0?unregistered=1"])
    try:
        _, _, body = c.request(c_, "/readyz", "get", "/readyz", 503)
        check(body == b"not ready: store not reached\n", "readyz: %r" % body)
        c.request(c_, "/v1/snowflake", "get", "/v1/snowflake", 200)
    finally:
        c_.stop()
        c_.close()

    formats(c)
    quotas(c)

    # Every documented answer was seen, but those no test can cause.
    documented = {(p, m, s) for p, item in spec()["paths"].items()
                  for m, op in item.items() if m in METHODS
                  for s in op["responses"] if s != "default"}
    missing = sorted(documented - c.seen - UNREACHABLE)
    check(not missing, "documented answers never checked: %s" % missing)
    check(not (UNREACHABLE - documented), "UNREACHABLE names answers that "
          "are not documented: %s" % sorted(UNREACHABLE - documented))


if __name__ == "__main__":
    ft.main([test_valid_openapi_31, test_validator_rejects,
             test_matches_reference, test_live])
