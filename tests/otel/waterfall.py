#!/usr/bin/env python3
"""waterfall.py: renders the spans that receiver.py captured (its --out file) as a text
waterfall, one block per trace: each span indented under its parent, a bar for when it
ran on the trace's time line, its duration, kind, status and key attributes, and its
links. For docs/observability.md's picture of one lease's trace.

Usage: waterfall.py CAPTURED.json [WIDTH]
"""
import json
import sys

KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
SHOW = (("dynalock.lock.name", "lock"), ("dynalock.lock.fencing_token", "token"),
        ("dynalock.lock.acquired", "acquired"), ("db.collection.name", "table"),
        ("error.type", "error"), ("process.exit.code", "exit"))


def value(v):
    (k, x), = v.items()
    return x


def main():
    path = sys.argv[1]
    width = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    spans = []
    for r in json.load(open(path)):
        if r["path"] != "/v1/traces" or not r.get("body"):
            continue
        for rs in r["body"]["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                spans.extend(ss["spans"])
    by_id = {s["spanId"]: s for s in spans}
    names = {s["spanId"]: s["name"] for s in spans}
    traces = {}
    for s in spans:
        traces.setdefault(s["traceId"], []).append(s)
    order = sorted(traces.values(), key=lambda ss: min(int(s["startTimeUnixNano"]) for s in ss))
    t0 = min(int(s["startTimeUnixNano"]) for s in spans)
    t1 = max(int(s["endTimeUnixNano"]) for s in spans)
    scale = max(t1 - t0, 1)
    for ss in order:
        tid = ss[0]["traceId"]
        print("trace %s" % tid)
        roots = [s for s in ss if s.get("parentSpanId") not in by_id]
        kids = {}
        for s in ss:
            kids.setdefault(s.get("parentSpanId"), []).append(s)

        def show(s, depth):
            a = int(s["startTimeUnixNano"]) - t0
            b = int(s["endTimeUnixNano"]) - t0
            lo = a * width // scale
            hi = max(lo + 1, b * width // scale)
            bar = " " * lo + "#" * (hi - lo) + " " * (width - hi)
            at = {x["key"]: value(x["value"]) for x in s.get("attributes", [])}
            extra = " ".join("%s=%s" % (short, json.dumps(at[k]) if isinstance(at[k], bool) else at[k])
                             for k, short in SHOW if k in at)
            st = " ERROR" if s.get("status", {}).get("code") == 2 else ""
            label = "  " * depth + s["name"]
            print("  %-34s |%s| %8.1f ms %-8s%s %s" % (label[:34], bar, (b - a) / 1e6,
                                                       KINDS.get(s["kind"], "?"), st, extra))
            for ln in s.get("links", []):
                print("  %-34s  link -> %s (trace %s...)" % ("  " * depth, names.get(ln["spanId"], ln["spanId"]),
                                                          ln["traceId"][:8]))
            for k in sorted(kids.get(s["spanId"], []), key=lambda x: int(x["startTimeUnixNano"])):
                show(k, depth + 1)

        for r in sorted(roots, key=lambda x: int(x["startTimeUnixNano"])):
            if r.get("parentSpanId"):
                print("  (parent %s: the caller's, not exported here)" % r["parentSpanId"])
            show(r, 0)
        print()
    print("time line: %.1f ms, one column = %.1f ms" % (scale / 1e6, scale / 1e6 / width))
    return 0


if __name__ == "__main__":
    sys.exit(main())
