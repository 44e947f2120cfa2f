"""Classic protocol (or, with `--protocol consumer`, KIP-848) with confluent-kafka: 3 members of a group on a 6-partition topic
consume every message exactly once; a second group also sees everything; committed
offsets survive a SIGKILL and restart of the broker, and the group resumes there."""

import sys

from confluent_kafka import Consumer, TopicPartition

from common import group_broker, create_topic, produce, wait_for
from members import Member

TOPIC = "orders"
PARTITIONS = 6
N = 3000


def committed(bootstrap, group):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        parts = consumer.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=30)
        return {p.partition: p.offset for p in parts}
    finally:
        consumer.close()


PROTOCOL = "consumer" if "--protocol" in sys.argv and sys.argv[-1] == "consumer" else "classic"


def run_group(broker, group, count, expected):
    config = {"group.protocol": "consumer"} if PROTOCOL == "consumer" else {}
    members = [Member(broker.bootstrap, group, TOPIC, **config) for _ in range(count)]
    for m in members:
        m.start()
    return members


def main():
    broker = group_broker()
    with broker:
        create_topic(broker.bootstrap, TOPIC, PARTITIONS)
        g1 = run_group(broker, "g1", 3, N)
        g2 = run_group(broker, "g2", 2, N)
        # Wait until both groups are stable: every partition assigned exactly once.
        for group in (g1, g2):
            wait_for(
                lambda: sorted(p for m in group for p in m.assignment) == list(range(PARTITIONS))
                and all(m.assignment for m in group),
                90,
                "every partition to be assigned",
            )
        values = [f"m-{i}" for i in range(N)]
        produce(broker.bootstrap, TOPIC, values, PARTITIONS)
        for name, group in (("g1", g1), ("g2", g2)):
            wait_for(lambda: sum(len(m.values) for m in group) >= N, 90, f"{name} to consume {N}")
        for name, group in (("g1", g1), ("g2", g2)):
            got = [v for m in group for v in m.values]
            assert len(got) == N, f"{name}: {len(got)} deliveries for {N} messages"
            assert set(got) == set(values), f"{name}: wrong set of messages"
            assert all(m.values for m in group), f"{name}: a member consumed nothing"
            print(f"{name}: {len(group)} members, per member {[len(m.values) for m in group]}, every message once")
        for m in g1 + g2:
            m.stop()
            assert not m.errors, m.errors
        # Committed offsets cover everything (6 partitions, N/6 each).
        expected = {p: N // PARTITIONS for p in range(PARTITIONS)}
        wait_for(lambda: committed(broker.bootstrap, "g1") == expected, 30, "g1's commits")
        assert committed(broker.bootstrap, "g2") == expected
        # Lag per group is always there; per partition only with metrics.partition.labels.
        lag = broker.metric("oxbow_group_lag_messages", group="g1")
        assert lag == 0, f"g1's lag after consuming everything: {lag}"
        per_partition = broker.metric("oxbow_group_partition_lag_messages", group="g1", partition="0")
        assert per_partition is None, "per-partition lag series without metrics.partition.labels"

        # SIGKILL the broker; the commits are in __consumer_offsets.
        broker.kill()
        broker.start()
        assert committed(broker.bootstrap, "g1") == expected, "g1's offsets lost in the restart"
        assert committed(broker.bootstrap, "g2") == expected, "g2's offsets lost in the restart"
        more = [f"n-{i}" for i in range(600)]
        produce(broker.bootstrap, TOPIC, more, PARTITIONS)
        lag = broker.metric("oxbow_group_lag_messages", group="g1")
        assert lag == len(more), f"g1's lag with {len(more)} new messages: {lag}"
        g1 = run_group(broker, "g1", 3, len(more))
        wait_for(lambda: sum(len(m.values) for m in g1) >= len(more), 90, "g1 to resume")
        for m in g1:
            m.stop()
        got = [v for m in g1 for v in m.values]
        assert sorted(got) == sorted(more), f"after restart g1 got {len(got)} messages, {len(set(got) - set(more))} old"
        print("after SIGKILL + restart: offsets kept, g1 resumed at its commits")
    print(f"{PROTOCOL} protocol, confluent-kafka: OK")


if __name__ == "__main__":
    sys.exit(main())
