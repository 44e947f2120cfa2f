#!/usr/bin/env python3
"""A rolling upgrade of a 3-broker Oxbow cluster from the previous release under acks=all
load, as an operator does it: SIGTERM one broker (controlled shutdown), wait until it has
exited, start it again as the new release, wait until it is ready and back in every ISR,
then the next; at the end, `kafka-features upgrade --release-version 4.0`.

The previous release is its own binary (PREVIOUS_BINARY: the release named in
e2e/upgrade/previous-release, built by e2e/lib/build-previous-release), so for the whole
roll two releases' nodes run side by side: Raft, registrations, forwarded commands and
replication between them go over the versioned inter-node protocol. Its nodes also run with
their levels capped (OXBOW_MAX_METADATA_VERSION=21, 3.9-IV0, which that release honours as
well): both releases run 4.0-IV3 at most, so the cap is what leaves a level for the roll to
finalize and shows a feature gated on it. The cluster starts at 3.9-IV0, where
group.version 0 keeps the consumer group protocol (KIP-848) off.

Meanwhile an idempotent acks=all producer (librdkafka) writes at a steady rate to an
RF=3, min.insync.replicas=2 topic, a consumer group reads it, a transactional producer
commits, and the partitions' leaders are watched through Metadata. After each node's
upgrade a new topic is created, a transaction commits and is read back by read_committed, a
partition is reassigned (Kafka's tool) and a second consumer joins a group (a rebalance
that splits the partitions); with the cluster mixed, the feature upgrade is refused (a node
still runs the previous release's levels); after the roll it finalizes metadata.version
4.0-IV3 and group.version 1 (before that, one node is rolled back to the previous release
and forward again: going back works until the levels are raised), and only then does
ConsumerGroupHeartbeat appear and a KIP-848 consumer read; a node of the previous release started on the upgraded cluster stops with
one line naming the level. Asserts: no produce failed, no partition was ever seen without a
leader, the group saw every acknowledged record, a read of the whole topic afterwards finds
each acknowledged record exactly once, the brokers reported under-replicated partitions
while a broker was away and none once it was back. Prints the roll's figures: time per node,
worst produce latency.

Without PREVIOUS_BINARY the previous release is this binary with the cap alone (what the
suite ran before a release with the versioned protocol existed).

    rolling_restart.py OXBOW_BINARY [PREVIOUS_BINARY]
"""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from history import read_back  # noqa: E402
from kafka_wire import api_keys  # noqa: E402
from load import Load  # noqa: E402
from oxbow_cluster import Cluster, Network  # noqa: E402
from oxbow_e2e import fail, http_get, wait_for  # noqa: E402

TOPIC = "rolling"
PARTITIONS = 6
RATE = 500  # records/s
# Clients on PORT..PORT+2, controllers 100 above, metrics 200 above: no other suite's ports
# (OXBOW_SUITE_PORT moves them).
PORT = int(os.environ.get("OXBOW_SUITE_PORT", "23792"))
PREVIOUS = {"OXBOW_MAX_METADATA_VERSION": "21"}
TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers", "kafka", "bin")
CONSUMER_GROUP_HEARTBEAT = 68


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


def tool(name, *args):
    """One of Kafka's tools: its exit code and output (stdout and stderr)."""
    result = subprocess.run([os.path.join(TOOLS, name), *args], capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout + result.stderr


def expect_tool(pattern, name, *args):
    code, output = tool(name, *args)
    if not re.search(pattern, output):
        fail(f"{name} {' '.join(args)}: expected /{pattern}/ in:\n{output[-1500:]}")
    return output


def listed_keys(host_port):
    """The API keys one broker lists in ApiVersions."""
    host, port = host_port.split(":")
    return api_keys(host, int(port))


def main():
    binary = sys.argv[1]
    previous = sys.argv[2] if len(sys.argv) > 2 else None
    work = tempfile.mkdtemp(prefix="oxbow-rolling-")
    cluster = Cluster(binary, work, Network(False), cluster_id="rolling-upgrade",
                      bases=(PORT, PORT + 100, PORT + 200),
                      extra=["offsets.topic.replication.factor=3", "group.initial.rebalance.delay.ms=0",
                             "transaction.state.log.replication.factor=3", "transaction.state.log.min.isr=2",
                             "transaction.state.log.num.partitions=3"])
    cluster.node_env = {node: dict(PREVIOUS) for node in cluster.nodes}
    if previous:
        cluster.node_binary = {node: previous for node in cluster.nodes}
        print(f"previous release: {release_of(previous)}; new: {release_of(binary)}", flush=True)
    with cluster.running():
        roll(cluster, work, previous)


def release_of(binary):
    """What `oxbow --version` says."""
    return subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()


def transaction(cluster, producer, step):
    """A transaction of three records, committed, and read back by read_committed."""
    producer.begin_transaction()
    values = [f"{step}-{n}" for n in range(3)]
    for value in values:
        producer.produce("ledger", value=value.encode())
    producer.commit_transaction(60)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"ledger-{uuid.uuid4().hex}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition("ledger", 0, 0)])
    seen = []
    deadline = time.time() + 60
    while not set(values) <= set(seen) and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            seen.append(message.value().decode())
    consumer.close()
    if not set(values) <= set(seen):
        fail(f"transaction {step}: read_committed saw {seen[-6:]}, not {values}")


MOVES = ([2, 3], [3, 1], [1, 2])


def reassign(cluster, work, step):
    """Moves partition 0 of `moving` (first on nodes 1,2) to the step's replicas with Kafka's
    tool and waits for it."""
    target = MOVES[step % len(MOVES)]
    plan = os.path.join(work, "reassign.json")
    with open(plan, "w") as f:
        json.dump({"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": target}]}, f)
    expect_tool("Successfully started partition reassignment", "kafka-reassign-partitions",
                "--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", plan, "--execute")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    wait_for(lambda: sorted(admin.list_topics("moving", timeout=5).topics["moving"].partitions[0].replicas)
             == sorted(target), 60, f"the reassignment to {target} to finish")


def rebalance(cluster, topic):
    """A consumer group rebalance: one member takes both partitions of `topic`, a second one
    joins, and the group splits them, one each."""
    group = f"rebalance-{topic}"
    assigned = {}

    def member(name):
        def on_assign(consumer, partitions):
            assigned[name] = sorted(p.partition for p in partitions)
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                             "heartbeat.interval.ms": 500, "session.timeout.ms": 10000})
        consumer.subscribe([topic], on_assign=on_assign)
        return consumer

    first = member("first")
    wait_for(lambda: first.poll(0.2) is None and assigned.get("first") == [0, 1], 60,
             f"the first member of {group} to take both partitions")
    second = member("second")

    def split():
        first.poll(0.1)
        second.poll(0.1)
        return sorted([*assigned.get("first", []), *assigned.get("second", [])]) == [0, 1] \
            and len(assigned.get("second", [])) == 1
    try:
        wait_for(split, 60, f"{group} to rebalance onto two members")
    finally:
        second.close()
        first.close()


def too_old(cluster, isr_full, previous):
    """A node of the previous release started on the upgraded cluster stops at once, with one
    line naming the level it cannot run; started as the new release again, it rejoins."""
    node = cluster.nodes[-1]
    problems = cluster.terminate([node])
    if problems:
        fail(f"controlled shutdown of node {node}: {problems}")
    log_path = os.path.join(cluster.work, f"node-{node}.log")
    with open(log_path, "rb") as f:
        before = len(f.read())
    cluster.node_env[node] = dict(PREVIOUS)
    cluster.start(node)
    wait_for(lambda: not cluster.alive(node), 60, f"node {node} of the previous release to stop")
    code = cluster.procs[node].returncode
    with open(log_path, "rb") as f:
        text = f.read()[before:].decode(errors="replace")
    line = "supports metadata.version 3.3-IV3 to 3.9-IV0, but the cluster finalized 4.0-IV3"
    if code == 0 or line not in text:
        fail(f"node {node} of the previous release on a 4.0-IV3 cluster: exit {code}, log:\n{text[-2000:]}")
    cluster.node_env.pop(node)
    cluster.node_binary.pop(node, None)
    cluster.start(node)
    wait_for(lambda: cluster.ready(node), 60, f"node {node} ready")
    wait_for(isr_full, 60, "every replica back in sync")
    print(f"ok a node of the previous release refused to start on the upgraded cluster (exit {code}: "
          f"'{line}'), and rejoined as the new release", flush=True)


def roll_back_one(cluster, isr_full, previous):
    """Before the levels are raised the roll can be undone: one node goes back to the
    previous release, rejoins every ISR under the load, and is rolled forward again."""
    node = cluster.nodes[0]
    for binary, env, release in ((previous, dict(PREVIOUS), "the previous release"), (None, None, "the new release")):
        problems = cluster.terminate([node])
        if problems:
            fail(f"controlled shutdown of node {node}: {problems}")
        if env is None:
            cluster.node_env.pop(node, None)
        else:
            cluster.node_env[node] = env
        if binary:
            cluster.node_binary[node] = binary
        else:
            cluster.node_binary.pop(node, None)
        cluster.start(node)
        wait_for(lambda: cluster.ready(node), 60, f"node {node} ready as {release}")
        wait_for(isr_full, 60, f"every replica in sync with node {node} on {release}")
    print(f"ok before the levels were raised, node-{node} went back to the previous release, "
          f"rejoined every ISR, and was rolled forward again", flush=True)


def roll(cluster, work, previous):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"}),
                                       NewTopic("ledger", 1, 3),
                                       NewTopic("moving", 1, replica_assignment=[[1, 2]])]).values():
        future.result()

    def isr_full():
        topics = admin.list_topics(timeout=5).topics
        return all(len(p.isrs) == len(p.replicas) and p.leader >= 0
                   for name in (TOPIC, "ledger", "moving") for p in topics[name].partitions.values())

    wait_for(isr_full, 90, "every replica in sync")
    features = ("kafka-features", "--bootstrap-server", cluster.bootstrap)
    expect_tool(r"Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 3.9-IV0\t"
                r"FinalizedVersionLevel: 3.9-IV0", *features, "describe")
    if CONSUMER_GROUP_HEARTBEAT in listed_keys(cluster.bootstrap.split(",")[0]):
        fail("ConsumerGroupHeartbeat listed at group.version 0")
    print("ok the previous release's cluster runs at metadata.version 3.9-IV0, group.version 0", flush=True)
    offline = []
    load = Load(cluster.bootstrap, TOPIC, "rolling-readers", RATE, side=[watch_leaders(offline)])
    load.start()
    txn = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": "rolling-ledger"})
    txn.init_transactions(60)
    time.sleep(3)
    under_replicated_seen = False
    per_node = []
    for step, node in enumerate(cluster.nodes):
        started = time.time()
        problems = cluster.terminate([node])
        if problems:
            fail(f"controlled shutdown of node {node}: {problems}")
        stopped = time.time() - started
        others = [n for n in cluster.nodes if n != node]
        under = [metric(cluster, n, "oxbow_replication_under_replicated_partitions") or 0 for n in others]
        under_replicated_seen |= sum(under) > 0
        cluster.node_env.pop(node, None)
        cluster.node_binary.pop(node, None)
        cluster.start(node)
        wait_for(lambda: cluster.ready(node), 60, f"node {node} ready")
        wait_for(isr_full, 60, "every replica back in sync")
        back = time.time() - started
        per_node.append(back)
        admin.create_topics([NewTopic(f"after-{node}", 2, 3)])[f"after-{node}"].result()
        transaction(cluster, txn, step)
        reassign(cluster, work, step)
        rebalance(cluster, f"after-{node}")
        mixed = step < len(cluster.nodes) - 1
        if mixed:
            expect_tool(r"only supports versions 7-21", *features, "upgrade", "--release-version", "4.0")
        print(f"ok node-{node} upgraded: stopped in {stopped:.2f} s (controlled shutdown), "
              f"under-replicated partitions reported meanwhile {under}, back in every ISR "
              f"{back:.1f} s after SIGTERM; a topic created, a transaction committed, a partition "
              f"reassigned to {MOVES[step % len(MOVES)]}, a group rebalanced"
              f"{', the feature upgrade refused (mixed releases)' if mixed else ''}",
              flush=True)
        time.sleep(2)
    roll_back_one(cluster, isr_full, previous)
    expect_tool(r"metadata.version was upgraded to 25\.", *features, "upgrade", "--release-version", "4.0")
    output = expect_tool(r"Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.0-IV3\t"
                         r"FinalizedVersionLevel: 4.0-IV3", *features, "describe")
    if not re.search(r"Feature: group.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\t"
                     r"FinalizedVersionLevel: 1", output):
        fail(f"group.version not finalized at 1:\n{output}")
    wait_for(lambda: CONSUMER_GROUP_HEARTBEAT in listed_keys(cluster.bootstrap.split(",")[0]), 15,
             "ConsumerGroupHeartbeat to be listed")
    kip848 = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "kip848-after-upgrade",
                       "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    kip848.subscribe([TOPIC])
    got = 0
    deadline = time.time() + 60
    while got < 100 and time.time() < deadline:
        message = kip848.poll(0.5)
        if message is not None and not message.error():
            got += 1
    kip848.close()
    if got < 100:
        fail(f"the KIP-848 consumer read {got} records after group.version 1")
    print("ok features upgraded to 4.0 once every node ran the new release: metadata.version 4.0-IV3, "
          "group.version 1, and a KIP-848 consumer reads", flush=True)
    too_old(cluster, isr_full, previous)
    time.sleep(2)
    if not load.finish():
        fail(f"the group did not read {len(load.acked - load.seen)} acknowledged records within 60 s")
    if load.failed:
        fail(f"{len(load.failed)} produce(s) failed during the rolling upgrade: {load.failed[:3]}")
    if offline:
        fail(f"partitions without a leader during the rolling upgrade: {offline[:5]}")
    if not under_replicated_seen:
        fail("no broker reported under-replicated partitions while one broker was away")
    after = [metric(cluster, n, "oxbow_replication_under_replicated_partitions") for n in cluster.nodes]
    if any(v != 0 for v in after):
        fail(f"under-replicated partitions reported after the roll: {after}")
    read_back_once(cluster, load.acked)
    print(f"ok rolling upgrade of 3 brokers under acks=all load: {len(load.acked)} records acknowledged, "
          f"0 failed (worst produce latency {load.worst_latency * 1000:.0f} ms), no partition offline, "
          f"the group read all of them, the topic holds each exactly once; per node (SIGTERM to back in "
          f"every ISR): {', '.join(f'{t:.1f} s' for t in per_node)}", flush=True)


def read_back_once(cluster, acked):
    """Reads the whole topic from its start to the high watermarks (history.read_back):
    every acknowledged record is there exactly once (the producer is idempotent: a retry
    across a broker's restart must not write it twice)."""
    try:
        partitions = read_back(cluster.bootstrap, TOPIC, PARTITIONS, deadline_s=120)
    except RuntimeError as error:
        fail(f"reading the topic back: {error}")
    counts = collections.Counter(value.decode() for _, _, values in partitions.values() for value in values)
    missing = [v for v in acked if counts[v] == 0]
    twice = {v: n for v, n in counts.items() if n > 1}
    if missing or twice:
        fail(f"read back: {len(missing)} acknowledged records missing ({missing[:3]}), "
             f"{len(twice)} written more than once ({list(twice.items())[:3]})")


if __name__ == "__main__":
    main()
