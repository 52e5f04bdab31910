#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_coord_zk.py -- node IDs from a real ZooKeeper.

Each test starts its own throwaway ZooKeeper (frondtest.py, scripts/zk.sh)
on loopback and drives tests/tools/coord_tool (coord_common.Tool), which
opens the coordinator, acquires a node ID, runs a snowflake generator on it
and answers commands on stdin.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from coord_common import Tool, floor_after_cache_start, zk_tool  # noqa: E402

with_zk = ft.with_server("zookeeper")
FAST = ft.ZK_FAST


@with_zk
def test_five_processes_five_ids(zk):
    tools = [Tool(zk.uri(), ip="10.0.0.%d" % i) for i in range(1, 6)]
    try:
        ft.check(all(t.ok for t in tools),
                 "a node failed: %s" % [t.first for t in tools])
        nodes = sorted(t.node for t in tools)
        ft.check(len(set(nodes)) == 5, "node IDs not distinct: %s" % nodes)
        ft.check(nodes == [0, 1, 2, 3, 4], "Leaf numbering: %s" % nodes)
        ids = set()
        for t in tools:
            for _ in range(50):
                ids.add(t.next()[0])
        ft.check(len(ids) == 250, "duplicate IDs across nodes")
    finally:
        for t in tools:
            t.close()


@with_zk
def test_restart_keeps_id_and_order(zk):
    a = Tool(zk.uri(), ip="10.0.0.1", port=7000)
    ft.check(a.ok, "start: %s" % a.first)
    other = Tool(zk.uri(), ip="10.0.0.2", port=7000)
    last = a.next()[0]
    node = a.node
    a.close()
    b = Tool(zk.uri(), ip="10.0.0.1", port=7000)
    try:
        ft.check(b.ok and b.node == node,
                 "restart got %s, want node %d" % (b.first, node))
        ft.check(b.next()[0] > last, "IDs after a restart must increase")
    finally:
        b.close()
        other.close()


@with_zk
def test_same_ip_port_refused_while_alive(zk):
    a = Tool(zk.uri(), ip="10.0.0.9", port=9000)
    ft.check(a.ok, "first: %s" % a.first)
    b = Tool(zk.uri(), ip="10.0.0.9", port=9000)
    ft.check(not b.ok and b.first[:2] == ["err", "NODE_IN_USE"],
             "second process on the same ip:port: %s" % b.first)
    a.close()
    c = Tool(zk.uri(), ip="10.0.0.9", port=9000)
    try:
        ft.check(c.ok and c.node == a.node,
                 "after the first stopped: %s" % c.first)
    finally:
        c.close()


def cache_file(d):
    """The one node cache file in directory d, and its text."""
    names = [f for f in os.listdir(d) if f.endswith(".cache")]
    ft.check(len(names) == 1, "want one cache file in %s: %s" % (d, names))
    with open(os.path.join(d, names[0])) as f:
        return names[0], f.read()


@with_zk
def test_restart_from_cache_while_zk_down(zk):
    """ZooKeeper down at a restart: the node learns its ID from the cache
    and issues nothing until ZooKeeper is back (a later holder would not
    read a local file); then it claims its ID and issues above the fence."""
    cache = ft.tempdir("frond-cache-")
    a = Tool(zk.uri(), cache=cache)
    ft.check(a.ok and not a.from_cache, "start: %s" % a.first)
    for _ in range(1000):
        last, last_ms = a.next()
    time.sleep(0.5)  # a few fence writes
    a.kill()  # no clean stop: the cache holds the last fence sent
    name, text = cache_file(cache)
    ft.check("10.0.0.1_8080" in name, "cache name: %s" % name)
    cached = int([l for l in text.splitlines()
                  if l.startswith("high_water_ms=")][0].split("=")[1])
    ft.check("workerID=%d" % a.node in text, "cache: %s" % text)
    ft.check(cached > last_ms, "cached fence %d not above the last ID's "
             "time %d" % (cached, last_ms))
    zk.stop()
    b = Tool(zk.uri(), cache=cache)
    try:
        ft.check(b.ok and b.from_cache and b.node == a.node,
                 "restart from the cache: %s" % b.first)
        ft.check(b.start_hw >= cached, "starts above the cached fence")
        r = b.cmd("next").split()
        ft.check(r[:2] == ["err", "COORD"],
                 "issued from the cache alone: %s" % r)
        # ZooKeeper returns: the node claims its ID and issues above it.
        zk.start(zk.port)
        b.wait_state("OK", timeout=30)
        first, first_ms = b.next()
        ft.check(first_ms > cached,
                 "first ID time %d not above cached %d" % (first_ms, cached))
        ft.check(first > last, "first ID %d not above %d" % (first, last))
    finally:
        b.close()
        shutil.rmtree(cache, ignore_errors=True)


@with_zk
def test_layout_floor_after_cache_start(zk):
    """A layout changed and changed back while the node was stopped,
    ZooKeeper down at its restart: the first claim reads the floor."""
    cache = ft.tempdir("frond-cache-")
    try:
        floor_after_cache_start(zk.uri(), zk.stop,
                                lambda: zk.start(zk.port), cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


@with_zk
def test_clock_behind_stored_and_cached(zk):
    cache = zk.dir
    a = Tool(zk.uri(), cache=cache)
    ft.check(a.ok, "start: %s" % a.first)
    a.next()
    a.close()
    # Stored in ZooKeeper (no cache): an hour ahead of the clock.
    b = Tool(zk.uri(), faketime="-1h")
    ft.check(b.first[:2] == ["err", "CLOCK_BEHIND"],
             "stored time ahead: %s" % b.first)
    # Cached, ZooKeeper down: the cache fallback applies the same check.
    zk.stop()
    c = Tool(zk.uri(), cache=cache, faketime="-1h")
    ft.check(c.first[:2] == ["err", "CLOCK_BEHIND"],
             "cached time ahead: %s" % c.first)
    # And the real clock starts fine from the same cache.
    d = Tool(zk.uri(), cache=cache)
    ft.check(d.ok and d.from_cache, "real clock: %s" % d.first)
    d.close()


def stat(tool, key):
    s = tool.cmd("stats").split()
    return s[s.index(key) + 1]


@with_zk
def test_session_expiry_blocks_then_resumes(zk):
    """The session expires: the node takes its ID back on a new session by
    itself and goes on above what it issued."""
    a = Tool(zk.uri())
    ft.check(a.ok, "start: %s" % a.first)
    before = a.next()[0]
    ft.check(a.cmd("expire") == "ok", "could not expire the session")
    deadline = time.monotonic() + 45  # bounded; generous for a loaded host
    while int(stat(a, "regains")) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    ft.check(int(stat(a, "regains")) == 1, "never regained")
    a.wait_state("OK")
    after = a.next()[0]
    ft.check(after > before, "IDs after regaining must increase")
    a.close()


@with_zk
def test_expired_session_claim_taken_stays_blocked(zk):
    """While a node's session is gone, a second process on its ip:port takes
    the claim: the first must stay blocked until that one stops."""
    a = Tool(zk.uri(), ip="10.1.1.1")
    ft.check(a.ok, "start: %s" % a.first)
    os.kill(a.p.pid, signal.SIGSTOP)  # no reconnect while we expire it
    try:
        # session_ms=2000: ZooKeeper expires the session after about 2 s,
        # later on a loaded host; until then the claim is live and a
        # second process must be refused. Retry, bounded.
        time.sleep(3)
        deadline = time.monotonic() + 30
        while True:
            b = Tool(zk.uri(), ip="10.1.1.1")
            if b.ok or time.monotonic() > deadline:
                break
            ft.check(b.first[:2] == ["err", "NODE_IN_USE"],
                     "second, while the first's session lives: %s" % b.first)
            b.close()
            time.sleep(0.5)
        ft.check(b.ok and b.node == a.node, "second: %s" % b.first)
    finally:
        os.kill(a.p.pid, signal.SIGCONT)
    a.wait_state("NODE_ID_LOST")
    time.sleep(1)  # several regain attempts
    ft.check(a.cmd("state") == "state NODE_ID_LOST",
             "regained an ID that another live process holds")
    last_b = b.next()[0]
    b.close()
    a.wait_state("OK")
    ft.check(a.next()[0] > last_b, "regained ID must start above the other")
    a.close()


@with_zk
def test_reclaim_and_range(zk):
    # Reclaiming is off by default (as Leaf): a full range stays full.
    tiny = "time=41,node=1,seq=21"  # node IDs 0..1
    off = zk.uri("off")
    for i in range(2):
        t = Tool(off, ip="10.2.1.%d" % i, layout=tiny)
        ft.check(t.ok and t.node == i, "off: %s" % t.first)
        t.close()
    time.sleep(0.5)
    t = Tool(off, ip="10.2.1.9", layout=tiny)
    ft.check(t.first[:2] == ["err", "NODE_RANGE"] and
             "reclaiming is off" in " ".join(t.first),
             "reclaimed with retention 0: %s" % t.first)

    layout = "time=41,node=2,seq=20"  # node IDs 0..3
    uri = zk.uri(extra=FAST + "&retention_ms=1500")
    tools = [Tool(uri, ip="10.2.0.%d" % i, layout=layout) for i in range(4)]
    ft.check([t.node for t in tools] == [0, 1, 2, 3],
             "four IDs: %s" % [t.first for t in tools])
    last = {t.node: t.next()[0] for t in tools}
    late = Tool(uri, ip="10.2.0.9", layout=layout)
    ft.check(late.first[:2] == ["err", "NODE_RANGE"],
             "fifth while four live: %s" % late.first)
    for t in tools[:3]:
        t.close()
    early = Tool(uri, ip="10.2.0.9", layout=layout)
    ft.check(early.first[:2] == ["err", "NODE_RANGE"],
             "reclaimed before the retention: %s" % early.first)
    time.sleep(2)
    new = Tool(uri, ip="10.2.0.9", layout=layout)
    try:
        ft.check(new.ok and new.node in (0, 1, 2),
                 "reclaim after the retention: %s" % new.first)
        ft.check(new.next()[0] > last[new.node],
                 "reclaimed ID must start above its old high-water time")
        again = Tool(uri, ip="10.2.0.9", layout=layout)
        ft.check(again.first[:2] == ["err", "NODE_IN_USE"],
                 "reclaimed ID shared: %s" % again.first)
        listing = new.cmd("list")
        ft.check("10.2.0.9:8080" in listing and "10.2.0.3:8080" in listing,
                 "list: %s" % listing)
    finally:
        new.close()
        tools[3].close()


@with_zk
def test_leaf_layout_shared_with_leaf(zk):
    """Leaf's paths and data, and a cluster shared with a Leaf node."""
    forever = "/snowflake/mixed/forever"
    leaf_data = '{"ip":"10.5.0.1","port":"8080","timestamp":%d}' % (
        int(time.time() * 1000))
    made = zk_tool(zk, "leaf", forever + "/10.5.0.1:8080-", leaf_data)
    ft.check(made.strip() == forever + "/10.5.0.1:8080-0000000000",
             "Leaf's child: %s" % made)
    uri = zk.uri("mixed")
    b = Tool(uri, ip="10.5.0.2", port=8080)
    ft.check(b.ok and b.node == 1, "after Leaf's node 0: %s" % b.first)
    time.sleep(0.5)  # a report
    kids = dict(l.split(" ", 1) for l in
                zk_tool(zk, "ls", forever).splitlines())
    ft.check(set(kids) == {"10.5.0.1:8080-0000000000",
                           "10.5.0.2:8080-0000000001"}, "children: %s" % kids)
    data = json.loads(kids["10.5.0.2:8080-0000000001"])
    ft.check(data["ip"] == "10.5.0.2" and data["port"] == "8080" and
             isinstance(data["timestamp"], int) and
             abs(data["timestamp"] - time.time() * 1000) < 60000,
             "Leaf's data format: %s" % data)
    ft.check(zk_tool(zk, "stat", "/snowflake/mixed/claims/0000000001")
             .strip() == "ephemeral", "the claim is ephemeral")
    # Frond on Leaf's ip:port reuses Leaf's number, as Leaf would.
    a = Tool(uri, ip="10.5.0.1", port=8080)
    ft.check(a.ok and a.node == 0, "Leaf's ip:port: %s" % a.first)
    a.close()
    b.close()
    ft.check(zk_tool(zk, "stat", "/snowflake/mixed/claims/0000000001")
             .strip() == "none", "a clean stop releases the claim")


@with_zk
def test_regain_after_child_recreated_at_our_version(zk):
    """Another holder of our identity reclaims our number while our session
    is gone: the child is created again and written up to the version we
    last wrote. The regain must still start above its fence: before, the
    equal version read as "nobody held it" and 12,256 of 17,584 IDs landed
    at or below the other holder's fence."""
    r = subprocess.run([ft.tool("zk_regain"), zk.address, "regain"],
                       capture_output=True, text=True, timeout=120)
    ft.check(r.returncode == 0, "zk_regain: %s" % r.stderr)
    words = r.stdout.split()
    ft.check(len(words) == 6 and words[0] == "issued", r.stdout)
    issued, below = int(words[1]), int(words[3])
    ft.check(issued > 0, "no ID after the regain: %s" % r.stdout)
    ft.check(below == 0, "%d of %d IDs at or below the other holder's "
             "fence %s" % (below, issued, words[5]))


def test_node_above_range():
    t = Tool("static:2000")
    ft.check(t.first[:2] == ["err", "NODE_RANGE"], "static:2000: %s" % t.first)
    t = Tool("static:3", layout="time=41,node=2,seq=20")
    ft.check(t.ok and t.node == 3, "static:3 in 2 bits: %s" % t.first)
    t.close()


if __name__ == "__main__":
    ft.tool("coord_tool")
    ft.tool("zk_tool")
    ft.tool("zk_regain")
    ft.main([test_node_above_range,
             test_five_processes_five_ids,
             test_restart_keeps_id_and_order,
             test_leaf_layout_shared_with_leaf,
             test_same_ip_port_refused_while_alive,
             test_restart_from_cache_while_zk_down,
             test_layout_floor_after_cache_start,
             test_clock_behind_stored_and_cached,
             test_session_expiry_blocks_then_resumes,
             test_expired_session_claim_taken_stays_blocked,
             test_reclaim_and_range,
             test_regain_after_child_recreated_at_our_version])
