#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
compat.py -- what a release changes against the one before it, held to
the rules of docs/versioning.md ("What each number promises").

  scripts/compat.py OLD NEW      (git revisions of this repository: tags)

Reads at both revisions the version (CMakeLists.txt), the error codes
(FROND_ERRNO_MAP), the exported functions (FROND_EXPORT in include/), the
configuration keys, HTTP endpoints and Redis commands (the reference
pages, which the test_docs_* tests hold equal to the code), and NEW's
section of CHANGELOG.md. It refuses:

- a NEW version that is not above OLD's;
- an error code of OLD renumbered, renamed or gone, or NEW's codes not
  numbered 1, 2, 3, ... (codes are appended, never reused, in any
  release);
- a function, key, endpoint or command of OLD missing in NEW, unless NEW
  is a major release or a minor one of 0.x, and then only if NEW's
  changelog section names it;
- anything of those added in a patch release (an addition is a minor).

Prints what it compared and every breach; exit status 0 when there is
none, 1 when there is one, 2 when a revision cannot be read.
"""
import os
import re
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Unreadable(Exception):
    pass


def git(*args):
    r = subprocess.run(["git", "-C", SRC] + list(args), capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise Unreadable("git %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def show(rev, path):
    return git("show", "%s:%s" % (rev, path))


def parse_version(text):
    m = re.search(r"^project\(frond VERSION (\d+)\.(\d+)\.(\d+)", text, re.M)
    if not m:
        raise Unreadable("no project(frond VERSION X.Y.Z) in CMakeLists.txt")
    return tuple(int(x) for x in m.groups())


def error_codes(header):
    """[(number, name)] of FROND_ERRNO_MAP, in order."""
    m = re.search(r"#define FROND_ERRNO_MAP\(XX\)(.*?)\n\s*\n", header, re.S)
    if not m:
        raise Unreadable("no FROND_ERRNO_MAP in include/frond.h")
    codes = [(int(n), name) for n, name in
             re.findall(r"XX\((\d+),\s*(\w+),", m.group(1))]
    if not codes:
        raise Unreadable("FROND_ERRNO_MAP lists no code")
    return codes


def exported(rev):
    """Names of the functions the public headers export."""
    names = set()
    files = [f for f in git("ls-tree", "-r", "--name-only", rev,
                            "include/").split() if f.endswith(".h")]
    for f in files:
        text = re.sub(r"/\*.*?\*/", " ", show(rev, f), flags=re.S)
        text = re.sub(r"^\s*#\s*define[^\n]*(\\\n[^\n]*)*", " ", text,
                      flags=re.M)
        for decl in re.findall(r"\bFROND_EXPORT\b([^;{]*?)\(", text):
            names.add(re.findall(r"\w+", decl)[-1])
    if not names:
        raise Unreadable("no FROND_EXPORT function in include/ at %s" % rev)
    return names


def table_after(text, header_re):
    """Rows (lists of cells) of the first Markdown table whose header row
    matches header_re."""
    rows, inside = [], False
    for line in text.split("\n"):
        s = line.strip()
        if not inside:
            inside = s.startswith("|") and re.search(header_re, s) is not None
            continue
        if not s.startswith("|"):
            break
        if re.match(r"^\|[\s\-:|]+\|$", s):
            continue
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", s.strip("|"))])
    return rows


def config_keys(text):
    keys = {re.sub(r"`", "", r[0]) for r in
            table_after(text, r"^\| key \| environment \| flag \|")}
    if not keys:
        raise Unreadable("no key table in docs/reference/configuration.md")
    return keys


def http_endpoints(text):
    out = set()
    for r in table_after(text, r"^\| method \| path \| what \|"):
        for path in re.findall(r"`(/[^`]*)`", r[1]):
            out.add("%s %s" % (r[0], path))
    if not out:
        raise Unreadable("no endpoint table in docs/reference/http.md")
    return out


def resp_commands(text):
    out = {m.group(1) for r in
           table_after(text, r"^\| command \| arity \|")
           for m in [re.search(r"`([A-Z][A-Z.]*)`", r[0])] if m}
    if not out:
        raise Unreadable("no command table in docs/reference/resp.md")
    return out


def changelog_section(text, version):
    """NEW's section of CHANGELOG.md, or '' when it has none."""
    v = re.escape("%d.%d.%d" % version)
    m = re.search(r"^## \[%s\][^\n]*\n(.*?)(?=^## |\Z)" % v, text,
                  re.M | re.S)
    return m.group(1) if m else ""


def interfaces(rev):
    return {
        "exported function": exported(rev),
        "configuration key": config_keys(
            show(rev, "docs/reference/configuration.md")),
        "HTTP endpoint": http_endpoints(show(rev, "docs/reference/http.md")),
        "Redis command": resp_commands(show(rev, "docs/reference/resp.md")),
    }


def vstr(v):
    return "%d.%d.%d" % v


def compare(old_v, new_v, old_codes, new_codes, old_if, new_if, notes):
    """Every breach of the rules, as sentences."""
    bad = []
    if new_v <= old_v:
        return ["%s is not above %s: a release has a higher version than "
                "the one before it" % (vstr(new_v), vstr(old_v))]
    if new_v[0] > old_v[0]:
        kind = "major"
    elif new_v[1] > old_v[1]:
        kind = "minor"
    else:
        kind = "patch"
    may_break = kind == "major" or (kind == "minor" and old_v[0] == 0)
    nums = [n for n, _ in new_codes]
    if nums != list(range(1, len(nums) + 1)):
        bad.append("error codes are not numbered 1, 2, 3, ...: %s" % nums)
    for i, (n, name) in enumerate(old_codes):
        if i >= len(new_codes):
            bad.append("error code %d %s of %s is gone: codes are never "
                       "removed" % (n, name, vstr(old_v)))
        elif new_codes[i] != (n, name):
            bad.append("error code %d %s of %s is %d %s in %s: numbers and "
                       "names never change" % (n, name, vstr(old_v),
                                               new_codes[i][0],
                                               new_codes[i][1], vstr(new_v)))
    for what in sorted(old_if):
        gone = sorted(old_if[what] - new_if[what])
        added = sorted(new_if[what] - old_if[what])
        for name in gone:
            if not may_break:
                bad.append("%s %s of %s is gone in %s, a %s release: only a "
                           "major release (or a 0.x minor) removes, after a "
                           "deprecation" % (what, name, vstr(old_v),
                                            vstr(new_v), kind))
            elif name.split(" ")[-1] not in notes:
                bad.append("%s %s of %s is gone in %s and its CHANGELOG.md "
                           "section does not name it" % (what, name,
                                                          vstr(old_v),
                                                          vstr(new_v)))
        if kind == "patch" and added:
            bad.append("%s %s added in %s, a patch release: an addition "
                       "needs a minor release" % (what, ", ".join(added),
                                                  vstr(new_v)))
    return bad


def main(argv):
    if len(argv) != 3 or argv[1].startswith("-"):
        sys.stderr.write("usage: scripts/compat.py OLD NEW  (git revisions, "
                         "e.g. v0.1.0 v0.2.0)\n")
        return 2
    old, new = argv[1], argv[2]
    try:
        old_v = parse_version(show(old, "CMakeLists.txt"))
        new_v = parse_version(show(new, "CMakeLists.txt"))
        old_codes = error_codes(show(old, "include/frond.h"))
        new_codes = error_codes(show(new, "include/frond.h"))
        old_if, new_if = interfaces(old), interfaces(new)
        notes = changelog_section(show(new, "CHANGELOG.md"), new_v)
    except Unreadable as e:
        sys.stderr.write("compat: %s\n" % e)
        return 2
    print("compat: %s (%s) against %s (%s): %d error codes, %s" % (
        new, vstr(new_v), old, vstr(old_v), len(new_codes),
        ", ".join("%d %ss" % (len(new_if[k]), k) for k in sorted(new_if))))
    bad = compare(old_v, new_v, old_codes, new_codes, old_if, new_if, notes)
    for b in bad:
        print("compat: %s" % b)
    if bad:
        print("compat: %d breach%s of docs/versioning.md" %
              (len(bad), "" if len(bad) == 1 else "es"))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
