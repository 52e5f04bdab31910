#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_cli_tools.py -- the `frond` command's tools as a user drives them:
decode (fields, malformed IDs), the layouts, the tag commands and their
table, and the bench table.

Every run happens in a fresh temporary directory with the FROND_*
environment variables cleared, so nothing outside the test leaks in.
"""
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402
from cli_common import (FROND_EPOCH, INT64_MAX, TWITTER_EPOCH,  # noqa: E402
                        check_failure, check_increasing, check_usage_error,
                        clean_env, compose, frond, ids_of)


# ---------------------------------------------------------------- decode

def test_decode_fields():
    d = ft.store_dir()
    ms = 1704067200000  # 2024-01-01T00:00:00.000Z
    id_ = compose(TWITTER_EPOCH, 22, 12, ms + 123, (3 << 5) | 7, 42)
    r = frond(["decode", "--layout", "twitter", str(id_)], d)
    check(r.returncode == 0, "decode: %r" % r.stderr)
    # The fields every front shows (/v1/decode, ID.DECODE), in this order.
    want = ('{"id":"%d","time":"2024-01-01T00:00:00.123Z","unix_ms":%d,'
            '"time_units":%d,"node":103,"datacenter":3,"worker":7,'
            '"sequence":42,"layout":"time=41,dc=5,worker=5,seq=12,unit=1ms,'
            'epoch=%d"}\n'
            % (id_, ms + 123, ms + 123 - TWITTER_EPOCH, TWITTER_EPOCH))
    check(r.stdout == want, "decode:\n got %r\nwant %r" % (r.stdout, want))
    # Unsplit node: datacenter 0, worker the node.
    id2 = compose(FROND_EPOCH, 22, 12, FROND_EPOCH + 86400000, 1023, 4095)
    r = frond(["decode", str(id2), "0", str(INT64_MAX)], d)
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and len(lines) == 3, "decode 3 IDs: %r" % r.stdout)
    f = json.loads(lines[0])
    check(f == {"id": str(id2), "time": "2025-01-02T00:00:00.000Z",
                "unix_ms": FROND_EPOCH + 86400000, "time_units": 86400000,
                "node": 1023, "datacenter": 0, "worker": 1023,
                "sequence": 4095,
                "layout": "time=41,node=10,seq=12,unit=1ms,epoch=%d"
                % FROND_EPOCH}, "decode frond: %r" % f)
    f = json.loads(lines[1])
    check(f["unix_ms"] == FROND_EPOCH and f["sequence"] == 0 and
          f["node"] == 0, "decode 0: %r" % f)
    f = json.loads(lines[2])
    check(f["id"] == str(INT64_MAX) and f["sequence"] == 4095,
          "decode max: %r" % f)
    # From stdin, one per line, same output as from the arguments.
    r2 = frond(["decode"], d, input="%d\n0\r\n%d\n" % (id2, INT64_MAX))
    check(r2.returncode == 0 and r2.stdout == r.stdout,
          "decode from stdin differs: %r" % r2.stdout)
    # A pipe from next: every ID decodes to now, node 0, increasing.
    ids = frond(["next", "--count", "100", "--no-high-water"], d).stdout
    r = frond(["decode"], d, input=ids)
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    check(len(rows) == 100 and [x["id"] for x in rows] == ids.split(),
          "next | decode lost IDs")
    shutil.rmtree(d)


def test_decode_malformed_ids():
    d = ft.tempdir()
    for bad, why in (("", "empty"), ("abc", "not a decimal"),
                     ("-1", "negative"), ("12x", "not a decimal"),
                     ("+5", "not a decimal"), ("0x10", "not a decimal"),
                     (" 7", "not a decimal"), ("1.5", "not a decimal"),
                     ("9223372036854775808", "too large"),
                     ("99999999999999999999999", "too large")):
        line = check_usage_error(["decode", "1", bad, "2"], d, why)
        check(line.startswith("frond decode: '%s'" % bad),
              "decode %r: %r" % (bad, line))
    # stdin: lines before the bad one are printed, then exit 2 naming it.
    r = frond(["decode"], d, input="1\n2\nx\n3\n")
    check(r.returncode == 2 and len(r.stdout.splitlines()) == 2,
          "stdin with a bad line: exit %d, %r" % (r.returncode, r.stdout))
    check(r.stderr.strip() == "frond decode: line 3: 'x' is not a decimal "
          "number", "stdin error: %r" % r.stderr)
    r = frond(["decode"], d, input="1\n\n2\n")
    check(r.returncode == 2 and "line 2" in r.stderr, "empty line: %r"
          % r.stderr)
    r = frond(["decode"], d, input="")
    check(r.returncode == 0 and r.stdout == "", "empty stdin: %r" % r.stdout)
    shutil.rmtree(d)


# ---------------------------------------------------------------- layouts

def test_layouts():
    d = ft.tempdir()
    r = frond(["layouts"], d)
    check(r.returncode == 0, "layouts: %r" % r.stderr)
    rows = {line.split()[0]: line for line in r.stdout.splitlines()[1:]}
    check(set(rows) >= {"frond", "twitter", "sonyflake", "baidu",
                        "instagram"}, "presets: %s" % sorted(rows))
    tw = rows["twitter"].split()
    check(tw[1:8] == ["41/5+5/12", "1ms", "2010-11-04T01:42:54.657Z",
                      "4096000", "1024", "69.7", "2080-07-10"],
          "twitter row: %r" % tw)
    check(rows["sonyflake"].split()[1:3] == ["39/16/8", "10ms"],
          "sonyflake row: %r" % rows["sonyflake"])
    check(rows["frond"].split()[1] == "41/10/12" and
          "EXHAUSTED" not in rows["frond"], "frond row: %r" % rows["frond"])
    check("2024-11-20" in rows["baidu"] and "EXHAUSTED" in rows["baidu"],
          "baidu row must say it ran out: %r" % rows["baidu"])
    r = frond(["layouts", "--json"], d)
    presets = json.loads(r.stdout)
    byname = {p["name"]: p for p in presets}
    check(len(presets) == len(rows), "--json has %d presets" % len(presets))
    check(byname["baidu"]["exhausted"] is True and
          byname["baidu"]["end"].startswith("2024-11-20"),
          "baidu json: %r" % byname["baidu"])
    check(byname["twitter"]["exhausted"] is False and
          byname["twitter"]["ids_per_second"] == 4096000 and
          byname["twitter"]["dc_bits"] == 5 and
          byname["twitter"]["epoch_ms"] == TWITTER_EPOCH,
          "twitter json: %r" % byname["twitter"])
    # Every spec printed is accepted back as --layout.
    for p in presets:
        r = frond(["decode", "--layout", p["spec"], "4194304"], d)
        check(r.returncode == 0, "spec %r not accepted: %r"
              % (p["spec"], r.stderr))
    shutil.rmtree(d)


# ---------------------------------------------------------------- tags

def test_tag_commands():
    d = ft.tempdir()
    store = "sqlite://" + os.path.join(d, "ids.db")
    s = ["--store", store]
    r = frond(["tag", "create", "order", "--step", "10", "--start", "100",
               "--description", 'orders "A" \\ B'] + s, d)
    check(r.returncode == 0, "tag create: %d %r" % (r.returncode, r.stderr))
    check_failure(frond(["tag", "create", "order"] + s, d), "TAG_EXISTS",
                  "creating a tag twice")
    r = frond(["tag", "create", "user", "--description=people"], d,
              env=clean_env(FROND_STORE=store))
    check(r.returncode == 0, "FROND_STORE: %r" % r.stderr)
    rows = json.loads(frond(["tag", "list", "--json"] + s, d).stdout)
    check([x["tag"] for x in rows] == ["order", "user"], "list: %r" % rows)
    check(rows[0]["max_id"] == 100 and rows[0]["step"] == 10 and
          rows[0]["description"] == 'orders "A" \\ B',
          "list --json order: %r" % rows[0])
    check(rows[1]["step"] == 2000 and rows[1]["max_id"] == 1,
          "default step/start: %r" % rows[1])
    table = frond(["tag", "list"] + s, d).stdout.splitlines()
    check(table[0].split()[:4] == ["tag", "max_id", "step", "description"]
          and table[1].split()[:3] == ["order", "100", "10"],
          "tag list table: %r" % table)
    got = json.loads(frond(["tag", "get", "order", "--json"] + s, d).stdout)
    check(got["tag"] == "order" and got["step"] == 10, "get: %r" % got)
    # Segment IDs: the first run starts at --start, runs never overlap.
    r = frond(["next", "--segment", "order", "--count", "25"] + s, d)
    check(r.returncode == 0, "next --segment: %r" % r.stderr)
    first = ids_of(r.stdout)
    check(first == list(range(100, 125)), "segment IDs: %r" % first)
    r = frond(["next", "--segment", "order", "--count", "5"], d,
              env=clean_env(FROND_STORE=store))
    second = ids_of(r.stdout)
    check(len(second) == 5 and second[0] > first[-1],
          "second run %r overlaps %r" % (second, first[-5:]))
    check_increasing(second, "second segment run")
    check_failure(frond(["next", "--segment", "nosuch"] + s, d),
                  "TAG_NOT_FOUND", "next --segment nosuch")
    r = frond(["tag", "set-step", "order", "500"] + s, d)
    check(r.returncode == 0, "set-step: %r" % r.stderr)
    got = json.loads(frond(["tag", "get", "order", "--json"] + s, d).stdout)
    check(got["step"] == 500, "set-step did not stick: %r" % got)
    check_failure(frond(["tag", "set-step", "nosuch", "5"] + s, d),
                  "TAG_NOT_FOUND", "set-step nosuch")
    check_failure(frond(["tag", "get", "nosuch"] + s, d), "TAG_NOT_FOUND",
                  "get nosuch")
    r = frond(["tag", "delete", "order"] + s, d)
    check(r.returncode == 0, "delete: %r" % r.stderr)
    check_failure(frond(["tag", "delete", "order"] + s, d), "TAG_NOT_FOUND",
                  "deleting twice")
    rows = json.loads(frond(["tag", "list", "--json"] + s, d).stdout)
    check([x["tag"] for x in rows] == ["user"], "after delete: %r" % rows)
    r = frond(["tag", "list", "--store", "nosuch://x"], d)
    check_failure(r, "STORE_URI", "an unknown store scheme")
    shutil.rmtree(d)


def display_width(text):
    """Columns text takes on a terminal, by Unicode's data (not wcwidth):
    wide and full-width characters 2, combining marks 0."""
    import unicodedata
    return sum(0 if unicodedata.combining(ch) else
               2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def test_tag_list_table():
    """A description with a newline stays on its row, escaped; names of
    several bytes a character, wide characters and combining marks are
    padded by the columns they take, so every column lines up."""
    d = ft.tempdir()
    s = ["--store", "sqlite://" + os.path.join(d, "ids.db")]
    for name, desc in (("order", "line one\nline two\ttab"),
                       ("\u8ba2\u5355", "\u4e2d\u6587"),
                       ("cafe\u0301", "caf\u00e9 \x01 \u0085"),
                       ("x", "-")):
        r = frond(["tag", "create", name, "--description", desc] + s, d)
        check(r.returncode == 0, "tag create %r: %r" % (name, r.stderr))
    out = frond(["tag", "list"] + s, d, env=clean_env(LANG="C",
                                                     LC_ALL="C")).stdout
    lines = out.splitlines()
    check(len(lines) == 5, "one line per tag and a header: %r" % lines)
    check("line one\\nline two\\ttab" in out and "\\x01" in out and
          "\\u{85}" in out, "control characters not escaped: %r" % out)
    # The right edge of max_id and step, and where description and
    # updated start, in display columns, are the same on every line.
    header = lines[0]
    cols = [display_width(header[:header.index(h) + len(h)])
            for h in ("max_id", "step")]
    starts = [display_width(header[:header.index(h)])
              for h in ("description", "updated")]
    for line in lines[1:]:
        m = re.match(r"^(.*?\S)( +)(\d+)( +)(\d+)  ", line)
        check(m, "row %r" % line)
        check([display_width(line[:m.end(3)]), display_width(line[:m.end(5)])]
              == cols, "numbers not aligned: %r in %r" % (line, lines))
        date = re.search(r"\d{4}-\d\d-\d\d", line)
        check(display_width(line[:date.start()]) == starts[1],
              "updated not aligned: %r in %r" % (line, lines))
        check(display_width(line[:m.end()]) == starts[0],
              "description not aligned: %r in %r" % (line, lines))
    got = frond(["tag", "get", "order"] + s, d).stdout
    check("description  line one\\nline two\\ttab\n" in got,
          "tag get: %r" % got)
    shutil.rmtree(d)


# ---------------------------------------------------------------- bench

def test_bench_table():
    """The figures bench promises, each beside its reference. Speed is not
    asserted here (benchmarks are not timed tests), only that every row is
    measured and the sustained run reaches the layout's bound region."""
    d = ft.tempdir()
    r = frond(["bench", "--seconds", "1", "--reps", "1"], d, timeout=300)
    check(r.returncode == 0, "bench: %d %r" % (r.returncode, r.stderr))
    rows = {}
    for line in r.stdout.splitlines():
        m = re.match(r"(next, 1 thread|next, 2 threads|next_n\(1000\), per ID|"
                     r"sustained next, 1 thread)\s+([0-9.]+)\s+\S+\s+"
                     r"([0-9.]+)\s+\S+\s+([0-9.]+)(x|% of bound)", line)
        if m:
            rows[m.group(1)] = [float(m.group(i)) for i in (2, 3, 4)]
    check(len(rows) == 4, "bench rows: %r" % r.stdout)
    for name, (ns, ref, ratio) in rows.items():
        check(ns > 0 and ref > 0 and ratio > 0, "%s: %r" % (name, rows[name]))
    check(abs(rows["sustained next, 1 thread"][1] - 1e9 / 4096000) < 0.01,
          "the sustained reference is not the frond layout's bound")
    check(os.listdir(d) == [], "bench wrote files: %s" % os.listdir(d))
    check_failure(frond(["bench", "--layout", "baidu"], d), "TIME_EXHAUSTED",
                  "bench on an exhausted layout")
    shutil.rmtree(d)


if __name__ == "__main__":
    ft.main([
        test_decode_fields,
        test_decode_malformed_ids,
        test_layouts,
        test_tag_commands,
        test_tag_list_table,
        test_bench_table,
    ])
