"""Client load for the cluster tests that change a running cluster (e2e/cluster/rolling_restart.py,
e2e/cluster/voters.py): an idempotent acks=all producer (librdkafka) writing numbered
records at a steady rate, a consumer group reading the same topic, and any side checks
(`side`: functions given this Load, run until `stop` is set), each on its own thread.
`phase` names what the test is doing now, for side checks that count per phase.

    load = Load(bootstrap, "topic", "group", rate=300, side=[watch_leaders])
    load.start()
    ...
    if not load.finish():  # the group has not read everything acknowledged
        ...
"""
import threading
import time

from confluent_kafka import Consumer, Producer


class Load:
    def __init__(self, bootstrap, topic, group, rate, keys=0, side=()):
        self.bootstrap, self.topic, self.group, self.rate, self.keys = bootstrap, topic, group, rate, keys
        self.stop = threading.Event()
        self.acked, self.failed, self.seen = set(), [], set()
        # The longest a record took from produce() to its acknowledgement, in seconds.
        self.worst_latency = 0.0
        self.phase = "start"
        self.drained = False
        self.producer = threading.Thread(target=self.produce, daemon=True)
        self.consumer = threading.Thread(target=self.consume, daemon=True)
        self.side = [threading.Thread(target=check, args=(self,), daemon=True) for check in side]

    def start(self):
        for thread in (self.producer, self.consumer, *self.side):
            thread.start()

    def produce(self):
        """Record i's value is str(i); with `keys`, its key is str(i % keys)."""
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5})

        def delivered(err, message):
            if err is None:
                self.acked.add(message.value().decode())
                self.worst_latency = max(self.worst_latency, message.latency() or 0.0)
            else:
                self.failed.append(str(err))

        i, started = 0, time.time()
        while not self.stop.is_set():
            key = str(i % self.keys).encode() if self.keys else None
            producer.produce(self.topic, key=key, value=str(i).encode(), on_delivery=delivered)
            i += 1
            producer.poll(0)
            ahead = i / self.rate - (time.time() - started)
            if ahead > 0:
                time.sleep(ahead)
        if producer.flush(60) != 0:
            self.failed.append("records left undelivered after 60 s")

    def consume(self):
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                             "auto.offset.reset": "earliest", "enable.auto.commit": True})
        consumer.subscribe([self.topic])
        while not (self.stop.is_set() and self.drained):
            for message in consumer.consume(500, 0.5):
                if not message.error():
                    self.seen.add(message.value().decode())
        consumer.close()

    def finish(self, read_within=60):
        """Stops the producer (what is in flight is flushed) and the side checks, then the
        group once it has read every acknowledged record or after `read_within` seconds.
        True when the group read every acknowledged record."""
        self.stop.set()
        self.producer.join(90)
        for thread in self.side:
            thread.join(60)
        deadline = time.time() + read_within
        while not self.acked <= self.seen and time.time() < deadline:
            time.sleep(0.2)
        self.drained = True
        self.consumer.join(30)
        return self.acked <= self.seen
