#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
test_layers.py -- dependencies run one way: base <- store <- core <- coord
<- server <- cli.

Each folder of src/ is a layer; a file may include and call files of its
own layer and of the layers below it, never of one above:

    base    errors, log, clock, numbers, text, files
    store   the segment store and the SQL layer
    core    generators, layout, decode, high-water file, formats
    coord   coordinators (node IDs and fences)
    server  the event loops and the protocols
    cli     the frond command (it runs the server)

The test reads every `#include "..."` of src/ and, for every object file
built from src/, `nm`'s list of the global symbols it defines and uses: a
use of a symbol another file defines is an edge from the user to the
definer. It fails when

  - a folder of src/ is not a layer of the map,
  - an include or a call runs from a lower layer to a higher one,
  - two or more files call one another in a circle (in any folder), or
    headers include one another in a circle.

The Python tests keep a rule of the same kind: no test imports another
(test_*.py); what tests share lives in frondtest.py, the fixtures, and
in the *_common.py helpers.

Every offending include, call and circle is named. On success the files
are printed bottom to top, the order in which they may be read. When a
lower piece needs something from above, it is passed in (a function
pointer, a table), never called by name.

    test_layers.py             the source and build trees of ctest
    FROND_SRC=... FROND_BUILD=... test_layers.py   another tree
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

LAYERS = ["base", "store", "core", "coord", "server", "cli"]
RANK = {name: i for i, name in enumerate(LAYERS)}
INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')


def layer(path):
    """The layer of a path relative to the tree ("src/core/x.c": core)."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "src" else None


def sources(root):
    """Every .c and .h under src/, relative to root."""
    found = []
    for ext in ("c", "h"):
        found += glob.glob(os.path.join(root, "src", "**", "*." + ext),
                           recursive=True)
    return sorted(os.path.relpath(p, root) for p in found)


def objects(build):
    """{source path relative to the tree: object file}, one object per
    source under src/ that still exists (a source built into several
    targets is the same code; a moved source leaves its old object
    behind)."""
    found = {}
    for obj in glob.glob(os.path.join(build, "CMakeFiles", "*.dir", "**",
                                      "*.o"), recursive=True):
        rel = obj.split(".dir" + os.sep, 1)[1][:-len(".o")]
        if rel.startswith("src/") and os.path.exists(
                os.path.join(ft.FROND_SRC, rel)):
            found.setdefault(rel, obj)
    return found


def symbols(obj):
    """(defined, used) global symbol names of an object file."""
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True,
                         check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, used


def call_graph(objs):
    """{file: {file it uses: a symbol it uses there}}."""
    owner, uses = {}, {}
    for src, obj in objs.items():
        defined, used = symbols(obj)
        for name in defined:
            owner[name] = src
        uses[src] = used
    graph = {src: {} for src in objs}
    for src, used in uses.items():
        for name in sorted(used):
            dst = owner.get(name)
            if dst is not None and dst != src:
                graph[src].setdefault(dst, name)
    return graph


def include_graph(root, files):
    """{file: {file it includes: the #include line}} for the files (paths
    relative to root); an include resolves against src/ as the build
    does."""
    graph = {}
    for rel in files:
        graph[rel] = {}
        with open(os.path.join(root, rel)) as fh:
            for line in fh:
                m = INCLUDE.match(line)
                if m:
                    inc = "src/" + m.group(1)
                    if os.path.exists(os.path.join(root, inc)):
                        graph[rel][inc] = line.strip()
    return graph


def upward(graph):
    """The edges that run from a lower layer to a higher one, or leave or
    enter a folder outside the map: [(from, to, what)]."""
    bad = []
    for a in sorted(graph):
        for b, what in sorted(graph[a].items()):
            la, lb = layer(a), layer(b)
            if la not in RANK or lb not in RANK or RANK[lb] > RANK[la]:
                bad.append((a, b, what))
    return bad


def find_cycle(graph):
    """A list of nodes [a, b, ..., a] forming a circle, or None."""
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, {})):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                c = visit(d)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def all_cycles(graph):
    """One circle per group of files that reach one another, found by
    removing each circle's first edge and looking again."""
    g = {a: dict(b) for a, b in graph.items()}
    found = []
    for _ in range(100):
        c = find_cycle(g)
        if c is None:
            break
        found.append((c, " -> ".join("%s (%s)" % (a, graph[a][b])
                                     for a, b in zip(c, c[1:])) +
                      " -> " + c[-1]))
        del g[c[0]][c[1]]
    return found


def layers(graph):
    """The nodes by level: level 0 uses nothing, level k uses level < k."""
    level = {}

    def depth(n):
        if n not in level:
            level[n] = 0
            level[n] = 1 + max([depth(d) for d in graph[n]] or [-1])
        return level[n]

    for n in graph:
        depth(n)
    out = {}
    for n, k in level.items():
        out.setdefault(k, []).append(n)
    return [sorted(out[k]) for k in sorted(out)]


def test_detector_finds_what_it_should():
    """The checks can fail: a made-up circle and a made-up call upwards are
    found; a line, and calls downwards and sideways, are not."""
    g = {"a.c": {"b.c": "f"}, "b.c": {"c.c": "g"}, "c.c": {"a.c": "h"},
         "d.c": {}}
    check(find_cycle(g) == ["a.c", "b.c", "c.c", "a.c"], find_cycle(g))
    check(len(all_cycles(g)) == 1, all_cycles(g))
    g["c.c"] = {}
    check(find_cycle(g) is None, "a line taken for a circle")
    check(layers(g) == [["c.c", "d.c"], ["b.c"], ["a.c"]], layers(g))
    up = {"src/base/x.c": {"src/core/y.c": "frond_y"},
          "src/coord/z.c": {"src/store/s.c": "frond_s",
                            "src/coord/w.c": "frond_w"},
          "src/cli/m.c": {"src/server/serve.c": "frond__serve"},
          "src/os/f.c": {"src/base/x.c": "frond_x"}}
    check(upward(up) == [("src/base/x.c", "src/core/y.c", "frond_y"),
                         ("src/os/f.c", "src/base/x.c", "frond_x")],
          upward(up))


def test_every_folder_is_a_layer():
    folders = sorted({layer(f) for f in sources(ft.FROND_SRC)})
    check(folders, "no sources under %s/src" % ft.FROND_SRC)
    stray = [f for f in folders if f not in RANK]
    check(not stray, "folders of src/ outside the map %s: %s" %
          (" <- ".join(LAYERS), ", ".join("src/%s/" % f for f in stray)))


def test_includes_run_down():
    graph = include_graph(ft.FROND_SRC, sources(ft.FROND_SRC))
    check(any(graph.values()), "no includes found: is FROND_SRC right?")
    bad = upward(graph)
    check(not bad, "%d includes run up the layers %s:\n  " %
          (len(bad), " <- ".join(LAYERS)) +
          "\n  ".join("%s: %s" % (a, w) for a, b, w in bad))


def test_calls_run_down():
    objs = objects(ft.FROND_BUILD)
    check(len(objs) >= 20, "found %d object files of src/ under %s: is the "
          "tree built?" % (len(objs), ft.FROND_BUILD))
    graph = call_graph(objs)
    check(any(graph.values()), "no calls between files found: nm failed?")
    bad = upward(graph)
    check(not bad, "%d calls run up the layers %s:\n  " %
          (len(bad), " <- ".join(LAYERS)) +
          "\n  ".join("%s -> %s (%s)" % e for e in bad))


def test_no_circle_between_files():
    graph = call_graph(objects(ft.FROND_BUILD))
    check(graph, "no object files found under %s" % ft.FROND_BUILD)
    cycles = all_cycles(graph)
    check(not cycles, "files call each other in a circle:\n  " +
          "\n  ".join(d for c, d in cycles))
    for k, files in enumerate(layers(graph)):
        print("  %d: %s" % (k, " ".join(f[4:] for f in files)))


def test_no_circle_between_headers():
    graph = include_graph(ft.FROND_SRC, [f for f in sources(ft.FROND_SRC)
                                         if f.endswith(".h")])
    check(graph, "no headers found in %s/src" % ft.FROND_SRC)
    cycles = all_cycles(graph)
    check(not cycles, "headers include each other in a circle:\n  " +
          "\n  ".join(d for c, d in cycles))


def test_no_test_imports_another():
    bad = []
    for path in sorted(glob.glob(os.path.join(ft.FROND_SRC, "tests", "*",
                                              "*.py"))):
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if re.match(r"\s*(from|import)\s+test_\w+", line):
                    bad.append("%s:%d: %s" % (os.path.relpath(
                        path, ft.FROND_SRC), n, line.strip()))
    check(not bad, "a test imports another (shared pieces belong in "
          "frondtest.py or a *_common.py):\n  " + "\n  ".join(bad))


if __name__ == "__main__":
    ft.main([test_detector_finds_what_it_should, test_every_folder_is_a_layer,
             test_includes_run_down, test_calls_run_down,
             test_no_circle_between_files, test_no_circle_between_headers,
             test_no_test_imports_another])
