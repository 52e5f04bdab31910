#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_coord_regions.py -- regions, each with a coordinator of its own:
datacenter=N (a layout with dc bits) and nodes=a-b on two ZooKeepers and
two lease databases (SQLite files; PostgreSQL and MariaDB, two databases
on one server). IDs collected from every node of both regions never
repeat, each node's ID carries its region's datacenter, and a node
started with the other region's settings (or none) is refused with
DATACENTER_MISMATCH, the record both coordinators keep.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from coord_common import Lease, Tool  # noqa: E402

DC_LAYOUT = "time=41,dc=5,worker=5,seq=12"
SEQ_BITS, WORKER_BITS = 12, 5


def node_of(i):
    return (i >> SEQ_BITS) & 1023


def run_regions(uris, per_region=3, ids_each=200, layout=DC_LAYOUT):
    """Start per_region nodes on each URI, collect IDs from all: the IDs
    and {region index: [node IDs]}."""
    tools, nodes, ids = [], {}, []
    try:
        for r, uri in enumerate(uris):
            for k in range(per_region):
                t = Tool(uri, ip="10.%d.0.%d" % (r, k + 1), layout=layout)
                tools.append(t)
                ft.check(t.ok, "region %d node %d: %s" % (r, k, t.first))
                nodes.setdefault(r, []).append(t.node)
        for t in tools:
            for _ in range(ids_each):
                i = t.next()[0]
                ft.check(node_of(i) == t.node,
                         "ID %d carries node %d, the node holds %d"
                         % (i, node_of(i), t.node))
                ids.append(i)
    finally:
        for t in tools:
            t.close()
    ft.check(len(ids) == len(set(ids)), "%d duplicate IDs across regions"
             % (len(ids) - len(set(ids))))
    return ids, nodes


def refused(uri, code, layout=DC_LAYOUT, ip="10.9.9.9"):
    t = Tool(uri, ip=ip, layout=layout)
    if t.ok:
        t.close()
    ft.check(t.first[:2] == ["err", code], "%s: want %s, got %s"
             % (uri, code, " ".join(t.first)))
    return " ".join(t.first)


def check_datacenters(uris):
    ids, nodes = run_regions([u % dc for dc, u in enumerate(uris)])
    for dc in (0, 1):
        for n in nodes[dc]:
            ft.check(n >> WORKER_BITS == dc, "region %d got node %d "
                     "(datacenter %d)" % (dc, n, n >> WORKER_BITS))
    ft.check(sorted(nodes[0]) == [0, 1, 2] and
             sorted(nodes[1]) == [32, 33, 34], "node IDs %s" % nodes)
    print("datacenters 0 and 1: %d IDs from %d nodes, none repeated"
          % (len(ids), sum(len(v) for v in nodes.values())))
    # Region 0's coordinator recorded datacenter=0: region 1's settings,
    # and none at all, are refused there, naming both sides.
    msg = refused(uris[0] % 1, "DATACENTER_MISMATCH")
    ft.check("datacenter=1" in msg and "datacenter=0" in msg,
             "the refusal names both sides: %s" % msg)
    no_dc = uris[0].replace("datacenter=%d&", "")
    msg = refused(no_dc, "DATACENTER_MISMATCH")
    ft.check("whole node range" in msg, "names the missing one: %s" % msg)


@ft.with_server("zookeeper")
def test_zk_datacenters(zk):
    with ft.start_server("zookeeper") as zk2:
        check_datacenters([zk.uri(extra="datacenter=%d&" + ft.ZK_FAST),
                           zk2.uri(extra="datacenter=%d&" + ft.ZK_FAST)])


@ft.with_server("zookeeper")
def test_zk_ranges(zk):
    with ft.start_server("zookeeper") as zk2:
        a = zk.uri(extra="nodes=0-3&" + ft.ZK_FAST)
        b = zk2.uri(extra="nodes=4-7&" + ft.ZK_FAST)
        layout = "twitter"
        ids, nodes = run_regions([a, b], per_region=4, layout=layout)
        ft.check(sorted(nodes[0]) == [0, 1, 2, 3] and
                 sorted(nodes[1]) == [4, 5, 6, 7], "node IDs %s" % nodes)
        print("nodes=0-3 and nodes=4-7: %d IDs, none repeated" % len(ids))
        # A fifth node of a four-ID range, while the four are held.
        # The four identities that hold the range's numbers come back.
        held = [Tool(a, ip="10.0.0.%d" % k, layout=layout)
                for k in range(1, 5)]
        try:
            ft.check(all(t.ok for t in held), [t.first for t in held])
            refused(a, "NODE_RANGE", layout=layout)
        finally:
            for t in held:
                t.close()
        refused(zk.uri(extra="nodes=4-7&" + ft.ZK_FAST),
                "DATACENTER_MISMATCH", layout=layout)


def where_seen(uri, srv_args):
    """What an operator sees of a region's coordinator: /v1/layout of a
    node started with srv_args, frond node list and frond check."""
    import json
    s = ft.Server(extra=["--layout", "twitter", "--coordinator", uri] +
                  srv_args, store="none")
    try:
        st, body = ft.http_get(s.port, "/v1/layout")[:2]
        lay = json.loads(body)
        ft.check(lay["served"] == "datacenter=1" and
                 lay["served_nodes"] == [32, 63] and lay["node"] == 32,
                 "/v1/layout: %s" % body)
        r = ft.run(["node", "list", "--coordinator", uri])
        ft.check(r.returncode == 0 and r.stdout.splitlines()[0] ==
                 "serves datacenter=1: node IDs 32..63, as the coordinator "
                 "records" and "  32  127.0.0.1:%d" % s.port in r.stdout,
                 "node list: %s %s" % (r.stdout, r.stderr))
        r = ft.run(["node", "list", "--coordinator", uri, "--json"])
        rows = json.loads(r.stdout)
        ft.check([(e["node"], e["served"]) for e in rows] ==
                 [(32, "datacenter=1")], "node list --json: %s" % r.stdout)
        # Another region's datacenter: listed by the record, then refused.
        r = ft.run(["node", "list", "--coordinator", uri, "--datacenter", "2"])
        ft.check(r.returncode == 1 and "serves datacenter=1" in r.stdout and
                 "DATACENTER_MISMATCH" in r.stderr and "datacenter=2" in
                 r.stderr, "node list --datacenter 2: %s %s"
                 % (r.stdout, r.stderr))
        d = ft.tempdir()
        for dc, want in (("1", "ok   node "), ("0", "FAIL node        "
                                                  "DATACENTER_MISMATCH"),
                         ("-1", "FAIL node        DATACENTER_MISMATCH")):
            r = ft.run(["check", "--store", "none", "--layout", "twitter",
                        "--coordinator", uri, "--datacenter", dc,
                        "--listen", "127.0.0.1:%d" % ft.free_port(),
                        "--resp-listen", "off", "--data-dir", d], cwd=d)
            line = [x for x in r.stdout.splitlines()
                    if x.split()[1:2] == ["node"]]
            ft.check(line and line[0].startswith(want),
                     "check --datacenter %s: %s" % (dc, r.stdout))
            if dc == "1":
                ft.check("serves datacenter=1: node IDs 32..63" in
                         r.stdout, "the layout row: %s" % r.stdout)
            else:
                ft.check("records datacenter=1" in line[0] and
                         ("datacenter=0" in line[0] or "whole node range"
                          in line[0]), "names both: %s" % line[0])
    finally:
        s.stop()


def test_where_seen_lease():
    a = Lease("sqlite")
    try:
        where_seen(a.uri("lease_ms=1500&report_ms=200"), ["--datacenter", "1"])
    finally:
        a.close()


@ft.with_server("zookeeper")
def test_where_seen_zk(zk):
    # ZooKeeper keeps numbers: node list maps them by the record, with or
    # without datacenter= on its URI.
    where_seen(zk.uri(extra=ft.ZK_FAST), ["--datacenter", "1"])


def test_lease_datacenters():
    a, b = Lease("sqlite"), Lease("sqlite")
    try:
        check_datacenters([a.uri("datacenter=%d&lease_ms=1500&report_ms=200"),
                           b.uri("datacenter=%d&lease_ms=1500&report_ms=200")])
    finally:
        a.close()
        b.close()


def two_databases(kind):
    """Datacenters 0 and 1 on the lease, a database each on one server of
    kind (a region's database: its own, with its own frond_node and
    frond_meta)."""
    a = Lease(kind)
    try:
        a.db.sql("CREATE DATABASE region1")
        other = a.base.rsplit("/", 1)[0] + "/region1"
        extra = "datacenter=%d&lease_ms=1500&report_ms=200"
        check_datacenters(["lease+%s?%s" % (a.base, extra),
                           "lease+%s?%s" % (other, extra)])
    finally:
        a.close()


def test_postgresql_datacenters():
    two_databases("postgresql")


def test_mariadb_datacenters():
    two_databases("mariadb")


def test_lease_ranges():
    a = Lease("sqlite")
    try:
        uri = a.uri("nodes=4-5&lease_ms=1500&report_ms=200")
        ids, nodes = run_regions([uri], per_region=2, layout="twitter")
        ft.check(sorted(nodes[0]) == [4, 5], "node IDs %s" % nodes)
        held = [Tool(uri, ip="10.7.0.%d" % k, layout="twitter")
                for k in (1, 2)]
        try:
            refused(uri, "NODE_RANGE", layout="twitter")
        finally:
            for t in held:
                t.close()
    finally:
        a.close()


def test_config_refusals():
    a = Lease("sqlite")
    try:
        msg = refused(a.uri("datacenter=1"), "CONFIG",
                      layout="time=41,node=10,seq=12")
        ft.check("dc bits" in msg, msg)
        msg = refused(a.uri("datacenter=32"), "CONFIG")
        ft.check("0..31" in msg, msg)
        msg = refused(a.uri("nodes=1000-1024"), "CONFIG", layout="twitter")
        ft.check("1023" in msg, msg)
        refused(a.uri("nodes=5-4"), "INVAL", layout="twitter")
    finally:
        a.close()


if __name__ == "__main__":
    ft.tool("coord_tool")
    ft.main([test_config_refusals, test_lease_ranges, test_lease_datacenters,
             test_postgresql_datacenters, test_mariadb_datacenters,
             test_where_seen_lease, test_where_seen_zk, test_zk_datacenters,
             test_zk_ranges])
