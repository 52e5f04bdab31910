#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_coord_regions_safety.py -- the ways a region's settings could map
one node ID onto two holders, each refused: a ZooKeeper cluster that
handed out numbers before regions (its numbers were node IDs of the whole
range) taking datacenter=N; a cache file written under another range;
a node that does not know ranges on a region's cluster (it reads only the
layout record); a layout change that moves what datacenter=N means; the
floor of a layout change and `frond node list` read under a range the
coordinator does not record; a static node ID with a datacenter; a
refused node that leaves its range recorded.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from coord_common import Tool, zk_tool  # noqa: E402

L = "time=41,dc=2,worker=2,seq=18"  # four workers per datacenter
SEQ_BITS = 18


def refused(uri, code, layout=L, ip="10.9.9.9", **kw):
    t = Tool(uri, ip=ip, layout=layout, **kw)
    if t.ok:
        t.close()
    ft.check(t.first[:2] == ["err", code], "%s: want %s, got %s"
             % (uri, code, " ".join(t.first)))
    return " ".join(t.first)


def dc_uri(zk, name, dc):
    return zk.uri(name=name, extra="datacenter=%d&%s" % (dc, ft.ZK_FAST))


@ft.with_server("zookeeper")
def test_zk_cluster_used_before_regions(zk):
    """Numbers handed out with no range recorded (nodes before regions,
    or Leaf) were node IDs of the whole range: the cluster is recorded as
    serving the whole range, and datacenter=1 is refused there."""
    forever = "/snowflake/old/forever/10.0.0.%d:8080-"
    for k in range(1, 6):
        zk_tool(zk, "leaf", forever % k,
                '{"ip":"10.0.0.%d","port":"8080","timestamp":1}' % k)
    # 10.0.0.1 held number 0: under datacenter=1 that would be node 4,
    # which 10.0.0.5 holds.
    msg = refused(dc_uri(zk, "old", 1), "DATACENTER_MISMATCH", ip="10.0.0.1")
    ft.check("before regions" in msg and "new cluster" in msg, msg)
    rec = zk_tool(zk, "get", "/snowflake/old/facts/node_scope").strip()
    ft.check(rec == "all", "recorded %r" % rec)
    # The fleet's own settings still start, under the mapping it used.
    t = Tool(zk.uri(name="old"), ip="10.0.0.5", layout=L)
    try:
        ft.check(t.ok and t.node == 4, "old identity: %s" % t.first)
    finally:
        t.close()
    # A new cluster name takes the region.
    t = Tool(dc_uri(zk, "region-b", 1), ip="10.0.0.1", layout=L)
    try:
        ft.check(t.ok and t.node == 4, "new cluster: %s" % t.first)
    finally:
        t.close()


@ft.with_server("zookeeper")
def test_zk_cache_from_another_range(zk):
    """Node ID 4, cached under the whole range, is not reused under
    datacenter=1 (nodes 4-7) while ZooKeeper is down: there it is the
    number of another identity."""
    cache = ft.tempdir("frond-cache-")
    try:
        for k in range(1, 6):
            t = Tool(zk.uri(name="c"), ip="10.0.0.%d" % k, layout=L,
                     cache=cache)
            ft.check(t.ok, t.first)
            t.next()
            t.close()
        zk.stop()
        msg = refused(dc_uri(zk, "c", 1), "DATACENTER_MISMATCH",
                      ip="10.0.0.5", cache=cache)
        ft.check("cache file" in msg and "datacenter=1" in msg, msg)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def frond(*args):
    return subprocess.run([ft.FROND_BIN] + list(args), capture_output=True,
                          text=True, timeout=60)


def record_spec(zk, name):
    text = zk_tool(zk, "get", "/snowflake/%s/layout" % name)
    return [x[5:] for x in text.splitlines() if x.startswith("spec=")][0]


@ft.with_server("zookeeper")
def test_zk_region_refuses_nodes_without_ranges(zk):
    """A node that does not know ranges checks only the layout record, byte
    for byte: a region's record carries its range, so such a node finds
    another layout there and is refused (LAYOUT_MISMATCH), instead of
    reading its number as a node ID of the whole range. A cluster serving
    the whole range keeps the plain record Leaf-era nodes share."""
    b = Tool(dc_uri(zk, "b", 1), ip="10.1.0.1", layout=L)
    try:
        ft.check(b.ok and b.node == 4, b.first)
        spec = record_spec(zk, "b")
        ft.check(spec.startswith("time=41,dc=2,worker=2,seq=18,") and
                 spec.endswith(";datacenter=1"), "record %r" % spec)
    finally:
        b.close()
    a = Tool(zk.uri(name="a"), ip="10.0.0.1", layout=L)
    try:
        ft.check(a.ok and ";" not in record_spec(zk, "a"),
                 record_spec(zk, "a"))
    finally:
        a.close()


@ft.with_server("zookeeper")
def test_zk_layout_change_keeps_the_range(zk):
    """`frond node layout --set` on a region's cluster: a new dc/worker
    split would move what datacenter=0 means onto another region's node
    IDs, so it is refused, from the region's URI and from a bare one; a
    change that keeps the split keeps the range in the record."""
    ua = dc_uri(zk, "a", 0)
    t = Tool(ua, ip="10.0.0.1", layout=L)
    ft.check(t.ok, t.first)
    t.close()
    for uri in (ua, zk.uri(name="a", extra=ft.ZK_FAST)):
        r = frond("node", "layout", "--coordinator", uri, "--set",
                  "time=41,dc=1,worker=3,seq=18")
        ft.check(r.returncode == 1 and "DATACENTER_MISMATCH" in r.stderr and
                 "every region" in r.stderr, "%s: %d %s"
                 % (uri, r.returncode, r.stderr))
    r = frond("node", "layout", "--coordinator", ua, "--set",
              "time=40,dc=2,worker=2,seq=19")
    ft.check(r.returncode == 0, r.stderr)
    spec = record_spec(zk, "a")
    ft.check(spec.startswith("time=40,dc=2,worker=2,seq=19,") and
             spec.endswith(";datacenter=0"), "record %r" % spec)


@ft.with_server("zookeeper")
def test_zk_node_list_compares_the_range(zk):
    """`frond node list` reads ZooKeeper's numbers under the range the
    cluster records: a URI naming another is refused, naming both; a bare
    URI reads the recorded one."""
    ub = dc_uri(zk, "b", 1)
    t = Tool(ub, ip="10.1.0.1", layout=L)
    try:
        ft.check(t.ok and t.node == 4, t.first)
        r = frond("node", "list", "--json", "--coordinator",
                  dc_uri(zk, "b", 0))
        ft.check(r.returncode == 1 and "DATACENTER_MISMATCH" in r.stderr and
                 "datacenter=0" in r.stderr and "datacenter=1" in r.stderr,
                 "%d %s %s" % (r.returncode, r.stdout, r.stderr))
        for uri in (ub, zk.uri(name="b", extra=ft.ZK_FAST)):
            r = frond("node", "list", "--json", "--coordinator", uri)
            ft.check(r.returncode == 0 and '"node": 4' in r.stdout.replace(
                '"node":4', '"node": 4'), "%s: %s %s"
                % (uri, r.stdout, r.stderr))
    finally:
        t.close()


@ft.with_server("zookeeper")
def test_zk_refused_node_records_nothing(zk):
    """A node refused for its layout leaves no range recorded: a mistyped
    datacenter on a new cluster does not lock it."""
    r = frond("node", "layout", "--coordinator",
              zk.uri(name="n", extra=ft.ZK_FAST), "--set", L)
    ft.check(r.returncode == 0, r.stderr)
    refused(dc_uri(zk, "n", 3), "LAYOUT_MISMATCH",
            layout="time=41,dc=3,worker=1,seq=18")
    t = Tool(zk.uri(name="n"), ip="10.0.0.1", layout=L)
    try:
        ft.check(t.ok and t.node == 0, t.first)
    finally:
        t.close()


def test_static_node_with_datacenter():
    """A static node ID names its node itself: with a datacenter it is a
    CONFIG error, with or without a store (where it would be a pinned
    lease that records the datacenter)."""
    d = ft.tempdir()
    try:
        for store in (["--store", "sqlite:%s/f.db" % d], []):
            r = frond("serve", "--print-config", "--data-dir", d, "--node",
                      "5", "--datacenter", "0", *store)
            ft.check(r.returncode == 1 and "CONFIG" in r.stderr and
                     "static node ID" in r.stderr, "%s: %d %s"
                     % (store, r.returncode, r.stderr))
    finally:
        shutil.rmtree(d, ignore_errors=True)


TESTS = [test_zk_cluster_used_before_regions, test_zk_cache_from_another_range,
         test_zk_region_refuses_nodes_without_ranges,
         test_zk_layout_change_keeps_the_range,
         test_zk_node_list_compares_the_range,
         test_zk_refused_node_records_nothing, test_static_node_with_datacenter]

if __name__ == "__main__":
    ft.tool("coord_tool")
    ft.main(TESTS)
