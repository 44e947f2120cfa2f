"""Shared helpers of the consumer-group suites: a real `oxbow` process on free loopback
ports (start, SIGKILL, restart on the same data), metrics scraping, and waiting on
conditions (never sleeping as synchronisation)."""

import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

BINARY = os.environ.get("OXBOW_BINARY", "")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, timeout=60.0, what="condition", interval=0.05):
    """Polls `condition` until it returns a truthy value; fails after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


class Broker:
    """One oxbow broker; `kill()` is SIGKILL, `start()` again reuses the data dir."""

    def __init__(self, *overrides):
        self.dir = tempfile.mkdtemp(prefix="oxbow-groups-")
        self.port = free_port()
        self.metrics_port = free_port()
        # Few offsets partitions: recovery after a SIGKILL scans every partition's
        # preallocated indexes, which is slow in debug builds.
        self.overrides = ["offsets.topic.num.partitions=5", *overrides]
        self.process = None
        self.bootstrap = f"127.0.0.1:{self.port}"

    def start(self):
        args = [
            BINARY,
            "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
            "--override", f"metrics.listener=127.0.0.1:{self.metrics_port}",
            "--override", f"log.dirs={self.dir}/data",
        ]
        for kv in self.overrides:
            args += ["--override", kv]
        log = open(os.path.join(self.dir, "oxbow.log"), "ab")
        self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

        def listening():
            if self.process.poll() is not None:
                raise AssertionError(f"broker exited during start:\n{self.log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return True
            except OSError:
                return False

        wait_for(listening, 60, "the broker to listen")
        return self

    def kill(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, lines=40):
        try:
            with open(os.path.join(self.dir, "oxbow.log"), "rb") as f:
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
            print(f"--- broker log ({self.dir}) ---\n{self.log_tail()}")
        self.stop()


def create_topic(bootstrap, name, partitions):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    for f in futures.values():
        f.result(30)


def produce(bootstrap, topic, values, partitions=None):
    """Produces `values` (strings) round-robin over the partitions; waits for every ack."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    errors = []

    def delivered(err, _msg):
        if err is not None:
            errors.append(err)

    for i, value in enumerate(values):
        kwargs = {}
        if partitions:
            kwargs["partition"] = i % partitions
        producer.produce(topic, value=value.encode(), on_delivery=delivered, **kwargs)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0, "messages left unacknowledged"
    assert not errors, f"produce errors: {errors[:3]}"
