#!/usr/bin/env python3
"""dynalock(1) is docs/cli.md (docs/man/cli-to-man.lua makes one from the other), and
both say what the command does. Checks that the page the build made is docs/cli.md as it
is now; that man renders it without a warning, as lintian runs it; that every subcommand
the command lists has a synopsis line and a section, and every option that
`dynalock COMMAND --help` and `dynalock help options` list is in it; and that
`cmake --install` installs that page, the docs it points at, and the guide that
`fakedb --help` names.
Usage: check_man.py SOURCE_DIR BUILD_DIR MAN_PAGE DYNALOCK FAKEDB -- MAN_COMMAND...
Exits 77 when the build made no page (no pandoc)."""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

failures = []
passed = 0


def check(ok, what):
    global passed
    if ok:
        passed += 1
    else:
        failures.append(what)
        print(f"man: FAIL: {what}")


def run(*argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def plain(troff):
    """The text of a troff line, without font changes and escapes."""
    troff = re.sub(r"\\f(\[[A-Z]*\]|[A-Z])", "", troff)
    troff = troff.replace("\\-", "-").replace("\\[cq]", "'").replace("\\[lq]", '"')
    troff = troff.replace("\\[rq]", '"').replace("\\ ", " ").replace("\\[em]", "--")
    return troff.replace("\\[at]", "@")


def sections(page):
    """{TITLE: text} of the page's .SH sections."""
    out, title = {}, None
    for line in page.split("\n"):
        m = re.match(r'\.SH "?(.*?)"?$', line)
        if m:
            title = plain(m.group(1))
            out[title] = ""
        elif title is not None:
            out[title] += plain(line) + "\n"
    return out


def help_options(text):
    """The options a --help lists: the words that open its indented lines."""
    return sorted(set(re.findall(r"^\s+(--[a-z][a-z-]*)", text, re.M)) - {"--help", "--version"})


def has_option(text, opt):
    return re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", text) is not None


def main(argv):
    sep = argv.index("--")
    src, build, man, dynalock, fakedb = (pathlib.Path(a) for a in argv[1:sep])
    command = argv[sep + 1:]
    if not man.is_file() or not command:
        print(f"man: skipped: the build made no {man.name} (pandoc is not installed)")
        return 77
    page = man.read_text()

    # 1. The page is docs/cli.md as it is now.
    fresh = run(*command)
    check(fresh.returncode == 0, f"pandoc failed: {fresh.stderr.strip()}")
    check(fresh.stdout == page, f"{man} is not what docs/cli.md makes now: rebuild")

    # 2. man renders it without a warning, as lintian runs it (a warning fails the
    # packages): the page is one lintian would pass.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8",
           "MANROFFSEQ": "", "MANWIDTH": "120"}
    for width in ("120", "80"):
        env["MANWIDTH"] = width
        shown = run("man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", str(man), env=env)
        warned = [w for w in shown.stderr.split("\n") if w.strip() and not w.startswith("Reformatting")]
        check(shown.returncode == 0 and not warned, f"man warns at {width} columns: {warned}")
    secs = sections(page)
    check(re.match(r"\n*\.PP\ndynalock - \S", secs.get("NAME", "")) is not None,
          "the NAME section is not 'dynalock - ...'")

    # 3. Option by option: each subcommand and its options, as the command says them.
    top = run(str(dynalock), "--help").stdout
    commands = re.findall(r"^  ([a-z]+) ", top.split("Commands:", 1)[1], re.M)
    check(len(commands) >= 9, f"`dynalock --help` lists {len(commands)} commands")
    synopsis = secs.get("SYNOPSIS", "")
    listed = set(re.findall(r"^dynalock ([a-z]+)", synopsis, re.M))
    for cmd in commands:
        check(cmd in listed, f"SYNOPSIS has no line for `dynalock {cmd}`")
        title = next((t for t in secs if cmd.upper() in t.split()), None)
        check(title is not None, f"no section of the page is titled with `{cmd}`")
        if title is None:
            continue
        usage = run(str(dynalock), cmd, "--help")
        check(usage.returncode == 0, f"`dynalock {cmd} --help` exits {usage.returncode}")
        for opt in help_options(usage.stdout.split("Options:", 1)[-1]):
            check(has_option(secs[title], opt),
                  f"`dynalock {cmd} --help` lists {opt}, section {title} does not")
    for cmd in listed:
        check(cmd in commands, f"SYNOPSIS has `dynalock {cmd}`, which `dynalock --help` does not list")
    common = run(str(dynalock), "help", "options")
    check(common.returncode == 0, "`dynalock help options` fails")
    shared = secs.get("COMMON OPTIONS", "") + secs.get("CONNECTING", "")
    opts = help_options(common.stdout)
    check(len(opts) >= 8, f"`dynalock help options` lists {len(opts)} options")
    for opt in opts:
        check(has_option(shared, opt), f"`dynalock help options` lists {opt}, "
              "sections COMMON OPTIONS and CONNECTING do not")
    check(any("dynalock-leader@.service" in t for t in
              (plain(line) for line in page.split("\n") if line.startswith(".SS"))),
          "no section on the systemd template (the unit's Documentation=)")

    # 4. What `cmake --install` installs: this page, the docs it names, fakedb's guide.
    cache = (build / "CMakeCache.txt").read_text()
    prefix = re.search(r"^CMAKE_INSTALL_PREFIX:PATH=(.*)$", cache, re.M).group(1)
    with tempfile.TemporaryDirectory() as tmp:
        inst = run("cmake", "--install", str(build), "--prefix", tmp)
        check(inst.returncode == 0, f"cmake --install: {inst.stderr.strip()}")
        root = pathlib.Path(tmp)
        installed = next(root.glob("share/man/man1/dynalock.1"), None)
        check(installed is not None and installed.read_text() == page,
              "the installed share/man/man1/dynalock.1 is not the page the build made")
        for path in sorted(set(re.findall(r"(/\S*?/doc/dynalock/[\w.-]+\.md)", plain(page)))):
            rel = os.path.relpath(path, prefix)
            check(not rel.startswith("..") and (root / rel).is_file(),
                  f"the page names {path}, which is not installed")
        said = run(str(fakedb), "--help").stdout
        guide = re.search(r"(/\S+/fakedb\.md)", said)
        check(guide is not None, "`fakedb --help` names no fakedb.md")
        if guide:
            rel = os.path.relpath(guide.group(1), prefix)
            check(not rel.startswith("..") and (root / rel).is_file(),
                  f"`fakedb --help` names {guide.group(1)}, which is not installed")
        check((root / "share/man/man1/fakedb.1").is_file(), "fakedb.1 is not installed")
        # The unit's Documentation= names this page and the installed cli.md.
        unit = next(root.glob("**/dynalock-leader@.service"), None)
        docs = re.search(r"^Documentation=(.*)$", unit.read_text(), re.M) if unit else None
        check(docs is not None and "man:dynalock(1)" in docs.group(1).split(),
              "dynalock-leader@.service's Documentation= does not name man:dynalock(1)")
        for uri in docs.group(1).split() if docs else []:
            if uri.startswith("file:"):
                check(pathlib.Path(uri[5:]).is_file(),
                      f"dynalock-leader@.service's Documentation= names {uri}, not installed")
    print(f"man: {passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
