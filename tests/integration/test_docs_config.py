#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_docs_config.py -- the configuration reference against the table: each
key with its variable, flag, type, default and range as `frond serve
--list-keys` and `--help` give them, tried with `frond serve
--print-config` (bounds and just beyond, units, addresses, every word of
an enum); the defaults wherever the docs show them; the example files
read by `frond serve`; the FROND_* variables Frond reads besides the
keys', and the refusal of any other.
"""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from docs_common import (  # noqa: E402
    BOOL_FALSE, BOOL_TRUE, UNITS, code_blocks, code_range,
    config_reference, config_values, diff, doc_range, families, list_keys,
    markdown_files, print_config, read, serve_usage, table_rows,
    unbacktick, was_read)


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
                 "the %s unit %r, which test_docs_*.py does not know"
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
    # A round sets many keys at once, so that the start's rules between
    # them (two listeners on one port, a wildcard without a token) or a
    # string's meaning (a layout of "aaa") may refuse it: read is enough.
    for rnd in rounds:
        r = print_config(*["%s=%s" % (f, v) for f, v, _ in rnd.values()])
        ft.check(was_read(r), "documented values refused: " + r.stderr)
        got = config_values(r.stdout)
        r = print_config(env={unbacktick(rows[k][1]): v
                              for k, (_, v, _) in rnd.items()})
        ft.check(was_read(r), "documented values refused from the "
                 "environment: " + r.stderr)
        got_env = config_values(r.stdout)
        for key, (flag, v, shown) in rnd.items():
            ft.check(got[key] == shown, "%s: %s=%s printed as %s, not %s"
                     % (key, flag, v, got[key], shown))
            ft.check(got_env[key] == shown, "%s: %s=%s printed as %s, not %s"
                     % (key, unbacktick(rows[key][1]), v, got_env[key],
                        shown))


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
            # With the token in the environment, as the examples say.
            r = print_config("--config", path,
                             env={"FROND_ADMIN_TOKEN": "docs-example"})
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


def test_environment():
    """The variables Frond reads besides the keys' (config_load.c) are the
    ones the reference lists, each accepted in the environment of `frond
    serve`; any other FROND_* variable is refused with CONFIG."""
    src = read("src/server/config_load.c")
    others = set(re.findall(r'^\s*\{"(FROND_[A-Z0-9_]+)",', src, re.M))
    if "{FROND_ORDER_KEY_ENV," in src:
        others.add("FROND_ORDER_KEY")
    reserved = re.search(r"reserved\[\]\s*=\s*\{([^}]*)\}", src)
    ft.check(reserved, "config_load.c: no reserved prefixes")
    prefixes = {p + "*" for p in re.findall(r'"(FROND_[A-Z_]+_)"',
                                            reserved.group(1))}
    ft.check(len(others) >= 5 and len(prefixes) >= 2,
             "config_load.c: the lists were not found")
    keys = {"FROND_" + k.upper().replace(".", "_") for k in list_keys()}
    page = read("docs/reference/configuration.md")
    sec = page.split("## Environment of the `frond` command", 1)
    ft.check(len(sec) == 2, "configuration.md: no environment section")
    documented = set()
    for r in table_rows(sec[1].split("\n## ", 1)[0]):
        v = unbacktick(r[0])
        if re.match(r"^FROND_[A-Z0-9_]+\*?$", v) and v not in keys:
            documented.add(v)
    diff("configuration.md: the variables Frond reads besides the keys'",
         documented, others | prefixes)
    for v in sorted(others | {p.replace("*", "X") for p in prefixes}):
        r = print_config(env={v: "1"})
        ft.check(r.returncode == 0, "%s is documented, and refused: %s"
                 % (v, r.stderr))
    r = print_config(env={"FROND_STORE_URI": "postgresql://db/x"})
    ft.check(r.returncode == 2 and "CONFIG" in r.stderr and
             "did you mean FROND_STORE?" in r.stderr, r.stderr)


if __name__ == "__main__":
    ft.main([test_config_reference, test_serve_help,
             test_config_defaults_everywhere, test_config_examples,
             test_environment])
