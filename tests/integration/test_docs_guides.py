#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_docs_guides.py -- the guides do what they show: every relative link
and #anchor in README.md, CONTRIBUTING.md, bench/RESULTS.md and docs/
resolves; the README's two commands and first look run with the output
shown; the library guide names the API of include/frond.h and its example
builds against the built library and runs as shown.
"""
import os
import re
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from docs_common import (  # noqa: E402
    SRC, code_blocks, markdown_files, read, section, slugs, strip_fences)


# Pages that other branches add; a link to one of them may dangle until it
# lands. Once the file exists it is checked like any other.
PENDING = set()


# ---------------------------------------------------------------- licence

SPDX = "SPDX-License-Identifier: Apache-2.0"


def test_licence():
    """LICENSE is the Apache License 2.0; every source file, script and
    test says so in its first lines, and frond.pc names it."""
    text = read("LICENSE")
    check = ft.check
    check("Apache License" in text and "Version 2.0, January 2004" in text
          and "END OF TERMS AND CONDITIONS" in text, "LICENSE: not Apache-2.0")
    r = subprocess.run(["git", "-C", SRC, "ls-files"], capture_output=True,
                       text=True)
    if r.returncode == 0:
        names = r.stdout.split()
    elif not os.path.exists(os.path.join(SRC, ".git")):
        names = tree_files()  # a release tarball: what git tracked
    else:
        raise ft.Failure("git ls-files: %s" % r.stderr.strip())
    pat = re.compile(r"(\.(c|h|py|sh|rb|mjs|lua)|/CMakeLists\.txt|^Makefile|"
                     r"^CMakeLists\.txt|\.pc\.in|\.service\.in)$")
    missing = []
    for name in names:
        if name.startswith("fuzz/corpus/") or not pat.search(name):
            continue
        with open(os.path.join(SRC, name), encoding="utf-8") as f:
            head = "".join(f.readline() for _ in range(3))
        if SPDX not in head:
            missing.append(name)
    check(not missing, "no %s line in the first three lines of %s" %
          (SPDX, ", ".join(missing[:20])))
    check("License: Apache-2.0" in read("frond.pc.in"), "frond.pc.in")


def tree_files():
    """The files of a source tree without git (an unpacked release
    tarball), leaving out build directories and compiled Python."""
    out = []
    for d, sub, files in os.walk(SRC):
        sub[:] = [x for x in sub if not x.startswith("build")
                  and x != "__pycache__"]
        out += [os.path.relpath(os.path.join(d, f), SRC) for f in files]
    return out


# ---------------------------------------------------------------- repeats

def test_repeats_page_names_every_test():
    """docs/repeats.md names every row of the mistakes suite and every
    scenario of the nemesis suite: a trap or fault added to a suite gets
    its row on the page."""
    page = read("docs/repeats.md")
    named = set(re.findall(r"`([a-z0-9][a-z0-9-]*)`", page))
    missing = []
    for suite in (("tests", "mistakes", "mistakes.py"),
                  ("tests", "chaos", "chaos.py")):
        r = subprocess.run(["python3", os.path.join(SRC, *suite), "--list"],
                           capture_output=True, text=True, timeout=60)
        ft.check(r.returncode == 0, "%s --list: %s" % (suite[-1], r.stderr))
        missing += [n for n in re.split(r"[;\s]+", r.stdout.strip())
                    if n not in named]
    ft.check(not missing, "docs/repeats.md does not name: %s"
             % ", ".join(missing))


# ---------------------------------------------------------------- links

def test_links():
    files = markdown_files()
    ft.check(len(files) >= 14, "docs pages not found: %r" % files)
    bad = []
    for path in files:
        text = strip_fences(read(path))
        text = re.sub(r"`[^`\n]*`", "", text)  # inline code holds no links
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            rel = (os.path.normpath(os.path.join(os.path.dirname(path),
                                                 file_part))
                   if file_part else path)
            full = os.path.join(SRC, rel)
            if rel.startswith(".."):
                bad.append("%s: %s leaves the repository" % (path, target))
            elif not os.path.exists(full):
                if rel not in PENDING:
                    bad.append("%s: %s does not exist" % (path, target))
            elif "#" in target:
                if not anchor or not rel.endswith(".md") or \
                        anchor not in slugs(read(rel)):
                    bad.append("%s: no heading for %s" % (path, target))
    ft.check(not bad, "broken links:\n  " + "\n  ".join(bad))
    # The README and the index link every page of docs/.
    for index in ("README.md", "docs/index.md"):
        text = read(index)
        base = os.path.dirname(index)
        linked = {os.path.normpath(os.path.join(base, t.partition("#")[0]))
                  for t in re.findall(r"\]\(([^)\s#]+)", text)}
        for page in files:
            if page.startswith("docs/") and page != index:
                ft.check(page in linked, "%s does not link %s" % (index, page))
        for page in PENDING:
            if page.startswith("docs/"):
                ft.check(page in linked, "%s does not link %s" % (index, page))


# --------------------------------------------------- the README runs as shown

def test_readme_two_commands():
    blocks = [b for _, b in code_blocks(section(read("README.md"),
                                                r"^Two commands$"), "sh")]
    ft.check(len(blocks) == 2, "the README shows %d set-up commands, not two"
             % len(blocks))
    ci = read(".ci/run")
    m = re.search(r"exec sh -c '([^']*)'", ci)
    ft.check(m and m.group(1) in blocks[1],
             "the README's test command is not what CI runs (.ci/run)")


def test_first_look():
    ft.need("curl", "curl")
    ft.need("redis-cli", "redis-tools")
    block = [b for _, b in code_blocks(section(read("README.md"),
                                               r"^A first look$"), "console")]
    ft.check(len(block) == 1, "no console block in the first look")
    steps, cur = [], None
    for line in block[0].rstrip("\n").split("\n"):
        if line.startswith("$ "):
            cur = [line[2:], []]
            steps.append(cur)
        else:
            ft.check(cur is not None, "output before a command: %r" % line)
            cur[1].append(line)
    d = ft.tempdir()
    bindir = os.path.join(d, "bin")
    os.mkdir(bindir)
    os.symlink(os.path.abspath(ft.FROND_BIN), os.path.join(bindir, "frond"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROND_")}
    env["PATH"] = bindir + os.pathsep + env["PATH"]
    port, rport = ft.free_port(), ft.free_port()
    srv = None
    try:
        for cmd, want in steps:
            cmd = cmd.replace("localhost:8080", "127.0.0.1:%d" % port)
            cmd = cmd.replace("redis-cli -p 6380",
                              "redis-cli --no-raw -p %d" % rport)
            if re.match(r"^frond serve &", cmd):
                srv = subprocess.Popen(
                    ["frond", "serve", "--listen", "127.0.0.1:%d" % port,
                     "--resp-listen", "127.0.0.1:%d" % rport,
                     "--threads", "2"], cwd=d, env=env,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                ft.wait_port(port)
                ft.wait_port(rport)
                continue
            r = subprocess.run(["sh", "-c", cmd], cwd=d, env=env,
                               capture_output=True, text=True, timeout=60)
            ft.check(r.returncode == 0, "%s: %s" % (cmd, r.stderr))
            got = r.stdout.strip().split("\n")
            if cmd.startswith("frond next --count"):
                ids = [int(x) for x in got]
                ft.check(len(ids) == len(want) and all(
                    b == a + 1 for a, b in zip(ids, ids[1:])),
                    "%s printed %r" % (cmd, got))
                continue
            ft.check(got == [w.rstrip() for w in want],
                     "README's first look: `%s` printed\n%s\nnot\n%s"
                     % (cmd, "\n".join(got), "\n".join(want)))
        ft.check(srv is not None, "the first look starts no server")
    finally:
        if srv is not None:
            srv.send_signal(signal.SIGTERM)
            rc = srv.wait(timeout=30)
            ft.check(rc == 0, "frond serve exited %d" % rc)
        shutil.rmtree(d, ignore_errors=True)


# ------------------------------------------------------------ the library

# frond.h and the headers it includes: the library's whole interface.
PUBLIC_HEADERS = ("include/frond.h", "include/frond/coord.h",
                  "include/frond/format.h", "include/frond/inline.h",
                  "include/frond/log.h", "include/frond/store.h")


def test_public_headers():
    """frond.h includes every public header, and no other file includes
    those headers directly: one include gives the whole interface."""
    top = read("include/frond.h")
    for h in PUBLIC_HEADERS[1:]:
        name = h[len("include/"):]
        ft.check('#include "%s"' % name in top, "frond.h does not include %s"
                 % name)
    inc = os.path.join(ft.FROND_SRC, "include")
    found = sorted(os.path.relpath(os.path.join(d, f), ft.FROND_SRC)
                   for d, _, fs in os.walk(inc) for f in fs
                   if f.endswith(".h"))
    ft.check(found == sorted(PUBLIC_HEADERS), "public headers: %s" % found)
    for top_dir in ("src", "tests", "bench", "fuzz"):
        for d, _, fs in os.walk(os.path.join(ft.FROND_SRC, top_dir)):
            for f in fs:
                if f.endswith((".c", ".h")):
                    text = read(os.path.relpath(os.path.join(d, f),
                                                ft.FROND_SRC))
                    ft.check('include "frond/' not in text and
                             "include <frond/" not in text,
                             "%s includes a part of frond.h alone" % f)

def test_library_api():
    header = "".join(read(h) for h in PUBLIC_HEADERS)
    api = set(re.findall(r"FROND_EXPORT[^;(]*?\b(frond_\w+)\s*\(", header))
    # frond__ names are not API (frond__seg_tag_next_slow is exported for
    # the inline frond_seg_tag_next only).
    api = {f for f in api if not f.startswith("frond__")}
    ft.check(len(api) >= 40, "no exported functions found in frond.h")
    guide = read("docs/library.md")
    mentioned = set(re.findall(r"\b(frond_[a-z_0-9]+)\s*(?=\(|`|,)", guide))
    for f in sorted(api):
        ft.check(f in mentioned, "docs/library.md does not mention %s" % f)
    names = set(re.findall(r"\b(frond_\w+)\b", header))
    for f in sorted(set(re.findall(r"`(frond_[a-z_0-9]+)`", guide))):
        ft.check(f in names, "docs/library.md names %s, which frond.h does "
                 "not have" % f)


def test_library_example():
    guide = read("docs/library.md")
    progs = [b for i, b in code_blocks(guide, "c") if "int main(" in b]
    ft.check(len(progs) == 1, "docs/library.md has %d complete programs"
             % len(progs))
    shown = [b for _, b in code_blocks(guide, "console") if "./example" in b]
    ft.check(len(shown) == 1, "docs/library.md shows no run of the example")
    build = ft.FROND_BUILD
    lib = os.path.join(build, "libfrond.a")
    ft.check(os.path.exists(lib), "%s is not built" % lib)
    flags = []
    cache = os.path.join(build, "CMakeCache.txt")
    if os.path.exists(cache) and "FROND_SANITIZE:BOOL=ON" in open(cache).read():
        flags = ["-fsanitize=address,undefined"]
    # The libraries frond.pc names (this build's options decide them).
    requires = ["libuv", "sqlite3", "libpq"]
    pcfile = os.path.join(build, "frond.pc")
    if os.path.exists(pcfile):
        for line in open(pcfile):
            if line.startswith("Requires.private:"):
                requires = line.split(":", 1)[1].split()
    pc = subprocess.run(["pkg-config", "--libs"] + requires,
                        capture_output=True, text=True, timeout=60)
    ft.check(pc.returncode == 0, pc.stderr)
    d = ft.tempdir()
    try:
        with open(os.path.join(d, "example.c"), "w") as f:
            f.write(progs[0])
        r = subprocess.run(
            ["cc", "-std=c11", "-Wall", "-Wextra", "-Werror"] + flags +
            ["-I", os.path.join(SRC, "include"), "-o", "example",
             "example.c", lib] + pc.stdout.split() +
            ["-lzookeeper_mt", "-lpthread", "-lm"],
            cwd=d, capture_output=True, text=True, timeout=300)
        ft.check(r.returncode == 0, "the example does not build:\n" + r.stderr)
        runs = []
        for _ in range(2):
            r = subprocess.run(["./example"], cwd=d, capture_output=True,
                               text=True, timeout=60)
            ft.check(r.returncode == 0, "the example failed: " + r.stderr)
            runs.append(r.stdout.strip().split("\n"))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    # The documented transcript, with the snowflake numbers as patterns.
    want = [l for l in shown[0].strip().split("\n") if not l.startswith("$")]
    got = runs[0] + runs[1]
    ft.check(len(got) == len(want), "the example printed %r, the guide "
             "shows %r" % (got, want))
    for g, w in zip(got, want):
        pat = re.sub(r"\d{10,}", r"\\d{10,}", re.escape(w))
        ft.check(re.fullmatch(pat, g), "the example printed %r where the "
                 "guide shows %r" % (g, w))
    nums = [[int(x) for x in re.findall(r"\d{10,}", " ".join(run))]
            for run in runs]
    for n in nums:
        ft.check(n[1:] == [n[0] + 1, n[0] + 2, n[0] + 3],
                 "the batch does not follow the ID: %r" % n)
    ft.check(nums[1][0] > nums[0][-1], "the second run repeated IDs: %r"
             % nums)


if __name__ == "__main__":
    ft.main([test_licence, test_repeats_page_names_every_test, test_links,
             test_readme_two_commands, test_first_look,
             test_library_api, test_library_example, test_public_headers])
