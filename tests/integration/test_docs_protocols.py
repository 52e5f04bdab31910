#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_docs_protocols.py -- docs/reference/http.md lists the router's
endpoints (src/server/*.c, and the Allow header of a running server) and
docs/reference/resp.md the Redis command table (and COMMAND on a running
server), both ways. Tables are found by pattern across src/server/*.c,
not in one fixed file, so that code can move between files.
"""
import os
import re
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from docs_common import (  # noqa: E402
    diff, read, server_sources, strip_fences, table_rows)


# ---------------------------------------------------------------- HTTP

def router_endpoints():
    """Endpoints of the router's table, {} standing for a path parameter:
    EXACT("/a"), PARAM("/a/", "/b") (/a/{}/b), REST("/a/") (/a/{})."""
    src = server_sources()
    routes = set(re.findall(r'\bEXACT\("(/[^"]*)"\)', src))
    for p, s in re.findall(r'\bPARAM\("(/[^"]*)", "([^"]*)"\)', src):
        routes.add(p + "{}" + s)
    for p in re.findall(r'\bREST\("(/[^"]*)"\)', src):
        routes.add(p + "{}")
    ft.check(len(routes) >= 12,
             "the HTTP route table (EXACT/PARAM/REST paths) was not found in "
             "src/server/*.c; update test_docs_*.py's pattern")
    return routes


def documented_endpoints():
    """{(METHOD, path)} from the headings of docs/reference/http.md."""
    out = set()
    for line in strip_fences(read("docs/reference/http.md")).split("\n"):
        if line.startswith("### "):
            for m, p in re.findall(r"`([A-Z]+) (/[^`]*)`", line):
                out.add((m, re.sub(r"\{\w+\}", "{}", p)))
    return out


def test_http_reference():
    doc = documented_endpoints()
    diff("docs/reference/http.md endpoints", {p for _, p in doc},
         router_endpoints())
    methods = {}
    for m, p in doc:
        methods.setdefault(p, set()).add(m)
    s = ft.Server(threads=1)
    try:
        for path, ms in sorted(methods.items()):
            url = path.replace("{}", "1")
            st, hdrs, body = s.request("OPTIONS", url)
            if "ANY" in ms:
                ft.check(ms == {"ANY"}, "%s: ANY and %s" % (path, ms))
                ft.check(st != 405 and b'"NOT_FOUND"' not in body,
                         "%s is documented for any method; OPTIONS got %d"
                         % (path, st))
                continue
            ft.check(st == 405, "%s: OPTIONS is not documented, the server "
                     "answered %d" % (path, st))
            allow = {a.strip() for a in hdrs.get("allow", "").split(",")}
            want = set(ms) | ({"HEAD"} if "GET" in ms else set())
            diff("methods of %s (documented vs Allow)" % path, want, allow)
            for m in ms:
                st, _, body = s.request(m, url)
                ft.check(st != 405 and b'"NOT_FOUND"' not in body,
                         "%s %s answered %d %r" % (m, url, st, body[:80]))
    finally:
        s.stop()
        s.close()


# ------------------------------------------------------------------ RESP

def resp_table_commands():
    src = server_sources()
    names = re.findall(r'\{\s*"([a-z][a-z.]*)",\s*FROND__RC_\w+,', src)
    ft.check(len(names) >= 10, "the RESP command table was not found in "
             "src/server/*.c; update test_docs_*.py's pattern")
    return set(names)


def resp_read(f):
    """One RESP2 value from a socket file."""
    line = f.readline()
    ft.check(line.endswith(b"\r\n"), "truncated RESP reply %r" % line)
    t, v = line[:1], line[1:-2]
    if t in (b"+", b"-"):
        return v.decode()
    if t == b":":
        return int(v)
    if t == b"$":
        n = int(v)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2].decode()
    if t == b"*":
        return [resp_read(f) for _ in range(int(v))]
    raise ft.Failure("bad RESP reply %r" % line)


def resp_command(port, *args):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sk:
        req = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode()
            req += b"$%d\r\n%s\r\n" % (len(a), a)
        sk.sendall(req)
        with sk.makefile("rb") as f:
            return resp_read(f)


def test_resp_reference():
    text = read("docs/reference/resp.md")
    table = resp_table_commands()
    headings = set()
    for line in strip_fences(text).split("\n"):
        m = re.match(r"^### `([A-Z][A-Z.]*)[ `]", line)
        if m:
            headings.add(m.group(1).lower())
    diff("docs/reference/resp.md command sections", headings, table)
    arity = {}
    for r in table_rows(text):
        m = re.match(r"^\[`([A-Z][A-Z.]*)`\]", r[0])
        if m:
            arity[m.group(1).lower()] = int(r[1])
    diff("docs/reference/resp.md summary table", arity, table)
    guide = read("docs/resp.md")
    for n in table:
        ft.check("`%s" % n.upper() in guide, "docs/resp.md does not show %s"
                 % n.upper())
    s = ft.Server(threads=1, resp=True)
    try:
        listed = resp_command(s.resp_port, "COMMAND", "LIST")
        diff("COMMAND LIST of a running server vs the reference", arity,
             listed)
        for entry in resp_command(s.resp_port, "COMMAND"):
            ft.check(arity[entry[0]] == entry[1],
                     "%s: COMMAND says arity %d, the reference %d"
                     % (entry[0].upper(), entry[1], arity[entry[0]]))
    finally:
        s.stop()
        s.close()


if __name__ == "__main__":
    ft.main([test_http_reference, test_resp_reference])
