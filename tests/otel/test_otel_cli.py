#!/usr/bin/env python3
"""test_otel_cli.py: the `dynalock` command's OpenTelemetry export. Starts fakedb and
receiver.py's OTLP receiver, runs `dynalock run` and `dynalock leader --once` with
OTEL_EXPORTER_OTLP_ENDPOINT and a TRACEPARENT set, and checks: the command's span
continues the caller's trace, the lock's spans and requests are under it, CMD gets the
command span's TRACEPARENT, the metrics arrive; with a collector that is down or hangs,
the command still exits with CMD's status, within the bound of its last export; without
the variables, a TRACEPARENT passes on unchanged.

Usage: test_otel_cli.py DYNALOCK FAKEDB
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import fakedb_proc  # noqa: E402
import receiver  # noqa: E402
from test_otel import attrs, check, failures, spans_of, last_metrics  # noqa: E402

DL, FAKEDB = sys.argv[1], sys.argv[2]
# Bounds of real time stretch under the sanitizers (3, from CMake) and with the machine's
# load: one more time for each runnable task per core over one, as cli_test.sh's bound_ms.
SCALE = int(os.environ.get("DYNALOCK_TEST_TIME_SCALE", "1"))
SCALE += max(0, int(os.getloadavg()[0] / (os.cpu_count() or 1)) - 1)
REMOTE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def control(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST")
    urllib.request.urlopen(req, timeout=10).read()


def get_log(base):
    return json.loads(urllib.request.urlopen(base + "/log", timeout=10).read())


def run(env, *args):
    t0 = time.monotonic()
    p = subprocess.run([DL] + list(args), env=env, capture_output=True, text=True, timeout=60)
    return p, (time.monotonic() - t0) * 1000


def main():
    w = tempfile.mkdtemp(prefix="dynalock-otel-cli.")
    fk, ep = fakedb_proc.start(FAKEDB, w)
    srv = receiver.start()
    base = "http://127.0.0.1:%d" % srv.server_address[1]
    try:
        if ep is None:
            print("fakedb did not start")
            return 1
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OTEL_", "DYNALOCK_", "AWS_")) and k != "TRACEPARENT"}
        env.update(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_REGION="us-east-1",
                   AWS_EC2_METADATA_DISABLED="true", AWS_ENDPOINT_URL_DYNAMODB=ep,
                   HOME=w, DYNALOCK_TABLE="otel")
        p, _ = run(env, "table", "create", "otel", "--exist-ok")
        check(p.returncode == 0, "table create: %s" % p.stderr)

        # run: spans under the caller's trace, TRACEPARENT handed to CMD
        oenv = dict(env, OTEL_EXPORTER_OTLP_ENDPOINT=base, OTEL_SERVICE_NAME="cli-test",
                    TRACEPARENT=REMOTE)
        control(base, "/reset", {})
        p, _ = run(oenv, "run", "job", "--", "sh", "-c", 'printf %s "$TRACEPARENT"; exit 3')
        check(p.returncode == 3, "run passes CMD's status on (%d: %s)" % (p.returncode, p.stderr))
        log = get_log(base)
        spans = spans_of(log)
        cmd = [s for s in spans if s["name"] == "dynalock run"]
        check(len(cmd) == 1, "one 'dynalock run' span (%s)" % [s["name"] for s in spans])
        if cmd:
            c = cmd[0]
            check(c["traceId"] == REMOTE[3:35] and c.get("parentSpanId") == REMOTE[36:52],
                  "the command's span continues TRACEPARENT")
            check(c["resource"].get("service.name") == "cli-test", "OTEL_SERVICE_NAME")
            check(c["attrs"].get("process.exit.code") == "3", "process.exit.code")
            check(p.stdout == "00-%s-%s-01" % (c["traceId"], c["spanId"]),
                  "CMD's TRACEPARENT is the command's span (%r)" % p.stdout)
            acq = [s for s in spans if s["name"].startswith("Lock.") and "Acquire" in s["name"]]
            check(len(acq) == 1 and acq[0].get("parentSpanId") == c["spanId"],
                  "the acquire is under the command's span")
            rel = [s for s in spans if s["name"] == "Lock.Release"]
            check(len(rel) == 1 and rel[0].get("parentSpanId") == c["spanId"],
                  "the release is under the command's span")
            reqs = [s for s in spans if s["kind"] == 3]
            check(reqs and all(s["traceId"] == c["traceId"] for s in reqs), "requests in the same trace")
        m = last_metrics(log)
        a = m.get("dynalock.lock.acquisitions")
        check(a is not None and a["sum"]["dataPoints"][0]["asInt"] == "1", "the acquisition counted")
        check("db.client.operation.duration" in m, "the requests' durations")

        # leader --once: one span per round, CMD's TRACEPARENT under it
        control(base, "/reset", {})
        p, _ = run(oenv, "leader", "--once", "ldr", "--", "sh", "-c", 'printf %s "$TRACEPARENT"')
        check(p.returncode == 0, "leader --once exits 0 (%s)" % p.stderr)
        spans = spans_of(get_log(base))
        rounds = [s for s in spans if s["name"] == "dynalock leader"]
        check(len(rounds) == 1, "one 'dynalock leader' span")
        if rounds:
            r = rounds[0]
            check(r["traceId"] == REMOTE[3:35], "the round continues TRACEPARENT")
            check(p.stdout == "00-%s-%s-01" % (r["traceId"], r["spanId"]), "leader's CMD TRACEPARENT")
            acq = [s for s in spans if s["name"] == "Lock.Acquire"]
            check(acq and acq[0].get("parentSpanId") == r["spanId"], "the election's acquire under the round")

        # a collector that is down: CMD's status, promptly
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        dead = "http://127.0.0.1:%d" % s.getsockname()[1]
        s.close()
        p, took = run(dict(oenv, OTEL_EXPORTER_OTLP_ENDPOINT=dead), "run", "down", "--", "true")
        check(p.returncode == 0, "run with the collector down exits 0 (%s)" % p.stderr)
        check(took < 3000 + 2000 * SCALE, "and promptly (%d ms)" % took)

        # a collector that hangs: the exit is bounded by the 3 s of the last export
        control(base, "/reset", {})
        control(base, "/control", {"hang": True})
        p, took = run(oenv, "run", "hung", "--", "true")
        check(p.returncode == 0, "run with a hanging collector exits 0 (%s)" % p.stderr)
        check(took < 3000 + 3000 * SCALE, "within the bound of the last export (%d ms)" % took)
        srv.state.release.set()
        control(base, "/reset", {})

        # no exporter: TRACEPARENT passes on unchanged; a bad one is only warned about
        p, _ = run(dict(env, TRACEPARENT=REMOTE), "run", "plain", "--", "sh", "-c", 'printf %s "$TRACEPARENT"')
        check(p.returncode == 0 and p.stdout == REMOTE, "TRACEPARENT passes through without export")
        p, _ = run(dict(oenv, TRACEPARENT="00-zz"), "run", "badtp", "--", "true")
        check(p.returncode == 0 and "TRACEPARENT" in p.stderr, "a bad TRACEPARENT is warned about")
    finally:
        srv.state.release.set()
        srv.shutdown()
        fk.terminate()
        fk.wait(timeout=10)
    print("cli otel: %s" % ("ok" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
