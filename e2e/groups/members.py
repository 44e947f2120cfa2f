"""A confluent-kafka (librdkafka) group member run in a thread, recording what it
consumed and what it was assigned."""

import threading

from confluent_kafka import Consumer, KafkaException


class Member(threading.Thread):
    def __init__(self, bootstrap, group, topic, **config):
        super().__init__(daemon=True)
        self.topic = topic
        self.config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **config,
        }
        self.values = []
        self.assignment = set()
        self.assign_events = 0
        self.revoked = []
        self.errors = []
        self.commit_errors = 0
        self.stopping = threading.Event()
        self.closed = threading.Event()
        self.incremental = config.get("partition.assignment.strategy") == "cooperative-sticky" or config.get("group.protocol") == "consumer"

    def _on_assign(self, consumer, partitions):
        if self.incremental:
            self.assignment |= {p.partition for p in partitions}
        else:
            self.assignment = {p.partition for p in partitions}
        self.assign_events += 1

    def _on_revoke(self, consumer, partitions):
        self.revoked.append({p.partition for p in partitions})
        if self.incremental:
            self.assignment -= {p.partition for p in partitions}
        else:
            self.assignment = set()

    def run(self):
        consumer = Consumer(self.config)
        try:
            consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
            while not self.stopping.is_set():
                messages = consumer.consume(num_messages=500, timeout=0.1)
                got = False
                for message in messages:
                    if message.error():
                        self.errors.append(message.error())
                        continue
                    self.values.append(message.value().decode())
                    got = True
                if got:
                    try:
                        consumer.commit(asynchronous=False)
                    except KafkaException:
                        self.commit_errors += 1
            if not getattr(self, "abandon", False):
                consumer.close()
        except Exception as error:  # recorded and asserted on by the test
            self.errors.append(error)
        finally:
            self.closed.set()

    def stop(self):
        self.stopping.set()
        self.closed.wait(60)
