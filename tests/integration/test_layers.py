#!/usr/bin/env python3
"""
test_layers.py -- files call one another one way only.

For every object file built from the folders checked (default: src/server),
`nm` tells which global symbols it defines and which it uses; a use of a
symbol that another of these files defines is an edge from the user to the
definer. Any circle among the edges fails the test, naming the files and a
symbol of each step. The headers of the folders are checked the same way
through their #include lines. On success the files are printed bottom to
top, the order in which they may be read.

    test_layers.py [FOLDER...]     folders relative to the source tree
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frondtest as ft  # noqa: E402
from frondtest import check  # noqa: E402

FOLDERS = sys.argv[1:] or ["src/server"]


def objects(folders):
    """{source path relative to the tree: object file}, one object per
    source (a source built into several targets is the same code)."""
    found = {}
    root = os.path.join(ft.FROND_BUILD, "CMakeFiles")
    for obj in glob.glob(os.path.join(root, "*.dir", "**", "*.o"),
                         recursive=True):
        rel = obj.split(".dir" + os.sep, 1)[1][:-len(".o")]
        if any(rel.startswith(f.rstrip("/") + "/") for f in folders):
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


def include_graph(folders):
    """{header: {header it includes: the #include line}} for the headers
    of the folders (what a .c file includes is its own business)."""
    graph = {}
    for f in folders:
        for h in glob.glob(os.path.join(ft.FROND_SRC, f, "*.h")):
            rel = os.path.relpath(h, ft.FROND_SRC)
            graph[rel] = {}
            with open(h) as fh:
                for line in fh:
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if m:
                        inc = "src/" + m.group(1)
                        if os.path.exists(os.path.join(ft.FROND_SRC, inc)):
                            graph[rel][inc] = line.strip()
    for rel in list(graph):
        graph[rel] = {d: w for d, w in graph[rel].items() if d in graph}
    return graph


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


def describe(graph, cycle):
    return " -> ".join("%s (%s)" % (a, graph[a][b])
                       for a, b in zip(cycle, cycle[1:])) + " -> " + cycle[-1]


def test_detector_finds_circles():
    """The check can fail: a made-up circle is found, a line is not."""
    g = {"a.c": {"b.c": "f"}, "b.c": {"c.c": "g"}, "c.c": {"a.c": "h"},
         "d.c": {}}
    check(find_cycle(g) == ["a.c", "b.c", "c.c", "a.c"], find_cycle(g))
    g["c.c"] = {}
    check(find_cycle(g) is None, "a line taken for a circle")
    check(layers(g) == [["c.c", "d.c"], ["b.c"], ["a.c"]], layers(g))


def test_no_circle_between_files():
    objs = objects(FOLDERS)
    check(len(objs) >= 5, "found %d object files of %s under %s: is the "
          "tree built?" % (len(objs), FOLDERS, ft.FROND_BUILD))
    graph = call_graph(objs)
    check(any(graph.values()), "no calls between files found: nm failed?")
    cycle = find_cycle(graph)
    check(cycle is None, "files call each other in a circle: " +
          (describe(graph, cycle) if cycle else ""))
    for k, files in enumerate(layers(graph)):
        print("  %d: %s" % (k, " ".join(os.path.basename(f) for f in files)))


def test_no_circle_between_headers():
    graph = include_graph(FOLDERS)
    check(graph, "no headers found in %s" % FOLDERS)
    cycle = find_cycle(graph)
    check(cycle is None, "headers include each other in a circle: " +
          (describe(graph, cycle) if cycle else ""))


if __name__ == "__main__":
    ft.main([test_detector_finds_circles, test_no_circle_between_files,
             test_no_circle_between_headers])
