#!/usr/bin/env python3
"""test_otel.py: libddb_otel end to end. Starts receiver.py's OTLP/HTTP receiver in this
process, runs otel_driver's scenarios against it and checks what arrived against the
reference's list (docs/internals/telemetry.md): span names, kinds, attributes, status,
parent and link structure, the metrics' values; and the bad days: a collector that
answers 503 with Retry-After then 200, 400, is down, or hangs, and a full queue.

Usage: test_otel.py OTEL_DRIVER
"""
import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import receiver  # noqa: E402

DRIVER = sys.argv[1]
SCALE = int(os.environ.get("DYNALOCK_TEST_TIME_SCALE", "1"))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, flush=True)


# DYNALOCK_OTEL_WRAP: a command to run the driver under, e.g. "valgrind --error-exitcode=99
# --leak-check=full" (with DYNALOCK_TEST_TIME_SCALE for the bounds).
WRAP = os.environ.get("DYNALOCK_OTEL_WRAP", "").split()


def run(*args, timeout=300):
    p = subprocess.run(WRAP + [DRIVER] + list(args), capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:  # under valgrind, --error-exitcode makes its errors count
        print(p.stdout, p.stderr)
        raise SystemExit("otel_driver %s exited %d" % (args[0], p.returncode))
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def control(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST")
    urllib.request.urlopen(req, timeout=10).read()


def attrs(lst):
    out = {}
    for a in lst or []:
        v = a["value"]
        (k, x), = v.items()
        out[a["key"]] = x
    return out


def spans_of(log):
    out = []
    for r in log:
        if r["path"] != "/v1/traces" or r["status"] != 200:
            continue
        for rs in r["body"]["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for s in ss["spans"]:
                    s = dict(s)
                    s["attrs"] = attrs(s.get("attributes"))
                    s["resource"] = attrs(rs["resource"]["attributes"])
                    out.append(s)
    return out


def last_metrics(log):
    """The metrics of the last accepted export: cumulative, so the last one has it all."""
    ms = [r for r in log if r["path"] == "/v1/metrics" and r["status"] == 200]
    if not ms:
        return {}
    out = {}
    for rm in ms[-1]["body"]["resourceMetrics"]:
        for sm in rm["scopeMetrics"]:
            for m in sm["metrics"]:
                out[m["name"]] = m
    return out


def is_hex(s, n):
    return isinstance(s, str) and len(s) == n and all(c in "0123456789abcdef" for c in s)


def t_lease(base):
    remote = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    out = run("lease", base, remote)
    log = get_log(base)
    spans = spans_of(log)
    by = {}
    for s in spans:
        by.setdefault(s["name"], []).append(s)
    ids = {s["spanId"]: s for s in spans}
    for s in spans:
        check(is_hex(s["traceId"], 32) and is_hex(s["spanId"], 16), "hex ids on %s" % s["name"])
        check(int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) > 0, "times of %s" % s["name"])
        check(s["resource"].get("service.name") == "otel-test", "service.name")
        check(s["resource"].get("deployment.environment") == "test/ci", "resource attribute decoded")
    traces = [r for r in log if r["path"] == "/v1/traces"]
    check(traces and all(r["headers"].get("content-type") == "application/json" for r in traces),
          "Content-Type application/json")
    check(traces and all(r["headers"].get("x-api-key") == "s ecret" for r in traces),
          "the configured header, percent-decoded")

    job = by.get("job", [None])[0]
    check(job is not None, "the caller's span")
    if job is None:
        return
    check(job["traceId"] == "0af7651916cd43dd8448eb211c80319c", "job continues the remote trace")
    check(job.get("parentSpanId") == "b7ad6b7169203331", "job's parent is the remote span")
    check(job["kind"] == 1, "job is INTERNAL")
    check(out[0]["traceparent"].startswith("00-0af7651916cd43dd8448eb211c80319c-"),
          "the current traceparent is in the remote trace")

    acqs = {s["attrs"].get("dynalock.lock.name"): s for s in by.get("Lock.Acquire", [])}
    acq = acqs.get("nightly")
    check(acq is not None and "weekly" in acqs, "both Lock.Acquire exported")
    if acq is None:
        return
    check(acq["kind"] == 1, "Lock.Acquire is INTERNAL")
    check(acq.get("parentSpanId") == job["spanId"] and acq["traceId"] == job["traceId"],
          "Lock.Acquire is a child of the caller's span")
    a = acq["attrs"]
    check(a.get("db.system.name") == "aws.dynamodb", "db.system.name on the lock span")
    check(a.get("db.collection.name") == "Locks", "db.collection.name on the lock span")
    check(a.get("dynalock.lock.name") == "nightly", "dynalock.lock.name")
    check(a.get("dynalock.lock.acquired") is True, "dynalock.lock.acquired is a bool")
    check(a.get("dynalock.lock.takeover") is False, "dynalock.lock.takeover")
    check(a.get("dynalock.lock.fencing_token") == "1", "fencing_token an intValue string")
    check("status" not in acq, "a successful span has no error status")
    kids = [s for s in spans if s.get("parentSpanId") == acq["spanId"]]
    check(len(kids) >= 1 and all(k["kind"] == 3 for k in kids), "the acquire's requests are CLIENT children")
    for k in kids:
        check(k["traceId"] == acq["traceId"], "a child inherits its parent's trace")
        ka = k["attrs"]
        check(ka.get("db.operation.name") == k["name"], "db.operation.name of %s" % k["name"])
        check(ka.get("db.system.name") == "aws.dynamodb", "db.system.name of %s" % k["name"])
        check(ka.get("server.address") == "127.0.0.1", "server.address of %s" % k["name"])
        check(isinstance(ka.get("server.port"), str) and ka["server.port"].isdigit(),
              "server.port an intValue")

    renews = by.get("Lock.Renew", [])
    check(len(renews) >= 2, "the heartbeat's Lock.Renew exported")
    for r in renews:
        mine = acqs.get(r["attrs"].get("dynalock.lock.name"), acq)
        check("parentSpanId" not in r, "a renewal is a root")
        check(r["traceId"] != mine["traceId"], "a renewal has a trace of its own")
        check(r.get("links") == [{"traceId": mine["traceId"], "spanId": mine["spanId"]}],
              "a renewal links to its lease's acquire")
        check(r["kind"] == 1, "Lock.Renew is INTERNAL")
        check(r["attrs"].get("dynalock.lock.fencing_token") == "1", "renewal's fencing token")
        rk = [s for s in spans if s.get("parentSpanId") == r["spanId"]]
        check([k["name"] for k in rk] == ["UpdateItem"], "the renewal's UpdateItem child")
    failed = [r for r in renews if r.get("status", {}).get("code") == 2]
    check(len(failed) == 1 and failed[0]["attrs"].get("dynalock.lock.name") == "weekly",
          "the renewal of the deleted lock failed with status ERROR")
    if failed:
        check(failed[0]["attrs"].get("error.type") == failed[0]["status"]["message"],
              "error.type on the failed renewal, as its status message")

    rel = by.get("Lock.Release", [None])[0]
    check(rel is not None and rel.get("parentSpanId") == job["spanId"], "Lock.Release under the caller's span")

    gets = [s for s in by.get("GetItem", []) if s["attrs"].get("db.collection.name") == "Missing"]
    check(len(gets) == 1, "the failed GetItem exported")
    if gets:
        g = gets[0]
        check(g.get("status", {}).get("code") == 2, "a failed request has status ERROR")
        check(g["attrs"].get("error.type") == "ResourceNotFoundException", "error.type on the failure")
        check(g.get("parentSpanId") == job["spanId"], "the failed request is under the caller's span")

    m = last_metrics(log)
    acqm = m.get("dynalock.lock.acquisitions")
    check(acqm is not None, "dynalock.lock.acquisitions exported")
    if acqm:
        check(acqm["unit"] == "{lease}", "acquisitions unit")
        s = acqm["sum"]
        check(s["isMonotonic"] is True and s["aggregationTemporality"] == 2, "a cumulative monotonic sum")
        dp = s["dataPoints"]
        check(len(dp) == 1 and dp[0].get("asInt") == "2", "two acquisitions counted")
        check(attrs(dp[0]["attributes"]) == {"db.collection.name": "Locks", "dynalock.lock.takeover": False},
              "acquisitions' attributes, no lock name")
    loss = m.get("dynalock.lock.losses")
    check(loss is not None and loss["unit"] == "{lease}", "dynalock.lock.losses exported")
    if loss:
        dp = loss["sum"]["dataPoints"]
        check(len(dp) == 1 and dp[0]["asInt"] == "1" and
              attrs(dp[0]["attributes"]) == {"db.collection.name": "Locks",
                                             "dynalock.lock.loss_reason": "deleted"},
              "one loss, reason deleted, no lock name")
    ren = m.get("dynalock.lock.renewals")
    check(ren is not None and sum(int(p["asInt"]) for p in ren["sum"]["dataPoints"]) == len(renews),
          "renewals counted as many as Lock.Renew spans")
    if ren:
        errs = [p for p in ren["sum"]["dataPoints"] if "error.type" in attrs(p["attributes"])]
        check(len(errs) == 1 and errs[0]["asInt"] == "1", "the failed renewal counted with error.type")
    dur = m.get("db.client.operation.duration")
    check(dur is not None and "histogram" in dur, "db.client.operation.duration is a histogram")
    if dur:
        check(dur["unit"] == "s", "duration in seconds")
        pts = dur["histogram"]["dataPoints"]
        total = 0
        for p in pts:
            pa = attrs(p["attributes"])
            check("db.operation.name" in pa and "db.system.name" in pa, "duration point attributes")
            bc = [int(x) for x in p["bucketCounts"]]
            check(len(bc) == len(p["explicitBounds"]) + 1, "one bucket more than bounds")
            check(sum(bc) == int(p["count"]), "buckets add up to the count")
            check(p["explicitBounds"] == [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10], "the seconds bounds")
            total += int(p["count"])
        client_spans = [s for s in spans if s["kind"] == 3]
        check(total == len(client_spans), "one duration point per request span (%d vs %d)" % (total, len(client_spans)))
        err = [p for p in pts if attrs(p["attributes"]).get("error.type") == "ResourceNotFoundException"]
        check(len(err) == 1 and err[0]["count"] == "1", "the failure's own point with error.type")
    st = [o for o in out if o.get("stage") == "exported"][0]
    check(st["spans_exported"] == len(spans) and st["dropped"] == 0, "all spans exported, none dropped")
    check(st["metric_exports"] >= 1, "metrics exported on the interval")


def get_log(base):
    return json.loads(urllib.request.urlopen(base + "/log", timeout=10).read())


def t_retry_503(base):
    control(base, "/control", {"script": [[503, "3"], [200, None]]})
    out = run("retry", base, "5", "3000", "1")
    st = {o["stage"] + str(i): o for i, o in enumerate(out)}
    first, before, after = out[1], out[2], out[3]
    check(first["retries"] == 1 and first["spans_exported"] == 0, "503: one retry pending")
    check(before["retries"] == 1 and before["spans_exported"] == 0, "Retry-After: 3 honoured (not before)")
    check(after["spans_exported"] == 3 and after["dropped"] == 0, "the retry at Retry-After is accepted")
    log = [r for r in get_log(base) if r["path"] == "/v1/traces"]
    check([r["status"] for r in log] == [503, 200], "503 then 200 (%s)" % [r["status"] for r in log])
    check(len(log) == 2 and log[0]["body"] == log[1]["body"], "the same payload sent again")
    del st


def t_retry_codes(base):
    # 429, 502 and 504 are retried too, after an exponential backoff when there is no
    # Retry-After (each step is longer than any backoff: one attempt per step).
    control(base, "/control", {"script": [[429, None], [502, None], [504, None], [200, None]]})
    out = run("retry", base, "5", "30000", "3")
    afters = [o for o in out if o["stage"] == "after"]
    check([a["retries"] for a in afters] == [2, 3, 3], "one retry per backoff (%s)" % [a["retries"] for a in afters])
    check(afters[-1]["spans_exported"] == 3 and afters[-1]["dropped"] == 0, "accepted on the fourth attempt")
    log = [r for r in get_log(base) if r["path"] == "/v1/traces"]
    check([r["status"] for r in log] == [429, 502, 504, 200], "429, 502, 504 retried (%s)" % [r["status"] for r in log])


def t_fail_400(base):
    control(base, "/control", {"script": [[400, None]]})
    out = run("retry", base, "5", "30000", "1")
    first, after = out[1], out[3]
    check(first["spans_failed"] == 3 and first["retries"] == 0, "400: dropped and counted, no retry")
    check(after["dropped"] == 3 and after["last_http_status"] == 400, "400 counted in dropped")
    log = [r for r in get_log(base) if r["path"] == "/v1/traces"]
    check(len(log) == 1, "400 is not retried")


def t_down():
    # A port with nothing listening: every attempt fails to connect; 3 attempts, then dropped.
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    out = run("retry", "http://127.0.0.1:%d" % port, "3", "30000", "3")
    first = out[1]
    afters = [o for o in out if o["stage"] == "after"]
    check(first["retries"] == 1 and first["spans_failed"] == 0, "down: the first failure is retried")
    check(afters[0]["retries"] == 2, "down: the second attempt after its backoff")
    check(afters[1]["spans_failed"] == 3 and afters[1]["retries"] == 2, "down: dropped after 3 attempts")
    check(afters[2]["dropped"] == 3, "down: counted once")


def t_hang(base):
    control(base, "/control", {"hang": True})
    out = run("hang", base)
    el = out[0]["elapsed_ms"]
    check(el < 500 + 1500 * SCALE, "free is bounded by the shutdown timeout (%d ms)" % el)
    check(el >= 400, "free waited for the collector up to its deadline (%d ms)" % el)
    log = [r for r in get_log(base) if r["path"] == "/v1/traces"]
    check(len(log) == 2, "the hung export and the shutdown's flush (%d)" % len(log))


def t_queue(base):
    control(base, "/control", {"hang": True})
    out = run("queue", base)
    full = out[0]
    check(full["spans_queue_full"] == 15, "a queue of 10: 15 of 25 dropped (%d)" % full["spans_queue_full"])
    check(full["dropped"] == 15, "ddb_otel_dropped counts them")


def t_flush(base):
    # Accepted: the three spans leave at the call, the fake clock never advanced.
    out = run("flush", base)
    res, st = out[0], out[1]
    check(res["ok"] and res["http_status"] == 0, "flush returns 0 when accepted (%s)" % res)
    check(st["spans_exported"] == 3 and st["dropped"] == 0, "flush exported the 3 spans (%s)" % st)
    sent = spans_of(get_log(base))
    check(len(sent) == 3, "the receiver has the 3 spans without an advance (%d)" % len(sent))
    # Refused: the call's error is DDB_ESERVICE with the collector's status.
    control(base, "/reset", {})
    control(base, "/control", {"script": [[400, None]] * 4})
    out = run("flush", base)
    res, st = out[0], out[1]
    check(res["service"] and res["http_status"] == 400, "a refused flush is DDB_ESERVICE, HTTP 400 (%s)" % res)
    check(st["spans_failed"] == 3 and st["dropped"] == 3, "the refused spans are dropped and counted (%s)" % st)


def main():
    srv = receiver.start()
    base = "http://127.0.0.1:%d" % srv.server_address[1]
    tests = [("lease", lambda: t_lease(base)), ("retry_503", lambda: t_retry_503(base)),
             ("retry_codes", lambda: t_retry_codes(base)),
             ("fail_400", lambda: t_fail_400(base)), ("down", t_down),
             ("hang", lambda: t_hang(base)), ("queue", lambda: t_queue(base)),
             ("flush", lambda: t_flush(base))]
    only = os.environ.get("OTEL_TEST_ONLY")
    for name, fn in tests:
        if only and name != only:
            continue
        control(base, "/reset", {})
        srv.state.release.set()
        srv.state.release.clear()
        n = len(failures)
        fn()
        print("%s: %s" % (name, "ok" if len(failures) == n else "FAILED"), flush=True)
    srv.state.release.set()
    srv.shutdown()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
