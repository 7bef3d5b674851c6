#!/usr/bin/env python3
"""Every test source is built: each folder of tests/ that holds a CMakeLists.txt or a test
source is added by tests/CMakeLists.txt (add_subdirectory, directly or through a foreach
list), and each tests/<suite>/test_*.c is named by its suite's CMakeLists.txt, directly or
through a foreach list. Exits 1 naming the orphans."""
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


def folders_added(cmake):
    """The folders tests/CMakeLists.txt adds: add_subdirectory(x), and
    foreach(d a b c) ... add_subdirectory(${d})."""
    text = cmake.read_text()
    added = set(re.findall(r"add_subdirectory\(\s*([\w./-]+)\s*\)", text))
    for loop in re.finditer(r"foreach\((\w+)\s+([^)]*)\)(.*?)endforeach", text, re.S):
        var, items, body = loop.groups()
        if re.search(r"add_subdirectory\(\s*\$\{%s\}\s*\)" % var, body):
            added.update(items.split())
    return added


def main(root):
    root = pathlib.Path(root)
    orphans = []
    added = folders_added(root / "tests" / "CMakeLists.txt")
    for suite in sorted((root / "tests").iterdir()):
        if not suite.is_dir():
            continue
        cmake = suite / "CMakeLists.txt"
        holds_tests = any(suite.glob("test_*")) or any(suite.glob("*_test.*"))
        if (cmake.exists() or holds_tests) and suite.name not in added:
            orphans.append("not added by tests/CMakeLists.txt: %s/" % suite.relative_to(root))
        if not cmake.exists():
            continue
        listed = names_in(cmake)
        for src in sorted(suite.rglob("*.c")):
            if src.name.startswith("test_") and src.name not in listed:
                orphans.append("not built by its suite's CMakeLists.txt: %s" % src.relative_to(root))
    for o in orphans:
        print(o)
    return 1 if orphans else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
