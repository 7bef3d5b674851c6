#!/usr/bin/env python3
"""Deliberate bugs in the lock layer, each of which the simulator must catch within its
fast profile. For each mutation: the changed source files are compiled again with the
commands of an existing build (its compile_commands.json) and linked into a copy of its
simulator in front of its static libraries, so nothing else is rebuilt; the simulator
runs until the first violation; a mutation that survives the profile fails this check.
A mutation changes .c files only (a header would need its includers rebuilt). To add
one, append (name, [(file, the text as it is, the text of the bug), ...]) to MUTATIONS.

    tests/sim/mutate.py [--build DIR] [--seeds N] [--steps K] [--keep]   (run from anywhere)

DIR is a build folder of this tree made with CMake's Makefile generator (default build/,
as scripts/test.sh makes it); the target sim is built there first when it is not.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (name, [(file, the text as it is, the text of the bug), ...])
MUTATIONS = [
    ("renewal keeps the record version", [
        ("lib/coord/lockitem.c", 'req_s(r, ":r", rvn);', 'req_s(r, ":r", lease->rvn);')]),
    ("takeover measured on the wall clock", [
        ("lib/coord/acquire.c",
         "            int64_t now = ddb_clock_mono_ns(l->clock);\n            ddb__lock_item li;",
         "            int64_t now = ddb_clock_wall_ms(l->clock) * DL_NS_PER_MS;\n"
         "            ddb__lock_item li;")]),
    ("takeover does not raise the fencing token", [
        ("lib/coord/lockitem.c", '        req_s(&r, ":sr", seen->rvn);\n',
         '        req_s(&r, ":sr", seen->rvn);\n        req_i64(&r, ":one", 0);\n')]),
    ("a lease whose renewal failed outlives its deadline", [
        ("lib/coord/heartbeat.c",
         "    if (now < expiry) {\n        ddb__sched_at(lease->sched, &lease->deadline_task, expiry);",
         "    if (now < expiry || lease->retry_delay_ms > 0) {\n"
         "        ddb__sched_at(lease->sched, &lease->deadline_task,\n"
         "                      now < expiry ? expiry : now + lease->lease_ms * DL_NS_PER_MS / 6);")]),
    # As before leases were bounded by time: the deadline waits for the renewal in flight,
    # and its answer counts however late it comes.
    ("a late renewal answer is accepted", [
        ("lib/coord/lease.c", "bool late = !over && after_ns >= lease->expiry_ns;",
         "bool late = false;\n        (void)after_ns;"),
        ("lib/coord/heartbeat.c",
         "    if (now < expiry) {\n        ddb__sched_at(lease->sched, &lease->deadline_task, expiry);",
         "    pthread_mutex_lock(&lease->mu);\n    bool waiting = lease->renewing;\n"
         "    pthread_mutex_unlock(&lease->mu);\n"
         "    if (now < expiry || waiting) {\n"
         "        ddb__sched_at(lease->sched, &lease->deadline_task,\n"
         "                      now < expiry ? expiry : now + DL_NS_PER_MS);")]),
    # Outcomes told truly: a write whose answer was lost is reported as what the item shows.
    ("an operator's release in doubt reported not released", [
        ("lib/coord/lockitem.c", "*released = li.exists && !li.held && li.fence == fencing_token;",
         "*released = false;")]),
    ("an acquire in doubt reported as held by another", [
        ("lib/coord/acquire.c",
         "    if (li.held && strcmp(li.owner, a->owner) == 0) {\n        /* Applied:",
         "    if (li.held && strcmp(li.owner, a->owner) == 0 && false) {\n        /* Applied:")]),
]


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def compile_commands(build):
    """source path -> (directory, argv) from the build's compile_commands.json."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    return {os.path.realpath(e["file"]): (e["directory"], shlex.split(e["command"]))
            for e in entries}


def build_mutant(build, commands, scratch, n, mutated):
    """Compiles the mutated files (path relative to ROOT -> text) and links a simulator
    with them in front of the build's libraries. Returns (path, None) or (None, log)."""
    objects = []
    for i, (path, text) in enumerate(sorted(mutated.items())):
        original = os.path.realpath(os.path.join(ROOT, path))
        if original not in commands:
            return None, f"{path} is not compiled by {build} (compile_commands.json)"
        src = os.path.join(scratch, f"m{n}_{i}_" + os.path.basename(path))
        with open(src, "w") as f:
            f.write(text)
        directory, argv = commands[original]
        obj = os.path.join(scratch, f"m{n}_{i}.o")
        argv = [src if os.path.realpath(a) == original else a for a in argv]
        argv[argv.index("-o") + 1] = obj
        c = run(argv, cwd=directory)
        if c.returncode != 0:
            return None, c.stdout
        objects.append(obj)
    simdir = os.path.join(build, "tests", "sim")
    with open(os.path.join(simdir, "CMakeFiles", "sim.dir", "link.txt")) as f:
        argv = shlex.split(f.read())
    main_obj = next(a for a in argv if a.endswith("sim.c.o"))
    at = argv.index(main_obj) + 1
    argv[at:at] = objects
    exe = os.path.join(scratch, f"sim{n}")
    argv[argv.index("-o") + 1] = exe
    c = run(argv, cwd=simdir)
    return (exe, None) if c.returncode == 0 else (None, c.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="a build folder of this tree (default build/)")
    ap.add_argument("--seeds", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = ap.parse_args()

    build = os.path.abspath(args.build)
    if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        r = run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"])
        if r.returncode != 0:
            print(r.stdout)
            return 2
    b = run(["cmake", "--build", build, "--target", "sim", "-j", str(os.cpu_count() or 2)])
    if b.returncode != 0 or not os.path.exists(os.path.join(build, "tests", "sim", "CMakeFiles",
                                                            "sim.dir", "link.txt")):
        print(f"mutate: cannot build the simulator in {build} (a Makefile build is needed)\n"
              f"{b.stdout[-2000:]}")
        return 2
    commands = compile_commands(build)
    scratch = tempfile.mkdtemp(prefix="dynalock-mutate-")
    survivors = 0
    for n, (name, edits) in enumerate(MUTATIONS):
        mutated = {}
        problem = None
        for path, before, after in edits:
            if not path.endswith(".c"):
                problem = f"{path} is not a .c file"
                break
            if path not in mutated:
                with open(os.path.join(ROOT, path)) as f:
                    mutated[path] = f.read()
            if mutated[path].count(before) != 1:
                problem = f"the text to change is not in {path} exactly once"
                break
            mutated[path] = mutated[path].replace(before, after)
        t0 = time.time()
        exe = None
        if not problem:
            exe, log = build_mutant(build, commands, scratch, n, mutated)
            if not exe:
                problem = f"does not build\n{log[-2000:]}"
        if problem:
            print(f"mutation '{name}': {problem}")
            survivors += 1
            continue
        s = run([exe, "--seeds", str(args.seeds), "--steps", str(args.steps), "--quiet",
                 "--stop-on-failure"])
        caught = s.returncode == 1 and "FAIL seed" in s.stdout
        first = next((l for l in s.stdout.splitlines() if l.startswith("FAIL")), "")
        print(f"{'caught ' if caught else 'MISSED '} {name}: "
              f"{first or s.stdout.strip()[-200:]} ({time.time() - t0:.0f} s)", flush=True)
        if not caught:
            survivors += 1
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"mutations: {len(MUTATIONS) - survivors} passed, {survivors} failed")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
