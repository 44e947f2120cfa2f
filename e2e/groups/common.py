"""Shared helpers of the consumer-group suites: the group suites' broker (the one
`Broker` and `wait_for` of the Python suites live in e2e/lib/oxbow_e2e.py), topic creation
and producing."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from oxbow_e2e import Broker, require, wait_for  # noqa: E402,F401  (re-exported to the group suites)


def group_broker(*overrides):
    """The broker of a group suite (binary from $OXBOW_BINARY). Few offsets partitions:
    recovery after a SIGKILL scans every partition's preallocated indexes, which is slow in
    debug builds."""
    return Broker(overrides=["offsets.topic.num.partitions=5", *overrides])


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
