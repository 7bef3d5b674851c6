#!/usr/bin/env python3
"""calls.py LIST...: no circle of calls between the files of a folder.

Each LIST is a file naming the object files of one folder, one per line (CMake writes
them: tests/layers/CMakeLists.txt). The calls are read from the objects themselves, with
nm: file a calls file b when a needs a symbol that b defines. A folder is a stack when no
file calls, through any chain, back into itself: one line per circle found, naming the
files and a call of each step, and exit 1. Exit 2 when nm or a list cannot be read.
"""
import os
import subprocess
import sys


def symbols(objs):
    """{object: (symbols it defines, symbols it needs)}, from one run of nm."""
    out = subprocess.run(["nm", "-A"] + objs, capture_output=True, text=True,
                         check=True).stdout
    table = {obj: (set(), set()) for obj in objs}
    for line in out.splitlines():
        obj, _, rest = line.partition(":")
        parts = rest.split()
        if obj not in table:
            continue
        if len(parts) == 3 and parts[1] in "TDBRWVG":
            table[obj][0].add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            table[obj][1].add(parts[1])
    return table


def calls_of(objs):
    """{file: {callee file: a symbol it needs from it}}"""
    defined, needed = {}, {}
    for obj, (d, n) in symbols(objs).items():
        name = os.path.basename(obj)
        name = name[: -len(".o")] if name.endswith(".o") else name
        defined[name], needed[name] = d, n
    owner = {sym: f for f, syms in defined.items() for sym in syms}
    graph = {}
    for f, syms in needed.items():
        graph[f] = {}
        for sym in sorted(syms):
            g = owner.get(sym)
            if g and g != f:
                graph[f].setdefault(g, sym)
    return graph


def circles(graph):
    """The strongly connected parts of more than one file (Tarjan, without recursion)."""
    index, low, on, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                part = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    part.append(w)
                    if w == v:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return found


def one_cycle(graph, part):
    """A cycle through the first file of part, as [(file, callee, symbol), ...]."""
    inside = set(part)
    start = part[0]
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w, sym in sorted(graph[v].items()):
            if w not in inside:
                continue
            if w == start:
                steps = [(v, w, sym)]
                while prev[v]:
                    u, s = prev[v]
                    steps.append((u, v, s))
                    v = u
                return list(reversed(steps))
            if w not in prev:
                prev[w] = (v, sym)
                queue.append(w)
    return []


def main(lists):
    bad = 0
    for lst in lists:
        try:
            with open(lst) as f:
                objs = [line.strip() for line in f if line.strip()]
            graph = calls_of(objs)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"calls.py: {lst}: {e}", file=sys.stderr)
            return 2
        folder = os.path.basename(lst)
        parts = circles(graph)
        for part in parts:
            steps = one_cycle(graph, part)
            path = " -> ".join(f"{a} ({s})" for a, _, s in steps) + f" -> {steps[0][0]}"
            print(f"{folder}: a circle of {len(part)} files: {path}")
            bad = 1
        if not parts:
            print(f"{folder}: {len(graph)} files, no circle")
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) if len(sys.argv) > 1 else 2)
