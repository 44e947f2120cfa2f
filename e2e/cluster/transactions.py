"""Transactions on three `oxbow` nodes under faults, checked from the outside.

A librdkafka transactional producer writes transactions of 9 records, 3 to each of the 3
partitions of an RF=3, min.insync.replicas=2 topic (one transaction in four aborted on
purpose), while a consume-transform-produce worker copies an input topic to an output
topic in transactions that carry the group's offsets. Meanwhile a nemesis SIGKILLs the
transaction coordinator of the producers' ids and the partitions' leaders, and restarts
them. Then, read at read_committed:

- every transaction whose commit returned is there whole (all 9 records), every aborted one
  is absent, one whose commit failed with an unknown outcome is all there or all absent;
  no record twice;
- the output topic holds every input record exactly once, and the group's committed
  offsets are the input's end offsets.

Usage: transactions.py BINARY [--kills N]"""
import argparse
import os
import random
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from oxbow_cluster import NODES, Cluster, Network  # noqa: E402

from confluent_kafka import (  # noqa: E402
    OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPIC, SOURCE, SINK, GROUP = "txn-history", "ctp-source", "ctp-sink", "ctp-group"
PARTITIONS = 3
STATE_PARTITIONS = 3
INPUT = 3000


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def fail(message):
    print(f"FAIL {message}", flush=True)
    raise SystemExit(1)


def java_hash_partition(key, partitions):
    """Kafka's partition of a coordinator key: abs(String.hashCode) % partitions."""
    h = 0
    for unit in key:
        h = (h * 31 + ord(unit)) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return 0 if h == -(1 << 31) else abs(h) % partitions


def leader_of(cluster, topic, partition):
    for node in cluster.nodes:
        view = cluster.metadata(node)
        if view and (topic, partition) in view["partitions"]:
            leader = view["partitions"][(topic, partition)]["leader"]
            if leader in cluster.nodes:
                return leader
    return None


class Writer(threading.Thread):
    """Transactions of 3 records per partition; every fourth aborted on purpose."""

    def __init__(self, bootstrap, transactional_id):
        super().__init__(daemon=True)
        self.bootstrap, self.transactional_id = bootstrap, transactional_id
        self.committed, self.aborted, self.unknown = [], [], []
        self.stopping = threading.Event()
        self.errors = []

    def producer(self):
        producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": self.transactional_id,
                             "linger.ms": 2, "transaction.timeout.ms": 20000, "message.timeout.ms": 20000})
        producer.init_transactions(60)
        return producer

    def run(self):
        try:
            producer = self.producer()
            k = 0
            while not self.stopping.is_set():
                k += 1
                name = f"{self.transactional_id}-t{k}"
                try:
                    producer.begin_transaction()
                    for p in range(PARTITIONS):
                        for i in range(3):
                            producer.produce(TOPIC, value=f"{name}-p{p}-{i}".encode(), partition=p)
                    producer.flush(30)
                    if k % 4 == 0:
                        producer.abort_transaction(30)
                        self.aborted.append(name)
                    else:
                        producer.commit_transaction(30)
                        self.committed.append(name)
                except KafkaException as error:
                    kafka_error = error.args[0]
                    if kafka_error.txn_requires_abort():
                        try:
                            producer.abort_transaction(60)
                            self.aborted.append(name)
                        except KafkaException:
                            self.unknown.append(name)
                            producer = self.producer()
                    elif kafka_error.retriable():
                        # The commit's outcome is not known to the client.
                        self.unknown.append(name)
                        producer = self.producer()
                    else:
                        self.unknown.append(name)
                        producer = self.producer()
        except Exception as error:  # reported by the test
            self.errors.append(repr(error))


class Copier(threading.Thread):
    """Consume-transform-produce from SOURCE to SINK with the offsets in the transaction."""

    def __init__(self, bootstrap):
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.transactions = self.aborts = 0
        self.done = threading.Event()
        self.errors = []

    def clients(self):
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "isolation.level": "read_committed"})
        consumer.subscribe([SOURCE])
        producer = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": "ctp-copier",
                             "linger.ms": 2, "transaction.timeout.ms": 20000})
        producer.init_transactions(60)
        return consumer, producer

    def rewind(self, consumer):
        for tp in consumer.committed(consumer.assignment(), 60):
            consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))

    def caught_up(self, consumer):
        assignment = consumer.assignment()
        if len(assignment) != PARTITIONS:
            return False
        committed = consumer.committed(assignment, 30)
        ends = [consumer.get_watermark_offsets(TopicPartition(SOURCE, tp.partition), 30)[1] for tp in committed]
        return [tp.offset for tp in committed] == ends

    def run(self):
        try:
            consumer, producer = self.clients()
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                # Small transactions at a steady pace, so the copy spans the faults.
                batch = [m for m in consumer.consume(10, 1.0) if not m.error()]
                time.sleep(0.05)
                if not batch:
                    try:
                        if self.caught_up(consumer):
                            self.done.set()
                            break
                    except KafkaException:
                        pass
                    continue
                try:
                    producer.begin_transaction()
                    for message in batch:
                        producer.produce(SINK, value=message.value().replace(b"in-", b"out-"),
                                         partition=message.partition())
                    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                         consumer.consumer_group_metadata(), 60)
                    producer.commit_transaction(60)
                    self.transactions += 1
                except KafkaException as error:
                    self.aborts += 1
                    if error.args[0].txn_requires_abort():
                        try:
                            producer.abort_transaction(60)
                            self.rewind(consumer)
                            continue
                        except KafkaException:
                            pass
                    # Fatal, or an outcome not known: start over from the committed offsets.
                    consumer.close()
                    consumer, producer = self.clients()
            consumer.close()
        except Exception as error:  # reported by the test
            self.errors.append(repr(error))


def read_committed(bootstrap, topic, idle=5.0, timeout=120.0):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    # Assigned, not subscribed: no group join to wait for before the first record.
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    values, last, deadline = [], time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline and time.monotonic() - last < idle:
        message = consumer.poll(0.3)
        if message is not None and not message.error():
            values.append(message.value().decode())
            last = time.monotonic()
    consumer.close()
    return values


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--kills", type=int, default=6)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="oxbow-txn-cluster-")
    network = Network(False)
    cluster = Cluster(args.binary, work, network, cluster_id="txn-history", extra=[
        f"transaction.state.log.num.partitions={STATE_PARTITIONS}",
        "transaction.state.log.replication.factor=3", "transaction.state.log.min.isr=2",
        "offsets.topic.num.partitions=3", "offsets.topic.replication.factor=3",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
    ])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rng = random.Random(int(os.environ.get("OXBOW_TXN_SEED", "7")))
    with cluster.running():
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        topics = [NewTopic(t, num_partitions=PARTITIONS, replication_factor=3,
                           config={"min.insync.replicas": "2"}) for t in (TOPIC, SOURCE, SINK)]
        for future in admin.create_topics(topics).values():
            future.result(60)
        plain = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True})
        for i in range(INPUT):
            plain.produce(SOURCE, value=f"in-{i}".encode(), partition=i % PARTITIONS)
        if plain.flush(60):
            fail("the input was not all acknowledged")
        log(f"ok three nodes; {TOPIC}, {SOURCE}, {SINK}: {PARTITIONS} partitions, RF=3, min.insync.replicas=2; "
            f"{INPUT} input records")
        writers = [Writer(cluster.bootstrap, f"writer-{n}") for n in range(2)]
        copier = Copier(cluster.bootstrap)
        for thread in (*writers, copier):
            thread.start()
        for kill in range(args.kills):
            time.sleep(4)
            if kill % 2 == 0:
                victim = leader_of(cluster, "__transaction_state",
                                   java_hash_partition(writers[kill // 2 % 2].transactional_id, STATE_PARTITIONS))
                what = "transaction coordinator"
            else:
                victim = leader_of(cluster, TOPIC, rng.randrange(PARTITIONS))
                what = "partition leader"
            if victim is None:
                log(f"no {what} known; skipping a kill")
                continue
            cluster.kill(victim)
            log(f"SIGKILL node {victim} ({what})")
            time.sleep(3)
            cluster.start(victim)
            deadline = time.monotonic() + 90
            while not cluster.ready(victim):
                if time.monotonic() > deadline:
                    fail(f"node {victim} not ready again within 90 s")
                time.sleep(0.3)
        time.sleep(3)
        for writer in writers:
            writer.stopping.set()
        for writer in writers:
            writer.join(120)
        copier.join(600)
        errors = [e for t in (*writers, copier) for e in t.errors]
        if errors:
            fail(f"client threads failed: {errors[:3]}")
        if not copier.done.is_set():
            fail("the copier did not catch up with its input")
        values = read_committed(cluster.bootstrap, TOPIC)
        if len(values) != len(set(values)):
            fail(f"{len(values) - len(set(values))} records read twice at read_committed")
        per_txn = {}
        for value in values:
            name = value.rsplit("-p", 1)[0]
            per_txn[name] = per_txn.get(name, 0) + 1
        committed = [n for w in writers for n in w.committed]
        aborted = [n for w in writers for n in w.aborted]
        unknown = [n for w in writers for n in w.unknown]
        partial = {n: c for n, c in per_txn.items() if c != 3 * PARTITIONS}
        if partial:
            fail(f"transactions seen in part: {list(partial.items())[:5]}")
        missing = [n for n in committed if n not in per_txn]
        if missing:
            fail(f"{len(missing)} committed transactions missing, e.g. {missing[:5]}")
        visible_aborts = [n for n in aborted if n in per_txn]
        if visible_aborts:
            fail(f"{len(visible_aborts)} aborted transactions visible, e.g. {visible_aborts[:5]}")
        strays = [n for n in per_txn if n not in committed and n not in unknown]
        if strays:
            fail(f"transactions visible that were neither committed nor of unknown outcome: {strays[:5]}")
        log(f"ok {len(committed)} committed transactions whole ({len(committed) * 9} records), "
            f"{len(aborted)} aborted ones absent, {len(unknown)} of unknown outcome all-or-nothing "
            f"({sum(1 for n in unknown if n in per_txn)} visible); no record twice; {args.kills} SIGKILLs")
        output = read_committed(cluster.bootstrap, SINK)
        expected = sorted(f"out-{i}" for i in range(INPUT))
        if sorted(output) != expected:
            dupes = len(output) - len(set(output))
            fail(f"the copy holds {len(output)} records ({dupes} twice), expected {INPUT}")
        log(f"ok consume-transform-produce: {INPUT} records copied exactly once in {copier.transactions} "
            f"transactions ({copier.aborts} failed and redone); the group's offsets are the input's ends")


if __name__ == "__main__":
    main()
