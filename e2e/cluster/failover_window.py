"""How long a producer with librdkafka's default settings waits when a partition leader dies.

Three `oxbow` nodes (combined broker+controller), three partitions (one led by each node),
RF=3, min.insync.replicas=2; one confluent-kafka producer with the client's defaults
(idempotent, acks=all; only bootstrap.servers set) writing ~2,000 records/s over them. Then,
one at a time, ROUNDS times each:

- SIGKILL of a partition leader, restarted on its data once the cluster is whole again;
- SIGTERM (controlled shutdown) of a leader, restarted the same way;

the victim in turn the active controller (a new Raft election comes first then) and a plain
broker. The window of a round is, over the partitions the victim led, the longest gap
between two consecutive acknowledgements of a partition from the signal to its recovery.
Reported per kind and per victim role: median, worst, every sample. Never asserted (timing on a shared
machine); what is asserted: every round gets an acknowledgement within 30 s, and every
acknowledged record is read back afterwards (a failover may delay, never lose).

With the client's debug log (metadata,topic,broker) the harness also counts how often
librdkafka parked the partition on its internal broker (a broker handle decommissioned
while it still held the partition, which costs one more 1-s leader scan): with the
just-fenced broker still listed in Metadata (broker/src/api/metadata/listed_brokers.rs)
that should not happen; the count is reported.

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
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from oxbow_cluster import Cluster, Network  # noqa: E402

TOPIC = "failover"
PARTITIONS = 3
RATE = 2000
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
        return [(t - start, m) for t, m in list(self.lines) if start <= t <= end]


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
        acks, failed = [], []  # acks: (time, partition, offset, value)
        lock = threading.Lock()

        def delivered(error, message):
            with lock:
                if error is None:
                    acks.append((time.monotonic(), message.partition(), message.offset(), message.value()))
                else:
                    failed.append(str(error))

        stop = threading.Event()

        def load():
            seq = 0
            while not stop.is_set():
                for _ in range(RATE // 100):
                    producer.produce(TOPIC, f"{seq:09d}".encode() + b"." * 91, partition=seq % PARTITIONS,
                                     on_delivery=delivered)
                    seq += 1
                producer.poll(0)
                time.sleep(0.01)

        def ack_times(partition):
            with lock:
                return [t for t, p, _, _ in acks if p == partition]

        def window(partition, started):
            """The longest gap between consecutive acks of `partition` that ends after
            `started`, once acks came again (None until then)."""
            times = ack_times(partition)
            first = bisect.bisect_right(times, started)
            if first == 0 or first >= len(times):
                return None
            # The recovery: the first ack after the fault's longest gap, and steady after it.
            gaps = [times[i] - times[i - 1] for i in range(first, len(times))]
            return max(gaps)

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
                        if all(ack_times(p)[-1:] and ack_times(p)[-1] > moment for p in range(PARTITIONS)):
                            return leaders
                        time.sleep(0.1)
                time.sleep(0.2)
            fail("the cluster did not settle within 90 s (every node ready, every ISR whole, the "
                 "preferred leaders back and acknowledging)")

        loader = threading.Thread(target=load, daemon=True)
        loader.start()
        deadline = time.monotonic() + ACK_TIMEOUT
        while not all(ack_times(p) for p in range(PARTITIONS)):
            if time.monotonic() > deadline:
                fail(f"not every partition acknowledged within {ACK_TIMEOUT:.0f} s of starting: {failed[:3]}")
            time.sleep(0.1)
        settled()
        samples = {}  # (kind, role) -> windows
        schedule = [(kind, controller) for _ in range(args.rounds)
                    for kind in ("SIGKILL", "SIGTERM") for controller in (True, False)]
        schedule = schedule[:2 * args.rounds]
        for n, (kind, pick_controller) in enumerate(schedule):
            # Spread the signal over librdkafka's 1-s leader scan, so the samples are not
            # all taken at one phase of it.
            time.sleep(2 + (n * 0.37) % 1)
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
                windows = [window(p, started) for p in led]
                if all(w is not None for w in windows) and time.monotonic() - started > max(windows) + 1:
                    worst = max(windows)
                    break
                time.sleep(0.1)
            if worst is None:
                fail(f"round {n + 1}: partitions {led} not acknowledged within {ACK_TIMEOUT:.0f} s of the {kind} "
                     f"of node {victim}")
            samples.setdefault((kind, role), []).append(worst)
            if worst > SHOW_CLIENT_LOG_PAST:
                for offset, line in client_log.between(started, started + worst + 0.2):
                    log(f"   client +{offset:.3f} s: {line[:200]}")
            log(f"round {n + 1}/{len(schedule)}: {kind} of node {victim} ({role}, leader of partitions {led}): "
                f"window {worst:.3f} s; librdkafka parked a partition on its internal broker "
                f"{client_log.parked - parked_before} time(s)")
            if kind == "SIGTERM" and cluster.procs[victim].wait(timeout=30) != 0:
                fail(f"node {victim} exited with {cluster.procs[victim].returncode} after SIGTERM")
            cluster.start(victim)
            settled()
        stop.set()
        loader.join()
        if producer.flush(60) != 0:
            fail("records still unacknowledged 60 s after the load stopped")
        # Every acknowledged record is there, at its offset.
        with lock:
            expected = {(p, offset): value for _, p, offset, value in acks}
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
        for kind in ("SIGKILL", "SIGTERM"):
            every = [w for (k, _), ws in samples.items() if k == kind for w in ws]
            log(f"window after {kind} of a leader, librdkafka defaults, {len(every)} rounds: {describe(every)}")
            for (k, role), part in sorted(samples.items()):
                if k == kind:
                    log(f"  ... victim {role}: {describe(part)}")
        log(f"librdkafka parked a partition on its internal broker {client_log.parked} time(s) in all")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
