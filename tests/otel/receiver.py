#!/usr/bin/env python3
"""receiver.py: a small OTLP/HTTP receiver (JSON encoding) for the exporter's tests and
for docs/observability.md's picture. It answers POST /v1/traces and /v1/metrics, decodes
each payload and keeps it, and answers as a test scripts it: a list of statuses (with a
Retry-After) taken in order, then 200; or a hang (the request is read and never answered).

Control (for tests):  POST /control {"script": [[503, "3"], [200, null]], "hang": false}
                      POST /reset   forgets the requests and the script
                      GET  /log     every request: path, headers, decoded body, answer
                      GET  /count   how many export requests arrived (hanging ones too)

As a program: receiver.py [--port N] [--out FILE]: serves until killed (SIGTERM/SIGINT)
and writes every decoded request to FILE as JSON (one list) when it stops, and after
each request. It prints "listening on PORT" first.
"""
import argparse
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = []
        self.script = []
        self.hang = False
        self.release = threading.Event()
        self.out = None

    def snapshot(self):
        with self.lock:
            return json.loads(json.dumps(self.requests))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def _send(self, status, body=b"{}", extra=None):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        st = self.server.state
        if self.path == "/log":
            self._send(200, json.dumps(st.snapshot()).encode())
        elif self.path == "/count":
            with st.lock:
                n = len(st.requests)
            self._send(200, str(n).encode())
        else:
            self._send(404)

    def do_POST(self):
        st = self.server.state
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        if self.path == "/control":
            c = json.loads(raw or b"{}")
            with st.lock:
                st.script = [list(x) for x in c.get("script", [])]
                st.hang = bool(c.get("hang", False))
            self._send(200)
            return
        if self.path == "/reset":
            with st.lock:
                st.requests, st.script, st.hang = [], [], False
            self._send(200)
            return
        if self.path not in ("/v1/traces", "/v1/metrics"):
            self._send(404)
            return
        try:
            body = json.loads(raw)
            err = None
        except ValueError as e:
            body, err = None, str(e)
        with st.lock:
            if st.hang:
                status, retry_after = None, None
            elif st.script:
                status, retry_after = st.script.pop(0)
            else:
                status, retry_after = (400, None) if err else (200, None)
            st.requests.append({"path": self.path,
                                "headers": {k.lower(): v for k, v in self.headers.items()},
                                "body": body, "decode_error": err, "status": status})
            out = st.out
            if out:
                with open(out, "w") as f:
                    json.dump(st.requests, f)
        if status is None:
            st.release.wait()  # a collector that hangs: never answers
            return
        extra = {"Retry-After": retry_after} if retry_after is not None else None
        self._send(status, b"{}" if status == 200 else b'{"code":3,"message":"scripted"}', extra)


def start(port=0, out=None):
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    srv.state = State()
    srv.state.out = out
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--out")
    a = ap.parse_args()
    srv = start(a.port, a.out)
    print("listening on %d" % srv.server_address[1], flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *x: done.set())
    signal.signal(signal.SIGINT, lambda *x: done.set())
    done.wait()
    srv.state.release.set()
    srv.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
