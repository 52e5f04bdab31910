#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_docs_errors.py -- docs/reference/errors.md lists every error code of
the library (FROND_ERRNO_MAP in include/frond.h) with its HTTP status, and
every code the HTTP and Redis fronts answer, and nothing else.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from docs_common import (  # noqa: E402
    diff, library_codes, read, section, server_sources, table_rows,
    unbacktick)


# ------------------------------------------------------------ error codes

def http_status_of_codes(src):
    """{library code name: HTTP status} from the request layer's table of
    answers (#define ANSWERS(XX) with rows XX(NAME, NNN)), and the default
    of the switch that reads it."""
    m = re.search(r"#define ANSWERS\(XX\)(.*?)\n\s*\n", src, re.S)
    if not m:
        raise ft.Failure("no table mapping FROND_E codes to HTTP statuses "
                         "(#define ANSWERS) in src/server/*.c")
    mapping = {name: int(st) for name, st in
               re.findall(r"XX\((\w+), (\d{3})\)", m.group(1))}
    sw = re.search(r"switch\s*\(\w+\)\s*\{\s*#define XX.*?ANSWERS\(XX\)"
                   r".*?default:\s*return (\d{3});", src, re.S)
    if len(mapping) < 10 or not sw:
        raise ft.Failure("the ANSWERS table or its switch's default was not "
                         "found in src/server/*.c")
    return mapping, int(sw.group(1))


def test_error_codes():
    text = read("docs/reference/errors.md")
    codes = library_codes()
    src = server_sources()
    status, default = http_status_of_codes(src)
    ft.check(default is not None, "the status switch has no default")
    rows = {}
    for r in table_rows(section(text, r"^Library codes$")):
        if re.match(r"^-\d+$", r[0]):
            rows[unbacktick(r[1])] = r
    diff("docs/reference/errors.md library codes", rows,
         [n for _, n, _ in codes])
    for num, name, msg in codes:
        r = rows[name]
        ft.check(r[0] == "-" + num, "%s is -%s, the page says %s"
                 % (name, num, r[0]))
        ft.check(r[2] == msg, "%s's message is %r, the page says %r"
                 % (name, msg, r[2]))
        want = status.get(name, default)
        ft.check(r[4] == str(want), "%s answers HTTP %d, the page says %s"
                 % (name, want, r[4]))
        # Credentials answer as Redis' ACLs do (resp_reply.c); test_acl.py
        # checks the replies themselves.
        resp = {"FORBIDDEN": "NOPERM", "UNAUTHORIZED": "NOAUTH"}.get(name,
                                                                      name)
        ft.check(r[5].startswith("`-%s " % resp),
                 "%s's RESP reply should read -%s …, the page says %s"
                 % (name, resp, r[5]))
        ft.check(len(r) >= 7 and len(r[6]) > 10,
                 "%s has no 'what to do'" % name)


def test_protocol_error_codes():
    text = read("docs/reference/errors.md")
    lib = {n for _, n, _ in library_codes()}
    http_src = server_sources(lambda n: not n.startswith("resp"))
    resp_src = server_sources(lambda n: n.startswith("resp"))
    # HTTP: an error function called with a status and a code
    # (error_with(x, 404, "NOT_FOUND", ...)), JSON bodies written as
    # literals ({"error":{"code":"CODE"...), and tables of code names.
    http_status = {}
    for st, code in re.findall(
            r'\w*err\w*\(\s*&?\w+,\s*(\d{3}),\s*"([A-Z][A-Z_]+)"',
            http_src):
        http_status[code] = int(st)
    http = set(http_status)
    http |= set(re.findall(r'\\"code\\":\\"([A-Z][A-Z_]+)\\"', http_src))
    # The table of statuses: XX(NNN, "Reason", "CODE") for those the
    # framing refuses a request with.
    for st, code in re.findall(r'XX\((\d{3}), "[^"]*", "([A-Z][A-Z_]+)"\)',
                               http_src):
        http_status[code] = int(st)
    http |= set(http_status)
    for arr in re.findall(r"static const char \*\w+\[\]\s*=\s*\{([^}]*)\}",
                          http_src):
        names = re.findall(r'"([^"]*)"', arr)
        if names and all(re.match(r"^[A-Z]+(_[A-Z]+)+$", n) for n in names):
            http |= set(names)
    http -= lib
    ft.check(len(http) >= 8, "HTTP error codes not found in src/server/*.c")
    rows = {unbacktick(r[0]): r for r in
            table_rows(section(text, r"^HTTP codes$"))[1:]}
    diff("docs/reference/errors.md HTTP codes", rows, http)
    for code, st in http_status.items():
        if code in rows:
            ft.check(rows[code][1] == str(st), "%s answers %d, the page says %s"
                     % (code, st, rows[code][1]))
    # RESP: an error function called with a code (reply_error(x, "ERR",
    # ...)) and literal "-CODE ..." replies.
    resp = set(re.findall(r'\w*err\w*\(\s*&?\w+,\s*"([A-Z][A-Z_]*)"',
                          resp_src))
    resp |= set(re.findall(r'"-([A-Z][A-Z_]+) [^"]*\\r\\n"', resp_src))
    resp -= lib
    ft.check(len(resp) >= 3, "RESP error codes not found in src/server/*.c")
    documented = set()
    for r in table_rows(section(text, r"^Redis protocol codes$"))[1:]:
        m = re.match(r"^`-([A-Z_]+)[ `]", r[0])
        ft.check(m, "bad reply cell %r" % r[0])
        documented.add(m.group(1))
    diff("docs/reference/errors.md Redis protocol codes", documented, resp)


if __name__ == "__main__":
    ft.main([test_error_codes, test_protocol_error_codes])
