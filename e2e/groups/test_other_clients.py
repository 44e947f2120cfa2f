"""Classic groups with other clients: kafka-python alone, kafka-python and librdkafka
in one group (both speak the `range` assignor), and kafkajs (node helper): each group
consumes every message exactly once."""

import os
import subprocess
import sys
import threading

from kafka import KafkaConsumer

from common import group_broker, create_topic, produce, require, wait_for
from members import Member

PARTITIONS = 6
N = 1200
HERE = os.path.dirname(os.path.abspath(__file__))


class PyMember(threading.Thread):
    def __init__(self, bootstrap, group, topic):
        super().__init__(daemon=True)
        self.args = (bootstrap, group, topic)
        self.values = []
        self.assignment = set()
        self.errors = []
        self.stopping = threading.Event()

    def run(self):
        bootstrap, group, topic = self.args
        try:
            consumer = KafkaConsumer(
                bootstrap_servers=bootstrap,
                group_id=group,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                heartbeat_interval_ms=500,
            )
            # Know the topic's partitions before joining: see `main` on kafka-python 3.0.
            wait_for(lambda: len(consumer.partitions_for_topic(topic)) == PARTITIONS, 30,
                     f"kafka-python to see {topic}")
            consumer.subscribe([topic])
            while not self.stopping.is_set():
                batches = consumer.poll(timeout_ms=100)
                self.assignment = {tp.partition for tp in consumer.assignment()}
                got = False
                for records in batches.values():
                    for r in records:
                        self.values.append(r.value.decode())
                        got = True
                if got:
                    consumer.commit()
            consumer.close()
        except Exception as error:  # asserted on by the test
            self.errors.append(error)

    def stop(self):
        self.stopping.set()
        self.join(60)


def check_group(broker, topic, name, members):
    for m in members:
        m.start()
    wait_for(lambda: sorted(p for m in members for p in m.assignment) == list(range(PARTITIONS))
             and all(m.assignment for m in members), 90, f"{name} to be stable")
    values = [f"{name}-{i}" for i in range(N)]
    produce(broker.bootstrap, topic, values, PARTITIONS)
    wait_for(lambda: sum(len(m.values) for m in members) >= N, 90, f"{name} to consume")
    for m in members:
        m.stop()
        assert not m.errors, m.errors
    got = [v for m in members for v in m.values]
    assert sorted(got) == sorted(values), f"{name}: {len(got)} deliveries of {N}"
    print(f"{name}: {len(members)} members {[len(m.values) for m in members]}, every message once")


def main():
    node_path = os.environ.get("NODE_PATH", "")
    require("kafkajs", os.path.isdir(os.path.join(node_path, "kafkajs")),
            f"no kafkajs in NODE_PATH={node_path!r}; e2e/setup.d/12-group-clients.sh installs it")
    # Kafka's default initial rebalance delay (3 s), not 0 as elsewhere: kafka-python
    # 3.0.12 loses a group leader for good when the leader's first assignment was made
    # before it had the topic's metadata. The metadata-driven re-join flips
    # `need_rejoin()` back to False while the new JoinGroup/SyncGroup is still in flight,
    # so `join_group_async` returns without applying the assignment and heartbeats stay
    # disabled (seen against Oxbow in about 1 run in 3 with no delay; the client code
    # path does not depend on the broker). The delay lets every member learn the
    # metadata before the first generation completes, as it does against Kafka.
    with group_broker() as broker:
        create_topic(broker.bootstrap, "py", PARTITIONS)
        check_group(broker, "py", "kafka-python", [PyMember(broker.bootstrap, "py-g", "py") for _ in range(3)])
        create_topic(broker.bootstrap, "mixed", PARTITIONS)
        check_group(broker, "mixed", "kafka-python+librdkafka", [
            PyMember(broker.bootstrap, "mixed-g", "mixed"),
            PyMember(broker.bootstrap, "mixed-g", "mixed"),
            Member(broker.bootstrap, "mixed-g", "mixed", **{"partition.assignment.strategy": "range"}),
        ])
        create_topic(broker.bootstrap, "js", PARTITIONS)
        values = [f"js-{i}" for i in range(N)]
        js = subprocess.Popen(["node", os.path.join(HERE, "kafkajs_group.js"), broker.bootstrap, "js", "js-g", str(N)],
                              stdout=subprocess.PIPE, text=True)
        ready = js.stdout.readline().strip()
        assert ready == "stable", f"kafkajs helper said {ready!r}"
        produce(broker.bootstrap, "js", values, PARTITIONS)
        result = js.stdout.read().strip().splitlines()
        assert js.wait(120) == 0, result
        assert result and result[-1].startswith("ok"), result
        print(f"kafkajs: {result[-1]}")
    print("other clients: OK")


if __name__ == "__main__":
    sys.exit(main())
