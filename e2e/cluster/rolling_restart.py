#!/usr/bin/env python3
"""A rolling restart of a 3-broker Oxbow cluster under acks=all load, as an operator does
it: SIGTERM one broker (controlled shutdown), wait until it has exited, start it again
with the same command, wait until it is ready and back in every ISR, then the next.

Meanwhile an idempotent acks=all producer (librdkafka) writes at a steady rate to an
RF=3, min.insync.replicas=2 topic, a consumer group reads it, and the partitions' leaders
are watched through Metadata. Asserts: no produce failed, no partition was ever seen
without a leader, the group saw every record, and the brokers' metrics reported the
under-replicated partitions while a broker was away and none once it was back.

    rolling_restart.py OXBOW_BINARY
"""
import os
import sys
import tempfile
import time

from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from load import Load  # noqa: E402
from oxbow_cluster import Cluster, Network  # noqa: E402
from oxbow_e2e import fail, http_get, wait_for  # noqa: E402

TOPIC = "rolling"
PARTITIONS = 6
RATE = 500  # records/s
# Clients on PORT..PORT+2, controllers 100 above, metrics 200 above: no other suite's ports
# (OXBOW_SUITE_PORT moves them).
PORT = int(os.environ.get("OXBOW_SUITE_PORT", "23792"))


def metric(cluster, node, name):
    status, body = http_get(cluster.metrics_port(node), "/metrics")
    if status != 200:
        return None
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def watch_leaders(offline):
    """A side check of the load: every partition without a leader seen in Metadata."""
    def watch(load):
        admin = AdminClient({"bootstrap.servers": load.bootstrap})
        while not load.stop.is_set():
            try:
                topic = admin.list_topics(TOPIC, timeout=2).topics[TOPIC]
                for p in topic.partitions.values():
                    if p.leader < 0:
                        offline.append((time.time(), p.id))
            except Exception:
                pass
            time.sleep(0.05)
    return watch


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp(prefix="oxbow-rolling-")
    cluster = Cluster(binary, work, Network(False), cluster_id="rolling-restart",
                      bases=(PORT, PORT + 100, PORT + 200),
                      extra=["offsets.topic.replication.factor=3", "group.initial.rebalance.delay.ms=0"])
    with cluster.running():
        roll(cluster)


def roll(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[TOPIC].result()

    def isr_full():
        topic = admin.list_topics(TOPIC, timeout=5).topics[TOPIC]
        return all(len(p.isrs) == 3 and p.leader >= 0 for p in topic.partitions.values())

    wait_for(isr_full, 90, "every replica in sync")
    offline = []
    load = Load(cluster.bootstrap, TOPIC, "rolling-readers", RATE, side=[watch_leaders(offline)])
    load.start()
    time.sleep(3)
    under_replicated_seen = False
    for node in cluster.nodes:
        started = time.time()
        problems = cluster.terminate([node])
        if problems:
            fail(f"controlled shutdown of node {node}: {problems}")
        stopped = time.time() - started
        others = [n for n in cluster.nodes if n != node]
        under = [metric(cluster, n, "oxbow_replication_under_replicated_partitions") or 0 for n in others]
        under_replicated_seen |= sum(under) > 0
        cluster.start(node)
        wait_for(lambda: cluster.ready(node), 60, f"node {node} ready")
        wait_for(isr_full, 60, "every replica back in sync")
        print(f"ok node-{node}: stopped in {stopped:.2f} s (controlled shutdown), "
              f"under-replicated partitions reported meanwhile {under}, back in every ISR "
              f"{time.time() - started:.1f} s after SIGTERM", flush=True)
        time.sleep(2)
    time.sleep(2)
    if not load.finish():
        fail(f"the group did not read {len(load.acked - load.seen)} acknowledged records within 60 s")
    if load.failed:
        fail(f"{len(load.failed)} produce(s) failed during the rolling restart: {load.failed[:3]}")
    if offline:
        fail(f"partitions without a leader during the rolling restart: {offline[:5]}")
    if not under_replicated_seen:
        fail("no broker reported under-replicated partitions while one broker was away")
    after = [metric(cluster, n, "oxbow_replication_under_replicated_partitions") for n in cluster.nodes]
    if any(v != 0 for v in after):
        fail(f"under-replicated partitions reported after the roll: {after}")
    print(f"ok rolling restart of 3 brokers under acks=all load: {len(load.acked)} records acknowledged, "
          f"0 failed, no partition offline, the group read all of them", flush=True)


if __name__ == "__main__":
    main()
