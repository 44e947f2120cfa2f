"""The brokers under test: a single Oxbow or Kafka and the 3-node clusters of each; start, stop,
and their processes' peak RSS and CPU seconds."""

import time
import uuid
from pathlib import Path

from . import constants
from .constants import CLOCK_TICKS, KAFKA_CLUSTER_PORTS, KAFKA_PEER, NODES, OXBOW_CLUSTER_PORTS
from .processes import free_port, log, run, wait_for_port

# The e2e suites' harness (e2e/lib) starts the bench's Oxbow processes too: one way for all.
from oxbow_cluster import Cluster as OxbowNodes, Network  # noqa: E402  (e2e/lib is on the path)
from oxbow_e2e import Broker as OxbowProcess  # noqa: E402


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
    """One `oxbow` process, started by the e2e suites' harness (e2e/lib/oxbow_e2e.py)."""

    name = "Oxbow"

    def start(self):
        self.process = OxbowProcess(str(constants.OXBOW), str(self.workdir / "oxbow"), port=self.port,
                                    overrides=["node.id=0"])
        self.process.start()
        self.pids = [self.process.process.pid]
        log(f"Oxbow {self.bootstrap} pid {self.pids[0]}")

    def stop(self):
        try:
            self.process.stop()
        except AssertionError as error:
            return [str(error).splitlines()[0]]
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
    """Three `oxbow` processes, each a combined broker and controller voter, started by the
    e2e suites' cluster harness (e2e/lib/oxbow_cluster.py) with the plain `--override` flags
    `oxbow dev` prints, each on its own data directory DIR/node-N; output in DIR/node-N.log."""

    name = "Oxbow"

    def __init__(self, workdir):
        super().__init__(workdir, [OXBOW_CLUSTER_PORTS[0] + node - 1 for node in NODES])
        self.dir = workdir / "oxbow-cluster"
        self.cluster = None

    def start(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cluster = OxbowNodes(str(constants.OXBOW), str(self.dir), Network(False),
                                  cluster_id=uuid.uuid4().hex, nodes=NODES, bases=OXBOW_CLUSTER_PORTS)
        for node in NODES:
            self.cluster.start(node)
        self.pids = [self.cluster.procs[node].pid for node in NODES]
        # Ready: every node serves its client port and answers /readyz (registered, caught up
        # with the metadata, unfenced).
        deadline = time.monotonic() + 120
        for node in NODES:
            process = self.cluster.procs[node]
            port = self.cluster.client_port(node)
            if not wait_for_port(port, process, max(1, deadline - time.monotonic())):
                raise RuntimeError(f"Oxbow node {node} did not start:\n{self.tail(node)}")
            while not self.cluster.ready(node):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"Oxbow node {node} not ready:\n{self.tail(node)}")
                time.sleep(0.2)
        log(f"Oxbow cluster {self.bootstrap} pids {self.pids} (logs {self.dir}/node-N.log)")

    def tail(self, node, lines=30):
        text = (self.dir / f"node-{node}.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self):
        """SIGTERM to every node at once (controlled shutdown); each must exit 0 within 60 s."""
        return self.cluster.terminate(NODES) if self.cluster else []


BROKERS = {("oxbow", 1): Oxbow, ("kafka", 1): Kafka,
           ("oxbow", 3): OxbowCluster, ("kafka", 3): KafkaCluster}
