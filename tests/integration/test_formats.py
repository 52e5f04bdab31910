#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_formats.py -- ID formats through `frond next --format` and `frond
decode`, checked by independent implementations: Python's uuid module
(UUIDv7 and RFC 9562's example), the npm package ulid (pinned,
installed by scripts/deps.sh test), Debian's python3-bson for ObjectIds,
and node for the JS-safe layout. Order numbers with key files, sequences
on a SQLite store, and the errors a user meets.
"""
import json
import os
import shutil
import subprocess
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

ULID_VERSION = "3.0.1"
KEY1 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
KEY2 = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100"


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("FROND_")}
    env.update(extra)
    return env


def frond(args, cwd, env=None, input=None):
    return ft.run(args, cwd=cwd, env=env or clean_env(), input=input)


def ok(args, cwd, env=None, input=None):
    r = frond(args, cwd, env, input)
    check(r.returncode == 0, "frond %s: exit %d: %s"
          % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


def lines(args, cwd, env=None):
    return ok(args, cwd, env).split()


def decode(strings, cwd, extra=(), env=None):
    out = ok(["decode"] + list(extra) + list(strings), cwd, env)
    return [json.loads(x) for x in out.splitlines()]


def key_file(d, text, mode=0o600, name="order.key"):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def bson_module():
    """Debian's python3-bson, which a python3 from a virtualenv or pyenv on
    PATH does not search: look in Debian's directory too."""
    try:
        import bson
        return bson
    except ImportError:
        sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import bson
        return bson
    except ImportError:
        raise ft.Failure("python3-bson is not installed (scripts/deps.sh "
                         "test installs it)")


def node_env():
    ft.need("node", "nodejs")
    r = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, "npm root -g: %s" % r.stderr)
    env = dict(os.environ, NODE_PATH=r.stdout.strip())
    probe = subprocess.run(
        ["node", "-e", "process.stdout.write(require('ulid/package.json')"
         ".version)"], capture_output=True, text=True, env=env, timeout=60)
    check(probe.returncode == 0 and probe.stdout == ULID_VERSION,
          "the npm package ulid@%s is not installed (scripts/deps.sh test "
          "installs it): %s%s" % (ULID_VERSION, probe.stdout, probe.stderr))
    return env


def node(script, data, env):
    r = subprocess.run(["node", "-e", script], input=data, capture_output=True,
                       text=True, env=env, timeout=120)
    check(r.returncode == 0, "node: %s" % r.stderr)
    return json.loads(r.stdout)


# ---------------------------------------------------------------- UUIDv7

def test_rfc9562_example():
    """RFC 9562 appendix A.6: 017F22E2-79B0-7CC3-98C4-DC0C0C07398F is
    2022-02-22T14:22:22-05:00."""
    d = ft.tempdir()
    s = "017F22E2-79B0-7CC3-98C4-DC0C0C07398F"
    u = uuid.UUID(s)
    check(u.version == 7 and u.variant == uuid.RFC_4122, "python: %r" % u)
    [v] = decode([s], d)
    check(v["format"] == "uuid7" and v["version"] == 7 and
          v["uuid"] == str(u) and v["unix_ms"] == u.int >> 80 ==
          1645557742000 and v["time"] == "2022-02-22T19:22:22.000Z",
          "frond decode: %r" % v)
    shutil.rmtree(d)


def test_uuid7_by_python():
    d = ft.tempdir()
    out = lines(["next", "--format", "uuid7", "--count", "20000"], d)
    check(len(out) == 20000 and len(set(out)) == 20000, "not 20000 unique")
    check(out == sorted(out), "UUIDv7s of one run do not increase")
    for s in out[:: 997]:
        u = uuid.UUID(s)
        check(str(u) == s, "not canonical: %s" % s)
        check(u.version == 7 and u.variant == uuid.RFC_4122,
              "%s: version %s variant %s" % (s, u.version, u.variant))
    rows = decode(out[:: 997], d)
    for s, v in zip(out[:: 997], rows):
        check(v["unix_ms"] == uuid.UUID(s).int >> 80,
              "%s: frond says %d ms" % (s, v["unix_ms"]))
    r = uuid.UUID(lines(["next", "--format", "uuid4"], d)[0])
    check(r.version == 4 and r.variant == uuid.RFC_4122, "uuid4: %r" % r)
    shutil.rmtree(d)


# ---------------------------------------------------------------- ULID

def test_ulid_by_npm():
    env = node_env()
    d = ft.tempdir()
    out = lines(["next", "--format", "ulid", "--count", "20000"], d)
    check(len(set(out)) == 20000 and out == sorted(out),
          "ULIDs of one run are not unique and increasing")
    sample = out[:: 499] + ["01ARYZ6S41TSV4RRFFQ69G5FAV"]
    theirs = node(
        "const u = require('ulid');"
        "const s = require('fs').readFileSync(0, 'utf8').split('\\n')"
        ".filter(Boolean);"
        "console.log(JSON.stringify(s.map(x => ({valid: u.isValid(x),"
        " time: u.decodeTime(x), uuid: u.ulidToUUID(x).toLowerCase()}))));",
        "\n".join(sample), env)
    mine = decode(sample, d)
    for s, t, m in zip(sample, theirs, mine):
        check(t["valid"], "npm ulid says %s is not a ULID" % s)
        check(m["format"] == "ulid" and m["unix_ms"] == t["time"] and
              m["uuid"] == t["uuid"],
              "%s: frond %r, npm ulid %r" % (s, m, t))
    check(mine[-1]["unix_ms"] == 1469918176385, "the spec's example")
    # Lower case reads the same.
    [low] = decode([sample[0].lower()], d)
    check(low["ulid"] == sample[0], "lower case: %r" % low)
    shutil.rmtree(d)


# ---------------------------------------------------------------- ObjectId

def test_objectid_by_bson():
    bson = bson_module()
    from bson.objectid import ObjectId
    d = ft.tempdir()
    out = lines(["next", "--format", "objectid", "--count", "5000"], d)
    check(len(set(out)) == 5000 and out == sorted(out),
          "ObjectIds of one run are not unique and increasing")
    rows = decode(out[:: 101] + ["507f1f77bcf86cd799439011"], d)
    for s, v in zip(out[:: 101] + ["507f1f77bcf86cd799439011"], rows):
        check(ObjectId.is_valid(s), "bson says %s is no ObjectId" % s)
        o = ObjectId(s)
        b = o.binary
        check(v["unix_ms"] == int(o.generation_time.timestamp()) * 1000 and
              v["process"] == b[4:9].hex() and
              v["counter"] == int.from_bytes(b[9:12], "big"),
              "%s: frond %r, bson %s" % (s, v, o.generation_time))
    # One process value per run, a counter that counts.
    first, last = ObjectId(out[0]).binary, ObjectId(out[-1]).binary
    check(first[4:9] == last[4:9], "process value changed within a run")
    check((int.from_bytes(last[9:12], "big") -
           int.from_bytes(first[9:12], "big")) % (1 << 24) == 4999,
          "counter did not go up by one per ObjectId")
    check(bson.ObjectId is ObjectId, "bson")
    shutil.rmtree(d)


def test_node_scoped_by_python_and_bson():
    """scope=node: strings of this node's snowflake IDs (its high-water file
    as usual), valid for Python's uuid and bson, in order, never repeated
    across runs, decoding to the ID and the node."""
    bson_module()
    from bson.objectid import ObjectId
    d = ft.store_dir()
    got = {}
    for kind in ("uuid7", "ulid", "objectid"):
        spec = kind + ":scope=node"
        runs = [lines(["next", "--format", spec, "--node", "4", "--count",
                       "3000"], d) for _ in range(2)]
        out = runs[0] + runs[1]
        check(len(set(out)) == 6000 and out == sorted(out),
              "%s: not unique and increasing across two runs" % spec)
        rows = decode(out[::997], d, ["--format", spec])
        check(all(v["node"] == 4 and v["format"] == kind for v in rows),
              "%s: %r" % (spec, rows[0]))
        ids = decode([v["id"] for v in rows], d)
        check([v["unix_ms"] for v in ids] == [v["unix_ms"] for v in rows]
              if kind != "objectid" else
              [v["unix_ms"] // 1000 for v in ids] ==
              [v["unix_ms"] // 1000 for v in rows],
              "%s: the string's time is not its ID's" % spec)
        got[kind] = out
    for s in got["uuid7"][::101]:
        u = uuid.UUID(s)
        check(u.version == 7 and u.variant == uuid.RFC_4122, s)
    for s in got["objectid"][::101]:
        check(ObjectId.is_valid(s), "bson says %s is no ObjectId" % s)
    # The random scope takes none of the snowflake options; node does.
    r = frond(["next", "--format", "uuid7", "--node", "4"], d)
    check(r.returncode == 2 and "makes its own IDs" in r.stderr, r.stderr)
    r = frond(["next", "--format", "uuid4:scope=node"], d)
    check(r.returncode == 2 and "scope" in r.stderr, r.stderr)
    shutil.rmtree(d)


# ---------------------------------------------------------------- 64-bit

def test_base62_base32_sort_like_numbers():
    d = ft.store_dir()
    for fmt, length in (("base62", 11), ("base32", 13)):
        out = lines(["next", "--no-high-water", "--format", fmt, "--count",
                     "5000"], d)
        check(all(len(s) == length for s in out), "%s lengths" % fmt)
        check(out == sorted(out), "%s strings do not sort like IDs" % fmt)
        rows = decode(out[:: 250], d)
        ids = [int(v["id"]) for v in rows]
        check(ids == sorted(ids) and all(v["format"] == fmt for v in rows),
              "%s decodes: %r" % (fmt, rows[:2]))
        check(all(isinstance(v["id"], str) for v in rows),
              "IDs must be JSON strings")
    shutil.rmtree(d)


def test_js_layout_safe_in_javascript():
    env = node_env()
    d = ft.store_dir()
    out = ok(["next", "--layout", "js", "--no-high-water", "--count", "3000"],
             d)
    # Node parses the IDs as JSON numbers (doubles): every one exact.
    res = node("const s = require('fs').readFileSync(0, 'utf8').trim()"
               ".split('\\n');"
               "const n = JSON.parse('[' + s.join(',') + ']');"
               "console.log(JSON.stringify({safe: n.every("
               "(x, i) => Number.isSafeInteger(x) && String(x) === s[i])}));",
               out, env)
    check(res["safe"], "a js layout ID is not exact as a JavaScript number")
    check(max(map(int, out.split())) < 2**53, "an ID is not below 2^53")
    r = frond(["decode", "--layout", "js", str(2**53)], d)
    check(r.returncode == 1 and "ID_INVALID" in r.stderr, r.stderr)
    shutil.rmtree(d)


# ---------------------------------------------------------------- order

def test_order_numbers():
    d = ft.store_dir()
    keys = key_file(d, "# rotated yearly\n1:%s\n2:%s\n" % (KEY1, KEY2))
    spec = "order:digits=19,check=damm,key=2"
    ids = lines(["next", "--no-high-water", "--count", "1000"], d)
    out = lines(["next", "--no-high-water", "--format", spec, "--key-file",
                 keys, "--count", "1000"], d)
    check(all(len(s) == 21 and s[0] == "2" for s in out),
          "order numbers: %r" % out[:3])
    check(len(set(out)) == 1000, "order numbers repeat")
    check(out != sorted(out), "order numbers of consecutive IDs sort like "
          "the IDs: they give the volume away")
    rows = decode(out, d, ["--format", spec, "--key-file", keys])
    got = [int(v["id"]) for v in rows]
    check(got == sorted(got) and len(set(got)) == 1000 and
          got[0] > int(ids[-1]),
          "decoded IDs are not the increasing snowflake IDs")
    check(all(v["key_version"] == "2" and "node" in v and "time" in v
              for v in rows), "decode fields: %r" % rows[0])
    # The environment works as well as a file; keys never on the command
    # line.
    env = clean_env(FROND_ORDER_KEY="1:%s 2:%s" % (KEY1, KEY2))
    [v] = decode([out[0]], d, ["--format", spec], env)
    check(v["id"] == rows[0]["id"], "key from the environment")
    # A wrong key decodes to another ID (or to none), never to the same.
    wrong = key_file(d, "2:%s\n" % KEY1, name="wrong.key")
    r = frond(["decode", "--format", spec, "--key-file", wrong] + out[:200], d)
    if r.returncode == 0:
        other = [json.loads(x)["id"] for x in r.stdout.splitlines()]
        check(not set(other) & set(v["id"] for v in rows[:200]),
              "a wrong key gave an ID back")
    # A mistyped digit is caught by the check digit.
    bad = out[0][:5] + str((int(out[0][5]) + 1) % 10) + out[0][6:]
    r = frond(["decode", "--format", spec, "--key-file", keys, bad], d)
    check(r.returncode == 2 and "check character" in r.stderr, r.stderr)
    # Sizing: 12 digits cannot hold a snowflake ID.
    r = frond(["next", "--no-high-water", "--format", "order:digits=12,key=1",
               "--key-file", keys], d)
    check(r.returncode == 1 and "ID_TOO_LARGE" in r.stderr and
          "19 digits" in r.stderr, r.stderr)
    shutil.rmtree(d)


def test_key_errors():
    d = ft.tempdir()
    r = frond(["next", "--format", "order:digits=19"], d)
    check(r.returncode == 1 and "KEY_INVALID" in r.stderr and
          "--key-file" in r.stderr, "no key: %r" % r.stderr)
    open_key = key_file(d, KEY1 + "\n", 0o644)
    r = frond(["next", "--format", "order:digits=19", "--key-file", open_key],
              d)
    check(r.returncode == 1 and "chmod o-rwx" in r.stderr, r.stderr)
    keys = key_file(d, "1:%s\n" % KEY1)
    r = frond(["next", "--format", "order:digits=19,key=2", "--key-file",
               keys], d)
    check(r.returncode == 1 and "version '2'" in r.stderr, r.stderr)
    r = frond(["next", "--format", "order:digits=4"], d)
    check(r.returncode == 2 and "out of range 6..19" in r.stderr, r.stderr)
    r = frond(["next", "--key-file", keys], d)
    check(r.returncode == 2 and "--key-file needs --format" in r.stderr,
          r.stderr)
    r = frond(["next", "--format", "ulid", "--layout", "js"], d)
    check(r.returncode == 2 and "makes its own IDs" in r.stderr, r.stderr)
    shutil.rmtree(d)


def test_order_from_segment_with_date_prefix():
    d = ft.tempdir()
    store = "sqlite://%s/ids.db" % d
    keys = key_file(d, KEY1 + "\n")
    ok(["tag", "create", "shop", "--step", "50", "--store", store], d)
    spec = "order:digits=10,check=damm,prefix=SO%y%m%d-,tz=Asia/Shanghai"
    out = lines(["next", "--format", spec, "--segment", "shop", "--store",
                 store, "--key-file", keys, "--count", "300"], d)
    check(len(set(out)) == 300 and all(len(s) == 20 for s in out),
          "segment order numbers: %r" % out[:2])
    rows = decode(out, d, ["--format", spec + ",tag=shop", "--key-file",
                           keys])
    check([int(v["id"]) for v in rows] == list(range(1, 301)),
          "segment IDs back: %r" % rows[:2])
    check(all(v["tag"] == "shop" and v["prefix_date"] == out[0][2:8]
              for v in rows), "tag and date: %r" % rows[0])
    shutil.rmtree(d)


def test_order_key_checked():
    """`frond next --format` checks a keyed format's key before its first
    number: for snowflake IDs where the node ID was claimed (the lease in
    the store's database by default: the record every process on that
    store reads), or in the data directory when nothing is shared (with a
    warning that only this host reads it); for a tag's IDs in the store;
    another key, or another rounds=, under the same version is
    KEY_MISMATCH; a new version records its own."""
    d = ft.store_dir()
    k1 = key_file(d, "1:%s\n" % KEY1, name="k1")
    k2 = key_file(d, "1:%s\n2:%s\n" % (KEY2, KEY1), name="k2")
    spec = "order:digits=19,key=1"
    r = frond(["next", "--format", spec, "--key-file", k1], d)
    check(r.returncode == 0 and "only this host reads" not in r.stderr,
          r.stderr)
    ok(["next", "--format", spec, "--key-file", k1], d)
    r = frond(["next", "--format", spec, "--key-file", k2], d)
    check(r.returncode == 1 and "KEY_MISMATCH" in r.stderr and
          "frond_meta" in r.stderr, r.stderr)
    r = frond(["next", "--format", spec + ",rounds=10", "--key-file", k1], d)
    check(r.returncode == 1 and "KEY_MISMATCH" in r.stderr, r.stderr)
    out = lines(["next", "--format", "order:digits=19,key=2", "--key-file",
                 k2], d)
    check(out[0][0] == "2", "%r" % out)
    # Keeping no file changes nothing: the record is the store's.
    r = frond(["next", "--no-high-water", "--format", spec, "--key-file", k2],
              d)
    check(r.returncode == 1 and "KEY_MISMATCH" in r.stderr, r.stderr)
    # Nothing shared (no store: a static node ID): the data directory.
    alone = os.path.join(d, "alone")
    os.mkdir(alone)
    r = frond(["next", "--store", "none", "--format", spec, "--key-file", k1],
              alone)
    check(r.returncode == 0 and "only this host reads" in r.stderr, r.stderr)
    check(os.path.exists(os.path.join(
        alone, "frond-fact-key.order.d19.1.snowflake")), "no record file")
    r = frond(["next", "--store", "none", "--format", spec, "--key-file", k2],
              alone)
    check(r.returncode == 1 and "KEY_MISMATCH" in r.stderr and
          "frond-fact-key.order.d19.1.snowflake" in r.stderr, r.stderr)
    # A tag's IDs: the record is in the store, per tag.
    store = "sqlite://%s/ids.db" % d
    ok(["tag", "create", "shop", "--step", "50", "--store", store], d)
    args = ["next", "--format", "order:digits=10,key=1", "--segment",
            "shop", "--store", store, "--count", "5"]
    ok(args + ["--key-file", k1], d)
    r = frond(args + ["--key-file", k2], d)
    check(r.returncode == 1 and "KEY_MISMATCH" in r.stderr and
          "frond_meta" in r.stderr and 'tag \"shop\"' in r.stderr,
          r.stderr)
    shutil.rmtree(d)


# ---------------------------------------------------------------- seq

def test_daily_sequence():
    d = ft.tempdir()
    store = "sqlite://%s/ids.db" % d
    ok(["tag", "create", "orders", "--step", "100", "--store", store], d)
    spec = "seq:tag=orders,period=day,digits=6,check=damm,tz=Asia/Tokyo"
    out = lines(["next", "--format", spec, "--store", store, "--count",
                 "250"], d)
    day = out[0][:8]
    check([s[8:14] for s in out] == ["%06d" % i for i in range(1, 251)],
          "sequence: %r" % out[:3])
    more = lines(["next", "--format", spec, "--store", store], d)
    check(more[0][:8] == day and int(more[0][8:14]) > 250,
          "a second run repeated or restarted: %r" % more)
    rows = decode(out[:3], d, ["--format", spec])
    check(rows[0]["tag"] == "orders:" + day and rows[0]["sequence"] == "1"
          and rows[0]["period"] == day, "seq decode: %r" % rows[0])
    r = ok(["tag", "get", "orders:" + day, "--store", store, "--json"], d)
    check(json.loads(r)["step"] == 100, "period row: %s" % r)
    r = frond(["next", "--format", "seq:tag=nosuch,digits=6", "--store",
               store], d)
    check(r.returncode == 1 and "TAG_NOT_FOUND" in r.stderr and
          "frond tag create nosuch" in r.stderr, r.stderr)
    shutil.rmtree(d)


def test_decode_shapes_and_errors():
    d = ft.tempdir()
    # Decimal IDs as long as a base62 (11) or base32 (13) string are still
    # decimal IDs, printed as they always were.
    for s in ("12345678901", "1234567890123"):
        [v] = decode([s], d)
        check(v["id"] == s and "format" not in v, "decimal %s: %r" % (s, v))
    r = frond(["decode", "017F22E2-79B0-1CC3-98C4-DC0C0C07398F"], d)
    check(r.returncode == 2 and "version 1" in r.stderr, r.stderr)
    r = frond(["decode", "zzzzzzzzzzz"], d)
    check(r.returncode == 2 and "too large" in r.stderr, r.stderr)
    r = frond(["decode"], d, input="01ARYZ6S41TSV4RRFFQ69G5FAV\n"
              "507f1f77bcf86cd799439011\nnot-an-id\n")
    got = [json.loads(x)["format"] for x in r.stdout.splitlines()]
    check(r.returncode == 2 and got == ["ulid", "objectid"] and
          "line 3" in r.stderr, "stdin: %r %r" % (got, r.stderr))
    shutil.rmtree(d)


if __name__ == "__main__":
    ft.main([test_rfc9562_example, test_uuid7_by_python, test_ulid_by_npm,
             test_objectid_by_bson, test_node_scoped_by_python_and_bson,
             test_base62_base32_sort_like_numbers,
             test_js_layout_safe_in_javascript, test_order_numbers,
             test_key_errors, test_order_key_checked,
             test_order_from_segment_with_date_prefix,
             test_daily_sequence, test_decode_shapes_and_errors])
