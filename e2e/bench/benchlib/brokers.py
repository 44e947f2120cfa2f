"""The brokers under test: a single Oxbow or Kafka and the 3-node clusters of each; start, stop,
and their processes' peak RSS and CPU seconds."""

import os
import signal
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

from . import constants
from .constants import (CLOCK_TICKS, KAFKA_CLUSTER_PORTS, KAFKA_PEER, NODES, OXBOW_CLUSTER_PORTS,
                        ROOT)
from .processes import free_port, log, run, wait_for_port


class Broker:
    name = "?"

    def __init__(self, workdir, ports=None):
        self.workdir = workdir
        ports = ports or [free_port()]
        self.port = ports[0]
        self.bootstrap = ",".join(f"127.0.0.1:{port}" for port in ports)
        self.pids = []
        self.idle_cpu = 0.0  # CPU seconds spent while the bench ran commands for another broker

    def usage(self):
        """(peak RSS in bytes, CPU seconds) of the broker processes so far, summed over the
        processes still running (one that exited is reported by exited())."""
        rss, cpu = 0, 0.0
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            rss += int(line.split()[1]) * 1024
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                cpu += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
            except OSError:  # exited (and reaped) meanwhile
                pass
        return rss, cpu

    def exited(self):
        """The broker processes that are no longer running."""
        return [pid for pid in self.pids if not Path(f"/proc/{pid}").exists()]

    def stop(self):
        """Stops the broker; returns what went wrong, one line each."""
        return []


class Kafka(Broker):
    name = "Kafka"

    def start(self):
        data = self.workdir / "kafka"
        code, out, err = run([str(KAFKA_PEER / "start-single"), "--port", str(self.port),
                              "--controller-port", str(free_port()), "--dir", str(data)], 180)
        if code != 0:
            raise RuntimeError(f"Kafka did not start:\n{err}")
        self.pids = [int(out.split()[-1])]
        log(f"Kafka {self.bootstrap} pid {self.pids[0]}")

    def stop(self):
        run([str(KAFKA_PEER / "stop"), "--dir", str(self.workdir / "kafka")], 90)
        return []


class Oxbow(Broker):
    name = "Oxbow"

    def start(self):
        data = self.workdir / "oxbow"
        code, out, err = run([str(ROOT / "e2e" / "peers" / "oxbow" / "start-single"),
                              "--port", str(self.port), "--dir", str(data)], 120,
                             env={**os.environ, "OXBOW_BINARY": str(constants.OXBOW)})
        if code != 0:
            raise RuntimeError(f"Oxbow did not start:\n{err}")
        self.pids = [int(out.split()[-1])]
        log(f"Oxbow {self.bootstrap} pid {self.pids[0]}")

    def stop(self):
        run([str(ROOT / "e2e" / "peers" / "oxbow" / "stop"), "--dir", str(self.workdir / "oxbow")], 60)
        return []


class KafkaCluster(Broker):
    """Three combined KRaft broker+controller nodes from e2e/peers/kafka/start-cluster."""

    name = "Kafka"

    def __init__(self, workdir):
        super().__init__(workdir, [KAFKA_CLUSTER_PORTS[0] + node - 1 for node in NODES])
        self.dir = workdir / "kafka-cluster"

    def start(self):
        code, out, err = run([str(KAFKA_PEER / "start-cluster"), "--port", str(self.port),
                              "--controller-port", str(KAFKA_CLUSTER_PORTS[1]),
                              "--dir", str(self.dir)], 300)
        if code != 0:
            raise RuntimeError(f"the Kafka cluster did not start:\n{err}")
        self.pids = [int(pid) for pid in out.split()[-len(NODES):]]
        log(f"Kafka cluster {self.bootstrap} pids {self.pids}")

    def stop(self):
        run([str(KAFKA_PEER / "stop"), "--dir", str(self.dir)], 120)
        return []


class OxbowCluster(Broker):
    """Three `oxbow` processes, each a combined broker and controller voter, started with the
    plain `--override` flags `oxbow dev` prints (broker/src/dev.rs), each on its own data
    directory DIR/node-N; output in DIR/node-N.log."""

    name = "Oxbow"

    def __init__(self, workdir):
        client, controller, metrics = OXBOW_CLUSTER_PORTS
        super().__init__(workdir, [client + node - 1 for node in NODES])
        self.controller_ports = [controller + node - 1 for node in NODES]
        self.metrics_ports = [metrics + node - 1 for node in NODES]
        self.dir = workdir / "oxbow-cluster"
        self.processes = {}

    def command(self, node, cluster_id):
        i = node - 1
        voters = ",".join(f"{n}@127.0.0.1:{self.controller_ports[n - 1]}" for n in NODES)
        overrides = [
            f"node.id={node}",
            "process.roles=broker,controller",
            f"listeners=PLAINTEXT://127.0.0.1:{self.port + i},"
            f"CONTROLLER://127.0.0.1:{self.controller_ports[i]}",
            f"controller.quorum.voters={voters}",
            f"log.dirs={self.dir / f'node-{node}'}",
            f"metrics.listener=127.0.0.1:{self.metrics_ports[i]}",
            f"cluster.id={cluster_id}",
        ]
        return [str(constants.OXBOW), *[a for o in overrides for a in ("--override", o)]]

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        cluster_id = uuid.uuid4().hex
        for node in NODES:
            command = self.command(node, cluster_id)
            with open(self.dir / f"node-{node}.log", "ab") as out:
                out.write(f"=== {' '.join(command)}\n".encode())
                out.flush()
                self.processes[node] = subprocess.Popen(
                    command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    start_new_session=True)
        self.pids = [self.processes[node].pid for node in NODES]
        # Ready: every node serves its client port and answers /readyz (registered, caught up
        # with the metadata, unfenced).
        deadline = time.monotonic() + 120
        for node in NODES:
            process = self.processes[node]
            if not wait_for_port(self.port + node - 1, process, max(1, deadline - time.monotonic())):
                raise RuntimeError(f"Oxbow node {node} did not start:\n{self.tail(node)}")
            while not self.ready(node):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"Oxbow node {node} not ready:\n{self.tail(node)}")
                time.sleep(0.2)
        log(f"Oxbow cluster {self.bootstrap} pids {self.pids} (logs {self.dir}/node-N.log)")

    def ready(self, node):
        try:
            url = f"http://127.0.0.1:{self.metrics_ports[node - 1]}/readyz"
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def tail(self, node, lines=30):
        text = (self.dir / f"node-{node}.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self):
        """SIGTERM to every node at once (controlled shutdown); each must exit 0 within 60 s."""
        problems = []
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for node, process in self.processes.items():
            try:
                code = process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                problems.append(f"node {node} still running 60 s after SIGTERM (killed)")
                continue
            if code != 0:
                problems.append(f"node {node} exited with {code} (log {self.dir}/node-{node}.log)")
        return problems


BROKERS = {("oxbow", 1): Oxbow, ("kafka", 1): Kafka,
           ("oxbow", 3): OxbowCluster, ("kafka", 3): KafkaCluster}
