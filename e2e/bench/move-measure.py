#!/usr/bin/env python3
"""Measures a large partition move (issue 14's "5 GiB reassignment"): not a test, numbers.

    move-measure.py BINARY [GIB]

Three `oxbow` nodes on loopback (release build). Topic `big` (1 partition, replica on
broker 1) is preloaded with GIB GiB (default 5) of 1 KiB records; topic `live` (3
partitions, RF 3, min.insync.replicas=2) takes idempotent acks=all librdkafka writes at
RATE msg/s throughout. Then `kafka-reassign-partitions` moves `big` from broker 1 to
broker 2 without a throttle, and from broker 2 to broker 3 with `--throttle THROTTLE`.
For each move: seconds from --execute to the new replica alone in the ISR, bytes of the
new replica's segments, its throttled fetch rate, and the `live` producers' acks=all p99
during the move next to the 10 s before it. Needs about 2 x GIB of free disk.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cluster"))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from history import Workload, now  # noqa: E402
from oxbow_cluster import Cluster, Network  # noqa: E402
from reassignment import ack_latency_p99, kafka_tool, throttled_bytes  # noqa: E402

NODES = (1, 2, 3)
BASES = (35192, 35292, 35392)
RATE = int(os.environ.get("OXBOW_MOVE_RATE", "1000"))
THROTTLE = int(os.environ.get("OXBOW_MOVE_THROTTLE", "100000000"))


def state(cluster, topic):
    for node in NODES:
        answer = cluster.metadata(node)
        if answer and (topic, 0) in answer["partitions"]:
            s = answer["partitions"][(topic, 0)]
            return list(s["replicas"]), sorted(s["isr"])
    return None


def segment_bytes(cluster, node, topic):
    directory = os.path.join(cluster.data_dir(node), f"{topic}-0")
    if not os.path.isdir(directory):
        return 0
    return sum(os.path.getsize(os.path.join(directory, f)) for f in os.listdir(directory) if f.endswith(".log"))


def preload(bootstrap, gib):
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20,
                         "batch.size": 1 << 20, "compression.type": "none", "log_level": 2})
    payload = os.urandom(1024)
    for i in range(gib * 1024 * 1024):
        while True:
            try:
                producer.produce("big", value=payload, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 2000 == 0:
            producer.poll(0)
    if producer.flush(300) != 0:
        raise RuntimeError("preload not flushed")


def move(cluster, work, target, extra=()):
    path = os.path.join(work, f"to-{target}.json")
    with open(path, "w") as f:
        json.dump({"version": 1, "partitions": [{"topic": "big", "partition": 0, "replicas": [target]}]}, f)
    began = now()
    before = throttled_bytes(cluster, target, "follower")
    kafka_tool("kafka-reassign-partitions", "--bootstrap-server", cluster.bootstrap,
               "--reassignment-json-file", path, "--execute", *extra)
    while state(cluster, "big") != ([target], [target]):
        if now() - began > 1800:
            raise RuntimeError(f"move to {target} not done in 30 min: {state(cluster, 'big')}")
        time.sleep(0.2)
    took = now() - began
    throttled = throttled_bytes(cluster, target, "follower") - before
    kafka_tool("kafka-reassign-partitions", "--bootstrap-server", cluster.bootstrap,
               "--reassignment-json-file", path, "--verify")
    return began, took, throttled


def ms(seconds):
    return "n/a (under 20 acks)" if seconds is None else f"{seconds * 1000:.0f} ms"


def main():
    binary = sys.argv[1]
    gib = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    work = tempfile.mkdtemp(prefix="oxbow-move-measure-")
    cluster = Cluster(binary, work, Network(False), cluster_id="move-measure", nodes=NODES, bases=BASES)
    workload = None
    try:
        for node in NODES:
            cluster.start(node)
        deadline = time.time() + 60
        while not all(cluster.ready(n) for n in NODES):
            if time.time() > deadline:
                raise RuntimeError("nodes not ready")
            time.sleep(0.2)
        kafka_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", "big",
                   "--replica-assignment", "1")
        kafka_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", "live",
                   "--partitions", "3", "--replication-factor", "3", "--config", "min.insync.replicas=2")
        started = time.time()
        preload(cluster.bootstrap, gib)
        size = segment_bytes(cluster, 1, "big")
        print(f"preloaded {size / 2**30:.2f} GiB into big-0 in {time.time() - started:.0f} s", flush=True)
        workload = Workload(cluster.bootstrap, "live", "measure", 2, RATE, acks_all=True, partitions=3)
        workload.start()
        time.sleep(10)
        for target, extra, label in ((2, (), "no throttle"),
                                     (3, ("--throttle", str(THROTTLE)), f"--throttle {THROTTLE} B/s")):
            began, took, throttled = move(cluster, work, target, extra)
            moved = segment_bytes(cluster, target, "big")
            during = ack_latency_p99(workload, began, began + took)
            before = ack_latency_p99(workload, began - 10, began)
            rate = f", throttled fetch {throttled / took / 1e6:.1f} MB/s" if throttled else ""
            print(f"move of big-0 to broker {target} ({label}): {took:.1f} s, {moved / 2**30:.2f} GiB on the "
                  f"new replica ({moved / took / 1e6:.0f} MB/s{rate}); live acks=all p99 "
                  f"{ms(during)} during, {ms(before)} in the 10 s before", flush=True)
            time.sleep(10)
        workload.stop()
        print(f"live: {workload.acked_count()} acks, delivery failures {dict(workload.failed)}", flush=True)
    finally:
        if workload is not None:
            workload.halt()
        cluster.shutdown_all()
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
