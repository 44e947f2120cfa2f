"""How long producers at their clients' default settings wait when a partition leader dies.

Three `oxbow` nodes (combined broker+controller), three partitions (one led by each node),
RF=3, min.insync.replicas=2; three producers, each with its client's defaults (idempotent,
acks=all; only the bootstrap servers set) writing ~700 records/s over the partitions:
librdkafka (confluent-kafka, in this process), the Java client (e2e/peers/java-client/
history-producer --client-defaults) and franz-go (e2e/peers/franz-go/run --ack-producer, its
manual partitioner the one setting beside the seeds). Then, one at a time, ROUNDS times each:

- SIGKILL of a partition leader, restarted on its data once the cluster is whole again;
- SIGTERM (controlled shutdown) of a leader, restarted the same way;

the victim in turn the active controller (a new Raft election comes first then) and a plain
broker. A client's window in a round is, over the partitions the victim led, the longest gap
between two consecutive acknowledgements of a partition from the signal to its recovery.
Reported per client, per kind and per victim role: median, worst, every sample. Never
asserted (timing on a shared machine); what is asserted: every round gets an
acknowledgement from every client within 30 s, and every acknowledged record is read back
afterwards (a failover may delay, never lose).

With the client's debug log (metadata,topic,broker) the harness also counts how often
librdkafka parked the partition on its internal broker (a broker handle decommissioned
while it still held the partition, which costs one more 1-s leader scan): with the
just-fenced broker still listed in Metadata (broker/src/api/metadata/listed_brokers.rs)
that should not happen; the count is reported.

franz-go refreshes its metadata at most every 5 s (MetadataMinAge) unless a refresh is asked
for "now": its first refresh after a leader's connection drops runs within milliseconds,
before any broker can know the leader is dead, so it still names the dead leader, and the
next one waits out the 5 s. Its lines about metadata updates are printed for a window past
1.5 s, so the report shows where its time went.

Usage: failover_window.py BINARY [--rounds N]   (N per kind, default 10)
"""
import argparse
import bisect
import collections
import logging
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from oxbow_cluster import Cluster, Network  # noqa: E402

TOPIC = "failover"
PARTITIONS = 3
RATE = 700  # records/s per client
CLIENTS = ("librdkafka", "java", "franz-go")
PEERS = os.path.join(HERE, "..", "peers")
ACK_TIMEOUT = 30.0
SHOW_CLIENT_LOG_PAST = 1.5  # s: a longer window prints the client's telling lines


def log(message):
    print(f"[{time.strftime('%H:%M:%S', time.gmtime())}Z] {message}", flush=True)


def fail(message):
    log(f"FAIL {message}")
    sys.exit(1)


def describe(samples):
    if not samples:
        return "no samples"
    return (f"median {statistics.median(samples):.2f} s, worst {max(samples):.2f} s, best "
            f"{min(samples):.2f} s ({', '.join(f'{s:.2f}' for s in samples)})")


class ClientLog(logging.Handler):
    """Counts librdkafka's parkings of the partition on its internal broker."""

    # The client's lines that tell where a failover's time went.
    TELLING = ("QRYLEADER", "Leader ", "TERMINATE to", ":0/internal for", "DRAIN", "Requesting metadata",
               "Delaying next reconnect", "NOT_LEADER", "drain", "leader-id update")

    def __init__(self):
        super().__init__()
        self.parked = 0
        self.lines = collections.deque(maxlen=20000)

    def emit(self, record):
        message = record.getMessage()
        if "delegating to broker :0/internal" in message:
            self.parked += 1
        if any(t in message for t in self.TELLING):
            self.lines.append((time.monotonic(), message))

    def between(self, start, end):
        return lines_between(self.lines, start, end)


def lines_between(lines, start, end):
    """The (arrival, line) pairs of `lines` from `start` to `end`, as offsets from `start`."""
    return [(t - start, m) for t, m in list(lines) if start <= t <= end]


class PeerProducer:
    """A producer in another process speaking HistoryProducer.java's protocol: one
    "PARTITION OFFSET VALUE" line per acknowledged record on stdout (timestamped here on
    arrival), failures and a summary on stderr, "stop SECONDS" on stdin to finish."""

    def __init__(self, name, command, record):
        self.name, self.record = name, record
        self.errors = collections.deque(maxlen=10)
        self.lines = collections.deque(maxlen=5000)  # (arrival, line): the client's own log
        self.summary = None
        self.reader_errors = []  # a reader that died would silently drop acknowledgements
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.readers = [threading.Thread(target=self.guard, args=(reader,), daemon=True)
                        for reader in (self.read_acks, self.read_errors)]
        for reader in self.readers:
            reader.start()

    def guard(self, reader):
        try:
            reader()
        except Exception as error:  # noqa: BLE001 — reported by stop()
            self.reader_errors.append(f"{reader.__name__}: {error!r}")

    def read_acks(self):
        for line in self.proc.stdout:
            at = time.monotonic()
            partition, offset, value = line.rstrip(b"\n").split(b" ", 2)
            self.record(self.name, at, int(partition), int(offset), value)

    def read_errors(self):
        for line in self.proc.stderr:
            text = line.decode(errors="replace").rstrip()
            if text.startswith("summary "):
                self.summary = text
            elif text.startswith("failed ") or text.startswith("fatal "):
                self.errors.append(text)
            elif not text.startswith("ready"):
                self.lines.append((time.monotonic(), text))

    def between(self, start, end):
        return lines_between(self.lines, start, end)

    def stop(self, flush_seconds):
        self.proc.stdin.write(f"stop {flush_seconds}\n".encode())
        self.proc.stdin.close()
        if self.proc.wait(timeout=flush_seconds + 30) != 0:
            fail(f"the {self.name} producer exited with {self.proc.returncode}: {list(self.errors)}")
        # The pipes end with the process: the readers have every line once they return.
        for reader in self.readers:
            reader.join(timeout=30)
        if any(reader.is_alive() for reader in self.readers) or self.reader_errors:
            fail(f"the {self.name} producer's output was not read to its end: {self.reader_errors}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    from confluent_kafka import Consumer, ElectionType, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    work = tempfile.mkdtemp(prefix="oxbow-failover-")
    cluster = Cluster(args.binary, work, Network(False), cluster_id="failover-window")
    with cluster.running():
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        # One partition led by each node (the first replica is the preferred leader).
        assignment = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
        admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replica_assignment=assignment,
                                      config={"min.insync.replicas": "2"})])[TOPIC].result()
        client_log = ClientLog()
        logger = logging.getLogger("librdkafka")
        logger.setLevel(logging.DEBUG)
        logger.addHandler(client_log)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "debug": "metadata,topic,broker",
                             "logger": logger})
        acked = {}  # (partition, offset) -> value, every client's
        times = {(c, p): [] for c in CLIENTS for p in range(PARTITIONS)}  # ack arrival times
        failed, conflicts = [], []  # conflicts: an offset acknowledged for two different records
        lock = threading.Lock()

        def record(client, at, partition, offset, value):
            with lock:
                if acked.setdefault((partition, offset), value) != value:
                    conflicts.append((client, partition, offset))
                times[(client, partition)].append(at)

        def delivered(error, message):
            if error is None:
                record("librdkafka", time.monotonic(), message.partition(), message.offset(), message.value())
            else:
                with lock:
                    failed.append(str(error))

        common = ["--bootstrap", cluster.bootstrap, "--topic", TOPIC, "--rate", str(RATE),
                  "--partitions", str(PARTITIONS)]
        peers = [
            PeerProducer("java", [os.path.join(PEERS, "java-client", "history-producer"), "--tag", "java",
                                  "--client-defaults", *common], record),
            PeerProducer("franz-go", [os.path.join(PEERS, "franz-go", "run"), "--ack-producer", "--tag", "franz",
                                      *common], record),
        ]

        stop = threading.Event()

        def load():
            seq = 0
            while not stop.is_set():
                for _ in range(RATE // 100):
                    producer.produce(TOPIC, f"rdk:{seq:09d}".encode() + b"." * 87, partition=seq % PARTITIONS,
                                     on_delivery=delivered)
                    seq += 1
                producer.poll(0)
                time.sleep(0.01)

        def last_ack(client, partition):
            with lock:
                at = times[(client, partition)]
                return at[-1] if at else None

        def window(client, partition, started):
            """The longest gap between consecutive acks of `partition` to `client` that ends
            after `started`, once acks came again (None until then)."""
            with lock:
                at = times[(client, partition)]
                first = bisect.bisect_right(at, started)
                if first == 0 or first >= len(at):
                    return None
                # The recovery: the first ack after the fault's longest gap, and steady after it.
                return max(at[i] - at[i - 1] for i in range(first, len(at)))

        def view():
            """(leader of each partition, active controller) as a live node answers."""
            for node in cluster.nodes:
                md = cluster.metadata(node)
                if md and all((TOPIC, p) in md["partitions"] for p in range(PARTITIONS)):
                    leaders = {p: md["partitions"][(TOPIC, p)]["leader"] for p in range(PARTITIONS)}
                    return leaders, cluster.controller(node), md
            return None, None, None

        preferred = {p: replicas[0] for p, replicas in enumerate(assignment)}

        def settled():
            """Every node ready, every partition's ISR whole, each led by its preferred
            leader again (ElectLeaders) and acknowledging: every round starts from the same
            state, with the client connected to every node."""
            deadline = time.monotonic() + 90
            elected = False
            while time.monotonic() < deadline:
                leaders, _, md = view()
                whole = (leaders and all(cluster.ready(n) for n in cluster.nodes)
                         and all(len(md["partitions"][(TOPIC, p)]["isr"]) == 3 for p in range(PARTITIONS)))
                if whole and leaders != preferred and not elected:
                    admin.elect_leaders(ElectionType.PREFERRED,
                                        [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]).result()
                    elected = True
                if whole and leaders == preferred:
                    moment = time.monotonic()
                    while time.monotonic() < deadline:
                        if all((last_ack(c, p) or 0) > moment for c in CLIENTS for p in range(PARTITIONS)):
                            return leaders
                        time.sleep(0.1)
                time.sleep(0.2)
            fail("the cluster did not settle within 90 s (every node ready, every ISR whole, the "
                 "preferred leaders back and acknowledging)")

        loader = threading.Thread(target=load, daemon=True)
        loader.start()
        deadline = time.monotonic() + ACK_TIMEOUT
        while not all(last_ack(c, p) for c in CLIENTS for p in range(PARTITIONS)):
            if time.monotonic() > deadline:
                fail(f"not every partition acknowledged to every client within {ACK_TIMEOUT:.0f} s of starting: "
                     f"{failed[:3]} {[list(peer.errors) for peer in peers]}")
            time.sleep(0.1)
        settled()
        samples = {}  # (client, kind, role) -> windows
        schedule = [(kind, controller) for _ in range(args.rounds)
                    for kind in ("SIGKILL", "SIGTERM") for controller in (True, False)]
        schedule = schedule[:2 * args.rounds]
        for n, (kind, pick_controller) in enumerate(schedule):
            # Every round's settling moved leaders (the preferred-leader election), which made
            # each client refresh its metadata; franz-go refreshes at most every 5 s
            # (MetadataMinAge), so a kill sooner after that measures the election, not the
            # failover. A cluster is measured at rest: 5.5 s, then the signal spread over
            # librdkafka's 1-s leader scan, so the samples are not all taken at one phase of it.
            time.sleep(5.5 + (n * 0.37) % 1)
            leaders, controller, _ = view()
            if not leaders:
                fail("no live node answers Metadata")
            candidates = sorted({l for l in leaders.values() if l >= 0 and (l == controller) == pick_controller})
            if not candidates:
                candidates = sorted({l for l in leaders.values() if l >= 0})
            victim = candidates[(n // 4) % len(candidates)]  # each role's nodes in turn
            role = "the active controller" if victim == controller else "not the controller"
            led = [p for p, l in leaders.items() if l == victim]
            parked_before = client_log.parked
            started = time.monotonic()
            if kind == "SIGKILL":
                cluster.kill(victim)
            else:
                cluster.signal(victim, signal.SIGTERM)
            worst = None
            deadline = started + ACK_TIMEOUT
            while time.monotonic() < deadline:
                windows = {c: [window(c, p, started) for p in led] for c in CLIENTS}
                if all(w is not None for ws in windows.values() for w in ws):
                    worst = {c: max(ws) for c, ws in windows.items()}
                    if time.monotonic() - started > max(worst.values()) + 1:
                        break
                    worst = None
                time.sleep(0.1)
            if worst is None:
                fail(f"round {n + 1}: partitions {led} not acknowledged to every client within {ACK_TIMEOUT:.0f} s "
                     f"of the {kind} of node {victim}")
            for client, w in worst.items():
                samples.setdefault((client, kind, role), []).append(w)
            if worst["librdkafka"] > SHOW_CLIENT_LOG_PAST:
                for offset, line in client_log.between(started, started + worst["librdkafka"] + 0.2):
                    log(f"   librdkafka +{offset:.3f} s: {line[:200]}")
            for peer in peers:
                if worst[peer.name] > SHOW_CLIENT_LOG_PAST:
                    for offset, line in peer.between(started, started + worst[peer.name] + 0.2):
                        if "metadata" in line.lower():
                            log(f"   {peer.name} +{offset:.3f} s: {line[:240]}")
            log(f"round {n + 1}/{len(schedule)}: {kind} of node {victim} ({role}, leader of partitions {led}): "
                f"windows " + ", ".join(f"{c} {w:.3f} s" for c, w in worst.items())
                + f"; librdkafka parked a partition on its internal broker {client_log.parked - parked_before} time(s)")
            if kind == "SIGTERM" and cluster.procs[victim].wait(timeout=30) != 0:
                fail(f"node {victim} exited with {cluster.procs[victim].returncode} after SIGTERM")
            cluster.start(victim)
            settled()
        stop.set()
        loader.join()
        if producer.flush(60) != 0:
            fail("records still unacknowledged 60 s after the load stopped")
        for peer in peers:
            peer.stop(60)
            log(f"{peer.name} producer: {peer.summary}; last failures {list(peer.errors)[-3:]}")
            if not peer.summary or " undelivered 0" not in peer.summary:
                fail(f"the {peer.name} producer left records unacknowledged: {peer.summary}")
        if conflicts:
            fail(f"{len(conflicts)} offsets acknowledged for two different records (first: {conflicts[:5]})")
        # Every acknowledged record is there, at its offset.
        with lock:
            expected = dict(acked)
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "failover-check",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        seen = {}
        deadline = time.monotonic() + 120
        while len(seen) < len(expected) and time.monotonic() < deadline:
            for message in consumer.consume(1000, 1.0):
                if message.error() is None:
                    seen[(message.partition(), message.offset())] = message.value()
        consumer.close()
        missing = [k for k, v in expected.items() if seen.get(k) != v]
        if missing:
            fail(f"{len(missing)} of {len(expected)} acknowledged records not read back at their offsets "
                 f"(first: {sorted(missing)[:5]})")
        log(f"ok {len(expected)} acknowledged records read back at their offsets; {len(failed)} deliveries failed")
        for client in CLIENTS:
            for kind in ("SIGKILL", "SIGTERM"):
                every = [w for (c, k, _), ws in samples.items() if (c, k) == (client, kind) for w in ws]
                log(f"window after {kind} of a leader, {client} at its defaults, {len(every)} rounds: "
                    f"{describe(every)}")
                for (c, k, role), part in sorted(samples.items()):
                    if (c, k) == (client, kind):
                        log(f"  ... victim {role}: {describe(part)}")
        log(f"librdkafka parked a partition on its internal broker {client_log.parked} time(s) in all")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
