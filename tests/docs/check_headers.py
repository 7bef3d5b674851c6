#!/usr/bin/env python3
"""Every public function's comment says which threads may call it.

A paragraph of a public header (lines between blank lines) that declares a DDB_API or
FAKEDB_API function must say "Thread:" in its comment. Exits 1 naming each paragraph
that does not."""
import pathlib
import re
import sys

HEADERS = [
    "lib/include/dynalock/ddb.h",
    "lib/include/dynalock/coord.h",
    "testing/include/dynalock/testing.h",
    "fakedb/include/fakedb/fakedb.h",
]


def paragraphs(text):
    start, block = 1, []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            if not block:
                start = n
            block.append(line)
        elif block:
            yield start, block
            block = []
    if block:
        yield start, block


def main(root):
    bad = []
    for rel in HEADERS:
        path = pathlib.Path(root, rel)
        for start, block in paragraphs(path.read_text()):
            text = "\n".join(block)
            decls = re.findall(r"^(?:DDB_API|FAKEDB_API)\b.*?(\w+)\s*\(", text, re.M)
            if decls and "Thread:" not in text:
                bad.append(f"{rel}:{start}: {', '.join(decls)}")
    for b in bad:
        print("no 'Thread:' line:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
