#!/usr/bin/env python3
"""Every name a doc gives in code spans exists: each identifier of the project's
prefixes (ddb_, ddb__, fakedb_, dl_, DDB_, FAKEDB_) appears in the sources or the build
files (`ddb_lock_force_*` names a family: some name must start so), each path under one
of the tree's folders is a file or folder of the tree (a glob matches something), and
each bare source file name (`locktable.c`) is the name of a file of the tree.
Reads docs/**/*.md and README.md. Exits 1 naming what is missing, with the doc's line.
Usage: check_names.py SOURCE_DIR"""
import pathlib
import re
import sys

IDENT = re.compile(r"\b((?:ddb|fakedb|dl|DDB|FAKEDB)_\w*)")
# Paths that the build or the packages make, not the tree: what the docs name of them.
MADE = {
    "debian/changelog": "written by scripts/package.sh",
    "debian/libdynalock0.symbols": "written by scripts/package.sh",
    "lib/systemd/system": "an install folder",
    "bench/client/bench_request_cpu": "a program the build makes",
    "pan.c": "written by spin (scripts/check-model)",
}


def main(root):
    root = pathlib.Path(root)
    words = set()
    for pattern in ("**/*.[ch]", "**/*.cpp", "**/*.in", "**/CMakeLists.txt", "**/*.cmake",
                    "**/*.sh", "**/*.py", "**/*.bash", "completions/*", "scripts/*"):
        for p in root.glob(pattern):
            if p.is_file() and not any(part.startswith(("build", ".")) for part in
                                       p.relative_to(root).parts):
                words.update(re.findall(r"\w+", p.read_text(errors="replace")))
    tops = {p.name for p in root.iterdir()
            if p.is_dir() and not p.name.startswith((".", "build", "_"))}
    headers = {str(h.relative_to(h.parents[1])) for h in root.glob("**/include/*/*.h")}
    headers.add("dynalock/version.h")  # generated from cmake/version.h.in
    files = {p.name for p in root.rglob("*") if p.is_file() and not any(
        part.startswith(("build", ".", "_")) for part in p.relative_to(root).parts)}
    missing = []
    docs = sorted(root.glob("docs/**/*.md")) + [root / "README.md"]
    for doc in docs:
        for n, line in enumerate(doc.read_text().split("\n"), 1):
            for span in re.findall(r"`([^`]+)`", line):
                for m in IDENT.finditer(span):
                    ident = m.group(1)
                    if span[m.end():m.end() + 1] == "*":  # a family: ddb_lock_force_*
                        found = any(w.startswith(ident) and w != ident for w in words)
                    else:
                        ident = ident.rstrip("_")
                        found = ident in words
                    if not found:
                        missing.append(f"{doc.relative_to(root)}:{n}: `{ident}` is not in the sources")
                for tok in re.findall(r"[\w.*+-]+(?:/[\w.*+@-]+)+/?", span):
                    path = tok.rstrip("/.")
                    if path.split("/")[0] not in tops or path in MADE or path in headers:
                        continue
                    if not (any(root.glob(path)) if "*" in path else (root / path).exists()):
                        missing.append(f"{doc.relative_to(root)}:{n}: `{path}` is not in the tree")
                for name in re.findall(r"(?<![\w/.-])([\w-]+\.(?:c|h|py|sh|mjs|cpp))\b(?![/\w])", span):
                    if name not in files and name not in MADE:
                        missing.append(f"{doc.relative_to(root)}:{n}: `{name}` is no file of the tree")
    for m in missing:
        print(m)
    print(f"docs names: {0 if missing else 1} passed, {1 if missing else 0} failed")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
