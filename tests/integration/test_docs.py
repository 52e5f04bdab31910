#!/usr/bin/env python3
"""
test_docs.py -- the documentation (the README and the pages under docs/)
covers what the code offers: every error code, every configuration key
with its environment variable and default, every subcommand, and every
Redis command the server answers.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402


def readme():
    """The README and every page under docs/, as one text."""
    paths = [os.path.join(ft.FROND_SRC, "README.md")]
    docs = os.path.join(ft.FROND_SRC, "docs")
    if os.path.isdir(docs):
        paths += sorted(os.path.join(docs, n) for n in os.listdir(docs)
                        if n.endswith(".md"))
    text = ""
    for p in paths:
        with open(p) as f:
            text += f.read() + "\n"
    return text


def test_error_codes():
    with open(os.path.join(ft.FROND_SRC, "include", "frond.h")) as f:
        codes = re.findall(r'XX\((\d+), (\w+),', f.read())
    ft.check(len(codes) >= 20, "error list not found in frond.h")
    text = readme()
    for num, name in codes:
        ft.check("| -%s | `%s` |" % (num, name) in text,
                 "README's error table lacks %s (-%s)" % (name, num))


def test_config_keys():
    r = ft.run(["serve", "--print-config"])
    ft.check(r.returncode == 0, r.stderr)
    text = readme()
    for line in r.stdout.splitlines():
        key, _, default = line.partition(" = ")
        env = "FROND_" + key.upper()
        row = [l for l in text.splitlines()
               if l.startswith("| `%s` | `%s` |" % (key, env))]
        ft.check(row, "README's configuration table lacks %s / %s"
                 % (key, env))
        if key != "admin_token":
            ft.check("`%s`" % default in row[0],
                     "README gives another default for %s than %r"
                     % (key, default))


def test_subcommands():
    r = ft.run(["--help"])
    ft.check(r.returncode == 0, r.stderr)
    cmds = re.findall(r"^  (\w+) ", r.stdout.split("commands:")[1], re.M)
    ft.check(len(cmds) >= 7, "no command list in frond --help")
    text = readme()
    for c in cmds:
        ft.check(re.search(r"frond %s\b" % c, text),
                 "README does not show `frond %s`" % c)


def test_resp_commands():
    with open(os.path.join(ft.FROND_SRC, "src", "server", "resp.c")) as f:
        src = f.read()
    table = src[src.index("static const resp_cmd commands[]"):]
    table = table[:table.index("};")]
    names = set(re.findall(r'\{"([a-z][a-z.]+)",', table))
    ft.check(len(names) >= 10, "no command table found in resp.c")
    text = readme()
    for n in sorted(names):
        ft.check("`%s" % n.upper() in text,
                 "README does not document %s" % n.upper())


if __name__ == "__main__":
    ft.main([test_error_codes, test_config_keys, test_subcommands,
             test_resp_commands])
