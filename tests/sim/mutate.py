#!/usr/bin/env python3
"""Deliberate bugs in the lock layer, each of which the simulator must catch within its
fast profile. For each mutation: copy the source tree, make the one change, build the
simulator, run it until the first violation; a mutation that survives the profile fails
this check.

    tests/sim/mutate.py [--seeds N] [--steps K] [--keep]     (run from anywhere)
"""
import argparse
import os
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--keep", action="store_true", help="keep the scratch tree")
    args = ap.parse_args()

    scratch = tempfile.mkdtemp(prefix="dynalock-mutate-")
    src, build = os.path.join(scratch, "src"), os.path.join(scratch, "build")
    files = run(["git", "-C", ROOT, "ls-files", "-z"]).stdout.split("\0")
    for f in filter(None, files):
        dst = os.path.join(src, f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.isfile(os.path.join(ROOT, f)):
            shutil.copy2(os.path.join(ROOT, f), dst)
    r = run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
             "-DDYNALOCK_BUILD_BENCH=OFF"])
    if r.returncode != 0:
        print(r.stdout)
        return 2
    jobs = str(os.cpu_count() or 2)
    survivors = 0
    for name, edits in MUTATIONS:
        originals = {}
        ok = True
        for path, before, after in edits:
            target = os.path.join(src, path)
            text = originals.setdefault(target, open(target).read())
            current = open(target).read()
            if current.count(before) != 1:
                print(f"mutation '{name}': the text to change is not in {path} exactly once")
                ok = False
                break
            open(target, "w").write(current.replace(before, after))
        if not ok:
            survivors += 1
        else:
            t0 = time.time()
            b = run(["cmake", "--build", build, "--target", "sim", "-j", jobs])
            if b.returncode != 0:
                print(f"mutation '{name}': does not build\n{b.stdout[-2000:]}")
                survivors += 1
            else:
                s = run([os.path.join(build, "tests", "sim", "sim"), "--seeds", str(args.seeds),
                         "--steps", str(args.steps), "--quiet", "--stop-on-failure"])
                caught = s.returncode == 1 and "FAIL seed" in s.stdout
                first = next((l for l in s.stdout.splitlines() if l.startswith("FAIL")), "")
                print(f"{'caught ' if caught else 'MISSED '} {name}: "
                      f"{first or s.stdout.strip()[-200:]} ({time.time() - t0:.0f} s)", flush=True)
                if not caught:
                    survivors += 1
        for target, text in originals.items():
            open(target, "w").write(text)
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"{len(MUTATIONS) - survivors} passed, {survivors} failed")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
