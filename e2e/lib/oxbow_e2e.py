"""The one set of helpers of the Python e2e suites (clients/roundtrip.py, groups/*,
suites/35-admin.py, cluster/*.py): a real `oxbow` process on free loopback ports (start,
SIGKILL, clean stop, restart on the same data), metrics scraping (`http_get`), waiting on
conditions (never sleeping as synchronisation), `fail` for script-style suites, and the
skip / missing-client protocol of e2e/run (e2e/lib/suite.sh).

Import it after putting this directory on the path:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from oxbow_e2e import Broker, wait_for
"""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ports import free_port  # noqa: E402,F401  (re-exported for the suites)

SKIP_EXIT = 77


def fail(message):
    """Ends a script-style suite (no test runner) with `FAIL message` and exit status 1."""
    print(f"FAIL {message}", flush=True)
    sys.exit(1)


def http_get(port, path, host="127.0.0.1", timeout=2):
    """GET `path` on a metrics listener: (status, body), or (None, None) when nothing
    answers (a node that is down or still starting)."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode()
    except Exception:
        return None, None


def wait_for(condition, timeout=60.0, what="condition", interval=0.05):
    """Polls `condition` until it returns a truthy value (returned); fails after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def skip(reason):
    """Reports one skipped check the e2e/run way (a line in $OXBOW_SKIPS); the caller goes
    on and ends with `sys.exit(SKIP_EXIT)`."""
    print(f"skip: {reason}", flush=True)
    path = os.environ.get("OXBOW_SKIPS")
    if path:
        with open(path, "a") as f:
            f.write(reason + "\n")


def require(what, present, install_hint):
    """A client the suite needs must be there: its absence fails the suite, never skips it."""
    if not present:
        raise SystemExit(f"FAIL {what} is not installed ({install_hint}); the suite cannot check it")


class Broker:
    """One oxbow process on free loopback ports, data in `workdir/data`, log in
    `workdir/oxbow.log`; the client port is `port` when given. `overrides` apply to every start, `start(*extra)` adds overrides for
    that start only. `kill()` is SIGKILL; `stop()` is SIGTERM and requires a clean exit 0.
    As a context manager it starts, and stops (printing the log tail on an error)."""

    def __init__(self, binary=None, workdir=None, overrides=(), port=None):
        self.binary = binary or os.environ.get("OXBOW_BINARY", "")
        if not self.binary:
            raise SystemExit("no broker binary: pass one or set OXBOW_BINARY")
        self.workdir = workdir or tempfile.mkdtemp(prefix="oxbow-e2e-")
        self.data = os.path.join(self.workdir, "data")
        self.log_path = os.path.join(self.workdir, "oxbow.log")
        if isinstance(overrides, dict):
            overrides = [f"{key}={value}" for key, value in overrides.items()]
        self.overrides = list(overrides)
        self.port = port or free_port()
        self.metrics_port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.process = None

    def start(self, *extra):
        """Starts the broker and waits until it listens on its client port."""
        self.launch(*extra)

        def listening():
            if self.process.poll() is not None:
                raise AssertionError(f"oxbow exited with {self.process.returncode} during start:\n{self.log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return True
            except OSError:
                return False

        wait_for(listening, 60, "the broker to listen")
        return self

    def launch(self, *extra):
        """Starts the broker without waiting (for a caller that times its start itself)."""
        command = [
            self.binary,
            "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "--override", f"metrics.listener=127.0.0.1:{self.metrics_port}",
            "--override", f"log.dirs={self.data}",
        ]
        for override in [*self.overrides, *extra]:
            command += ["--override", override]
        os.makedirs(self.workdir, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    def running(self):
        return self.process is not None and self.process.poll() is None

    def kill(self):
        if self.running():
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self):
        """SIGTERM; the broker must exit 0 within 60 s (else it is killed and this fails)."""
        if not self.running():
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"oxbow still running 60 s after SIGTERM:\n{self.log_tail()}")
        if code != 0:
            raise AssertionError(f"oxbow exited with {code} after SIGTERM:\n{self.log_tail()}")

    def log_tail(self, lines=40):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-lines:]).decode(errors="replace")
        except OSError:
            return ""

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            return r.read().decode()

    def metric(self, name, **labels):
        """The value of one sample, or None."""
        for line in self.metrics().splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            m = re.match(r"([^{ ]+)(?:\{(.*)\})? (\S+)$", line)
            if not m or m.group(1) != name:
                continue
            found = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            if all(found.get(k) == str(v) for k, v in labels.items()):
                return float(m.group(3))
        return None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if exc[0] is not None:
            print(f"--- broker log ({self.workdir}) ---\n{self.log_tail()}", file=sys.stderr)
            self.kill()
            return
        self.stop()
