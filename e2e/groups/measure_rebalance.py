"""Measures how long a rebalance takes when one member joins a stable group of N-1
(librdkafka, default client and broker settings): from the new member's subscribe until
every member holds its share and every partition is owned exactly once. Not a test:
prints a table for the notes.   measure_rebalance.py [--fast] [sizes...]

--fast: heartbeats every 500 ms on both protocols (librdkafka heartbeat.interval.ms for
classic, the broker's group.consumer.heartbeat.interval.ms for KIP-848), which shows
the protocols' own cost rather than the default heartbeat intervals."""

import sys
import time

from common import group_broker, create_topic, wait_for
from members import Member

PARTITIONS = 30


def stable(members):
    owned = sorted(p for m in members for p in m.assignment)
    return owned == list(range(PARTITIONS)) and all(m.assignment for m in members)


def measure(broker, protocol, size):
    topic = f"r-{protocol}-{size}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    config = {"group.protocol": "consumer"} if protocol == "consumer" else {}
    if FAST and protocol == "classic":
        config["heartbeat.interval.ms"] = 500
    group = f"{topic}-g"
    members = [Member(broker.bootstrap, group, topic, **config) for _ in range(size - 1)]
    for m in members:
        m.start()
    wait_for(lambda: stable(members), 120, "the initial group")
    joiner = Member(broker.bootstrap, group, topic, **config)
    start = time.monotonic()
    joiner.start()
    members.append(joiner)
    wait_for(lambda: stable(members), 120, "the rebalance", interval=0.01)
    elapsed = time.monotonic() - start
    for m in members:
        m.stopping.set()
    for m in members:
        m.stop()
    return elapsed


FAST = "--fast" in sys.argv


def main():
    sizes = [int(s) for s in sys.argv[1:] if s.isdigit()] or [3, 10]
    overrides = ["group.consumer.heartbeat.interval.ms=500"] if FAST else []
    with group_broker(*overrides) as broker:
        for protocol in ("classic", "consumer"):
            for size in sizes:
                print(f"{protocol:8} {size:3} members: {measure(broker, protocol, size):.2f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
