#!/usr/bin/env python3
"""Checks that every code block in docs/ that is marked as a copy of compiled code still
matches it. A block is marked by a line `<!-- snippet: PATH#NAME -->` right before it;
in PATH the region lies between `/* snippet:NAME */` and `/* snippet:end */`.
Usage: check_snippets.py SOURCE_DIR. Prints "N passed, M failed"."""
import os
import re
import sys

root = sys.argv[1]
marker = re.compile(r"<!-- snippet: (\S+)#(\S+) -->")
passed = failed = 0
for dirpath, _, files in os.walk(os.path.join(root, "docs")):
    for f in sorted(files):
        if not f.endswith(".md"):
            continue
        doc = os.path.join(dirpath, f)
        lines = open(doc, encoding="utf-8").read().split("\n")
        for i, line in enumerate(lines):
            m = marker.search(line)
            if not m:
                continue
            path, name = m.group(1), m.group(2)
            src = open(os.path.join(root, path), encoding="utf-8").read()
            region = re.search(r"/\* snippet:%s \*/\n(.*?)/\* snippet:end \*/" % re.escape(name), src, re.S)
            j = i + 1
            if j >= len(lines) or not lines[j].startswith("```"):
                print(f"{doc}:{i + 1}: a snippet marker must precede a code block")
                failed += 1
                continue
            k = j + 1
            while k < len(lines) and not lines[k].startswith("```"):
                k += 1
            block = "\n".join(lines[j + 1:k]).strip()
            if not region:
                print(f"{doc}:{i + 1}: no region '{name}' in {path}")
                failed += 1
            elif region.group(1).strip() != block:
                print(f"{doc}:{i + 1}: the block differs from {path}#{name}")
                failed += 1
            else:
                passed += 1
print(f"snippets: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
