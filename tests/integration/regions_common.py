# SPDX-License-Identifier: Apache-2.0
"""
regions_common.py -- what the region suites share (test_coord_regions.py,
test_coord_etcd.py): nodes started on two regions' coordinators, their
IDs collected and checked (none repeated, each node's ID carrying its
region's datacenter), a start refused with a given code, and what an
operator sees of a region's coordinator (/v1/layout, frond node list,
frond check).
"""
import frondtest as ft
from coord_common import Tool

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
