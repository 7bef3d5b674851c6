#!/usr/bin/env python3
"""Every test source is built: each tests/<suite>/test_*.c (and *_test.c) is named by its
suite's CMakeLists.txt, directly or through a foreach list. Exits 1 naming the orphans."""
import pathlib
import re
import sys


def names_in(cmake):
    text = cmake.read_text()
    names = set(re.findall(r"[\w./-]+\.c\b", text))
    # foreach(t a b c) ... test_${t}.c
    for loop in re.finditer(r"foreach\((\w+)\s+([^)]*)\)(.*?)endforeach", text, re.S):
        var, items, body = loop.groups()
        for pat in re.findall(r"([\w./-]*\$\{%s\}[\w./-]*\.c)" % var, body):
            for item in items.split():
                names.add(pat.replace("${%s}" % var, item))
    return {pathlib.PurePath(n).name for n in names}


def main(root):
    root = pathlib.Path(root)
    orphans = []
    for suite in sorted((root / "tests").iterdir()):
        cmake = suite / "CMakeLists.txt"
        if not cmake.exists():
            continue
        listed = names_in(cmake)
        for src in sorted(suite.rglob("*.c")):
            if src.name.startswith("test_") and src.name not in listed:
                orphans.append(str(src.relative_to(root)))
    for o in orphans:
        print("not built by its suite's CMakeLists.txt:", o)
    return 1 if orphans else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
