#!/usr/bin/env python3
"""A consumer group across a coordinator failover, on a 3-broker Oxbow cluster whose
`__consumer_offsets` and data topic are RF=3 (e2e/lib/oxbow_cluster.py).

A confluent-kafka (librdkafka) consumer in group `g` reads a 6-partition topic and commits
synchronously after every message batch it processed, recording what each successful
commit covered. The group's coordinator (from DescribeConsumerGroups) is SIGKILLed while
the consumer works; the consumer finds the new coordinator on its own and carries on.
Afterwards, three times over (three kills, each node restarted before the next):
  - every produced record was consumed;
  - no record below an acknowledged commit was delivered again (commits survive the
    failover: the new coordinator loaded them from its replica of __consumer_offsets);
  - a fresh consumer of the group sees committed offsets equal to the end offsets.

    coordinator_failover.py OXBOW_BINARY
"""
import os
import sys
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from oxbow_cluster import Cluster, Network  # noqa: E402
from oxbow_e2e import fail, wait_for  # noqa: E402

TOPIC = "group-failover"
PARTITIONS = 6
GROUP = "g"
PER_ROUND = 3000
ROUNDS = 3
# Clients on PORT..PORT+2, controllers 100 above, metrics 150 above (OXBOW_SUITE_PORT moves them).
PORT = int(os.environ.get("OXBOW_SUITE_PORT", "23592"))


def coordinator(bootstrap):
    """The group's coordinator, asked by a fresh admin client each time: a
    DescribeConsumerGroups in flight when the coordinator dies can leave librdkafka's
    client unusable (an internal assertion, seen with confluent-kafka 2.x)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        future = admin.describe_consumer_groups([GROUP], request_timeout=5)[GROUP]
        return future.result().coordinator.id
    except Exception:
        return None


def produce(bootstrap, start, count):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    failed = []
    for i in range(start, start + count):
        producer.produce(TOPIC, value=str(i).encode(), partition=i % PARTITIONS,
                         on_delivery=lambda err, _m: err and failed.append(err))
        producer.poll(0)
    if producer.flush(60) != 0 or failed:
        fail(f"producing: {failed[:3]}")


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp(prefix="oxbow-groups-cluster-")
    cluster = Cluster(binary, work, Network(False), cluster_id="groups-cluster",
                      bases=(PORT, PORT + 100, PORT + 150),
                      extra=["default.replication.factor=3", "min.insync.replicas=2",
                             "offsets.topic.replication.factor=3", "group.initial.rebalance.delay.ms=0"])
    with cluster.running():
        failovers(cluster)


def failovers(cluster):
    bootstrap = cluster.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result()
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
    })
    consumer.subscribe([TOPIC])
    seen = {}            # value -> times delivered
    committed = {}       # partition -> offset covered by an acknowledged commit
    redelivered_committed = []
    duplicates = 0
    total = 0
    for round_ in range(ROUNDS):
        produce(bootstrap, round_ * PER_ROUND, PER_ROUND)
        total += PER_ROUND
        killed = None
        deadline = time.time() + 120
        while len(seen) < total:
            if time.time() > deadline:
                fail(f"round {round_}: consumed {len(seen)} of {total}")
            batch = consumer.consume(200, 1.0)
            for message in batch:
                if message.error():
                    continue
                value = int(message.value())
                if value in seen:
                    duplicates += 1
                    if message.offset() < committed.get(message.partition(), -1):
                        redelivered_committed.append((message.partition(), message.offset()))
                seen[value] = seen.get(value, 0) + 1
            if batch:
                try:
                    for tp in consumer.commit(asynchronous=False) or []:
                        if tp.error is None and tp.offset >= 0:
                            committed[tp.partition] = max(committed.get(tp.partition, -1), tp.offset)
                except Exception as error:  # a commit during the failover may fail; retried next batch
                    print(f"  commit failed during failover: {error}", flush=True)
            if killed is None and len(seen) >= total - PER_ROUND // 2:
                node = wait_for(lambda: coordinator(bootstrap), 90, "the group's coordinator")
                cluster.kill(node)
                killed = node
                print(f"round {round_}: SIGKILL coordinator node {node} after {len(seen)} records", flush=True)
        if killed is None:
            fail(f"round {round_}: no coordinator was killed")
        cluster.start(killed)
        wait_for(lambda: coordinator(bootstrap) is not None, 60, f"node {killed} back")
        print(f"ok round {round_}: {len(seen)} of {total} records consumed; coordinator now "
              f"{coordinator(bootstrap)}", flush=True)
    consumer.close()
    if redelivered_committed:
        fail(f"records below an acknowledged commit delivered again: {redelivered_committed[:5]}")
    fresh = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    partitions = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    got = fresh.committed(partitions, timeout=30)
    ends = [fresh.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions]
    fresh.close()
    if [tp.offset for tp in got] != ends:
        fail(f"committed offsets {[tp.offset for tp in got]} != end offsets {ends}")
    print(f"ok {ROUNDS} coordinator failovers: all {total} records consumed, {duplicates} delivered "
          f"twice (all after the last acknowledged commit), committed offsets = end offsets", flush=True)


if __name__ == "__main__":
    main()
