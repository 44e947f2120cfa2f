"""What every security scenario shares: logging, failing with the evidence, Kafka's tools and
the run's temporary directory (kept when a check fails, removed by the scenario otherwise)."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KAFKA_BIN = os.path.join(HERE, "..", "peers", "kafka", "bin")

# The run's temporary directory, named when a check fails.
WORK = []


def log(message):
    print(message, flush=True)


def fail(message, broker=None, output=None):
    """Ends the scenario: the failure, the kept work directory, and the broker's log tail (or
    the captured output of `oxbow dev`)."""
    log(f"FAIL {message}")
    log(f"work dir kept: {WORK[0] if WORK else '(none)'}")
    if broker is not None:
        log(f"--- broker log ---\n{broker.log_tail(60)}")
    if output:
        log("--- oxbow dev output ---\n" + "".join(output[-60:]))
    sys.exit(1)


def work_dir(prefix):
    work = tempfile.mkdtemp(prefix=prefix)
    WORK.append(work)
    return work


def tool(name, *args, check=True, broker=None):
    """Runs one of Kafka's command-line tools; a non-zero exit fails the scenario unless
    `check` is off."""
    result = subprocess.run([os.path.join(KAFKA_BIN, name), *args], capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        fail(f"{name} {' '.join(args)}: {result.stdout[-800:]} {result.stderr[-800:]}", broker)
    return result
