#!/usr/bin/env python3
"""
test_docs.py -- the documentation says what the code does, both ways.

Each reference page (docs/reference/) and manual page (man/) must list
everything the code offers AND nothing it does not: error codes
(FROND_ERRNO_MAP in include/frond.h, and the codes the fronts answer),
configuration keys with their variable, flag, type, default and range
(against `frond serve --list-keys` and `--help`, and tried with `frond
serve --print-config`: bounds and just beyond, units, addresses, every
word of an enum), subcommands and their options
(`frond --help`, `frond help CMD`), HTTP endpoints (the router in
src/server/*.c, and the Allow header of a running server) and Redis
commands (the command table in src/server/*.c, and COMMAND on a running
server). Tables are found by pattern across src/server/*.c, not in one
fixed file, so that code can move between files.

Besides: the README's first look is run and its output compared; the
library guide's example is compiled, linked against the built library and
run; example configuration files are read by `frond serve`; every relative
link and #anchor in README.md, CONTRIBUTING.md, bench/RESULTS.md and docs/
resolves; the manual pages render without warnings.
"""
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402

SRC = ft.FROND_SRC

# Pages that other branches add; a link to one of them may dangle until it
# lands. Once the file exists it is checked like any other.
PENDING = set()


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


# ------------------------------------------------------------ error codes

def http_status_of_codes(src):
    """{library code name: HTTP status} from the switch that maps codes to
    statuses (case FROND_E...: return NNN;), and its default."""
    for body in re.findall(r"switch\s*\(\w+\)\s*\{(.*?)\n\s*\}", src, re.S):
        if "case FROND_E" not in body or not re.search(r"return [45]\d\d;",
                                                       body):
            continue
        mapping, pending, default = {}, [], None
        for tok in re.finditer(r"case FROND_E(\w+):|default:|return (\d+);",
                               body):
            if tok.group(1):
                pending.append(tok.group(1))
            elif tok.group(0) == "default:":
                pending.append(None)
            else:
                for name in pending:
                    if name is None:
                        default = int(tok.group(2))
                    else:
                        mapping[name] = int(tok.group(2))
                pending = []
        return mapping, default
    raise ft.Failure("no switch mapping FROND_E codes to HTTP statuses in "
                     "src/server/*.c")


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
        ft.check(r[5].startswith("`-%s " % name),
                 "%s's RESP reply should read -%s …, the page says %s"
                 % (name, name, r[5]))
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


def unit_probes(keys, typ, documented):
    """Values with a unit for keys of type typ: (flag, key, value,
    printed or None for refused). Every unit the test knows is tried once
    where its value fits a key's range, so that a refusal is the unit's;
    every documented unit is also tried at each key's maximum, and one
    more of it refused."""
    probes = []
    table = UNITS[typ]
    for u in documented:
        ft.check(table.get(u) is not None, "configuration.md documents "
                 "the %s unit %r, which test_docs.py does not know"
                 % (typ, u))
    for u, scale in sorted(table.items()):
        if scale is None:
            # A unit with no whole meaning here is refused on any key.
            k = sorted(keys)[0]
            probes.append((keys[k]["flag"], k, "1" + u, None))
            continue
        fit = [(k, n) for n in (1, 0) for k in sorted(keys)
               if keys[k]["lo"] <= n * scale <= keys[k]["hi"]]
        ft.check(fit, "no %s key takes 1%s or 0%s" % (typ, u, u))
        k, n = fit[0]
        probes.append((keys[k]["flag"], k, "%d%s" % (n, u),
                       str(n * scale) if u in documented else None))
    for k, row in sorted(keys.items()):
        for u in documented:
            n = row["hi"] // table[u]
            if n >= 1 and n * table[u] >= row["lo"]:
                probes.append((row["flag"], k, "%d%s" % (n, u),
                               str(n * table[u])))
                probes.append((row["flag"], k, "%d%s" % (n + 1, u), None))
    return probes


def type_probes(key, flag, typ, rng):
    """(flag, key, value, printed or None for refused) for one key: its
    bounds and just beyond, a valid and an invalid value of its type."""
    p = []
    if typ in ("int", "duration", "size"):
        a, b = rng
        p += [(flag, key, str(a), str(a)), (flag, key, str(b), str(b)),
              (flag, key, str(a - 1), None), (flag, key, str(b + 1), None),
              (flag, key, "x", None), (flag, key, "1.5", None)]
    elif typ == "string":
        p += [(flag, key, "a" * rng, "(set)" if key == "admin_token"
               else "a" * rng), (flag, key, "a" * (rng + 1), None)]
    elif typ == "address":
        for ok in ("127.0.0.1:1", "0.0.0.0:65535", "[::1]:8080",
                   "localhost:8080"):
            p.append((flag, key, ok, ok))
        for bad in ("127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536",
                    "db.example.org:8080", "[::1]8080", "::1:8080x"):
            p.append((flag, key, bad, None))
        p.append((flag, key, "off", "off" if rng else None))
    elif typ == "enum":
        p += [(flag, key, v, v) for v in rng]
        p += [(flag, key, "bogus", None), (flag, key, rng[0].upper(), None)]
    elif typ == "bool":
        ft.check(rng == ["on", "off"], "%s: bool range %r" % (key, rng))
        p += [(flag, key, v, "on") for v in BOOL_TRUE]
        p += [(flag, key, v, "off") for v in BOOL_FALSE]
        p.append((flag, key, "maybe", None))
    return p


def families(keys):
    """Keys that name a family ("format.<name>"): --print-config shows one
    line per member, none by the family's own name."""
    return {k for k in keys if "<" in k}


def check_family(key, row, c):
    """A family row: the page says what --list-keys says; a member set
    through the documented flag or variable is printed; a bad value is
    refused."""
    prefix = key.split("<", 1)[0]
    env, flag, typ, default, rng = (unbacktick(row[1]), unbacktick(row[2]),
                                    row[3], row[4], row[5])
    for col, doc in (("environment", env), ("flag", flag), ("type", typ),
                     ("range", rng)):
        ft.check(doc == c[col], "%s: the page says %s %s, frond serve "
                 "--list-keys %s" % (key, col, doc, c[col]))
    ft.check(default == "none" and c["default"] == "",
             "%s: a family has no default (the page: %s)" % (key, default))
    member = prefix + "docs_check"
    flag = flag.replace("<name>", "docs_check")
    r = print_config("%s=uuid7" % flag)
    ft.check(r.returncode == 0 and
             config_values(r.stdout).get(member) == "uuid7",
             "%s: the flag %s does not set %s: %s" % (key, flag, member,
                                                     r.stdout + r.stderr))
    r = print_config(env={env.replace("<NAME>", "DOCS_CHECK"): "ulid"})
    ft.check(r.returncode == 0 and
             config_values(r.stdout).get(member) == "ulid",
             "%s: the variable %s does not set %s" % (key, env, member))
    r = print_config("%s=nonsense" % flag)
    ft.check(r.returncode == 2 and member in r.stderr,
             "%s: a bad spec was not refused: %r" % (key, r.stderr))


def test_config_reference():
    r = print_config()
    ft.check(r.returncode == 0, r.stderr)
    defaults = config_values(r.stdout)
    code = list_keys()
    rows, types = config_reference()
    diff("docs/reference/configuration.md types", types,
         {c["type"] for c in code.values()})
    diff("docs/reference/configuration.md key families", families(rows),
         families(code))
    for key in families(code):
        check_family(key, rows.pop(key), code.pop(key))
    diff("docs/reference/configuration.md keys", rows, defaults)
    diff("frond serve --list-keys keys", code, defaults)
    probes = []
    by_type = {}
    for key, row in rows.items():
        c = code[key]
        env, flag, typ, default, rng = (unbacktick(row[1]), unbacktick(row[2]),
                                        row[3], row[4], row[5])
        for col, doc in (("environment", env), ("flag", flag), ("type", typ)):
            ft.check(doc == c[col], "%s: the page says %s %s, frond serve "
                     "--list-keys %s" % (key, col, doc, c[col]))
        want = "none" if defaults[key] == "" else "`%s`" % defaults[key]
        ft.check(default == want, "%s: default is %s, the page says %s"
                 % (key, want, default))
        ft.check(c["default"] == defaults[key], "%s: --list-keys gives the "
                 "default %r, --print-config %r" % (key, c["default"],
                                                    defaults[key]))
        want = code_range(typ, c["range"])
        got = doc_range(typ, rng, "configuration.md: " + key)
        ft.check(got == want, "%s: the page's range %s is not the code's %s"
                 % (key, rng, c["range"]))
        probes += type_probes(key, flag, typ, want)
        if typ in UNITS:
            by_type.setdefault(typ, {})[key] = {"flag": flag, "lo": want[0],
                                                "hi": want[1]}
    for typ, keys in by_type.items():
        documented = re.findall(r"`([^`]+)`", types[typ][2])
        ft.check(documented, "configuration.md: the %s type names no units"
                 % typ)
        probes += unit_probes(keys, typ, documented)
    for typ in set(types) - set(by_type):
        ft.check(types[typ][2] == "—", "configuration.md: the %s type has "
                 "units %r" % (typ, types[typ][2]))
    # Refused values exit 2 with a line naming the key, one run each.
    for flag, key, value, shown in probes:
        if shown is None:
            r = print_config("%s=%s" % (flag, value))
            ft.check(r.returncode == 2 and key in r.stderr,
                     "%s: %s=%s was not refused (exit %d, %r)"
                     % (key, flag, value, r.returncode, r.stderr))
    # Accepted values, as many keys at once as possible: each through the
    # flag the page names and through the variable it names.
    rounds = []
    for flag, key, value, shown in probes:
        if shown is None:
            continue
        for rnd in rounds:
            if key not in rnd:
                break
        else:
            rnd = {}
            rounds.append(rnd)
        rnd[key] = (flag, value, shown)
    ft.check(len(rounds) >= 2, "too few accepted values to try")
    for rnd in rounds:
        r = print_config(*["%s=%s" % (f, v) for f, v, _ in rnd.values()])
        ft.check(r.returncode == 0, "documented values refused: " + r.stderr)
        got = config_values(r.stdout)
        r = print_config(env={unbacktick(rows[k][1]): v
                              for k, (_, v, _) in rnd.items()})
        ft.check(r.returncode == 0, "documented values refused from the "
                 "environment: " + r.stderr)
        got_env = config_values(r.stdout)
        for key, (flag, v, shown) in rnd.items():
            ft.check(got[key] == shown, "%s: %s=%s printed as %s, not %s"
                     % (key, flag, v, got[key], shown))
            ft.check(got_env[key] == shown, "%s: %s=%s printed as %s, not %s"
                     % (key, unbacktick(rows[key][1]), v, got_env[key],
                        shown))


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


def test_serve_help():
    """`frond serve --help` lists every key's flag, with its type,
    variable and default as the table has them."""
    code = {c["flag"]: c for c in list_keys().values()}
    own, keys = serve_usage()
    diff("frond serve --help key flags", keys, code)
    for flag, (typ, env, default) in keys.items():
        c = code[flag]
        ft.check((typ, env, default) == (c["type"].upper(), c["environment"],
                                         c["default"]),
                 "frond serve --help: %s %s %s=%s, --list-keys %s %s=%s"
                 % (flag, typ, env, default, c["type"], c["environment"],
                    c["default"]))
    ft.check(not own & set(code), "frond serve --help lists a key flag "
             "among its own options")
    ft.check({"--config", "--print-config", "--list-keys", "--help"} <= own,
             "frond serve --help lacks an option of its own: %r" % own)


def test_config_defaults_everywhere():
    """Any other table in the docs that gives a key, its variable and a
    default gives the default the code has."""
    defaults = config_values(print_config().stdout)
    for path in markdown_files():
        if path.endswith("reference/configuration.md"):
            continue
        for r in table_rows(read(path)):
            if len(r) < 3 or not re.match(r"^`FROND_\w+`$", r[1]):
                continue
            key = unbacktick(r[0])
            ft.check(key in defaults, "%s: table row for unknown key %s"
                     % (path, key))
            ft.check(unbacktick(r[1]) == "FROND_" + key.upper(),
                     "%s: %s's variable is FROND_%s" % (path, key,
                                                        key.upper()))
            if r[2].startswith("`"):
                ft.check(unbacktick(r[2]) == defaults[key],
                         "%s: %s's default is %r, the page says %s"
                         % (path, key, defaults[key], r[2]))


def test_config_examples():
    """Example configuration files are read as they say."""
    examples = [b for _, b in code_blocks(read("docs/operations.md"), "ini")]
    man = read("man/frond.conf.5")
    examples += [b.replace("\\-", "-") for b in
                 re.findall(r"^\.EX\n(.*?)^\.EE", man, re.M | re.S)
                 if " = " in b]
    ft.check(len(examples) >= 2, "no example configuration file found")
    d = ft.tempdir()
    try:
        for body in examples:
            path = os.path.join(d, "frond.conf")
            with open(path, "w") as f:
                f.write(body)
            r = print_config("--config", path)
            ft.check(r.returncode == 0, "example refused: %s\n%s"
                     % (r.stderr, body))
            got = config_values(r.stdout)
            for line in body.splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    k, _, v = line.partition("=")
                    ft.check(got[k.strip()] == v.strip(),
                             "example line %r read as %r" % (line,
                                                             got[k.strip()]))
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ------------------------------------------------------------- the command

def subcommands():
    r = ft.run(["--help"])
    ft.check(r.returncode == 0, r.stderr)
    cmds = re.findall(r"^  (\w+) ", r.stdout.split("commands:")[1], re.M)
    ft.check(len(cmds) >= 7, "no command list in frond --help")
    return cmds


def options_of(cmd):
    r = ft.run(["help", cmd])
    ft.check(r.returncode == 0, "frond help %s: %s" % (cmd, r.stderr))
    # 'frond other --opt' in the help is another command's option.
    text = re.sub(r"'frond [^']*'", "", r.stdout)
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", text))


def roff_plain(text):
    return text.replace("\\-", "-").replace('"', "")


def test_subcommands():
    cmds = subcommands()
    cli = read("docs/cli.md")
    man = read("man/frond.1")
    diff("docs/cli.md sections", [m for m in re.findall(
        r"^## (\w+)$", strip_fences(cli), re.M)
        if m not in ("Exit", "Files")], cmds)
    diff("frond(1) subcommand sections",
         re.findall(r'^\.SS "frond (\w+)', man, re.M), cmds + ["help"])
    readme = read("README.md")
    for c in cmds:
        ft.check(re.search(r"frond %s\b" % c, cli + readme),
                 "docs do not show `frond %s`" % c)
    everything = {"--help", "--version", "--opt"}  # --opt: the placeholder
    for c in cmds:
        opts = options_of(c)
        if c == "serve":
            # Its keys' flags are the configuration reference's (checked
            # there); its own options are described here.
            opts, keys = serve_usage()
            everything |= set(keys)
        else:
            opts.discard("--help")
        everything |= opts
        man_sec = roff_plain(man.split('.SS "frond %s' % c, 1)[1]
                             .split(".SS ", 1)[0])
        cli_sec = section(cli, r"^%s$" % c)
        for o in sorted(opts):
            ft.check(re.search(r"%s(?![\w-])" % re.escape(o), man_sec),
                     "frond(1) does not describe `frond %s %s`" % (c, o))
            ft.check(re.search(r"%s(?![\w-])" % re.escape(o), cli_sec),
                     "docs/cli.md does not describe `frond %s %s`" % (c, o))
    # Nothing documented that no subcommand takes.
    for name, text in (("docs/cli.md", cli), ("frond(1)", roff_plain(man))):
        for o in set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", text)):
            ft.check(o in everything, "%s mentions %s, which no subcommand "
                     "takes" % (name, o))


# ---------------------------------------------------------------- HTTP

def router_endpoints():
    """Endpoints of the router, {} standing for a path parameter."""
    src = server_sources()
    exact = set(re.findall(r'\bEXACT\("(/[^"]*)"\)', src))
    prefix = set(re.findall(r'\bPREFIX\("(/[^"]*)"\)', src))
    ft.check(len(exact) + len(prefix) >= 8,
             "the HTTP router (EXACT/PREFIX paths) was not found in "
             "src/server/*.c; update test_docs.py's pattern")
    routes = set(exact)
    # PREFIX("/a/") && SUFFIX("/a/", "/b"): /a/{}/b
    for p, s in re.findall(r'\bSUFFIX\("(/[^"]*)", "(/[^"]*)"\)', src):
        routes.add(p + "{}" + s)
    for p in prefix:
        namespace = any(q != p and q.startswith(p) for q in exact | prefix)
        if not namespace:
            routes.add(p + "{}")
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
             "src/server/*.c; update test_docs.py's pattern")
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


# ----------------------------------------------------------- man pages

def test_man_pages():
    ft.need("groff", "groff-base")
    for page in ("man/frond.1", "man/frond.conf.5"):
        r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z",
                            os.path.join(SRC, page)], capture_output=True,
                           text=True, timeout=60)
        ft.check(r.returncode == 0 and r.stderr == "",
                 "%s does not render cleanly: %s" % (page, r.stderr))
    man = read("man/frond.conf.5")
    keys_sec = man.split(".SH KEYS", 1)[1].split("\n.SH ", 1)[0]
    entries = dict(re.findall(r"^\.TP\n\.B (\w+)\n(.*?)(?=^\.TP|\Z)",
                              keys_sec, re.M | re.S))
    defaults = config_values(print_config().stdout)
    code = list_keys()
    diff("frond.conf(5) keys", entries, defaults)
    # A family is written .BI prefix name, with its variable and flag.
    fams = {}
    for pre, name, body in re.findall(
            r"^\.TP\n\.BI (\S+) (\w+)\n(.*?)(?=^\.TP|\Z)", keys_sec,
            re.M | re.S):
        fams["%s<%s>" % (pre.replace("\\", ""), name)] = body
    diff("frond.conf(5) key families", fams, families(code))
    for key, body in fams.items():
        plain = body.replace("\\-", "-")
        for what in ("flag", "environment"):
            pre, param = code[key][what].rstrip(">").split("<")
            ft.check("\\fB%s\\fI%s\\fR" % (pre, param) in plain,
                     "frond.conf(5): %s's %s %s" % (key, what,
                                                   code[key][what]))
    for key, body in entries.items():
        plain = body.replace("\\-", "-")
        m = re.search(r"^Type: (\w+), (.*)\.$", plain, re.M)
        ft.check(m, "frond.conf(5): %s has no 'Type: TYPE, RANGE.'" % key)
        typ = m.group(1)
        ft.check(typ == code[key]["type"], "frond.conf(5): %s is %s, not %s"
                 % (key, typ, code[key]["type"]))
        rng = re.sub(r"\\fB(.*?)\\fR", r"`\1`", m.group(2))
        ft.check(doc_range(typ, rng, "frond.conf(5): " + key) ==
                 code_range(typ, code[key]["range"]),
                 "frond.conf(5): %s's range %s is not the code's %s"
                 % (key, m.group(2), code[key]["range"]))
        want = "none" if defaults[key] == "" else "\\fB%s\\fR" % defaults[key]
        ft.check("Default: %s." % want in plain,
                 "frond.conf(5): %s's default is %r" % (key, defaults[key]))
        ft.check("Environment: \\fBFROND_%s\\fR." % key.upper() in plain,
                 "frond.conf(5): %s's variable" % key)
        ft.check("Flag: \\fB--%s\\fR." % key.replace("_", "-") in plain,
                 "frond.conf(5): %s's flag" % key)


# ---------------------------------------------------------------- links

def markdown_files():
    files = ["README.md", "CONTRIBUTING.md", "bench/RESULTS.md"]
    for p in sorted(glob.glob(os.path.join(SRC, "docs", "**", "*.md"),
                              recursive=True)):
        files.append(os.path.relpath(p, SRC))
    return files


def slugs(text):
    """GitHub's anchors for the headings of a Markdown text."""
    seen, out = {}, set()
    for line in strip_fences(text).split("\n"):
        m = re.match(r"^#{1,6} (.*?)\s*#*$", line)
        if not m:
            continue
        h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).lower()
        s = re.sub(r"[^\w\- ]", "", h).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else "%s-%d" % (s, n))
    return out


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

def test_library_api():
    header = read("include/frond.h")
    api = set(re.findall(r"FROND_EXPORT[^;(]*?\b(frond_\w+)\s*\(", header))
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
    ft.main([test_error_codes, test_protocol_error_codes,
             test_config_reference, test_serve_help,
             test_config_defaults_everywhere,
             test_config_examples, test_subcommands, test_http_reference,
             test_resp_reference, test_man_pages, test_links,
             test_readme_two_commands, test_first_look, test_library_api,
             test_library_example])
