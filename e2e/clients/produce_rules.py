#!/usr/bin/env python3
"""Topic rules on produce through librdkafka (confluent-kafka), against Oxbow and against
Apache Kafka (the reference): both must answer alike, and the answers must be the ones
Kafka documents.

    produce_rules.py --binary target/debug/oxbow [--kafka HOST:PORT]

- A compacted topic refuses a keyless record (KIP-467): a batch of keyed and keyless
  records fails record by record as Kafka fails it (the keyless ones INVALID_RECORD),
  and a batch of keyed records is stored.
- message.timestamp.after.max.ms / before.max.ms: a record outside the bounds fails with
  INVALID_TIMESTAMP; LogAppendTime topics take any producer timestamp.
- compression.type=zstd with an lz4 producer: the stored batches are zstd (batch
  attributes read from the segment file on disk in Oxbow, from a raw fetch in both), and
  the values read back byte-identical; a batch already zstd is stored as produced.
- Invalid compression.type / level values are refused with INVALID_CONFIG naming the key.

Prints one line per check and closes with "N passed, N failed".
"""
import argparse
import glob
import os
import struct
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from oxbow_e2e import Broker, wait_for  # noqa: E402

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

HOUR_MS = 3_600_000


class Report:
    def __init__(self):
        self.passed, self.failed = 0, 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok    {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL  {name}: {detail}", flush=True)


def create(admin, name, configs, partitions=1):
    """Creates a topic; returns None or (error name, message)."""
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=configs)], operation_timeout=30)
    try:
        futures[name].result()
        return None
    except KafkaException as error:
        e = error.args[0]
        return (e.name(), e.str())


def produce(bootstrap, topic, records, compression="none"):
    """Produces `records` [(key, value, timestamp)] as one batch (linger) and returns each
    record's outcome: ("ok", offset) or ("error", error name)."""
    outcomes = [None] * len(records)

    def report(index):
        def done(error, message):
            outcomes[index] = ("error", error.name()) if error else ("ok", message.offset())
        return done

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200, "acks": "all",
                         "compression.codec": compression, "enable.idempotence": False,
                         "message.send.max.retries": 0})
    for i, (key, value, timestamp) in enumerate(records):
        producer.produce(topic, value=value, key=key, partition=0, timestamp=timestamp or 0,
                         on_delivery=report(i))
    producer.flush(30)
    return outcomes


def consume(bootstrap, topic, count):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rules-{uuid.uuid4()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None or message.error():
            continue
        got.append((message.offset(), message.key(), message.value()))
    consumer.close()
    return got


def wait_leader(admin, topic):
    def ready():
        metadata = admin.list_topics(topic, timeout=5).topics.get(topic)
        return metadata is not None and metadata.error is None and all(
            p.leader >= 0 for p in metadata.partitions.values())
    wait_for(ready, 30, f"a leader for {topic}")


def observe(bootstrap, suffix):
    """Plays every scenario against one broker; returns what a client observed."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    obs = {}
    now = int(time.time() * 1000)

    compacted = f"rules-compacted-{suffix}"
    obs["create compacted"] = create(admin, compacted, {"cleanup.policy": "compact"})
    wait_leader(admin, compacted)
    obs["mixed keyed and keyless"] = produce(bootstrap, compacted, [
        (b"a", b"1", now), (None, b"2", now), (b"b", b"3", now), (None, b"4", now)])
    obs["keyed only"] = produce(bootstrap, compacted, [(b"a", b"5", now), (b"b", b"6", now)])

    bounded = f"rules-timestamps-{suffix}"
    obs["create bounded"] = create(admin, bounded, {"message.timestamp.before.max.ms": "60000"})
    wait_leader(admin, bounded)
    obs["future record"] = produce(bootstrap, bounded, [(b"k", b"future", now + 2 * HOUR_MS)])
    obs["old record"] = produce(bootstrap, bounded, [(b"k", b"old", now - HOUR_MS)])
    obs["records in range"] = produce(bootstrap, bounded, [(b"k", b"now", now), (b"k", b"soon", now + 1000)])
    appended = f"rules-log-append-{suffix}"
    obs["create log append"] = create(admin, appended, {"message.timestamp.type": "LogAppendTime"})
    wait_leader(admin, appended)
    obs["future record, LogAppendTime"] = produce(bootstrap, appended, [(b"k", b"x", now + 99 * HOUR_MS)])

    zstd = f"rules-zstd-{suffix}"
    obs["create zstd"] = create(admin, zstd, {"compression.type": "zstd"})
    wait_leader(admin, zstd)
    values = [(f"k{i}".encode(), bytes((i * 7 + j) % 256 for j in range(300)) * 3, now) for i in range(20)]
    obs["lz4 into zstd"] = produce(bootstrap, zstd, values, "lz4")
    obs["zstd into zstd"] = produce(bootstrap, zstd, values[:3], "zstd")
    got = consume(bootstrap, zstd, len(values) + 3)
    sent = [(k, v) for k, v, _ in values + values[:3]]
    obs["read back byte-identical"] = [(k, v) for _, k, v in got] == sent
    obs["read back offsets"] = [o for o, _, _ in got]

    for key, value in [("compression.type", "ZSTD"), ("compression.type", "none"),
                       ("compression.zstd.level", "23"), ("compression.gzip.level", "0"),
                       ("compression.lz4.level", "0")]:
        refused = create(admin, f"rules-bad-{suffix}", {key: value})
        obs[f"create {key}={value}"] = (refused[0], key in refused[1]) if refused else None
    return obs


def segment_codecs(data_dir, topic):
    """The compression codec of every batch in a partition's segment files on disk."""
    codecs = []
    for path in sorted(glob.glob(os.path.join(data_dir, f"{topic}-0", "*.log"))):
        with open(path, "rb") as f:
            data = f.read()
        position = 0
        while position + 61 <= len(data):
            (length,) = struct.unpack(">i", data[position + 8:position + 12])
            (attributes,) = struct.unpack(">h", data[position + 21:position + 23])
            if length <= 0:
                break
            codecs.append(attributes & 0x07)
            position += 12 + length
    return codecs


def expect(report, obs, who):
    failed = lambda outcomes: [o[1] if o[0] == "error" else "ok" for o in outcomes]  # noqa: E731
    mixed = failed(obs["mixed keyed and keyless"])
    report.check(f"{who}: keyless records on a compacted topic fail with INVALID_RECORD",
                 mixed[1] == mixed[3] == "INVALID_RECORD", mixed)
    report.check(f"{who}: keyed records on a compacted topic are stored",
                 failed(obs["keyed only"]) == ["ok", "ok"], obs["keyed only"])
    report.check(f"{who}: a record past message.timestamp.after.max.ms fails with INVALID_TIMESTAMP",
                 failed(obs["future record"]) == ["INVALID_TIMESTAMP"], obs["future record"])
    report.check(f"{who}: a record before message.timestamp.before.max.ms fails with INVALID_TIMESTAMP",
                 failed(obs["old record"]) == ["INVALID_TIMESTAMP"], obs["old record"])
    report.check(f"{who}: records in range are stored", failed(obs["records in range"]) == ["ok", "ok"],
                 obs["records in range"])
    report.check(f"{who}: LogAppendTime takes any producer timestamp",
                 failed(obs["future record, LogAppendTime"]) == ["ok"], obs["future record, LogAppendTime"])
    report.check(f"{who}: lz4 and zstd batches into a zstd topic are stored and read back byte-identical",
                 all(o[0] == "ok" for o in obs["lz4 into zstd"] + obs["zstd into zstd"])
                 and obs["read back byte-identical"] is True, obs["read back offsets"])
    for key in [k for k in obs if k.startswith("create ") and "=" in k]:
        report.check(f"{who}: {key} refused with INVALID_CONFIG naming the key",
                     obs[key] == ("INVALID_CONFIG", True), obs[key])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--kafka", help="bootstrap of Apache Kafka, the reference")
    args = parser.parse_args()
    report = Report()
    suffix = uuid.uuid4().hex[:8]
    with Broker(os.path.abspath(args.binary)) as broker:
        oxbow = observe(broker.bootstrap, suffix)
        expect(report, oxbow, "oxbow")
        codecs = segment_codecs(broker.data, f"rules-zstd-{suffix}")
        report.check("oxbow: every batch on disk in the zstd topic is zstd (codec 4)",
                     codecs and all(c == 4 for c in codecs), codecs)
        if args.kafka:
            kafka = observe(args.kafka, suffix)
            expect(report, kafka, "kafka")
            for key in kafka:
                report.check(f"same as Kafka: {key}", kafka[key] == oxbow[key],
                             f"kafka {kafka[key]} oxbow {oxbow[key]}")
    print(f"{report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
