"""KIP-848 (group.protocol=consumer) with confluent-kafka (librdkafka), against Oxbow and,
with --kafka HOST:PORT, against Apache Kafka as the reference (both must observe the same):

- regex subscription: a member subscribed to "^rx-<run>-.*" is assigned the matching
  topics that exist and a matching topic created after it joined, never a topic that does
  not match; it consumes from exactly those; a second member with the same regex shares
  the partitions (disjoint, none left out), and after it leaves the first has them all.
- manual assignment with a group.id: assign(), consume, commit and read the committed
  offsets back (no UNKNOWN_MEMBER_ID); after incremental_unassign of one partition, new
  records there are not delivered while those of the kept partition are; another consumer
  of the group reads the same committed offsets.
"""

import argparse
import sys
import threading
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from common import create_topic, group_broker, produce, wait_for


class RegexMember(threading.Thread):
    """A subscribing member that records its assignment and what it consumed."""

    def __init__(self, bootstrap, group, pattern):
        super().__init__(daemon=True)
        self.config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                       "auto.offset.reset": "earliest", "enable.auto.commit": False,
                       "topic.metadata.refresh.interval.ms": 1000}
        self.pattern = pattern
        self.assignment = set()
        self.consumed = []
        self.errors = []
        self.stopping = threading.Event()
        self.closed = threading.Event()
        self.lock = threading.Lock()

    def _assign(self, _consumer, partitions):
        with self.lock:
            self.assignment |= {(p.topic, p.partition) for p in partitions}

    def _revoke(self, _consumer, partitions):
        with self.lock:
            self.assignment -= {(p.topic, p.partition) for p in partitions}

    def assigned(self):
        with self.lock:
            return set(self.assignment)

    def run(self):
        consumer = Consumer(self.config)
        try:
            consumer.subscribe([self.pattern], on_assign=self._assign, on_revoke=self._revoke)
            while not self.stopping.is_set():
                for message in consumer.consume(num_messages=100, timeout=0.1):
                    if message.error():
                        if not message.error().retriable() and message.error().code() != -191:
                            self.errors.append(str(message.error()))
                        continue
                    self.consumed.append((message.topic(), message.value().decode()))
            consumer.close()
        except Exception as error:
            self.errors.append(repr(error))
        finally:
            self.closed.set()

    def stop(self):
        self.stopping.set()
        self.closed.wait(60)


def regex_scenario(bootstrap, run):
    obs = {}
    prefix = f"rx-{run}"
    for name in (f"{prefix}-a", f"{prefix}-b", f"other-{run}"):
        create_topic(bootstrap, name, 2)
    first = RegexMember(bootstrap, f"regex-{run}", f"^{prefix}-.*")
    first.start()
    before = {(f"{prefix}-{t}", p) for t in "ab" for p in range(2)}
    wait_for(lambda: first.assigned() == before, 60, f"the regex member to be assigned {sorted(before)}")
    obs["assigned before a new topic"] = sorted(first.assigned())
    create_topic(bootstrap, f"{prefix}-c", 2)
    everything = before | {(f"{prefix}-c", p) for p in range(2)}
    wait_for(lambda: first.assigned() == everything, 60, "the topic created later to be assigned")
    obs["assigned after a new topic"] = sorted(first.assigned())
    for topic in (f"other-{run}", f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"):
        produce(bootstrap, topic, [f"{topic}-{i}" for i in range(10)], 2)
    wait_for(lambda: len(first.consumed) >= 30, 60, "30 records from the matching topics")
    obs["topics consumed"] = sorted({t.replace(run, "<run>") for t, _ in first.consumed})
    obs["records consumed"] = len(first.consumed)

    second = RegexMember(bootstrap, f"regex-{run}", f"^{prefix}-.*")
    second.start()
    shared = lambda: (first.assigned() and second.assigned() and  # noqa: E731
                      not first.assigned() & second.assigned() and
                      first.assigned() | second.assigned() == everything)
    wait_for(shared, 90, "two members to share the 6 partitions")
    obs["two members share the partitions"] = True
    obs["partitions per member"] = sorted([len(first.assigned()), len(second.assigned())])
    second.stop()
    wait_for(lambda: first.assigned() == everything, 90, "the remaining member to own every partition")
    obs["after the second left"] = sorted(first.assigned())
    first.stop()
    obs["member errors"] = first.errors + second.errors
    return obs


def manual_scenario(bootstrap, run):
    obs = {}
    topic, group = f"manual-{run}", f"manual-group-{run}"
    create_topic(bootstrap, topic, 2)
    produce(bootstrap, topic, [f"p{i % 2}-{i // 2}" for i in range(20)], 2)
    config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
              "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    consumer = Consumer(config)
    consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    got = []

    def poll_until(count):
        def more():
            for message in consumer.consume(num_messages=100, timeout=0.2):
                if not message.error():
                    got.append((message.partition(), message.value().decode()))
            return len(got) >= count
        wait_for(more, 60, f"{count} records", interval=0)

    poll_until(20)
    obs["records per partition"] = sorted((p, sum(1 for q, _ in got if q == p)) for p in (0, 1))
    try:
        committed = consumer.commit(asynchronous=False)
        obs["commit"] = sorted((tp.partition, tp.offset, tp.error.name() if tp.error else None) for tp in committed)
    except KafkaException as error:
        obs["commit"] = f"error {error.args[0].name()}"
    read = consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=30)
    obs["committed"] = sorted((tp.partition, tp.offset) for tp in read)

    consumer.incremental_unassign([TopicPartition(topic, 1)])
    obs["assignment after unassign"] = sorted(tp.partition for tp in consumer.assignment())
    # The dropped partition's records are produced first: had they been fetched, they
    # would arrive no later than the kept partition's.
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(5):
        producer.produce(topic, value=f"late-p1-{i}".encode(), partition=1)
    producer.flush(30)
    for i in range(5):
        producer.produce(topic, value=f"late-p0-{i}".encode(), partition=0)
    producer.flush(30)
    poll_until(25)
    late = [(p, v) for p, v in got if v.startswith("late")]
    obs["late records delivered"] = sorted(late)
    try:
        committed = consumer.commit(asynchronous=False)
        obs["second commit"] = sorted((tp.partition, tp.offset, tp.error.name() if tp.error else None)
                                      for tp in committed)
    except KafkaException as error:
        obs["second commit"] = f"error {error.args[0].name()}"
    consumer.close()
    other = Consumer(config)
    read = other.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=30)
    obs["committed, read by another consumer"] = sorted((tp.partition, tp.offset) for tp in read)
    other.close()
    return obs


def expect(obs, who):
    failures = []
    late = obs["manual"]["late records delivered"]
    checks = [
        ("regex member assigned the matching topics only", len(obs["regex"]["assigned before a new topic"]) == 4),
        ("a matching topic created later is assigned", len(obs["regex"]["assigned after a new topic"]) == 6),
        ("records come from the matching topics only",
         obs["regex"]["topics consumed"] == ["rx-<run>-a", "rx-<run>-b", "rx-<run>-c"]),
        ("manual commit accepted", obs["manual"]["commit"] == [(0, 10, None), (1, 10, None)]),
        ("committed offsets read back", obs["manual"]["committed"] == [(0, 10), (1, 10)]),
        ("nothing delivered from the unassigned partition", late and all(p == 0 for p, _ in late)),
        ("another consumer reads the committed offsets",
         obs["manual"]["committed, read by another consumer"] == [(0, 15), (1, 10)]),
        ("no member errors", not obs["regex"]["member errors"]),
    ]
    for name, ok in checks:
        print(f"{'ok  ' if ok else 'FAIL'}  {who}: {name}", flush=True)
        if not ok:
            failures.append(f"{who}: {name}")
    return failures


def observe(bootstrap, run):
    return {"regex": regex_scenario(bootstrap, run), "manual": manual_scenario(bootstrap, run)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kafka", help="Apache Kafka's bootstrap, the reference")
    args = parser.parse_args()
    failures = []
    # The same topic and group names on both brokers, so that observations compare as is.
    run = uuid.uuid4().hex[:8]
    broker = group_broker()
    with broker:
        oxbow = observe(broker.bootstrap, run)
    print(f"oxbow: {oxbow}", flush=True)
    failures += expect(oxbow, "oxbow")
    if args.kafka:
        kafka = observe(args.kafka, run)
        print(f"kafka: {kafka}", flush=True)
        failures += expect(kafka, "kafka")
        for scenario in kafka:
            for key, value in kafka[scenario].items():
                same = value == oxbow[scenario].get(key)
                print(f"{'ok  ' if same else 'FAIL'}  same as Kafka: {scenario} {key}", flush=True)
                if not same:
                    failures.append(f"{scenario} {key}: kafka {value} oxbow {oxbow[scenario].get(key)}")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
