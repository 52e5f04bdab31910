#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_versioning.py -- what docs/versioning.md promises that a machine can
check on the tree as it is: the soname against the version (0 through
0.x, the major from 1.0.0) and the built library's SONAME; CHANGELOG.md in
Keep a Changelog's form, its top released version the one in
CMakeLists.txt; the error codes numbered 1, 2, 3, ... with no gap and no
name twice, and every release tag's codes the first ones of today's; the
version wherever the documentation spells it out; SECURITY.md supporting
the current series; the links of CHANGELOG.md and SECURITY.md; the
deprecations of the policy in the changelog, and the deprecated flag's
warning. (The error reference against FROND_ERRNO_MAP is test_docs_errors';
a release against the previous one is scripts/compat.py's, run by
test_release.)
"""
import datetime
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from docs_common import (read, section, slugs, strip_fences,  # noqa: E402
                         table_rows)

sys.path.insert(0, os.path.join(ft.FROND_SRC, "scripts"))
import compat  # noqa: E402

check = ft.check
SECTIONS = ["Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"]


def version():
    return compat.parse_version(read("CMakeLists.txt"))


def vstr(v):
    return "%d.%d.%d" % v


# ---------------------------------------------------------------- soname

def test_soname():
    v = version()
    m = re.search(r"OUTPUT_NAME frond\s+VERSION \$\{PROJECT_VERSION\} "
                  r"SOVERSION (\w+)\)", read("CMakeLists.txt"))
    check(m, "no VERSION ${PROJECT_VERSION} SOVERSION N for libfrond in "
          "CMakeLists.txt")
    want = 0 if v[0] == 0 else v[0]
    check(m.group(1) == str(want), "SOVERSION is %s for version %s: the "
          "soname is libfrond.so.0 through 0.x and the major from 1.0.0 "
          "(docs/versioning.md)" % (m.group(1), vstr(v)))
    lib = os.path.join(ft.FROND_BUILD, "libfrond.so.%s" % vstr(v))
    check(os.path.isfile(lib), "%s was not built" % lib)
    ft.need("readelf", "binutils")
    r = subprocess.run(["readelf", "-d", lib], capture_output=True,
                       text=True)
    sonames = re.findall(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]",
                         r.stdout)
    check(sonames == ["libfrond.so.%d" % want],
          "%s has SONAME %r, not libfrond.so.%d" % (lib, sonames, want))
    link = os.path.join(ft.FROND_BUILD, "libfrond.so.%d" % want)
    check(os.path.realpath(link) == os.path.realpath(lib),
          "%s does not lead to %s" % (link, lib))


# ------------------------------------------------------------- changelog

def changelog_versions(text):
    """[(heading, version tuple or None, date or None, body)] of every
    level-2 section of a changelog, in order."""
    out = []
    parts = re.split(r"^## ", strip_fences(text), flags=re.M)
    for part in parts[1:]:
        heading, _, body = part.partition("\n")
        m = re.match(r"^\[(\d+)\.(\d+)\.(\d+)\] - (\d{4}-\d{2}-\d{2})$",
                     heading)
        if m:
            v = tuple(int(x) for x in m.groups()[:3])
            try:
                d = datetime.date.fromisoformat(m.group(4))
            except ValueError:
                raise ft.Failure("CHANGELOG.md: %r is not a date" % heading)
            out.append((heading, v, d, body))
        else:
            out.append((heading, None, None, body))
    return out


def entries(body):
    """Bullets of a section body outside HTML comments."""
    body = re.sub(r"<!--.*?-->", "", body, flags=re.S)
    return re.findall(r"^\s*[-*+] \S", body, re.M)


def test_changelog():
    text = read("CHANGELOG.md")
    check(text.startswith("# Changelog\n"), "CHANGELOG.md: no '# Changelog'")
    check("keepachangelog.com" in text and "semver.org" in text,
          "CHANGELOG.md does not say it follows Keep a Changelog and "
          "Semantic Versioning")
    secs = changelog_versions(text)
    check(secs and secs[0][0] == "[Unreleased]",
          "CHANGELOG.md: the first section is %r, not [Unreleased]"
          % (secs[0][0] if secs else None))
    released = secs[1:]
    check(released, "CHANGELOG.md has no released version")
    bad = [h for h, v, _, _ in released if v is None]
    check(not bad, "CHANGELOG.md: headings that are not '[X.Y.Z] - "
          "YYYY-MM-DD': %r" % bad)
    for (h1, v1, d1, _), (h2, v2, d2, _) in zip(released, released[1:]):
        check(v1 > v2, "CHANGELOG.md: %s comes before %s" % (h1, h2))
        check(d1 >= d2, "CHANGELOG.md: %s is dated before %s" % (h1, h2))
    check(released[0][1] == version(),
          "CMakeLists.txt says %s, the top release of CHANGELOG.md is %s: "
          "the release commit raises both (CONTRIBUTING.md, Releasing)"
          % (vstr(version()), released[0][0]))
    check(released[0][2] <= datetime.date.today(),
          "CHANGELOG.md: %s is dated in the future" % released[0][0])
    for heading, _, _, body in secs:
        subs = re.findall(r"^### (.*)$", body, re.M)
        check(all(s in SECTIONS for s in subs),
              "CHANGELOG.md %s: sections %r; Keep a Changelog's are %s"
              % (heading, subs, SECTIONS))
        check(subs == sorted(subs, key=SECTIONS.index) and
              len(set(subs)) == len(subs),
              "CHANGELOG.md %s: sections %r out of the order %s, or twice"
              % (heading, subs, SECTIONS))
        for sub, part in zip(subs, re.split(r"^### .*$", body,
                                            flags=re.M)[1:]):
            check(entries(part), "CHANGELOG.md %s: ### %s is empty"
                  % (heading, sub))
        if heading != "[Unreleased]":
            check(subs, "CHANGELOG.md %s lists nothing" % heading)


def test_deprecations_in_changelog():
    """Every deprecation the policy lists was announced in a release's
    Deprecated section."""
    deprecated = ""
    for _, v, _, body in changelog_versions(read("CHANGELOG.md"))[1:]:
        m = re.search(r"^### Deprecated$(.*?)(?=^### |\Z)", body,
                      re.M | re.S)
        deprecated += m.group(1) if m else ""
    rows = table_rows(section(read("docs/versioning.md"),
                              r"^Deprecations$"))
    names = [n for r in rows[1:] for n in re.findall(r"`([^`]+)`", r[0])]
    check(len(names) >= 4, "no deprecations table in docs/versioning.md")
    for n in names:
        check("`%s`" % n in deprecated, "docs/versioning.md lists %s as "
              "deprecated, no Deprecated section of CHANGELOG.md does" % n)


# ----------------------------------------------------------- error codes

def test_error_codes_appended():
    codes = compat.error_codes(read("include/frond.h"))
    nums = [n for n, _ in codes]
    check(nums == list(range(1, len(codes) + 1)),
          "FROND_ERRNO_MAP is not numbered 1, 2, 3, ... in order: %s" % nums)
    names = [n for _, n in codes]
    check(len(set(names)) == len(names), "a name twice in FROND_ERRNO_MAP")
    # Every release's codes are the first ones of today's, whatever the
    # version: codes are never renumbered, renamed or removed.
    r = subprocess.run(["git", "-C", ft.FROND_SRC, "tag", "--list", "v*"],
                       capture_output=True, text=True)
    tags = [t for t in r.stdout.split()
            if re.match(r"^v\d+\.\d+\.\d+$", t)] if r.returncode == 0 else []
    for t in tags:
        old = compat.error_codes(compat.show(t, "include/frond.h"))
        check(codes[:len(old)] == old, "error codes of %s changed: %s, now "
              "%s" % (t, old, codes[:len(old)]))
    print("  %d codes; %d release tags compared" % (len(codes), len(tags)))


# ------------------------------------------------ versions in the docs

def test_versions_spelled_out():
    v = version()
    want = vstr(v)
    files = ["README.md"]
    for pat in ("docs/**/*.md", "man/*", "dist/**/*"):
        files += sorted(glob.glob(pat, root_dir=ft.FROND_SRC, recursive=True))
    patterns = [
        # `frond --version`, the package's name, the image's tag
        (r"\b[Ff]rond[ _:](\d+\.\d+\.\d+)\b", want),
        # the package's shlibs line
        (r"\bfrond \(>= (\d+\.\d+\.\d+)\)", want),
        # the versioning policy's 0.x section
        (r"\bFrond is at (\d+\.\d+\.\d+)\b", want),
    ]
    if v[0] == 0:
        patterns.append((r"\bfrond \(<< (\d+\.\d+)~\)", "0.%d" % (v[1] + 1)))
    seen, bad = 0, []
    for f in files:
        path = os.path.join(ft.FROND_SRC, f)
        if not os.path.isfile(path):
            continue
        text = read(f)
        for pat, good in patterns:
            for m in re.finditer(pat, text):
                seen += 1
                if m.group(1) != good:
                    bad.append("%s: %r (want %s)" % (f, m.group(0), good))
    check(seen >= 5, "only %d versions found spelled out: the patterns no "
          "longer match the docs" % seen)
    check(not bad, "the version is %s; the docs say:\n  %s"
          % (want, "\n  ".join(bad)))


def test_security_supports_current():
    v = version()
    rows = table_rows(section(read("SECURITY.md"), r"^Supported versions$"))
    check(rows and rows[0][:2] == ["version", "supported"],
          "SECURITY.md: no supported-versions table")
    series = "%d.%d.x" % v[:2]
    check(len(rows) > 1 and rows[1][0] == series and
          rows[1][1].startswith("yes"),
          "SECURITY.md supports %r first, not the current series %s"
          % (rows[1][:2] if len(rows) > 1 else None, series))


# ----------------------------------------------------------------- links

def test_links():
    bad = []
    for path in ("CHANGELOG.md", "SECURITY.md"):
        text = re.sub(r"`[^`\n]*`", "", strip_fences(read(path)))
        text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            rel = os.path.normpath(file_part) if file_part else path
            if rel.startswith("..") or not os.path.exists(
                    os.path.join(ft.FROND_SRC, rel)):
                bad.append("%s: %s does not exist" % (path, target))
            elif anchor and anchor not in slugs(read(rel)):
                bad.append("%s: no heading for %s" % (path, target))
    check(not bad, "broken links:\n  " + "\n  ".join(bad))
    for page in ("README.md", "CONTRIBUTING.md"):
        text = read(page)
        check("docs/versioning.md" in text and "CHANGELOG.md" in text,
              "%s does not link the versioning policy and the changelog"
              % page)


# ---------------------------------------------------------- deprecations

def test_deprecated_flag_warns():
    d = ft.store_dir()
    r = ft.run(["next", "--no-highwater", "--count", "2"], cwd=d)
    ids = r.stdout.split()
    # No file of its own in the data directory: no high-water file, no
    # node cache (the node ID is leased in ./frond.db, the default store).
    check(r.returncode == 0 and len(ids) == 2 and
          not [f for f in os.listdir(d) if f.startswith("frond-")],
          "--no-highwater no longer works as --no-high-water: %d %r %r"
          % (r.returncode, r.stdout, r.stderr))
    check(re.search(r"--no-highwater is deprecated: use --no-high-water",
                    r.stderr), "--no-highwater does not warn: %r" % r.stderr)
    r = ft.run(["next", "--no-high-water", "--count", "2"], cwd=d)
    check(r.returncode == 0 and r.stderr == "",
          "--no-high-water: %d %r" % (r.returncode, r.stderr))
    ft.shutil.rmtree(d)


if __name__ == "__main__":
    ft.main([test_soname, test_changelog, test_deprecations_in_changelog,
             test_error_codes_appended, test_versions_spelled_out,
             test_security_supports_current, test_links,
             test_deprecated_flag_warns])
