"""fakedb_proc.py: the Python tests' one way to run the fakedb program (tests/otel,
tests/peers), as tests/support/fakedb.sh is the shell tests': on a free loopback port,
waiting for the port file it writes once it listens."""
import os
import subprocess
import time


def start(binary, tmp, *args, bound_s=30):
    """Runs BINARY --port 0 --port-file TMP/port ARGS..., its output discarded, and waits
    (polling every 20 ms, at most bound_s of real time, and no longer once the process
    has exited) for the port file. Returns (process, "http://127.0.0.1:PORT"); when it
    did not start, the process is killed and the endpoint is None."""
    port_file = os.path.join(tmp, "port")
    proc = subprocess.Popen([binary, "--port", "0", "--port-file", port_file] + list(args),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + bound_s
    while time.monotonic() < end:
        if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
            with open(port_file) as f:
                return proc, "http://127.0.0.1:" + f.read().strip()
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    proc.kill()
    proc.wait()
    return proc, None
