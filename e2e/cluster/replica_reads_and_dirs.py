#!/usr/bin/env python3
"""Follower fetching (KIP-392) and log directories (AlterReplicaLogDirs, DescribeLogDirs),
with real librdkafka clients and Kafka's own tools (issue 14), checked from the outside.

    replica_reads_and_dirs.py BINARY

Three `oxbow` nodes on loopback, in racks rack-a/rack-b/rack-c, each with two log
directories (`log.dirs=node-N/d1,node-N/d2`).

1. Topic `reads` (2 partitions, replicas 1,2,3 and 2,3,1: leaders in rack-a and rack-b,
   min.insync.replicas=2) gets RECORDS idempotent acks=all records.
2. A consumer with `client.rack=rack-c` reads every partition from the start: broker 3 (a
   follower of both) serves all its record bytes, the leaders none (from each broker's
   oxbow_server_bytes_out_total{topic="reads"}). A consumer without a rack reads from the
   leaders only (broker 3 serves nothing). Both see exactly the acknowledged records.
3. While a producer writes, the rack-c consumer keeps reading; broker 3 is SIGKILLed: the
   consumer goes back to the leaders and still receives every acknowledged record. Broker
   3 restarts and rejoins the ISR.
4. `kafka-log-dirs --describe` lists every replica once, in one of its broker's two
   directories, with its size and offset lag 0.
5. `kafka-reassign-partitions --execute` with `log_dirs` moves broker 1's replica of
   `reads-0` to its other directory while the producer writes (AlterReplicaLogDirs), and
   moves topic `dirs` (replicas 1,2) to 1,3 with broker 3's new replica placed in
   node-3/d2 (a directory asked before the replica exists); `--verify` completes;
   `kafka-log-dirs` and the file system show the replicas where they were sent and the
   old directory emptied. A move to a directory that is not a log dir is refused
   (LogDirNotFoundException from the tool).
6. Broker 1 restarts on the moved data; every acknowledged record of both topics is read
   back exactly once at its offset, from the leaders and from each rack's replica.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from oxbow_cluster import Cluster, Network  # noqa: E402
from oxbow_e2e import fail, wait_for  # noqa: E402
from reassignment import kafka_tool  # noqa: E402

NODES = (1, 2, 3)
RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c"}
# Apart from the other suites' ports (49-reassignment uses 28192.., 46 29192..) and below the
# ephemeral range (32768-), where a client's outgoing connection could hold one first.
BASES = (30192, 30292, 30392)
RECORDS = 20000
LIVE_RECORDS = 6000
PADDING = "x" * 200


def log(message):
    print(message, flush=True)


def bytes_out(cluster, node, topic):
    """oxbow_server_bytes_out_total{topic=TOPIC} of one broker (record bytes to consumers)."""
    url = f"http://127.0.0.1:{cluster.metrics_port(node)}/metrics"
    with urllib.request.urlopen(url, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("oxbow_server_bytes_out_total{") and f'topic="{topic}"' in line:
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def states(cluster, topic, partitions):
    """{p: (leader, replicas, sorted isr)} from any node that answers, or None."""
    for node in NODES:
        answer = cluster.metadata(node)
        if answer is None:
            continue
        out = {}
        for p in range(partitions):
            state = answer["partitions"].get((topic, p))
            if state is None:
                break
            out[p] = (state["leader"], list(state["replicas"]), sorted(state["isr"]))
        else:
            return out
    return None


class Producer:
    """Idempotent acks=all writes of numbered values; every acknowledgement recorded as
    (topic, partition, offset) -> value."""

    def __init__(self, bootstrap):
        from confluent_kafka import Producer as Client
        self.client = Client({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                              "linger.ms": 5, "message.timeout.ms": 120000, "log_level": 2})
        self.acked = {}
        self.errors = []

    def send(self, topic, partition, value):
        def delivered(error, message):
            if error is not None:
                self.errors.append(str(error))
            else:
                self.acked[(message.topic(), message.partition(), message.offset())] = message.value()
        while True:
            try:
                self.client.produce(topic, value=value, partition=partition, on_delivery=delivered)
                break
            except BufferError:
                self.client.poll(0.1)
        self.client.poll(0)

    def flush(self):
        left = self.client.flush(120)
        if left:
            raise RuntimeError(f"{left} records not delivered in 120 s")


def consume(bootstrap, topic, partitions, until, rack=None, timeout=90):
    """Reads `topic` from the start until every offset below `until[p]` was seen; returns
    {(topic, p, offset): value}. A consumer with `rack` sets client.rack (KIP-392)."""
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    config = {"bootstrap.servers": bootstrap, "group.id": f"reader-{rack or 'leader'}-{time.time()}",
              "enable.auto.commit": False, "fetch.wait.max.ms": 100, "log_level": 2}
    if rack:
        config["client.rack"] = rack
    consumer = Consumer(config)
    seen = {}
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while any(len([k for k in seen if k[1] == p]) < until[p] for p in range(partitions)):
            if time.monotonic() > deadline:
                got = {p: len([k for k in seen if k[1] == p]) for p in range(partitions)}
                raise RuntimeError(f"{topic} read by rack={rack}: {got} of {until}")
            for message in consumer.consume(5000, timeout=0.5):
                if message.error():
                    continue
                key = (message.topic(), message.partition(), message.offset())
                if key in seen:
                    raise RuntimeError(f"{key} delivered twice to rack={rack}")
                seen[key] = message.value()
        return seen
    finally:
        consumer.close()


def expect_same(acked, seen, what):
    wanted = {k: v for k, v in acked.items() if k[0] == next(iter(seen))[0]} if seen else {}
    missing = [k for k in wanted if seen.get(k) != wanted[k]]
    extra = [k for k in seen if k not in wanted]
    if missing or extra:
        raise RuntimeError(f"{what}: {len(missing)} acknowledged records missing or different "
                           f"(e.g. {missing[:3]}), {len(extra)} unacknowledged (e.g. {extra[:3]})")


def describe_dirs(cluster, topics):
    """kafka-log-dirs --describe: {broker: {(topic, p): [(dir, size, lag, future)]}}."""
    out = kafka_tool("kafka-log-dirs", "--bootstrap-server", cluster.bootstrap, "--describe",
                     "--broker-list", ",".join(map(str, NODES)), "--topic-list", ",".join(topics)).stdout
    line = next(l for l in out.splitlines() if l.startswith("{"))
    found = {}
    for broker in json.loads(line)["brokers"]:
        replicas = found.setdefault(broker["broker"], {})
        for d in broker["logDirs"]:
            for p in d["partitions"]:
                topic, part = p["partition"].rsplit("-", 1)
                replicas.setdefault((topic, int(part)), []).append(
                    (d["logDir"], p["size"], p["offsetLag"], p["isFuture"]))
    return found


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp(prefix="oxbow-replica-dirs-")
    net = Network(use_netns=False)
    dirs = {n: [os.path.join(work, f"node-{n}", "d1"), os.path.join(work, f"node-{n}", "d2")] for n in NODES}
    cluster = Cluster(binary, work, net, cluster_id="replica-reads", nodes=NODES, bases=BASES,
                      extra=["replica.lag.time.max.ms=5000", "num.partitions=1"],
                      node_extra={n: [f"broker.rack={RACKS[n]}", f"log.dirs={','.join(dirs[n])}"] for n in NODES})
    try:
        run(cluster, dirs, work)
    except (RuntimeError, AssertionError) as error:
        cluster.logs_tail(40)
        log(f"work dir kept: {work}")
        cluster.shutdown_all()
        fail(str(error))
    cluster.shutdown_all()
    subprocess.run(["rm", "-rf", work])
    log("PASS follower fetching and log directories")


def run(cluster, dirs, work):
    for node in NODES:
        cluster.start(node)
    wait_for(lambda: all(cluster.ready(n) for n in NODES), 60, "three ready nodes")
    kafka_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", "reads",
               "--replica-assignment", "1:2:3,2:3:1", "--config", "min.insync.replicas=2")
    kafka_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", "dirs",
               "--replica-assignment", "1:2", "--config", "min.insync.replicas=1")
    wait_for(lambda: (s := states(cluster, "reads", 2)) and all(len(v[2]) == 3 for v in s.values()) and s,
             30, "reads with 3 in-sync replicas")
    producer = Producer(cluster.bootstrap)
    for i in range(RECORDS):
        producer.send("reads", i % 2, f"{i}:{PADDING}".encode())
        if i % 3 == 0:
            producer.send("dirs", 0, f"d{i}:{PADDING}".encode())
    producer.flush()
    if producer.errors:
        raise RuntimeError(f"produce errors: {producer.errors[:3]}")
    until = {p: len([k for k in producer.acked if k[:2] == ("reads", p)]) for p in range(2)}
    log(f"acked {len(producer.acked)} records; reads partitions {until}")
    # Followers must hold the high watermark before a rack reader is sent to them.
    wait_for(lambda: all(len(v[2]) == 3 for v in states(cluster, "reads", 2).values()), 30, "ISR of 3")

    # 2. Rack-aware reads.
    before = {n: bytes_out(cluster, n, "reads") for n in NODES}
    seen = consume(cluster.bootstrap, "reads", 2, until, rack="rack-c")
    after = {n: bytes_out(cluster, n, "reads") for n in NODES}
    served = {n: after[n] - before[n] for n in NODES}
    value_bytes = sum(len(v) for k, v in producer.acked.items() if k[0] == "reads")
    log(f"rack-c consumer: bytes served by broker {served} (record values {value_bytes} B)")
    expect_same(producer.acked, seen, "rack-c consumer")
    if served[3] < value_bytes or served[1] != 0 or served[2] != 0:
        raise RuntimeError(f"rack-c reads were not served by broker 3 alone: {served}")
    before = after
    seen = consume(cluster.bootstrap, "reads", 2, until)
    after = {n: bytes_out(cluster, n, "reads") for n in NODES}
    served = {n: after[n] - before[n] for n in NODES}
    log(f"rackless consumer: bytes served by broker {served}")
    expect_same(producer.acked, seen, "rackless consumer")
    if served[3] != 0 or served[1] + served[2] < value_bytes:
        raise RuntimeError(f"rackless reads did not come from the leaders: {served}")

    # 3. The rack's replica dies under a reading consumer.
    from confluent_kafka import Consumer, TopicPartition
    reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "live-rack-c",
                       "client.rack": "rack-c", "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                       "log_level": 2})
    reader.assign([TopicPartition("reads", p, until[p]) for p in range(2)])
    live = {}
    stop = threading.Event()

    def read_live():
        while not stop.is_set():
            for message in reader.consume(1000, timeout=0.2):
                if not message.error():
                    live[("reads", message.partition(), message.offset())] = message.value()

    thread = threading.Thread(target=read_live, daemon=True)
    thread.start()
    for i in range(RECORDS, RECORDS + LIVE_RECORDS):
        producer.send("reads", i % 2, f"{i}:{PADDING}".encode())
        if i == RECORDS + LIVE_RECORDS // 3:
            cluster.kill(3)
            log("SIGKILLed broker 3 (rack-c) under the rack-c consumer")
        time.sleep(0.001)
    producer.flush()
    wanted = {k: v for k, v in producer.acked.items() if k[0] == "reads" and k[2] >= until[k[1]]}
    try:
        wait_for(lambda: all(live.get(k) == v for k, v in wanted.items()), 60,
                 f"the rack-c consumer to read all {len(wanted)} records acked after broker 3 died")
    finally:
        stop.set()
        thread.join()
        reader.close()
    log(f"rack-c consumer read all {len(wanted)} live records across the loss of broker 3")
    cluster.start(3)
    wait_for(lambda: (s := states(cluster, "reads", 2)) and all(len(v[2]) == 3 for v in s.values()),
             60, "broker 3 back in the ISR")

    # 4. kafka-log-dirs.
    found = describe_dirs(cluster, ["reads", "dirs"])
    for node in NODES:
        for p in range(2):
            entries = found.get(node, {}).get(("reads", p), [])
            if len(entries) != 1 or entries[0][0] not in dirs[node] or entries[0][1] <= 0 or entries[0][3]:
                raise RuntimeError(f"kafka-log-dirs for broker {node} reads-{p}: {entries}")
    wait_for(lambda: all(e[2] == 0 for n in NODES for e in describe_dirs(cluster, ["reads"])[n][("reads", 0)]),
             30, "every replica's offset lag 0")
    log(f"kafka-log-dirs: {({n: {k: v[0][:2] for k, v in found[n].items()} for n in NODES})}")

    # 5. Moves between log directories (AlterReplicaLogDirs) under a writing producer.
    here = found[1][("reads", 0)][0][0]
    there = next(d for d in dirs[1] if os.path.abspath(d) != os.path.abspath(here))
    plan = {"version": 1, "partitions": [
        {"topic": "reads", "partition": 0, "replicas": [1, 2, 3], "log_dirs": [there, "any", "any"]},
        {"topic": "dirs", "partition": 0, "replicas": [1, 3], "log_dirs": ["any", dirs[3][1]]},
    ]}
    plan_file = os.path.join(work, "dirs-plan.json")
    with open(plan_file, "w") as f:
        json.dump(plan, f)
    writing = threading.Event()

    def write():
        i = RECORDS + LIVE_RECORDS
        while not writing.is_set():
            producer.send("reads", i % 2, f"{i}:{PADDING}".encode())
            producer.send("dirs", 0, f"d{i}:{PADDING}".encode())
            i += 1
            time.sleep(0.002)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    started = time.monotonic()
    out = kafka_tool("kafka-reassign-partitions", "--bootstrap-server", cluster.bootstrap, "--execute",
                     "--reassignment-json-file", plan_file).stdout
    log(out.strip().splitlines()[-1] if out.strip() else "(no output)")
    wait_for(lambda: "is still in progress" not in (v := kafka_tool(
        "kafka-reassign-partitions", "--bootstrap-server", cluster.bootstrap, "--verify",
        "--reassignment-json-file", plan_file, check=False)).stdout and v.returncode == 0 and v,
        120, "kafka-reassign-partitions --verify to report the moves done", interval=1)
    log(f"log-dir moves done in {time.monotonic() - started:.1f} s (verified by the tool)")
    writing.set()
    writer.join()
    producer.flush()
    if producer.errors:
        raise RuntimeError(f"produce errors during the moves: {producer.errors[:3]}")
    found = describe_dirs(cluster, ["reads", "dirs"])
    placed = found[1][("reads", 0)]
    if [e[0] for e in placed] != [os.path.abspath(there)] or placed[0][3]:
        raise RuntimeError(f"broker 1's reads-0 is not (only) in {there}: {placed}")
    if os.path.isdir(os.path.join(here, "reads-0")):
        raise RuntimeError(f"the old copy of reads-0 is still in {here}")
    placed = found.get(3, {}).get(("dirs", 0), [])
    if [e[0] for e in placed] != [os.path.abspath(dirs[3][1])]:
        raise RuntimeError(f"broker 3's new replica of dirs-0 is not in {dirs[3][1]}: {placed}")
    if ("dirs", 0) in found.get(2, {}):
        raise RuntimeError("broker 2 still holds dirs-0 after the reassignment")
    log(f"reads-0 on broker 1 now in {there}; dirs-0 on broker 3 in {dirs[3][1]}")
    bad = {"version": 1, "partitions": [
        {"topic": "reads", "partition": 1, "replicas": [2, 3, 1], "log_dirs": ["any", "any", "/no/such/log/dir"]}]}
    with open(plan_file, "w") as f:
        json.dump(bad, f)
    refused = kafka_tool("kafka-reassign-partitions", "--bootstrap-server", cluster.bootstrap, "--execute",
                         "--reassignment-json-file", plan_file, check=False)
    text = refused.stdout + refused.stderr
    if refused.returncode == 0 or "LogDirNotFound" not in text:
        raise RuntimeError(f"a move to a directory that is not a log dir was not refused: {text[-1500:]}")
    log("a move to /no/such/log/dir: refused with LogDirNotFoundException")

    # 6. Broker 1 restarts on the moved replica; everything acknowledged reads back.
    problems = cluster.terminate([1])
    if problems:
        raise RuntimeError("; ".join(problems))
    cluster.start(1)
    wait_for(lambda: (s := states(cluster, "reads", 2)) and all(len(v[2]) == 3 for v in s.values()),
             60, "broker 1 back in the ISR")
    marks = {p: 1 + max(k[2] for k in producer.acked if k[:2] == ("reads", p)) for p in range(2)}
    for rack in (None, "rack-a", "rack-b", "rack-c"):
        seen = consume(cluster.bootstrap, "reads", 2, marks, rack=rack)
        expect_same(producer.acked, seen, f"read-back (rack={rack})")
    dirs_mark = {0: 1 + max(k[2] for k in producer.acked if k[0] == "dirs")}
    expect_same(producer.acked, consume(cluster.bootstrap, "dirs", 1, dirs_mark), "dirs read-back")
    log(f"read back all {len(producer.acked)} acknowledged records, from the leaders and from each rack")


if __name__ == "__main__":
    main()
