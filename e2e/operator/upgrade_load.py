#!/usr/bin/env python3
"""Client steps of the operator upgrade suite (e2e/suites/78-operator-upgrade.sh): an
idempotent acks=all producer kept busy through a rolling upgrade, and the read-back of what
it was told was written. confluent-kafka (librdkafka), run from $OXBOW_CACHE/clients/venv
inside a pod's network namespace (k8s_pod_exec), so every address is a cluster DNS name.

usage: upgrade_load.py produce-until BOOTSTRAP TOPIC STOP_FILE ACKED_FILE
           enable.idempotence (acks=all, retries, ordering kept) until STOP_FILE exists: each
           record's value is "<sequence>-<uuid>"; every value the broker acknowledged is
           appended to ACKED_FILE as "partition offset value" the moment its delivery
           report comes. A delivery report with an error is a failed send (librdkafka
           retries within message.timeout.ms; an idempotent producer gives up only then, or
           on a fatal error). Writes ACKED_FILE.summary (JSON: sent, acked, failed,
           fatal, max_ms of an acknowledgement) and exits 1 if a send failed.
       upgrade_load.py read-back BOOTSTRAP TOPIC ACKED_FILE
           reads every partition of TOPIC from the beginning to its end (read_committed
           is not needed: no transactions) and checks that each acknowledged value is at the
           offset its acknowledgement named, and that no value is in the log twice (the
           idempotent producer's retries across restarts wrote nothing twice). Prints one
           line; exit 1 on a missing, moved or duplicated record."""
import json
import os
import sys
import time
import uuid
from collections import Counter

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def produce_until(bootstrap, topic, stop_file, acked_file):
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,   # implies acks=all, retries, max.in.flight <= 5
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 120000,
        "request.timeout.ms": 10000,
    })
    counts = Counter()
    started = {}
    latencies = []
    fatal = []
    out = open(acked_file, "a")

    def delivered(error, message):
        value = message.value().decode()
        began = started.pop(value, None)
        if error is not None:
            counts["failed"] += 1
            if error.fatal():
                fatal.append(str(error))
            print("send failed: %s" % error, file=sys.stderr)
            return
        counts["acked"] += 1
        if began is not None:
            latencies.append((time.monotonic() - began) * 1000)
        out.write("%d %d %s\n" % (message.partition(), message.offset(), value))
        out.flush()

    sequence = 0
    while not os.path.exists(stop_file):
        value = "%d-%s" % (sequence, uuid.uuid4())
        try:
            producer.produce(topic, value=value.encode(), on_delivery=delivered)
        except BufferError:
            producer.poll(0.1)   # the local queue is full: let deliveries drain
            continue
        except KafkaException as e:
            counts["failed"] += 1
            print("produce refused: %s" % e, file=sys.stderr)
            continue
        started[value] = time.monotonic()
        sequence += 1
        counts["sent"] += 1
        producer.poll(0.01)   # serves delivery reports; the send rate's pace (~100/s)
    left = producer.flush(150)
    counts["failed"] += left   # never acknowledged nor failed within the flush: lost to us
    out.close()
    summary = {"sent": counts["sent"], "acked": counts["acked"], "failed": counts["failed"],
               "fatal": len(fatal), "max_ms": round(max(latencies)) if latencies else 0}
    with open(acked_file + ".summary", "w") as f:
        json.dump(summary, f)
    print(json.dumps(summary))
    sys.exit(1 if summary["failed"] or summary["acked"] == 0 else 0)


def read_back(bootstrap, topic, acked_file):
    acked = {}
    for line in open(acked_file):
        partition, offset, value = line.split()
        acked[value] = (int(partition), int(offset))
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "upgrade-read-back-%s" % uuid.uuid4(),
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": True})
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    ends = {}
    for p in partitions:
        ends[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    found = {}
    seen = Counter()
    done = {p for p, end in ends.items() if end == 0}
    deadline = time.monotonic() + 120
    while len(done) < len(ends) and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is None:
            continue
        if message.error():
            if message.error().code() == -191:   # _PARTITION_EOF
                if message.offset() >= ends[message.partition()]:
                    done.add(message.partition())
                continue
            raise SystemExit("read-back: %s" % message.error())
        value = message.value().decode(errors="replace")
        seen[value] += 1
        found[value] = (message.partition(), message.offset())
        if message.offset() + 1 >= ends[message.partition()]:
            done.add(message.partition())
    consumer.close()
    missing = [v for v in acked if v not in found]
    moved = [v for v, at in acked.items() if v in found and found[v] != at]
    twice = [v for v, n in seen.items() if n > 1]
    print("acknowledged %d, read back %d of them at their acknowledged offsets; %d records in %d partitions, "
          "%d missing, %d moved, %d written twice"
          % (len(acked), len(acked) - len(missing) - len(moved), sum(seen.values()), len(ends),
             len(missing), len(moved), len(twice)))
    if len(done) < len(ends):
        print("read-back: partitions %s not read to their end in 120 s" % sorted(set(ends) - done))
    sys.exit(1 if missing or moved or twice or len(done) < len(ends) or not acked else 0)


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "produce-until":
        produce_until(*args)
    elif command == "read-back":
        read_back(*args)
    else:
        raise SystemExit(__doc__)
