#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_docs_examples.py -- the docs work as written: every command block of
README.md and docs/ runs, and a console block prints what it shows.

Which blocks. A fenced block labelled sh, bash, shell or console is a
command block. So is an unlabelled or indented block holding a line that
starts with `$ ` (a console block) or with `frond`, `sudo`, `curl` or
`redis-cli` and a word (a script). A line that is a format spec (`order:`,
`seq:`, `uuid7`, ...) or `format.NAME = SPEC` in an unlabelled, indented
or ini block is a spelling: it is issued with `frond next --format SPEC`
(a tag it names created first, keys of versions 1 and 2 in a key file),
and a line after it that is not a spec, or the part after ` -> `, is the
example, compared by shape with what was issued (spaces left out, for
the annotated ones). Other labelled blocks (c, sql, yaml, json, ...) are
no commands; the library's example is built by test_docs_guides.py.

Markers. An HTML comment right above a block (blank lines between
allowed):
  <!-- not run: REASON -->              the block is not run; it needs
        what one machine does not have (root, systemd, a cluster, a
        network, a long benchmark). REASON must say what.
  <!-- output not compared: REASON -->  the block runs and each command
        must succeed and print as many lines as shown, beginning with
        the same word, but the rest differs by build or machine.
  <!-- continues the block above -->    the block runs in the directory
        and with the server of the page's command block before it, as a
        reader typing the page in one terminal would.
The test fails on a command block with neither a passing run nor a
`not run` marker, on a marker without a reason, and on a marker of this
form that stands above no block.

How a block runs. In a fresh temp dir (its HOME too), with the build's
`frond` first on PATH and no FROND_* variable from outside, each command
by `bash -c`, one at a time (lines ending in `\\`, `|`, `&&` or `||` join
the next). `localhost:8080`, `127.0.0.1:8080` and `0.0.0.0:8080` become
the test's free HTTP port, `:6380` and `-p 6380` its free RESP port
(`redis-cli` gets `--no-raw`, as on a terminal). `frond serve` (with `&`
or not) starts in the background with those ports and `--threads 2`
unless the command sets them; the next command waits until both ports
answer. A block that talks to 8080 or 6380 without starting a server gets
a plain `frond serve` started in its dir first. Every server is stopped
with SIGTERM at the block's end and must exit 0. In a script, `curl`
gets `--fail-with-body`: an HTTP error fails the block; everywhere
`curl` gets `-sS`, for no progress meter, as on a terminal.

Output. A console command's expected lines are compared with its stdout
then stderr. A command shown printing `frond: CODE: ...` must fail, any
other must succeed. A line `…` (or `...`) stands for any lines; inside a
line `…` stands for any text. What varies between runs is compared by
shape, not value: runs of ten or more digits (IDs, unix times) by their
length give or take one, times (`2026-11-22T01:37:58.733Z`, `2026-11-23
10:58:16`) and dates (`20261123`), UUIDs, ULIDs, hex strings of 12 or more
characters and 11-character base62 strings by their pattern; everything
else exactly (short numbers, such as segment IDs and Redis integers,
included).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from docs_common import (  # noqa: E402
    doc_pages, page_blocks, page_comments)

SHELL = ("sh", "bash", "shell", "console")
SCRIPT_LINE = re.compile(r"^(frond [a-z-]+(\s|$)|(sudo|curl|redis-cli) \S)")
KINDS = ("order", "seq", "decimal", "base62", "base32", "uuid7", "uuid4",
         "ulid", "objectid")
SPEC_LINE = re.compile(r"^((?:%s)(?::\S+)?)(?:\s+->\s+(\S+))?\s*$"
                       % "|".join(KINDS))
CONF_SPEC = re.compile(r"^format\.[\w-]+\s*=\s*(\S+)\s*$")
MARKER = re.compile(r"^<!--\s*(not run|output not compared|continues the "
                    r"block above)\s*(?::\s*(.*?))?\s*-->$")
# Keys for the spellings (versions 1 and 2; the test's own, not the page's).
KEYS = ("1:" + "11" * 32 + "\n" + "2:" + "22" * 32 + "\n")


# ------------------------------------------------------------ the blocks

def kind(b):
    """'console', 'script', 'specs' or None (no command block)."""
    if b.info in SHELL:
        return "console" if b.info == "console" else "script"
    if b.info not in ("", None, "ini", "text"):
        return None
    if b.info in ("", None):
        if any(x.startswith("$ ") for x in b.lines):
            return "console"
        if any(SCRIPT_LINE.match(x) for x in b.lines):
            return "script"
    if any(SPEC_LINE.match(x) or CONF_SPEC.match(x) for x in b.lines):
        return "specs"
    return None


def marker(b):
    """(what, reason) of the block's marker, or (None, None)."""
    found = [MARKER.match(c) for c in b.comments]
    found = [m for m in found if m]
    ft.check(len(found) <= 1, "%s: more than one marker" % b.where())
    if not found:
        return None, None
    what, reason = found[0].group(1), (found[0].group(2) or "").strip()
    if what != "continues the block above":
        ft.check(len(reason) >= 10, "%s: a `%s` marker must say why (%r)"
                 % (b.where(), what, reason))
    return what, reason


def joined(lines):
    """Commands of a script: comments and blank lines left out, lines
    ending in a continuation joined."""
    out, cur = [], ""
    for line in lines:
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        cur += line + "\n"
        s = re.sub(r"\s+#[^'\"]*$", "", line).rstrip()
        if s.endswith(("\\", "|", "&&", "||")):
            continue
        out.append(cur.rstrip("\n"))
        cur = ""
    if cur:
        out.append(cur.rstrip("\n"))
    return out


def console_steps(b):
    """[(command, expected lines)] of a console block."""
    steps, cur, cont = [], None, False
    for line in b.lines:
        if cont:
            cur[0] += "\n" + line
            cont = line.rstrip().endswith("\\")
            continue
        if line.startswith("$ "):
            cur = [line[2:], []]
            steps.append(cur)
            cont = line.rstrip().endswith("\\")
        else:
            ft.check(cur is not None, "%s: output before a command: %r"
                     % (b.where(), line))
            cur[1].append(line)
    while steps and steps[-1][1] and steps[-1][1][-1] == "":
        steps[-1][1].pop()
    return steps


# ------------------------------------------------------------- the shapes

VARYING = [
    (r"…|\.\.\.", lambda s: ".*"),
    (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z",
     lambda s: r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"),
    (r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d",
     lambda s: r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"),
    (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
     lambda s: r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
     r"[0-9a-f]{12}"),
    (r"\b[0-9A-HJKMNP-TV-Z]{26}\b", lambda s: r"[0-9A-HJKMNP-TV-Z]{26}"),
    (r"\b\d{10,}\b", lambda s: r"\d{%d,%d}" % (len(s) - 1, len(s) + 1)),
    (r"(?<!\d)20\d\d[01]\d[0-3]\d(?!\d)", lambda s: r"\d{8}"),
    (r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{12,}\b",
     lambda s: "[0-9a-f]{%d}" % len(s)),
    (r"\b(?=\w*[a-z])(?=\w*[A-Z])[0-9A-Za-z]{11}\b",
     lambda s: "[0-9A-Za-z]{11}"),
]
_VARY = re.compile("|".join("(%s)" % p for p, _ in VARYING))


def shape(line):
    """A regular expression matching every line of this line's shape."""
    out, pos = [], 0
    for m in _VARY.finditer(line):
        out.append(re.escape(line[pos:m.start()]))
        k = next(i for i in range(len(VARYING)) if m.group(i + 1))
        out.append(VARYING[k][1](m.group(0)))
        pos = m.end()
    out.append(re.escape(line[pos:]))
    return re.compile("".join(out) + r"\s*")


def lines_match(want, got):
    """Whether the printed lines have the shown lines' shapes; a shown
    line `…` matches any number of lines."""
    if not want:
        return not got
    w = want[0].strip()
    if w in ("…", "..."):
        return any(lines_match(want[1:], got[i:])
                   for i in range(len(got) + 1))
    return bool(got) and bool(shape(want[0].rstrip()).fullmatch(
        got[0])) and lines_match(want[1:], got[1:])


def same_shape_text(want, got):
    """An example string against an issued one: spaces of the example
    left out, the same length and a digit, letter or sign at each
    place."""
    def cls(c):
        return "9" if c.isdigit() else "a" if c.isalpha() else c
    w = want.replace(" ", "")
    return len(w) == len(got) and all(
        cls(a) == cls(b) or (a.isalnum() and b.isalnum())
        and not (a.isdigit() and b == "-")
        for a, b in zip(w, got)) and \
        [cls(c) for c in w if not c.isalnum()] == \
        [cls(c) for c in got if not c.isalnum()]


# ------------------------------------------------------------ the running

class Place:
    """A temp dir with frond on PATH, free ports and the servers started
    there."""

    def __init__(self):
        self.dir = ft.tempdir("frond-docs-")
        bindir = os.path.join(self.dir, ".bin")
        os.mkdir(bindir)
        os.symlink(os.path.abspath(ft.FROND_BIN),
                   os.path.join(bindir, "frond"))
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("FROND_")}
        self.env["PATH"] = bindir + os.pathsep + self.env["PATH"]
        self.env["HOME"] = self.dir
        self.port, self.rport = ft.free_port(), ft.free_port()
        self.servers = []

    def rewrite(self, cmd, script):
        cmd = re.sub(r"\b(localhost|127\.0\.0\.1|0\.0\.0\.0):8080\b",
                     "127.0.0.1:%d" % self.port, cmd)
        cmd = re.sub(r"redis-cli -p 6380\b", "redis-cli --no-raw -p %d"
                     % self.rport, cmd)
        cmd = re.sub(r"(?<![\d.])((?:127\.0\.0\.1|0\.0\.0\.0|localhost)?):"
                     r"6380\b", lambda m: "127.0.0.1:%d" % self.rport, cmd)
        cmd = re.sub(r"(^|[|;&(]\s*)curl ", r"\1curl %s-sS "
                     % ("--fail-with-body " if script else ""), cmd)
        return cmd

    def serve(self, cmd):
        """Start `frond serve ...` (its trailing & dropped) in the
        background; wait until its ports answer."""
        cmd = re.sub(r"\s*&\s*(#.*)?$", "", cmd.strip())
        cmd = re.sub(r"\s+#[^'\"]*$", "", cmd)
        for flag, val in (("--listen", "127.0.0.1:%d" % self.port),
                          ("--resp-listen", "127.0.0.1:%d" % self.rport),
                          ("--threads", "2")):
            if flag + " " not in cmd and flag + "=" not in cmd:
                cmd += " %s %s" % (flag, val)
        self.stop()
        p = subprocess.Popen(["bash", "-c", "exec " + cmd], cwd=self.dir,
                             env=self.env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        self.servers.append((cmd, p))
        deadline = time.monotonic() + 60
        for port in (self.port, self.rport):
            while True:
                if p.poll() is not None:
                    raise ft.Failure("`%s` exited %d: %s" % (
                        cmd, p.returncode, p.stderr.read().strip()))
                try:
                    ft.wait_port(port, timeout=0.5)
                    break
                except ft.Failure:
                    ft.check(time.monotonic() < deadline,
                             "`%s`: nothing on port %d" % (cmd, port))

    def needs_server(self, text):
        if re.match(r"^\s*frond serve", text):
            return False
        return not self.servers and re.search(
            r"\b(localhost|127\.0\.0\.1):8080\b|-p 6380\b|:6380\b", text)

    def run(self, cmd, script):
        """(exit status, stdout and stderr lines) of one command; a
        `frond serve` is started instead."""
        if re.match(r"^\s*frond serve(?!.*--(print-config|list-keys|help))",
                    cmd, re.S):
            self.serve(self.rewrite(cmd, script))
            return 0, []
        cmd = self.rewrite(cmd, script)
        r = subprocess.run(["bash", "-c", cmd], cwd=self.dir, env=self.env,
                           capture_output=True, text=True, timeout=90)
        out = r.stdout.rstrip("\n").split("\n") if r.stdout.strip() else []
        err = r.stderr.rstrip("\n").split("\n") if r.stderr.strip() else []
        return r.returncode, out + err

    def stop(self):
        """SIGTERM every server; each must exit 0."""
        bad = []
        for cmd, p in self.servers:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                rc = p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = p.wait()
            if rc != 0:
                bad.append("`%s` exited %d: %s" % (cmd, rc,
                                                    p.stderr.read()[-2000:]))
            p.stderr.close()
        self.servers = []
        ft.check(not bad, "; ".join(bad))

    def close(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


def run_console(b, place, compare):
    for cmd, want in console_steps(b):
        if place.needs_server(cmd):
            place.serve("frond serve")
        rc, got = place.run(cmd, script=False)
        fails = any(re.match(r"^frond: [A-Z_]+: ", w) for w in want)
        ft.check((rc != 0) == fails, "%s: `%s` exited %d%s:\n%s" % (
            b.where(), cmd, rc, " (it is shown failing)" if fails else "",
            "\n".join(got)))
        if compare:
            ok = lines_match(want, got)
        else:
            ok = len(want) == len(got) and all(
                w.split()[:1] == g.split()[:1] for w, g in zip(want, got))
        ft.check(ok, "%s: `%s` printed\n%s\nnot what the page shows:\n%s"
                 % (b.where(), cmd, "\n".join(got), "\n".join(want)))


def run_script(b, place):
    for cmd in joined(b.lines):
        if place.needs_server(cmd):
            place.serve("frond serve")
        rc, got = place.run(cmd, script=True)
        ft.check(rc == 0, "%s: `%s` exited %d:\n%s" % (b.where(), cmd, rc,
                                                       "\n".join(got)))


def run_specs(b, place):
    keys = os.path.join(place.dir, "spelling.keys")
    with open(keys, "w") as f:
        f.write(KEYS)
    os.chmod(keys, 0o600)
    made = set()
    # A spelling of snowflake IDs claims a node ID in the store, which
    # `frond next` never makes (as a reader's server would have): one is
    # made first, with a tag nobody's spelling names.
    rc, got = place.run("frond tag create spelling-store --step 1000",
                        script=True)
    ft.check(rc == 0, "%s: the store: %s" % (b.where(), got))
    lines = b.lines
    for i, line in enumerate(lines):
        m, c = SPEC_LINE.match(line), CONF_SPEC.match(line)
        if not (m or c):
            continue
        spec = m.group(1) if m else c.group(1)
        example = m.group(2) if m else None
        if (m and not example and i + 1 < len(lines) and lines[i + 1].strip()
                and not SPEC_LINE.match(lines[i + 1])
                and not CONF_SPEC.match(lines[i + 1])):
            example = lines[i + 1].strip()
        args = ["next", "--format", spec]
        tag = re.search(r"(?:^|[:,])tag=([^,]+)", spec)
        if tag and tag.group(1) not in made:
            rc, got = place.run("frond tag create %s --step 1000"
                                % tag.group(1), script=True)
            ft.check(rc == 0, "%s: tag create: %s" % (b.where(), got))
            made.add(tag.group(1))
        if re.search(r"(?:^|[:,])key=", spec):
            args += ["--key-file", keys]
        r = ft.run(args, cwd=place.dir, env=place.env, timeout=60)
        ft.check(r.returncode == 0, "%s: the spelling %s: frond next "
                 "--format: %s" % (b.where(), spec, r.stderr.strip()))
        got = r.stdout.strip()
        ft.check(not example or same_shape_text(example, got),
                 "%s: the spelling %s issued %r, the page shows %r"
                 % (b.where(), spec, got, example))


def run_page(page):
    """Run the page's command blocks; [(block, failure or None, what)]."""
    todo = []
    for b in page_blocks(page):
        k = kind(b)
        what, reason = marker(b)
        if k is None:
            ft.check(what is None, "%s: a `%s` marker on a block that is no "
                     "command" % (b.where(), what))
            continue
        todo.append((b, k, what, reason))
    out, place = [], None
    for i, (b, k, what, reason) in enumerate(todo):
        if what == "not run":
            out.append((b, None, "not run: " + reason))
            continue
        goes_on = i + 1 < len(todo) and \
            todo[i + 1][2] == "continues the block above"
        t0 = time.monotonic()
        try:
            if what == "continues the block above":
                ft.check(place is not None, "%s: the block it continues did "
                         "not run" % b.where())
            else:
                place = Place()
            if k == "console":
                run_console(b, place, what != "output not compared")
            elif k == "script":
                run_script(b, place)
            else:
                run_specs(b, place)
            if not goes_on:
                p, place = place, None
                p.close()
            out.append((b, None, "ran (%.1fs)" % (time.monotonic() - t0)))
        except (ft.Failure, subprocess.TimeoutExpired, OSError) as e:
            out.append((b, str(e), None))
            if place is not None:
                try:
                    place.close()
                except ft.Failure as e2:
                    out[-1] = (b, "%s\n(and at its end: %s)" % (e, e2), None)
            place = None
    return out


# ------------------------------------------------------------------ tests

def test_markers():
    """Every marker has its form, a reason, and a command block under it."""
    bad = []
    for page in doc_pages():
        at = {b.line: b for b in page_blocks(page)}
        for line, text in page_comments(page):
            if not re.match(r"^<!--\s*(not run|output not|continues)", text):
                continue
            m = MARKER.match(text)
            if not m:
                bad.append("%s:%d: a marker of no known form: %s"
                           % (page, line, text))
                continue
            below = [b for n, b in at.items() if n > line]
            b = min(below, key=lambda x: x.line) if below else None
            if b is None or text not in b.comments or kind(b) is None:
                bad.append("%s:%d: %s stands above no command block"
                           % (page, line, text))
                continue
            try:
                marker(b)
            except ft.Failure as e:
                bad.append(str(e))
    ft.check(not bad, "\n".join(bad))


def test_examples_run():
    """Every command block of README.md and docs/ runs as written, or
    says why it cannot."""
    ft.need("curl", "curl")
    ft.need("redis-cli", "redis-tools")
    results = []
    for page in doc_pages():
        results += run_page(page)
    ran = [r for r in results if r[2] and r[2].startswith("ran")]
    for b, err, what in results:
        print("  %-34s %s" % (b.where(), what or "FAILED"), flush=True)
    failed = [(b, err) for b, err, _ in results if err]
    ft.check(not failed, "%d of %d command blocks fail as written:\n%s" % (
        len(failed), len(results),
        "\n\n".join("%s\n%s" % (b.where(), e) for b, e in failed)))
    ft.check(len(ran) >= 15, "only %d command blocks ran" % len(ran))


if __name__ == "__main__":
    ft.main([test_markers, test_examples_run])
