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
from etcd_common import ETCD_FAST, Etcd  # noqa: E402
from regions_common import (check_datacenters, refused,  # noqa: E402
                            run_regions, where_seen)


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
            # frond check counts the range, not the layout's 1,024.
            row = check_node_row(a, layout)
            ft.check(row.startswith("FAIL node") and "NODE_RANGE" in row
                     and "4 of the 4 node IDs the range serves (0..3)" in
                     row, "check on a full range: %s" % row)
        finally:
            for t in held:
                t.close()
        refused(zk.uri(extra="nodes=4-7&" + ft.ZK_FAST),
                "DATACENTER_MISMATCH", layout=layout)


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


# Leases that outlast a loaded machine's stalls: these tests ask where node
# IDs come from, not what a lost lease does (a node whose 1.5 s lease ran
# out while PostgreSQL was slow stopped with NODE_ID_LOST mid-test). No
# node here takes an ID another node held.
STEADY = "lease_ms=20000&report_ms=200"


def test_lease_datacenters():
    a, b = Lease("sqlite"), Lease("sqlite")
    try:
        check_datacenters([a.uri("datacenter=%d&" + STEADY),
                           b.uri("datacenter=%d&" + STEADY)])
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
        extra = "datacenter=%d&" + STEADY
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


def check_node_row(uri, layout="twitter", advertise=None):
    """frond check's node row for a server on uri."""
    d = ft.tempdir()
    r = ft.run(["check", "--store", "none", "--layout", layout,
                "--coordinator", uri, "--listen",
                "127.0.0.1:%d" % ft.free_port(), "--resp-listen", "off",
                "--data-dir", d] +
               (["--advertise", advertise] if advertise else []), cwd=d)
    line = [x for x in r.stdout.splitlines() if x.split()[1:2] == ["node"]]
    ft.check(line, "no node row: %s %s" % (r.stdout, r.stderr))
    return line[0]


def check_agrees_with_start(name, uri_of, free):
    """Eight holders without a cap take 0..7; the holders of 3 and 5 stop.
    Under nodes=4, frond check's node row says what a start then does,
    for a new identity and for the one that held 5 (outside the cap):
    on the lease both take node 3 (its row is free once not live); on
    ZooKeeper and etcd none is free (a used number goes to another
    identity only through retention_ms, and ZooKeeper's sequence names
    the old holder by 5)."""
    ips = ["10.6.0.%d" % (k + 1) for k in range(8)]
    held = [Tool(uri_of(""), ip=ip, layout="twitter") for ip in ips]
    try:
        ft.check(sorted(t.node for t in held) == list(range(8)),
                 "%s: %s" % (name, [t.first for t in held]))
        old = {t.node: t for t in held}
        old[3].close()
        old[5].close()
        for ip in ("10.9.9.9", ips[held.index(old[5])]):
            row = check_node_row(uri_of("nodes=4&"),
                                 advertise="%s:8080" % ip)
            s = Tool(uri_of("nodes=4&"), ip=ip, layout="twitter")
            if s.ok:
                s.close()
            ft.check(row.startswith("ok   node") == s.ok == free and
                     (s.ok and s.node == 3 or not s.ok and
                      "NODE_RANGE" in row and s.first[:2] ==
                      ["err", "NODE_RANGE"]),
                     "%s, identity %s: check says %s; the start %s" %
                     (name, ip, row, " ".join(s.first)))
    finally:
        for t in held:
            if t.p.poll() is None:
                t.close()


def test_check_counts_the_cap():
    """Holders above a nodes=4 cap (servers without it, on one store)
    take nothing from it; what a used number takes differs by driver."""
    a = Lease("sqlite")
    try:
        check_agrees_with_start("lease", lambda q: a.uri(
            q + "lease_ms=1500&report_ms=200"), True)
    finally:
        a.close()
    with ft.start_server("zookeeper") as zk:
        check_agrees_with_start("zookeeper", lambda q: zk.uri(
            extra=q + ft.ZK_FAST), False)
    with Etcd(1) as etcd:
        check_agrees_with_start("etcd", lambda q: etcd.uri(
            extra=q + ETCD_FAST), False)


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
    ft.main([test_config_refusals, test_lease_ranges, test_check_counts_the_cap,
             test_lease_datacenters,
             test_postgresql_datacenters, test_mariadb_datacenters,
             test_where_seen_lease, test_where_seen_zk, test_zk_datacenters,
             test_zk_ranges])
