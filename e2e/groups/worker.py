"""A group member in its own process (so a test can SIGKILL it). Appends every value it
consumes to OUT, then commits synchronously and appends a line `#committed`.

    worker.py BOOTSTRAP GROUP TOPIC OUT [session.timeout.ms]
"""

import sys

from confluent_kafka import Consumer, KafkaException

bootstrap, group, topic, out = sys.argv[1:5]
session = sys.argv[5] if len(sys.argv) > 5 else "6000"
consumer = Consumer(
    {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": int(session),
        "heartbeat.interval.ms": 500,
    }
)
with open(out, "a", buffering=1) as f:

    def on_assign(_consumer, partitions):
        f.write("#assigned " + ",".join(str(p.partition) for p in partitions) + "\n")

    consumer.subscribe([topic], on_assign=on_assign)
    while True:
        messages = [m for m in consumer.consume(num_messages=50, timeout=0.2) if not m.error()]
        if not messages:
            continue
        for m in messages:
            f.write(m.value().decode() + "\n")
        try:
            consumer.commit(asynchronous=False)
            f.write("#committed\n")
        except KafkaException as error:
            f.write(f"#commit-failed {error}\n")
