#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_docs_cli.py -- the subcommands and their options (`frond --help`,
`frond help CMD`) against the docs and frond(1); both manual pages render
without warnings and frond.conf(5) lists every key of the table.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from docs_common import (  # noqa: E402
    SRC, code_range, config_values, diff, doc_range, families, list_keys,
    print_config, read, section, serve_usage, strip_fences)


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


if __name__ == "__main__":
    ft.main([test_subcommands, test_man_pages])
