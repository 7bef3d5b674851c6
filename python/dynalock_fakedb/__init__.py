"""dynalock_fakedb: run fakedb, the fake DynamoDB server, from Python tests.

FakeDB starts the `fakedb` program on a free port, waits until it serves, and drives
its admin endpoints (/fake/: reset, the fake clock, faults, stats, metrics); plugin.py
makes pytest fixtures of it. Standard library only; boto3 is needed only by the caller.
"""

import atexit
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["FakeDB", "FakeDBError", "find_binary"]
__version__ = "0.1.0"

# What boto3 (and every AWS SDK) needs besides the endpoint: fakedb accepts any
# well-formed signature unless it runs with --credentials.
DEFAULT_REGION = "us-east-1"
DEFAULT_ACCESS_KEY = "fake"
DEFAULT_SECRET_KEY = "fake"


class FakeDBError(Exception):
    """fakedb could not be started, or an admin request failed."""


def find_binary(explicit=None):
    """The fakedb program: `explicit` if given, else $FAKEDB_BIN, else `fakedb` on PATH."""
    candidate = explicit or os.environ.get("FAKEDB_BIN")
    if candidate:
        if os.sep in candidate:
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
            raise FakeDBError("fakedb binary %r is not an executable file" % candidate)
        found = shutil.which(candidate)
        if found:
            return found
        raise FakeDBError("fakedb binary %r is not on PATH" % candidate)
    found = shutil.which("fakedb")
    if not found:
        raise FakeDBError("no fakedb on PATH: install the fakedb package, or set FAKEDB_BIN "
                          "(or pytest's --fakedb-bin) to the program")
    return found


class FakeDB:
    """One fakedb process. start() launches it on a free port (--port 0 --port-file) and
    returns once it serves; stop() ends it (SIGTERM, then SIGKILL after `stop_timeout`).
    Usable as a context manager. By default the clock is fake (`--clock fake`: it starts
    at the current time and moves only through advance_clock/set_clock). With
    `credentials`, fakedb verifies every request's signature against access_key and
    secret_key, and its admin endpoints answer only requests that carry them."""

    def __init__(self, binary=None, args=(), host="127.0.0.1", clock="fake",
                 start_timeout=30.0, stop_timeout=10.0, region=DEFAULT_REGION,
                 access_key=DEFAULT_ACCESS_KEY, secret_key=DEFAULT_SECRET_KEY,
                 credentials=False):
        self.binary = find_binary(binary)
        self.args = list(args)
        self.host = host
        self.clock = clock
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.region = region
        self.access_key = access_key
        self.secret_key = secret_key
        self.credentials = credentials
        self.port = None
        self.endpoint = None
        self.process = None
        self._dir = None

    # -- the process --------------------------------------------------------------

    def start(self):
        if self.process is not None:
            raise FakeDBError("fakedb is already started")
        self._dir = tempfile.mkdtemp(prefix="fakedb-")
        port_file = os.path.join(self._dir, "port")
        cmd = [self.binary, "--host", self.host, "--port", "0", "--port-file", port_file]
        if self.clock:
            cmd += ["--clock", self.clock]
        if self.credentials:
            cmd += ["--credentials", "%s:%s" % (self.access_key, self.secret_key)]
        cmd += self.args
        log = open(os.path.join(self._dir, "stderr.log"), "wb")
        try:
            self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                            stderr=log, close_fds=True)
        finally:
            log.close()
        atexit.register(self.stop)
        try:
            self._wait_ready(port_file)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, port_file):
        # fakedb writes the port file, then prints "fakedb listening on URL" on stdout:
        # the line (or EOF, when it exits) is the event waited for.
        deadline = time.monotonic() + self.start_timeout
        line = b""
        with selectors.DefaultSelector() as sel:
            sel.register(self.process.stdout, selectors.EVENT_READ)
            while not line.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise FakeDBError("fakedb did not start within %.0f s%s"
                                      % (self.start_timeout, self._stderr_tail()))
                chunk = os.read(self.process.stdout.fileno(), 4096)
                if not chunk:
                    code = self.process.wait()
                    raise FakeDBError("fakedb exited with status %d before serving%s"
                                      % (code, self._stderr_tail()))
                line += chunk
        with open(port_file, encoding="ascii") as f:
            self.port = int(f.read().strip())
        host = self.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        if ":" in host:
            host = "[%s]" % host
        self.endpoint = "http://%s:%d" % (host, self.port)

    def _stderr_tail(self):
        try:
            with open(os.path.join(self._dir, "stderr.log"), "rb") as f:
                text = f.read()[-2000:].decode("utf-8", "replace").strip()
        except OSError:
            return ""
        return (": " + text) if text else ""

    @property
    def running(self):
        return self.process is not None and self.process.poll() is None

    def stop(self):
        """Stops fakedb (idempotent). Returns its exit status, or None if never started."""
        proc = self.process
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout:
            proc.stdout.close()
        self.process = None
        atexit.unregister(self.stop)
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        return proc.returncode

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- clients ------------------------------------------------------------------

    def env(self):
        """The environment an AWS SDK needs to talk to this fakedb. boto3 reads
        AWS_ENDPOINT_URL_DYNAMODB from version 1.28 on; older ones need client_kwargs()."""
        return {
            "AWS_ENDPOINT_URL_DYNAMODB": self.endpoint,
            "AWS_ENDPOINT_URL_DYNAMODBSTREAMS": self.endpoint,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
        }

    def client_kwargs(self):
        """Keyword arguments for boto3.client("dynamodb", ...) or boto3.resource(...)."""
        return {
            "endpoint_url": self.endpoint,
            "region_name": self.region,
            "aws_access_key_id": self.access_key,
            "aws_secret_access_key": self.secret_key,
        }

    def boto3_client(self, service="dynamodb", **kwargs):
        import boto3  # only the caller needs boto3
        return boto3.client(service, **{**self.client_kwargs(), **kwargs})

    def boto3_resource(self, service="dynamodb", **kwargs):
        import boto3
        return boto3.resource(service, **{**self.client_kwargs(), **kwargs})

    # -- the admin API (docs/fakedb.md, "Admin endpoints") -------------------------

    def _auth_headers(self, method, path, body):
        """Headers that authorise an admin request. Every admin call goes through
        _request(), so this is the one place: with `credentials`, fakedb runs with
        --credentials and its /fake/ endpoints take the secret key as a bearer token
        (docs/fakedb.md); without, it asks for none."""
        if self.credentials:
            return {"Authorization": "Bearer " + self.secret_key}
        return {}

    def _request(self, method, path, body=None, raw=False, timeout=60.0):
        if self.endpoint is None:
            raise FakeDBError("fakedb is not started")
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        headers.update(self._auth_headers(method, path, data))
        req = urllib.request.Request(self.endpoint + path, data=data, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")
            raise FakeDBError("%s %s: HTTP %d %s" % (method, path, e.code, detail)) from None
        except urllib.error.URLError as e:
            raise FakeDBError("%s %s: %s" % (method, path, e.reason)) from None
        if raw:
            return payload.decode("utf-8")
        return json.loads(payload.decode("utf-8")) if payload else {}

    def health(self):
        return self._request("GET", "/fake/health")

    def reset(self):
        """Drops every table and fault and zeroes /fake/stats (not the clock, nor the
        counters of /fake/metrics)."""
        self._request("POST", "/fake/reset")

    def now_ms(self):
        """The server's clock, in milliseconds since the epoch."""
        return self._request("GET", "/fake/clock")["now_ms"]

    def advance_clock(self, ms):
        """Moves the fake clock forward by `ms` (TTL expiries happen before it returns);
        returns the new time in ms."""
        return self._request("POST", "/fake/clock/advance", {"ms": int(ms)})["now_ms"]

    def set_clock(self, now_ms):
        """Sets the fake clock to `now_ms` (never backwards); returns it."""
        return self._request("POST", "/fake/clock/set", {"now_ms": int(now_ms)})["now_ms"]

    def wait_clock(self, until_ms, timeout_ms=30000):
        """Long poll: True once the server's clock reaches until_ms, False after
        timeout_ms of real time."""
        q = urllib.parse.urlencode({"until_ms": int(until_ms), "timeout_ms": int(timeout_ms)})
        return self._request("GET", "/fake/clock/wait?" + q,
                             timeout=timeout_ms / 1000.0 + 30.0)["reached"]

    def add_fault(self, kind="error", operation=None, table=None, key=None, count=0,
                  error_type=None, status=None, delay_ms=None):
        """Adds a fault (docs/fakedb.md, "Faults"); returns its id."""
        rule = {"kind": kind, "count": int(count)}
        for name, value in (("operation", operation), ("table", table), ("key", key),
                            ("error_type", error_type), ("status", status),
                            ("delay_ms", delay_ms)):
            if value is not None:
                rule[name] = value
        return self._request("POST", "/fake/faults", rule)["id"]

    def faults(self):
        """The faults in place: dicts with id, kind, fired, count and their matchers."""
        return self._request("GET", "/fake/faults")["faults"]

    def remove_fault(self, fault_id):
        self._request("DELETE", "/fake/faults/%d" % int(fault_id))

    def clear_faults(self):
        self._request("DELETE", "/fake/faults")

    def stats(self):
        """/fake/stats: requests and condition failures, in all and per operation."""
        return self._request("GET", "/fake/stats")

    def metrics(self):
        """/fake/metrics: the Prometheus text."""
        return self._request("GET", "/fake/metrics", raw=True)

    def metric(self, name, **labels):
        """The sum of the samples of metric `name` whose labels include `labels`
        (0.0 when there is none), e.g. metric("fakedb_requests_total", operation="PutItem")."""
        total = 0.0
        for line in self.metrics().splitlines():
            if not line or line.startswith("#"):
                continue
            series, _, value = line.rpartition(" ")
            base, _, rest = series.partition("{")
            if base != name:
                continue
            have = _parse_labels(rest.rstrip("}")) if rest else {}
            if all(have.get(k) == str(v) for k, v in labels.items()):
                total += float(value)
        return total


def _parse_labels(text):
    # a="x",b="y\"z": values are quoted with \\, \" and \n escaped.
    labels, i = {}, 0
    while i < len(text):
        eq = text.index("=", i)
        key = text[i:eq].strip().lstrip(",").strip()
        j, value = eq + 2, []
        while text[j] != '"':
            if text[j] == "\\":
                j += 1
                value.append("\n" if text[j] == "n" else text[j])
            else:
                value.append(text[j])
            j += 1
        labels[key] = "".join(value)
        i = j + 1
    return labels
