#!/usr/bin/env python3
"""test_cxx.cpp covers every public header: it includes each one by name, and names (in
code, not in comments) every typedef, struct, enum and enumerator that the headers
declare, and zero-initialises every *_options struct as `T o{};`.

Usage: check_names.py SOURCE_DIR [GENERATED_INCLUDE_DIR]. The headers are those of
SOURCE_DIR/*/include/*/, SOURCE_DIR/lib/*/include/*/ (not in a build folder) and the
generated folder, as tests/cxx/CMakeLists.txt globs them. Exits 1 naming each header or name missing."""
import pathlib
import re
import sys

IDENT = r"[A-Za-z_]\w*"


def strip_c_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def strip_cpp_comments(text):
    # line comments only outside string literals is enough for this file's style
    return strip_c_comments(text)


def statements(text):
    """Top-level statements (ending with ';' at brace depth 0), preprocessor lines out."""
    text = "\n".join(l for l in text.splitlines()
                     if not l.lstrip().startswith("#")          # preprocessor
                     and not re.match(r'\s*extern\s+"C"\s*\{\s*$', l)
                     and l.strip() != "}")                      # extern "C"'s end
    depth, start = 0, 0
    for i, c in enumerate(text):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == ";" and depth == 0:
            yield text[start:i].strip()
            start = i + 1


def names_of(header_text):
    text = strip_c_comments(header_text)
    names, options = set(), set()
    for st in statements(text):
        for body in re.findall(r"\benum\s*(?:" + IDENT + r")?\s*\{([^}]*)\}", st):
            for item in body.split(","):
                m = re.match(r"\s*(" + IDENT + ")", item)
                if m:
                    names.add(m.group(1))
        for tag in re.findall(r"\b(?:struct|enum)\s+(" + IDENT + r")\s*\{", st):
            names.add(tag)
        if st.startswith("typedef"):
            m = re.search(r"\(\s*\*\s*(" + IDENT + r")\s*\)\s*\(", st)
            if m and "{" not in st:
                names.add(m.group(1))
            else:
                m = re.search(r"(" + IDENT + r")\s*$", st)
                if m:
                    names.add(m.group(1))
                    if m.group(1).endswith("_options") and "{" in st:
                        options.add(m.group(1))
    return names, options


def headers(root, generated):
    found = []
    for pattern in ("*/include/*/*.h", "lib/*/include/*/*.h"):
        for h in sorted(pathlib.Path(root).glob(pattern)):
            top = pathlib.Path(root, h.relative_to(root).parts[0])
            if not (top / "CMakeCache.txt").exists():   # a build folder in the tree
                found.append(h)
    if generated:
        found += sorted(pathlib.Path(generated).glob("*/*.h"))
    return found


def main(root, generated=None):
    test = pathlib.Path(root, "tests/cxx/test_cxx.cpp").read_text()
    code = strip_cpp_comments(test)
    words = set(re.findall(IDENT, code))
    bad = []
    for h in headers(root, generated):
        inc = f"{h.parent.name}/{h.name}"
        if not re.search(r"#include\s*<" + re.escape(inc) + ">", test):
            bad.append(f"{inc}: not included by tests/cxx/test_cxx.cpp")
        names, options = names_of(h.read_text())
        for n in sorted(names - words):
            bad.append(f"{inc}: {n} is not named in tests/cxx/test_cxx.cpp")
        for o in sorted(options):
            if not re.search(r"\b" + o + r"\s+\w+\s*\{\s*\}", code):
                bad.append(f"{inc}: {o} is not zero-initialised as `{o} o{{}};` in tests/cxx/test_cxx.cpp")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
