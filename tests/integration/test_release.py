#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_release.py -- scripts/release.sh and scripts/compat.py on a scratch
repository holding this tree (its tracked files as they are now, so that
the scripts under test are the working tree's), as its release commit
would leave it: [Unreleased] emptied. V below is the tree's version, P the
patch release after it.

First the refusals, each before anything is built: no tag, a lightweight
tag, a tag not named vX.Y.Z, a tag whose version is not CMakeLists.txt's,
a dirty tree (a change, an untracked file), HEAD not at the tag, a
CHANGELOG.md without the version's dated section or with entries left
under [Unreleased], and against the previous release an error code
renumbered, a configuration key renamed in a patch release, a function
added in one; a patch release that keeps the rules passes. Then the
release of vV, once, with its package: the tarball's files are exactly
the tag's under frond-V/ (no .git, no build directory; LICENSE, the
version), dated the commit, owned by root; SHA256SUMS verifies; the
package is version V, built from the tag, with the shlibs line of the
policy, and its frond says V. A second run (tarball only, a maintainer's
tar.umask and umask in the way) gives the same bytes.
"""
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402

check = ft.check
SRC = ft.FROND_SRC
STATE = {}
WHEN = "2026-11-28T12:00:00+00:00"


def env():
    """Nothing of the maintainer's git or packaging setup leaks in."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("GIT_", "DEB", "FROND_"))}
    e.update(HOME=STATE["home"], GIT_CONFIG_NOSYSTEM="1",
             GIT_AUTHOR_NAME="Release Test",
             GIT_AUTHOR_EMAIL="release-test@frond.example.org",
             GIT_COMMITTER_NAME="Release Test",
             GIT_COMMITTER_EMAIL="release-test@frond.example.org",
             GIT_AUTHOR_DATE=WHEN, GIT_COMMITTER_DATE=WHEN,
             DEBFULLNAME="Frond release test",
             DEBEMAIL="release-test@frond.example.org", JOBS="2")
    return e


def git(*args, ok=True):
    r = subprocess.run(["git", "-C", STATE["repo"]] + list(args),
                       capture_output=True, text=True, env=env(),
                       timeout=120)
    if ok:
        check(r.returncode == 0, "git %s: %s" % (" ".join(args), r.stderr))
    return r


def release(*args, umask=None):
    pre = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run([os.path.join(STATE["repo"], "scripts",
                                        "release.sh")] + list(args),
                          cwd=STATE["repo"], capture_output=True, text=True,
                          env=env(), timeout=1800, preexec_fn=pre)


def refused(args, *words):
    """release.sh refuses with exit status 1, a message holding every word,
    and writes nothing."""
    out = os.path.join(STATE["tmp"], "refused")
    os.makedirs(out, exist_ok=True)
    r = release(*(list(args) + [out]))
    check(r.returncode == 1, "release.sh %s: exit %d, not refused:\n%s%s"
          % (" ".join(args), r.returncode, r.stdout, r.stderr))
    said = r.stdout + r.stderr
    for w in words:
        check(w in said, "release.sh %s: %r lacks %r"
              % (" ".join(args), said, w))
    check(os.listdir(out) == [], "a refused release wrote %s"
          % os.listdir(out))
    return said


def edit(path, old, new):
    p = os.path.join(STATE["repo"], path)
    with open(p) as f:
        text = f.read()
    check(old in text, "%s lacks %r" % (path, old))
    with open(p, "w") as f:
        f.write(text.replace(old, new, 1))


def tree_files():
    """The tree under test: what git tracks (and new files not ignored),
    or every file when the source is not a git checkout."""
    r = subprocess.run(["git", "-C", SRC, "ls-files", "-z", "--cached",
                        "--others", "--exclude-standard"],
                       capture_output=True, text=True)
    if r.returncode == 0:
        return [f for f in r.stdout.split("\0")
                if f and os.path.isfile(os.path.join(SRC, f))]
    out = []
    for root, dirs, files in os.walk(SRC):
        dirs[:] = [d for d in dirs if d != ".git" and
                   not d.startswith("build") and d != "__pycache__"]
        out += [os.path.relpath(os.path.join(root, f), SRC) for f in files
                if not f.endswith(".pyc")]
    return out


# ------------------------------------------------------------- the repo

def test_scratch_repository():
    for prog, pkg in (("git", "git"), ("dpkg-deb", "dpkg"),
                      ("dpkg-shlibdeps", "dpkg-dev"), ("gzip", "gzip"),
                      ("sha256sum", "coreutils")):
        ft.need(prog, pkg)
    tmp = STATE["tmp"] = ft.tempdir("frond-release-")
    STATE["home"] = os.path.join(tmp, "home")
    os.mkdir(STATE["home"])
    repo = STATE["repo"] = os.path.join(tmp, "repo")
    os.mkdir(repo)
    files = tree_files()
    check(len(files) > 100, "the tree holds %d files" % len(files))
    for f in files:
        dst = os.path.join(repo, f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(SRC, f), dst)
    # The release commit moves [Unreleased]'s entries into the version's
    # section; here they are simply left out.
    path = os.path.join(repo, "CHANGELOG.md")
    with open(path) as f:
        text = f.read()
    text = re.sub(r"(^## \[Unreleased\]\n).*?(?=^## \[)",
                  lambda m: m.group(1) + "\n", text, count=1,
                  flags=re.M | re.S)
    with open(path, "w") as f:
        f.write(text)
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "Frond as it is")
    STATE["files"] = sorted(git("ls-files").stdout.split())
    sys.path.insert(0, os.path.join(repo, "scripts"))
    import compat
    with open(os.path.join(repo, "CMakeLists.txt")) as f:
        v = compat.parse_version(f.read())
    STATE["v"] = "%d.%d.%d" % v
    STATE["p"] = "%d.%d.%d" % (v[0], v[1], v[2] + 1)
    STATE["vt"], STATE["pt"] = "v" + STATE["v"], "v" + STATE["p"]
    with open(os.path.join(repo, "include", "frond.h")) as f:
        STATE["code"] = compat.error_codes(f.read())[-1]
    with open(os.path.join(repo, "docs", "reference",
                           "configuration.md")) as f:
        STATE["key"] = sorted(compat.config_keys(f.read()))[0]
    if v[0] == 0:
        STATE["shlibs"] = "libfrond 0 frond (>= %s), frond (<< 0.%d~)\n" % (
            STATE["v"], v[1] + 1)
    else:
        STATE["shlibs"] = "libfrond %d frond (>= %d.%d.0)\n" % (v[0], v[0],
                                                                v[1])


# ------------------------------------------------------------ refusals

def test_refuses_tags():
    v, vt, p, pt = STATE["v"], STATE["vt"], STATE["p"], STATE["pt"]
    r = release()
    check(r.returncode == 2 and "usage" in r.stderr, "no arguments: %d %r"
          % (r.returncode, r.stderr))
    refused([vt], "no tag " + vt)
    git("tag", vt)
    refused([vt], "lightweight")
    git("tag", "-d", vt)
    major, minor, _ = v.split(".")
    for name in (v, "v%s.%s" % (major, minor), "v%s.0%s.0" % (major, minor)):
        git("tag", "-a", name, "-m", "not a release name")
        refused([name], "not a release tag")
        git("tag", "-d", name)
    git("tag", "-a", pt, "-m", "Frond " + p)
    refused([pt], "%s says %s" % (pt, p),
            "CMakeLists.txt at %s says %s" % (pt, v))
    git("tag", "-d", pt)
    git("tag", "-a", vt, "-m", "Frond " + v)


def test_refuses_a_dirty_tree():
    edit("README.md", "# Frond\n", "# Frond, edited\n")
    refused([STATE["vt"]], "not clean", "README.md")
    git("checkout", "--", "README.md")
    with open(os.path.join(STATE["repo"], "stray.txt"), "w") as f:
        f.write("left here\n")
    refused([STATE["vt"]], "not clean", "stray.txt")
    os.remove(os.path.join(STATE["repo"], "stray.txt"))
    with open(os.path.join(STATE["repo"], "later.txt"), "w") as f:
        f.write("a commit after the tag\n")
    git("add", "later.txt")
    git("commit", "-q", "-m", "After the tag")
    refused([STATE["vt"]], "run this from a checkout of the tag")
    git("reset", "-q", "--hard", STATE["vt"])


def patch_release(name, changes, section=None):
    """P made on a branch from vV: its changes, the version and a changelog
    section (a dated fix by default), tagged vP and checked out."""
    v, p = STATE["v"], STATE["p"]
    if section is None:
        section = "## [%s] - 2999-01-01\n\n### Fixed\n\n- A fix.\n" % p
    git("checkout", "-q", "-b", name, STATE["vt"])
    for path, old, new in changes:
        edit(path, old, new)
    edit("CMakeLists.txt", "project(frond VERSION " + v,
         "project(frond VERSION " + p)
    edit("CHANGELOG.md", "\n## [%s] - " % v, "\n%s\n## [%s] - " % (section,
                                                                     v))
    git("commit", "-q", "-am", "Release %s (%s)" % (p, name))
    git("tag", "-a", STATE["pt"], "-m", "Frond " + p)
    git("checkout", "-q", STATE["pt"])


def drop_patch_release():
    git("checkout", "-q", STATE["vt"])
    git("tag", "-d", STATE["pt"])


def test_refuses_a_changelog():
    p, pt = STATE["p"], STATE["pt"]
    patch_release("undated", [], "## [%s]\n\n### Fixed\n\n- A fix.\n" % p)
    refused([pt], "CHANGELOG.md at " + pt, "'## [%s]'" % p, "YYYY-MM-DD")
    drop_patch_release()
    patch_release("missing", [], "")
    refused([pt], "CHANGELOG.md at " + pt, "not %s's" % p)
    drop_patch_release()
    patch_release("leftover", [("CHANGELOG.md", "## [Unreleased]\n",
                                "## [Unreleased]\n\n### Fixed\n\n"
                                "- Not moved.\n")])
    refused([pt], "entries under [Unreleased]", "Not moved.")
    drop_patch_release()


def test_refuses_what_breaks_the_previous_release():
    v, vt, p, pt = STATE["v"], STATE["vt"], STATE["p"], STATE["pt"]
    # The last error code renumbered: never, in any release.
    n, name = STATE["code"]
    patch_release("renumbered", [("include/frond.h",
                                   "XX(%d, %s," % (n, name),
                                   "XX(%d, %s," % (n + 1, name))])
    said = refused([pt], "against " + vt, "error code %d %s of %s is %d %s"
                   % (n, name, v, n + 1, name))
    drop_patch_release()
    # A configuration key renamed in a patch release: one gone, one added.
    key = STATE["key"]
    patch_release("key-renamed", [("docs/reference/configuration.md",
                                   "| `%s` |" % key, "| `%sx` |" % key)])
    refused([pt], "configuration key %s of %s is gone in %s, a patch "
            "release" % (key, v, p), "configuration key %sx added in %s, a "
            "patch release" % (key, p))
    drop_patch_release()
    # A function added in a patch release.
    patch_release("added", [("include/frond.h",
                              "FROND_EXPORT const char *frond_strerror",
                              "FROND_EXPORT int frond_new_call(void);\n"
                              "FROND_EXPORT const char *frond_strerror")])
    refused([pt], "exported function frond_new_call added in " + p)
    drop_patch_release()
    print("  e.g. %s" % [l for l in said.split("\n")
                         if " of %s is " % v in l][0])


def test_a_patch_release_that_keeps_the_rules():
    v, vt, p, pt = STATE["v"], STATE["vt"], STATE["p"], STATE["pt"]
    patch_release("fine", [("README.md", "# Frond\n", "# Frond\n\n")])
    out = os.path.join(STATE["tmp"], "patch")
    os.mkdir(out)
    r = release("--no-deb", pt, out)
    check(r.returncode == 0, "a patch release that keeps the rules: %s%s"
          % (r.stdout, r.stderr))
    check("compat: %s (%s) against %s (%s)" % (pt, p, vt, v) in r.stdout,
          "not compared with %s: %r" % (vt, r.stdout))
    check(sorted(os.listdir(out)) == ["SHA256SUMS", "frond-%s.tar.gz" % p],
          "--no-deb made %s" % os.listdir(out))
    drop_patch_release()
    git("checkout", "-q", vt)
    check(git("status", "--porcelain").stdout == "", "left dirty")


# ------------------------------------------------------------- release

def test_release():
    out = STATE["out"] = os.path.join(STATE["tmp"], "out1")
    os.mkdir(out)
    v, vt = STATE["v"], STATE["vt"]
    r = release(vt, out)
    check(r.returncode == 0, "release.sh %s: %s%s"
          % (vt, r.stdout, r.stderr[-4000:]))
    arch = subprocess.run(["dpkg", "--print-architecture"],
                          capture_output=True, text=True).stdout.strip()
    tarball = os.path.join(out, "frond-%s.tar.gz" % v)
    deb = os.path.join(out, "frond_%s_%s.deb" % (v, arch))
    sums = os.path.join(out, "SHA256SUMS")
    printed = [l for l in r.stdout.splitlines() if l.startswith("/")]
    check(printed == [tarball, deb, sums], "printed %r" % printed)
    check(sorted(os.listdir(out)) == sorted(os.path.basename(p)
                                            for p in printed),
          "made %s" % os.listdir(out))
    STATE.update(tarball=tarball, deb=deb)


def test_checksums():
    out = STATE["out"]
    with open(os.path.join(out, "SHA256SUMS")) as f:
        lines = f.read().splitlines()
    names = sorted(l.split("  ", 1)[1] for l in lines)
    check(names == sorted(os.path.basename(p) for p in
                          (STATE["tarball"], STATE["deb"])),
          "SHA256SUMS: %r" % lines)
    r = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=out,
                       capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout.count(": OK") == 2,
          "sha256sum -c: %s%s" % (r.stdout, r.stderr))
    # And a changed byte is caught.
    bad = os.path.join(STATE["tmp"], "bad")
    shutil.copytree(out, bad)
    with open(os.path.join(bad, os.path.basename(STATE["tarball"])),
              "r+b") as f:
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 1]))
    r = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=bad,
                       capture_output=True, text=True)
    check(r.returncode != 0 and "FAILED" in r.stdout, "a flipped bit passed")


def test_tarball():
    v, top = STATE["v"], "frond-%s" % STATE["v"]
    when = int(git("log", "-1", "--format=%ct", STATE["vt"]).stdout)
    with tarfile.open(STATE["tarball"]) as t:
        members = t.getmembers()
        cm = t.extractfile(top + "/CMakeLists.txt").read().decode()
    names = [m.name for m in members]
    check(all(n == top or n.startswith(top + "/") for n in names),
          "a file outside %s/: %r" % (top, [n for n in names
                                            if not n.startswith(top)][:5]))
    files = sorted(m.name[len(top) + 1:] for m in members
                   if m.isfile() or m.issym())
    want = [f for f in STATE["files"] if f != "later.txt"]
    check(files == want, "the tarball's files are not the tag's: extra %r, "
          "missing %r" % (sorted(set(files) - set(want))[:10],
                          sorted(set(want) - set(files))[:10]))
    dirs = {d for m in members for d in
            m.name.split("/")[1:None if m.isdir() else -1]}
    check(not [d for d in dirs if d in (".git", "__pycache__") or
               re.match(r"^build(-|$)", d)],
          "a .git, build or __pycache__ directory in the tarball: %r"
          % sorted(dirs))
    for need in ("LICENSE", "CHANGELOG.md", "SECURITY.md", "README.md",
                 "scripts/deb.sh", "docs/versioning.md"):
        check(need in files, "the tarball lacks %s" % need)
    check(re.search(r"^project\(frond VERSION %s " % re.escape(v), cm, re.M),
          "the tarball's CMakeLists.txt is not %s" % v)
    check(all(m.mtime == when for m in members),
          "files not dated the tagged commit (%d): %r" % (
              when, sorted({m.mtime for m in members})[:5]))
    check(all(m.uid == 0 and m.gid == 0 for m in members),
          "files not owned by root")
    modes = {m.name: m.mode for m in members}
    script, licence = modes[top + "/scripts/release.sh"], modes[
        top + "/LICENSE"]
    check(script & stat.S_IXUSR and not licence & (stat.S_IWGRP |
                                                   stat.S_IWOTH),
          "modes: %o, %o" % (script, licence))


def test_package():
    deb = STATE["deb"]

    def field(name):
        return subprocess.run(["dpkg-deb", "-f", deb, name],
                              capture_output=True, text=True).stdout.strip()
    v = STATE["v"]
    check(field("Package") == "frond" and field("Version") == v,
          "package %r %r" % (field("Package"), field("Version")))
    check(field("Maintainer") ==
          "Frond release test <release-test@frond.example.org>",
          "Maintainer %r" % field("Maintainer"))
    r = subprocess.run(["dpkg-deb", "-I", deb, "shlibs"],
                       capture_output=True, text=True)
    check(r.stdout == STATE["shlibs"], "shlibs: %r, not %r"
          % (r.stdout, STATE["shlibs"]))
    root = os.path.join(STATE["tmp"], "unpacked")
    r = subprocess.run(["dpkg-deb", "-x", deb, root], capture_output=True,
                       text=True)
    check(r.returncode == 0, r.stderr)
    r = subprocess.run(["gzip", "-dc", os.path.join(
        root, "usr", "share", "doc", "frond", "changelog.gz")],
        capture_output=True, text=True)
    check("Frond %s, built from %s." % (v, STATE["vt"]) in r.stdout,
          "the package's changelog: %r" % r.stdout)
    with open(os.path.join(root, "usr", "share", "doc", "frond",
                           "copyright")) as f:
        check(re.search(r"^Copyright: 2026 the Frond authors$", f.read(),
                        re.M), "copyright years")
    r = subprocess.run([os.path.join(root, "usr", "bin", "frond"),
                        "--version"], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout.split("\n")[0] == "frond " + v and
          "build: Release" in r.stdout, "frond --version: %r" % r.stdout)


def test_reproducible():
    # A second run, by a maintainer whose git writes tarballs with another
    # umask and whose shell has another one: the same bytes.
    git("config", "tar.umask", "0077")
    out = os.path.join(STATE["tmp"], "out2")
    os.mkdir(out)
    r = release("--no-deb", STATE["vt"], out, umask=0o077)
    check(r.returncode == 0, "second run: %s%s" % (r.stdout, r.stderr))
    with open(STATE["tarball"], "rb") as a, \
            open(os.path.join(out, os.path.basename(STATE["tarball"])),
                 "rb") as b:
        check(a.read() == b.read(), "two runs made different tarballs")
    with open(os.path.join(out, "SHA256SUMS")) as f:
        line = f.read()
    with open(os.path.join(STATE["out"], "SHA256SUMS")) as f:
        check(line in f.read(), "the tarball's checksum differs: %r" % line)


def cleanup():
    if "tmp" in STATE:
        shutil.rmtree(STATE["tmp"], ignore_errors=True)


if __name__ == "__main__":
    try:
        ft.main([test_scratch_repository, test_refuses_tags,
                 test_refuses_a_dirty_tree, test_refuses_a_changelog,
                 test_refuses_what_breaks_the_previous_release,
                 test_a_patch_release_that_keeps_the_rules, test_release,
                 test_checksums, test_tarball, test_package,
                 test_reproducible])
    finally:
        cleanup()
