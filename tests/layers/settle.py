#!/usr/bin/env python3
"""settle.py LIST...: every public call that makes a request or waits on the clock has a
scope for a fake clock's settle.

A fake clock's settle (ddb_fake_clock_settle) knows that a library call has ended by the
end of its scope (DDB__CALL_SCOPE / DDB__HOLD_SCOPE, lib/ddb/ddb_private.h): a call that
made a request or waited on the clock without one would leave a thread counted as busy,
and the tests that settle would hang or race. This check reads the calls from the object
files themselves (objdump -dr: each function's calls and tail calls, local and through
relocations), takes out the functions that open a scope (they call ddb__scope_end or
ddb__scope_hold), and fails when an exported function (a global ddb_* symbol) can still
reach a request (SENDS) or a clock wait (WAITS). The clocks' own functions (the clocks,
their waits and timers, the server's clock) are not checked. Calls through function pointers are not seen.

Each LIST is a file naming the object files of one folder, one per line (CMake writes
them: tests/layers/CMakeLists.txt). One line per call without a scope, with the chain
of calls that reaches the request or the wait, and exit 1; exit 2 when objdump or a list
cannot be read.
"""
import os
import re
import subprocess
import sys

# What a public call must not reach outside a scope.
SENDS = {"ddb__client_send_text", "ddb__client_send", "areq_run"}
WAITS = {"ddb__clock_wait_until"}
SCOPES = {"ddb__scope_end", "ddb__scope_hold"}
# Files whose functions are the clock and its waits (and the cancel tokens they wait on).
CLOCK_FILES = {"clock.c", "server_clock.c", "cancel.c", "cancel_after.c", "scheduler.c"}

HEADER = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
RELOC = re.compile(r"^\s+[0-9a-f]+: R_X86_64_(?:PLT32|PC32)\s+([A-Za-z_][\w.]*)")
LOCAL_CALL = re.compile(r"^\s+[0-9a-f]+:\s+(?:call|jmp)q?\s+[0-9a-f]+ <([^>+]+)>\s*$")


def base(name):
    """foo.isra.0, foo.part.1, foo.cold -> foo"""
    return name.split(".", 1)[0]


def read_object(path):
    """({function: set of callees}, set of global functions defined)."""
    out = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", path],
                         capture_output=True, text=True, check=True).stdout
    calls, cur = {}, None
    lines = out.splitlines()
    for i, line in enumerate(lines):
        m = HEADER.match(line)
        if m:
            cur = base(m.group(1))
            calls.setdefault(cur, set())
            continue
        if cur is None:
            continue
        m = RELOC.match(line)
        if m:
            calls[cur].add(base(m.group(1)))
            continue
        m = LOCAL_CALL.match(line)
        # A call whose target a relocation gives (next line) shows a placeholder address.
        if m and not (i + 1 < len(lines) and RELOC.match(lines[i + 1])):
            calls[cur].add(base(m.group(1)))
    nm = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True,
                        check=True).stdout
    exported = {p[2] for p in (l.split() for l in nm.splitlines())
                if len(p) == 3 and p[1] == "T"}
    return calls, exported


def chain(calls, start, targets, cut):
    """A shortest chain of calls from start to one of targets avoiding cut, or None."""
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(calls.get(v, ())):
            if w in prev or (w in cut and w not in targets):
                continue
            prev[w] = v
            if w in targets:
                path = [w]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path))
            queue.append(w)
    return None


def main(lists):
    calls, sources, files_of = {}, set(), {}
    for lst in lists:
        try:
            with open(lst) as f:
                objs = [line.strip() for line in f if line.strip()]
            for obj in objs:
                c, exported = read_object(obj)
                src = os.path.basename(obj)
                src = src[: -len(".o")] if src.endswith(".o") else src
                for fn, callees in c.items():
                    calls.setdefault(fn, set()).update(callees)
                    files_of[fn] = src
                if src not in CLOCK_FILES:
                    sources |= {fn for fn in exported
                                if fn.startswith("ddb_") and not fn.startswith("ddb__")}
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"settle.py: {lst}: {e}", file=sys.stderr)
            return 2
    scoped = {fn for fn, callees in calls.items() if callees & SCOPES}
    if not scoped:
        print("settle.py: no function opens a scope: the objects were not read right",
              file=sys.stderr)
        return 2
    bad = 0
    for fn in sorted(sources):
        if fn in scoped:
            continue
        path = chain(calls, fn, SENDS | WAITS, scoped)
        if path:
            print(f"{fn} ({files_of.get(fn, '?')}) reaches {path[-1]} without a scope: "
                  + " -> ".join(path))
            bad = 1
    print(f"{len(sources)} exported functions, {len(scoped)} open a scope"
          + ("" if bad else "; each request and clock wait is inside one"))
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) if len(sys.argv) > 1 else 2)
