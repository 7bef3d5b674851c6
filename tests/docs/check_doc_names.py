#!/usr/bin/env python3
"""Every name a doc gives in code spans exists: each identifier of the project's
prefixes (ddb_, ddb__, fakedb_, dl_, DDB_, FAKEDB_) appears in the sources or the build
files (`ddb_lock_force_*` names a family: some name must start so), each path under one
of the tree's folders is a file or folder of the tree (a glob matches something), in
code spans and in the text, each bare file name (`locktable.c`, `cli.md`) is the name of
a file of the tree, each function called in a code span (`fakedb_start()`) is a word of
the sources, each relative link's target exists, and each of the project's libraries
named (libddb, libddb_testing...) is one the build makes or a Debian package of
debian/control: a library that is gone may be named only where the line says there is
"no" such library. docs/index.md lists every subcommand of cli/main.c's dispatch table.
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
    "tests/dynamodb": "the reader's own tests, in docs/ci.md's recipe",
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
    libs = set()
    for cm in root.glob("**/CMakeLists.txt"):
        if any(part.startswith(("build", ".")) for part in cm.relative_to(root).parts):
            continue
        text = cm.read_text()
        libs.update("lib" + m for m in re.findall(r"dynalock_library\(\w+ (\w+)", text))
        libs.update("lib" + m for m in re.findall(r"OUTPUT_NAME (\w+)", text))
    libs.update(re.findall(r"^Package: (lib\S+)", (root / "debian/control").read_text(), re.M))
    missing = []
    docs = sorted(root.glob("docs/**/*.md")) + [root / "README.md"]
    for doc in docs:
        fenced = False
        for n, line in enumerate(doc.read_text().split("\n"), 1):
            if line.startswith("```"):
                fenced = not fenced
            for lib in re.findall(r"\b(lib(?:ddb|fakedb|dynalock)\w*(?:-dev)?)", line):
                lib = lib.rstrip("_")  # a package's file name: libdynalock0_0.1.0_amd64.deb
                # libdynalockN: the package of another SONAME (the ABI policy's example)
                if lib not in libs and not re.fullmatch(r"libdynalock\d+", lib) and \
                        not re.search(r"\bno " + lib + r"\b", line):
                    missing.append(f"{doc.relative_to(root)}:{n}: `{lib}` is no library the build makes")
            for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", line):
                if re.match(r"[a-z]+:", target):
                    continue
                if not (doc.parent / target).exists():
                    missing.append(f"{doc.relative_to(root)}:{n}: the link to `{target}` leads nowhere")
            # The text's paths; a fenced block's are the reader's own (a CI job's tests/).
            prose = "" if fenced else re.sub(r"`[^`]*`|\]\([^)]*\)|https?://\S+", " ", line)
            for tok in re.findall(r"(?<![\w/.-])[\w.*+-]+(?:/[\w.*+@-]+)+/?", prose):
                path = tok.rstrip("/.,;:")
                if path.split("/")[0] not in tops or path in headers or \
                        any(path == m or path.startswith(m + "/") for m in MADE):
                    continue
                if not (any(root.glob(path)) if "*" in path else (root / path).exists()):
                    missing.append(f"{doc.relative_to(root)}:{n}: {path} is not in the tree")
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
                # a call of a name of the project's own (with an underscore: not `size()`)
                for fn in re.findall(r"(?<![\w.:>-])([a-z][a-z0-9]*_[a-z0-9_]*)\(\)", span):
                    if fn not in words:
                        missing.append(f"{doc.relative_to(root)}:{n}: `{fn}()` is not in the sources")
                for name in re.findall(r"(?<![\w/.-])([\w-]+\.(?:c|h|py|sh|mjs|cpp|md|lua|cmake|service|in))\b(?![/\w])", span):
                    if name not in files and name + ".in" not in files and name not in MADE:
                        missing.append(f"{doc.relative_to(root)}:{n}: `{name}` is no file of the tree")
    # docs/index.md's line on cli.md lists every subcommand of the command's dispatch table.
    table = (root / "cli/main.c").read_text()
    table = table[table.index("COMMANDS[] = {"):]
    subcommands = re.findall(r'^    \{"([a-z]+)",', table, re.M)
    index = next((line for line in (root / "docs/index.md").read_text().split("\n")
                  if line.startswith("| [cli.md](cli.md)")), "")
    for sub in subcommands:
        if not re.search(r"\b" + sub + r"\b", index):
            missing.append(f"docs/index.md: the line on cli.md does not list `dynalock {sub}`")
    if len(subcommands) < 9:
        missing.append(f"cli/main.c: {len(subcommands)} subcommands found in COMMANDS")
    for m in missing:
        print(m)
    print(f"docs names: {0 if missing else 1} passed, {1 if missing else 0} failed")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
