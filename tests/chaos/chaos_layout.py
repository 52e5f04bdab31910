# SPDX-License-Identifier: Apache-2.0
"""
chaos_layout.py -- chaos.py's layout scenario: a fleet under ZooKeeper
(or etcd: chaos_etcd.py's etcd-layout) changes its layout while loaded;
a node alone under another layout, and a change while nodes run, are
refused; after the procedure every new ID is above the fleet's old ones
(the floor).

chaos.py lists it in its place (scenario(module)); it uses chaos.py's
helpers, which chaos.py passes in.
"""
import time

m = None  # chaos.py, set by scenario()

# The two shapes the layout scenario alternates: (time, node, seq) bits,
# 1 ms units. The node bits move, so other nodes' old IDs are protected
# only by the floor.
SHAPES = ((41, 10, 12), (42, 10, 11))


def scenario(module, coord="zk"):
    """The layout scenario on coord ("zk" or "etcd"), with chaos.py's
    module for its helpers."""
    global m
    m = module
    if coord == "zk":
        return layout

    def on_coord(run):
        return layout(run, coord)
    on_coord.__doc__ = layout.__doc__.replace("under ZooKeeper",
                                              "under " + coord)
    return on_coord


def shape_spec(shape, epoch_ms):
    return "time=%d,node=%d,seq=%d,unit=1ms,epoch=%d" % (
        SHAPES[shape] + (epoch_ms,))


def lagging(shape, epoch_ms, lag_ms):
    """The other shape, with the epoch that makes its IDs reach those of
    `shape` at epoch_ms of now only lag_ms from now: (shape, epoch_ms).
    Until then it issues IDs the old layout issued in the last seconds."""
    other = 1 - shape
    now = int(time.time() * 1000)
    old_bits = SHAPES[shape][1] + SHAPES[shape][2]
    new_bits = SHAPES[other][1] + SHAPES[other][2]
    return other, now + lag_ms - (((now - epoch_ms) << old_bits) >> new_bits)


def alone(run, node, name, why):
    """Restart a node of a coordinated fleet alone under layout `name`: it
    must be refused with LAYOUT_MISMATCH. Then start it under its own."""
    own = node.layout
    node.stop()
    node.layout = name
    if node.start(timeout=15, retry=False, expect_refusal=True):
        run.fault(1, "%s started alone under %s (%s)" % (node.label, name,
                                                          why))
        node.stop()
    else:
        code = node.refusal()
        node.refusals[code] -= 1  # expected: not counted below
        if code != "LAYOUT_MISMATCH":
            run.fault(1, "%s alone under %s (%s): refused with %s, not "
                      "LAYOUT_MISMATCH" % (node.label, name, why, code))
    node.layout = own
    if not node.start(timeout=15):
        run.fault(1, "%s did not start again under %s" % (node.label, own))


def layout(run, coord="zk"):
    """A fleet under ZooKeeper changes its layout. A node restarted alone
    under another layout is refused (LAYOUT_MISMATCH), and so is 'frond
    node layout --set' while nodes run (NODE_IN_USE). Then the procedure:
    every node stopped, the new layout set, every node started under it.
    The new layout moves the node bits and its epoch so that its IDs reach
    the fleet's last ones only 3 s after the change (until then they are
    IDs the fleet issued in the seconds before): the fleet's new IDs must
    all be above its old ones (the floor), each node answering within
    3 + 5 s of the change; a node alone under the old layout is then
    refused. A node
    with a static node ID (its high-water file, registered nowhere on
    purpose) changes with the fleet, asked for with --layout-change, and
    must issue above its own old IDs."""
    lag = 3000
    shape, epoch = 0, m.FROND_EPOCH_MS
    run.layouts["L0"] = shape_spec(shape, epoch)
    f = m.Fleet(run, coord, layout="L0")
    coordinated = list(f.nodes)
    static = f.add_node("s0", coord="static:7?unregistered=1",
                        extra=["--layout-change"])
    m.start_all(f)
    # Batches of 4096: whole milliseconds of sequence numbers, so that the
    # new layout's IDs would meet them.
    load = m.Load(run, "main", sum((m.mixed(n) for n in f.nodes), []) +
                  m.bursts(f.nodes, 4096, pause_us=50000),
                  seconds=3600, max_ids=m.MAX_IDS)
    bound = lag / 1000.0 + 5
    took, static_refused = [], {}
    for i, t in m.cycles(run, 3, 13, 1):
        old, name = "L%d" % i, "L%d" % (i + 1)
        run.layouts[name + "x"] = shape_spec(*lagging(shape, epoch, lag))
        alone(run, coordinated[i % 3], name + "x", "before the change")
        r = f.node_cli("layout", "--set", run.layouts[name + "x"])
        if r.returncode == 0 or "NODE_IN_USE" not in r.stderr:
            run.fault(1, "layout --set with nodes running: exit %d, %s" % (
                r.returncode, (r.stderr or r.stdout).strip()[:200]))
        r = f.node_cli("layout")
        if ("layout %s\n" % run.layouts[old]) not in r.stdout:
            run.fault(1, "the fleet's layout is not %s after a refused "
                      "change: %s" % (old, (r.stdout + r.stderr).strip()))
        # The procedure.
        for n in f.nodes:
            n.p.terminate()
        for n in f.nodes:
            n.stop(signalled=True)
        run.barriers.append((time.monotonic_ns(), [n.label for n in coordinated]))
        to = lagging(shape, epoch, lag)
        r = f.node_cli("layout", "--set", shape_spec(*to))
        changed = r.returncode == 0
        if changed:
            shape, epoch = to
            run.log("layout set: %s" % " ".join(r.stdout.split()))
        else:
            run.fault(1, "layout --set with no node running: %s" %
                      r.stderr.strip()[:300])
        run.layouts[name] = shape_spec(shape, epoch)  # or the old one
        since = time.monotonic()
        before = {n.label: sum(n.refusals.values()) for n in coordinated}
        for n in f.nodes:
            n.layout = name
        for n in coordinated:
            took.append(m.back_within(run, n, since, bound,
                                    "the layout change"))
        refused = sum(sum(n.refusals.values()) - before[n.label]
                      for n in coordinated)
        run.fault(refused, "%d starts refused under the new layout" %
                  refused)
        # Its own high-water file may put its start further ahead than a
        # restart waits: LAYOUT_INVALID until the clock is near enough.
        k = dict(static.refusals)
        if not static.start(timeout=15):
            run.fault(1, "s0 did not start under %s" % name)
        for code, v in static.refusals.items():
            static_refused[code] = static_refused.get(code, 0) + v - \
                k.get(code, 0)
        if changed:
            alone(run, coordinated[(i + 1) % 3], old, "after the change")
        run.sleep_until(t + 11)
    m.note_times(run, "after the layout change", took, bound)
    for code, v in sorted(static_refused.items()):
        if code == "LAYOUT_INVALID":
            run.notes.append("s0 refused %d times with LAYOUT_INVALID while "
                             "its new start was too far ahead" % v)
        else:
            run.fault(v, "s0 refused %d times with %s" % (v, code))
    m.finish(run, f, load)
    return f
