# SPDX-License-Identifier: Apache-2.0
"""
docs_common.py -- what the test_docs_*.py checks share: reading the
source tree, picking sections and tables out of Markdown, comparing two
sets both ways, and the configuration table as `frond serve --list-keys`,
`--help` and `--print-config` give it and docs/reference/configuration.md
documents it.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402

SRC = ft.FROND_SRC


# ---------------------------------------------------------- shared code

def read(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


def uncomment(c):
    """C source without its comments."""
    c = re.sub(r"/\*.*?\*/", " ", c, flags=re.S)
    return re.sub(r"//[^\n]*", "", c)


def server_sources(which=lambda name: True):
    """The server's C files (those whose name `which` accepts),
    concatenated, without comments."""
    out = ""
    for p in sorted(glob.glob(os.path.join(SRC, "src", "server", "*.c"))):
        if which(os.path.basename(p)):
            with open(p, encoding="utf-8") as f:
                out += uncomment(f.read()) + "\n"
    return out


def strip_fences(text):
    """Markdown without fenced code blocks (they hold no links or
    headings)."""
    out, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^\s*(```|~~~)", line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif line.strip().startswith(fence):
                fence = None
            out.append("")
            continue
        out.append("" if fence else line)
    return "\n".join(out)


def code_blocks(text, lang=None):
    """(info string, body) of every fenced block."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```\s*$", text, re.M | re.S)
    return [(i, b) for i, b in blocks if lang is None or i == lang]


def section(text, heading_re, level=2):
    """The body of the first heading matching heading_re, up to the next
    heading of the same or a higher level (fences ignored)."""
    lines = text.split("\n")
    plain = strip_fences(text).split("\n")
    start = None
    for i, line in enumerate(plain):
        m = re.match(r"^(#+) (.*)$", line)
        if not m:
            continue
        if start is None:
            if len(m.group(1)) == level and re.search(heading_re, m.group(2)):
                start = i + 1
        elif len(m.group(1)) <= level:
            return "\n".join(lines[start:i])
    ft.check(start is not None, "no heading matching %r" % heading_re)
    return "\n".join(lines[start:])


def table_rows(text):
    """Cells of every Markdown table row in text (header rows included)."""
    rows = []
    for line in strip_fences(text).split("\n"):
        s = line.strip()
        if s.startswith("|") and not re.match(r"^\|[\s\-:|]+\|$", s):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|",
                                                     s.strip("|"))])
    return rows


def unbacktick(cell):
    return cell.strip().strip("`")


def diff(what, documented, offered):
    """Fail unless the two sets are equal, naming both differences."""
    documented, offered = set(documented), set(offered)
    missing = sorted(offered - documented)
    extra = sorted(documented - offered)
    ft.check(not missing and not extra,
             "%s: the code offers but the page lacks %s; the page lists but "
             "the code does not offer %s" % (what, missing or "nothing",
                                              extra or "nothing"))


def print_config(*args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("FROND_")}
    e.update(env or {})
    return subprocess.run([ft.FROND_BIN, "serve", "--print-config"]
                          + list(args), capture_output=True, text=True,
                          timeout=60, env=e)


def was_read(r):
    """--print-config read the configuration: exit 0, or 1 when a start
    would refuse what it read (the rules between keys, a layout, a URI:
    the configuration is printed first, the refusal follows)."""
    return r.returncode == 0 or (r.returncode == 1 and r.stdout != "" and
                                 "(a start would refuse it)" in r.stderr)


def config_values(out):
    vals = {}
    for line in out.splitlines():
        k, sep, v = line.partition(" = ")
        ft.check(sep, "unexpected --print-config line %r" % line)
        vals[k] = v
    return vals


def library_codes():
    codes = re.findall(r'XX\((\d+), (\w+), "([^"]*)"\)', read("include/frond.h"))
    ft.check(len(codes) >= 20, "FROND_ERRNO_MAP not found in frond.h")
    return codes


# ---------------------------------------------------------- configuration

LIST_COLUMNS = ["key", "environment", "flag", "type", "default", "range",
                "meaning"]

# Units a value of a duration (ms) or size (bytes) key might be written
# with, and what each would mean. The documented ones must be accepted
# with this meaning; the others must be refused. A unit the page
# documents that is not here fails the test: add it with its meaning.
UNITS = {
    "duration": {"ms": 1, "s": 1000, "min": 60000, "h": 3600000,
                 "sec": 1000, "m": 60000, "d": 86400000, "us": None},
    "size": {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
             "TiB": 1 << 40, "b": 1, "K": 1 << 10, "k": 1000, "KB": 1000,
             "kB": 1000, "M": 1 << 20, "MB": 10 ** 6, "G": 1 << 30,
             "GB": 10 ** 9},
}
BOOL_TRUE = ("yes", "true", "on", "1")
BOOL_FALSE = ("no", "false", "off", "0")


def list_keys():
    """{key: {column: value}} from `frond serve --list-keys`, the
    machine-readable form of the configuration table."""
    r = ft.run(["serve", "--list-keys"])
    ft.check(r.returncode == 0, r.stderr)
    lines = r.stdout.splitlines()
    ft.check(lines and lines[0] == "#" + "\t".join(LIST_COLUMNS),
             "frond serve --list-keys: header %r" % (lines[:1],))
    out = {}
    for line in lines[1:]:
        f = line.split("\t")
        ft.check(len(f) == 7, "frond serve --list-keys: bad line %r" % line)
        ft.check(f[0] not in out, "frond serve --list-keys: %s twice" % f[0])
        out[f[0]] = dict(zip(LIST_COLUMNS, f))
    ft.check(len(out) >= 20, "no key table in frond serve --list-keys")
    return out


def code_range(typ, text):
    """What a key accepts, from its range as --list-keys prints it:
    (min, max) for int, duration and size; the byte limit of a string;
    the words of an enum or bool; for an address, whether `off` is
    allowed."""
    unit = {"duration": " ms", "size": " bytes"}.get(typ, "")
    if typ in ("int", "duration", "size"):
        m = re.fullmatch(r"(-?\d+)\.\.(-?\d+)" + unit, text)
        ft.check(m, "--list-keys: %s range %r" % (typ, text))
        return int(m.group(1)), int(m.group(2))
    if typ == "string":
        m = re.fullmatch(r"at most (\d+) bytes", text)
        ft.check(m, "--list-keys: string range %r" % text)
        return int(m.group(1))
    if typ == "address":
        ft.check(text in ("host:port", "host:port|off"),
                 "--list-keys: address range %r" % text)
        return text.endswith("|off")
    if typ in ("enum", "bool"):
        return text.split("|")
    raise ft.Failure("--list-keys: unknown type %r" % typ)


def doc_range(typ, text, where):
    """The same from a range as the reference (and, with its bold words
    turned into backticks, frond.conf(5)) writes it: `[min, max]`, with
    ` ms` or ` bytes` for durations and sizes; `at most N bytes`;
    `` `host:port` `` or `` `host:port` or `off` ``; the words of an
    enum in backticks, `` `a`, `b` or `c` ``."""
    unit = {"duration": " ms", "size": " bytes"}.get(typ, "")
    if typ in ("int", "duration", "size"):
        m = re.fullmatch(r"\[(-?\d+), (-?\d+)\]" + unit, text)
        ft.check(m, "%s: range %r is not [min, max]%s" % (where, text, unit))
        return int(m.group(1)), int(m.group(2))
    if typ == "string":
        m = re.fullmatch(r"at most (\d+) bytes", text)
        ft.check(m, "%s: range %r is not 'at most N bytes'" % (where, text))
        return int(m.group(1))
    if typ == "address":
        ft.check(text in ("`host:port`", "`host:port` or `off`"),
                 "%s: range %r is neither `host:port` nor `host:port` or "
                 "`off`" % (where, text))
        return text.endswith("`off`")
    words = re.findall(r"`([^`]+)`", text)
    shape = ", ".join("`%s`" % w for w in words[:-1]) + \
        (" or " if len(words) > 1 else "") + "`%s`" % words[-1] \
        if words else None
    ft.check(shape == text, "%s: range %r is not `a`, `b` or `c`"
             % (where, text))
    return words


def config_reference():
    """The reference's key table, {key: row}, and its type table,
    {type: row}."""
    text = read("docs/reference/configuration.md")
    rows = table_rows(section(text, r"^Keys$"))
    ft.check(rows and rows[0][:7] == LIST_COLUMNS,
             "configuration.md's key table has other columns: %r"
             % (rows[0] if rows else None))
    types = table_rows(section(text, r"^Types$"))
    ft.check(types and types[0][:3] == ["type", "a value is", "units"],
             "configuration.md's type table has other columns: %r"
             % (types[0] if types else None))
    return ({unbacktick(r[0]): r for r in rows[1:]},
            {unbacktick(r[0]): r for r in types[1:]})


def families(keys):
    """Keys that name a family ("format.<name>"): --print-config shows one
    line per member, none by the family's own name."""
    return {k for k in keys if "<" in k}


def serve_usage():
    """`frond serve --help`: (its own options, {flag: (TYPE, variable,
    default)} of its key lines)."""
    r = ft.run(["serve", "--help"])
    ft.check(r.returncode == 0, r.stderr)
    head, sep, tail = r.stdout.partition("\nkeys")
    ft.check(sep, "frond serve --help has no 'keys' part")
    own = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", head))
    keys = {}
    for line in tail.splitlines():
        m = re.match(r"^  (--[a-z][a-z.<>-]*) ([A-Z]+) +(FROND_[\w<>]+)=(.*)$",
                     line)
        if m:
            ft.check(m.group(1) not in keys, "frond serve --help: %s twice"
                     % m.group(1))
            keys[m.group(1)] = m.groups()[1:]
    return own, keys


def markdown_files():
    files = ["README.md", "CONTRIBUTING.md", "bench/RESULTS.md"]
    for p in sorted(glob.glob(os.path.join(SRC, "docs", "**", "*.md"),
                              recursive=True)):
        files.append(os.path.relpath(p, SRC))
    return files


# ---------------------------------------------------------- code blocks

class Block:
    """A code block of a Markdown page: where it starts (1-based line of
    its opening fence, or of its first line when indented), its info
    string ("" when unlabelled, None when indented), its lines with the
    block's indentation removed, and the HTML comments on the lines just
    above it (blank lines between allowed)."""

    def __init__(self, page, line, info, lines, comments):
        self.page, self.line, self.info = page, line, info
        self.lines, self.comments = lines, comments

    def where(self):
        return "%s:%d" % (self.page, self.line)


def _comments_above(lines, i):
    out = []
    j = i - 1
    while j >= 0 and lines[j].strip() == "":
        j -= 1
    while j >= 0 and re.match(r"^\s*<!--.*-->\s*$", lines[j]):
        out.insert(0, lines[j].strip())
        j -= 1
    return out


def page_blocks(rel):
    """Every code block of a page: fenced (``` or ~~~, indented or not,
    as in a list item) and indented by four spaces after a blank line
    outside a list item."""
    lines = read(rel).split("\n")
    blocks, i, in_list = [], 0, False
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^( *)(```|~~~)\s*([\w+-]*)\s*$", line)
        if m:
            ind, fence = len(m.group(1)), m.group(2)
            j = i + 1
            while j < len(lines) and not re.match(
                    r"^ *" + fence + r"\s*$", lines[j]):
                j += 1
            ft.check(j < len(lines), "%s:%d: a fence that never closes"
                     % (rel, i + 1))
            body = [x[ind:] if x[:ind].strip() == "" else x.lstrip()
                    for x in lines[i + 1:j]]
            blocks.append(Block(rel, i + 1, m.group(3), body,
                                _comments_above(lines, i)))
            i = j + 1
            continue
        if re.match(r"^\s*([-*+]|\d+\.) ", line):
            in_list = True
        elif line.strip() and not line.startswith(" "):
            in_list = False
        if (line.startswith("    ") and line.strip() and not in_list
                and (i == 0 or lines[i - 1].strip() == "")):
            j = i
            while j < len(lines) and (lines[j].startswith("    ")
                                      or lines[j].strip() == ""):
                j += 1
            body = [x[4:] for x in lines[i:j]]
            while body and body[-1].strip() == "":
                body.pop()
            blocks.append(Block(rel, i + 1, None, body,
                                _comments_above(lines, i)))
            i = j
            continue
        i += 1
    return blocks


def page_comments(rel):
    """(line, text) of every one-line HTML comment outside code blocks."""
    plain = strip_fences(read(rel)).split("\n")
    return [(n + 1, x.strip()) for n, x in enumerate(plain)
            if re.match(r"^\s*<!--.*-->\s*$", x)]


def doc_pages():
    """README.md and every page under docs/: the pages whose command
    blocks run."""
    return ["README.md"] + [p for p in markdown_files()
                            if p.startswith("docs/")]
