"""Running one command at a time, bounded in time, with the CPU it and the brokers used; the
bench's log line; free loopback ports (e2e/lib/ports.py)."""

import resource
import socket
import subprocess
import sys
import time

from .constants import ROOT


def log(message):
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


sys.path.insert(0, str(ROOT / "e2e" / "lib"))
from ports import free_port  # noqa: E402,F401  (re-exported for brokers and ceilings)


def wait_for_port(port, process, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


# The brokers of the matrix being run: they run side by side, so each one's CPU while a
# command addressed another one is counted apart (Broker.idle_cpu).
RUNNING = []


def run(cmd, timeout, env=None):
    """Runs a command; returns (exit code, stdout, stderr). A timeout is exit code 124."""
    idle = [b for b in RUNNING if not any(b.bootstrap in str(arg) for arg in cmd)]
    before = [b.usage()[1] for b in idle]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as e:
        # The partial output of a timed-out run comes back as bytes even with text=True.
        return 124, as_text(e.stdout), as_text(e.stderr) + f"\ntimed out after {timeout}s"
    finally:
        for broker, cpu in zip(idle, before):
            broker.idle_cpu += broker.usage()[1] - cpu


def run_measured(cmd, timeout, broker, env=None):
    """run(), and the CPU seconds (user + system) the command and the broker used meanwhile:
    (code, stdout, stderr, client CPU s, broker CPU s). The command's comes from the
    rusage of reaped children, so it counts whatever the command waited for too (a wrapper
    script's JVM); nothing else is reaped meanwhile, the bench runs one command at a time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    broker_before = broker.usage()[1]
    code, out, err = run(cmd, timeout, env)
    broker_cpu = broker.usage()[1] - broker_before
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return code, out, err, client_cpu, broker_cpu


def as_text(output):
    if isinstance(output, bytes):
        return output.decode(errors="replace")
    return output or ""
