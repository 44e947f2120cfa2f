"""An offline upgrade from the release before the versioned formats (issue 53, point 5).

`write BINARY TARBALL` runs a 3-node cluster of that release (its binary), fills it and
stops it cleanly, then packs the three data directories and what was acknowledged into
TARBALL. It was run once with the binary of commit 8936395 (stop 59, the last release whose
metadata log, snapshots and RPC are JSON); the tarball is committed as
e2e/upgrade/fixtures/previous-release.tar.gz.

`check BINARY TARBALL` unpacks it and starts this tree's binary on those directories, with
the same controller ports (the quorum's membership names them) and a SASL listener added,
and checks that everything is there:
- each node converted its JSON metadata log and finalized the feature levels once;
- topics, partition counts, replication factors and topic configs;
- every acknowledged record of the idempotent producer, at its offset, in order;
- the group's committed offsets;
- the SCRAM user authenticates over SASL_PLAINTEXT, and its ACL (READ on `orders`) is
  enforced: it reads `orders`, is refused writing to it;
- the client quota on the user;
- the committed transaction is visible to read_committed, the one left open is aborted by
  the coordinator (its records never visible), the transaction log loaded;
- a node speaking that release's JSON protocol between nodes is turned away from a
  controller port with a line saying so (that upgrade is offline), and the node serves on;
  a message of a newer release is answered as unsupported on a connection that stays open;
- after a restart of every node on the converted directories, the same.

Usage: from_previous.py write|check BINARY TARBALL
"""

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tarfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "security"))
from oxbow_e2e import Broker, free_port, wait_for  # noqa: E402
from common import fail, log, tool, work_dir  # noqa: E402

from confluent_kafka import (  # noqa: E402
    ConsumerGroupTopicPartitions, Consumer, KafkaException, Producer, TopicPartition,
)
from confluent_kafka.admin import (  # noqa: E402
    AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient, ConfigResource, NewTopic,
    ResourcePatternType, ResourceType, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion,
)

# The quorum's membership in the metadata log names these: the check must use them again.
# Fixed suite ports, outside e2e/lib/ports.py's block.
CONTROLLER_PORTS = {1: 25492, 2: 25493, 3: 25494}
STATIC = [
    "process.roles=broker,controller",
    "offsets.topic.num.partitions=3",
    "transaction.state.log.num.partitions=3",
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users=User:ANONYMOUS",
]
RECORDS = 300
COMMITTED_TXN = 5
OPEN_TXN = 3


def voters():
    return ",".join(f"{i}@127.0.0.1:{port}" for i, port in CONTROLLER_PORTS.items())


def nodes(binary, root, cluster_id, extra=()):
    """The three nodes, data under root/node-N, each a broker and a controller voter."""
    return {
        i: Broker(binary, workdir=os.path.join(root, f"node-{i}"), overrides=[
            *STATIC, f"node.id={i}", f"controller.quorum.voters={voters()}", f"cluster.id={cluster_id}",
            *extra,
        ])
        for i in CONTROLLER_PORTS
    }


def listeners(broker, i, sasl_port=None):
    value = f"listeners=PLAINTEXT://127.0.0.1:{broker.port},CONTROLLER://127.0.0.1:{CONTROLLER_PORTS[i]}"
    if sasl_port:
        value += f",SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
    return value


def start_all(cluster, sasl_ports=None):
    for i, broker in cluster.items():
        broker.launch(listeners(broker, i, (sasl_ports or {}).get(i)))
    for broker in cluster.values():
        wait_for(lambda b=broker: b.running() and ready(b), 90, f"node {broker.workdir} to be ready")


def ready(broker):
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/readyz", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def bootstrap(cluster):
    return ",".join(b.bootstrap for b in cluster.values())


def result(future):
    return future.result(timeout=60)


def write(binary, tarball):
    work = work_dir("oxbow-upgrade-write-")
    cluster_id = uuid.uuid4().hex
    cluster = nodes(binary, os.path.join(work, "cluster"), cluster_id)
    try:
        fill(cluster, cluster_id, work)
    finally:
        for broker in cluster.values():
            broker.kill()
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(os.path.join(work, "cluster"), arcname="cluster")
    shutil.rmtree(work)
    log(f"wrote {tarball} ({os.path.getsize(tarball)} bytes)")


def fill(cluster, cluster_id, work):
    start_all(cluster)
    servers = bootstrap(cluster)
    admin = AdminClient({"bootstrap.servers": servers})
    for future in admin.create_topics([
        NewTopic("orders", 3, 3),
        NewTopic("profiles", 1, 3, config={"cleanup.policy": "compact", "retention.ms": "86400000"}),
        NewTopic("ledger", 1, 3),
    ]).values():
        result(future)
    acked = {}

    def delivered(error, message):
        if error is None:
            acked.setdefault(message.partition(), []).append((message.offset(), message.value().decode()))

    producer = Producer({"bootstrap.servers": servers, "enable.idempotence": True, "acks": "all"})
    for n in range(RECORDS):
        producer.produce("orders", key=f"k{n % 17}", value=f"order-{n}", callback=delivered)
    producer.flush(60)
    if sum(len(v) for v in acked.values()) != RECORDS:
        fail(f"only {sum(len(v) for v in acked.values())} of {RECORDS} records acknowledged")
    consumer = Consumer({"bootstrap.servers": servers, "group.id": "billing", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe(["orders"])
    seen = 0
    deadline = time.time() + 60
    while seen < RECORDS // 2 and time.time() < deadline:
        message = consumer.poll(1)
        if message is not None and not message.error():
            seen += 1
    consumer.commit(asynchronous=False)
    committed = {tp.partition: tp.offset for tp in consumer.committed(
        [TopicPartition("orders", p) for p in range(3)], timeout=30)}
    consumer.close()
    result(admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"alice-secret")])["alice"])
    for future in admin.create_acls([AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL,
                                                "User:alice", "*", AclOperation.READ,
                                                AclPermissionType.ALLOW)]).values():
        result(future)
    tool("kafka-configs", "--bootstrap-server", servers, "--alter", "--entity-type", "users",
         "--entity-name", "alice", "--add-config", "producer_byte_rate=1048576")
    txn = Producer({"bootstrap.servers": servers, "transactional.id": "ledger-writer",
                    "transaction.timeout.ms": 10000})
    txn.init_transactions(30)
    txn.begin_transaction()
    for n in range(COMMITTED_TXN):
        txn.produce("ledger", value=f"committed-{n}")
    txn.commit_transaction(30)
    txn.begin_transaction()
    for n in range(OPEN_TXN):
        txn.produce("ledger", value=f"open-{n}")
    txn.flush(30)
    # Left open: the nodes stop with it ongoing.
    for broker in cluster.values():
        broker.stop()
    expected = {"cluster_id": cluster_id, "acked": acked, "committed": committed}
    with open(os.path.join(work, "cluster", "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
    for i in CONTROLLER_PORTS:
        os.remove(os.path.join(work, "cluster", f"node-{i}", "oxbow.log"))


def check_all(cluster, expected, sasl, first_start):
    servers = bootstrap(cluster)
    admin = AdminClient({"bootstrap.servers": servers})
    if first_start:
        for i, broker in cluster.items():
            with open(broker.log_path) as f:
                text = f.read()
            if "Converted the metadata log of a release before the versioned format" not in text:
                fail(f"node {i} did not convert its JSON metadata log", broker)
        for i, broker in cluster.items():
            names = set(os.listdir(os.path.join(broker.data, "__oxbow_metadata")))
            if not {"metadata-log", "vote", "log-state", "raft-log.before-format-1"} <= names or \
                    names & {"raft-log", "vote.json", "log-state.json"}:
                fail(f"node {i}'s metadata directory after the upgrade: {sorted(names)}", broker)
        if not any("The metadata log has no feature levels" in open(b.log_path).read() for b in cluster.values()):
            fail("no controller finalized the feature levels of the previous release's log")
    topics = admin.list_topics(timeout=30).topics
    for name, partitions in (("orders", 3), ("profiles", 1), ("ledger", 1)):
        if name not in topics or len(topics[name].partitions) != partitions:
            fail(f"topic {name} with {partitions} partition(s) missing: {sorted(topics)}")
        replicas = {len(p.replicas) for p in topics[name].partitions.values()}
        if replicas != {3}:
            fail(f"{name}: replication factors {replicas}")
    resource = ConfigResource(ConfigResource.Type.TOPIC, "profiles")
    configs = result(admin.describe_configs([resource])[resource])
    if configs["cleanup.policy"].value != "compact" or configs["retention.ms"].value != "86400000":
        fail(f"profiles' configs: {configs['cleanup.policy'].value}, {configs['retention.ms'].value}")
    # Every acknowledged record at its offset.
    consumer = Consumer({"bootstrap.servers": servers, "group.id": f"reader-{uuid.uuid4().hex}",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    for partition, records in expected["acked"].items():
        got = read_partition(consumer, "orders", int(partition), len(records))
        if got != [tuple(r) for r in records]:
            missing = set(map(tuple, records)) - set(got)
            fail(f"orders-{partition}: {len(got)} read, {len(missing)} acknowledged record(s) missing or moved")
    consumer.close()
    committed = result(admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("billing")])["billing"])
    offsets = {tp.partition: tp.offset for tp in committed.topic_partitions if tp.topic == "orders"}
    # (-1001: the group had committed nothing there.)
    if offsets != {int(p): o for p, o in expected["committed"].items() if o >= 0}:
        fail(f"group billing's offsets {offsets}, expected {expected['committed']}")
    credentials = result(admin.describe_user_scram_credentials(["alice"])["alice"])
    if [c.mechanism for c in credentials.scram_credential_infos] != [ScramMechanism.SCRAM_SHA_256]:
        fail(f"alice's credentials: {credentials}")
    acls = result(admin.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None,
                                                       None, AclOperation.ANY, AclPermissionType.ANY)))
    if [(a.name, a.principal, a.operation) for a in acls] != [("orders", "User:alice", AclOperation.READ)]:
        fail(f"ACLs: {acls}")
    quota = tool("kafka-configs", "--bootstrap-server", servers, "--describe", "--entity-type", "users",
                 "--entity-name", "alice").stdout
    if "producer_byte_rate=1048576.0" not in quota:
        fail(f"alice's quota: {quota}")
    # alice over SASL: her ACL lets her read orders, not write to it.
    alice = {"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
             "sasl.username": "alice", "sasl.password": "alice-secret"}
    reader = Consumer({**alice, "group.id": f"alice-{uuid.uuid4().hex}", "enable.auto.commit": False})
    first = read_partition(reader, "orders", 0, 1)
    reader.close()
    if first != [tuple(expected["acked"]["0"][0])]:
        fail(f"alice read {first} from orders-0")
    writer = Producer({**alice, "acks": "all", "message.timeout.ms": 10000})
    errors = []
    writer.produce("orders", value=b"denied", callback=lambda e, m: errors.append(e))
    writer.flush(20)
    if not errors or errors[0] is None or "AUTHORIZATION" not in errors[0].name():
        fail(f"alice's write to orders: {errors}")
    # The transactions: the committed one visible, the open one aborted by its timeout.
    ledger = Consumer({"bootstrap.servers": servers, "group.id": f"ledger-{uuid.uuid4().hex}",
                       "enable.auto.commit": False, "isolation.level": "read_committed"})
    wait_for(lambda: stable_end(ledger) > COMMITTED_TXN + 1, 60, "the open transaction to be aborted")
    values = [v for _, v in read_partition(ledger, "ledger", 0, COMMITTED_TXN, settle=2.0)]
    ledger.close()
    if values != [f"committed-{n}" for n in range(COMMITTED_TXN)]:
        fail(f"read_committed ledger: {values}")


def stable_end(consumer):
    _, high = consumer.get_watermark_offsets(TopicPartition("ledger", 0), timeout=10, cached=False)
    return high


def read_partition(consumer, topic, partition, count, settle=0.0):
    """(offset, value) of the first `count` records of one partition from its start, and any
    more that arrive within `settle` seconds after them."""
    consumer.assign([TopicPartition(topic, partition, 0)])
    got = []
    deadline = time.time() + 60
    quiet_until = None
    while time.time() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            if len(got) >= count and (quiet_until is None or time.time() >= quiet_until):
                break
            continue
        if message.error():
            if message.error().fatal():
                raise KafkaException(message.error())
            continue
        got.append((message.offset(), message.value().decode()))
        if len(got) >= count:
            quiet_until = time.time() + settle
            if not settle:
                break
    consumer.unassign()
    return got


def previous_protocol_refused(cluster, cluster_id):
    """A node of the previous release (JSON frames between nodes) is turned away with a
    line saying why, and the node goes on serving."""
    broker = cluster[1]
    body = json.dumps({"cluster_id": cluster_id, "from_node": 3, "body": "DescribeQuorum"}).encode()
    frame = struct.pack(">I", len(body) + 1) + b"\x01" + body
    with socket.create_connection(("127.0.0.1", CONTROLLER_PORTS[1]), timeout=5) as conn:
        conn.sendall(frame)
        try:
            answer = conn.recv(1024)
        except ConnectionResetError:
            answer = b""
    if answer:
        raise AssertionError(f"a JSON frame of the previous release was answered: {answer!r}")
    deadline = time.time() + 5
    while "the peer speaks the JSON protocol of an Oxbow release before 0.2" not in open(broker.log_path).read():
        if time.time() > deadline:
            raise AssertionError("no line names the previous release's JSON protocol")
        time.sleep(0.1)
    log("ok   a node speaking the previous release's JSON protocol is turned away, with a line saying so")
    # A message this release does not know (a newer release's): answered as unsupported,
    # naming it, on a connection that stays open for the next request.
    header = struct.pack(">BHHi", 2, 900, 0, 3) + b"\x00" + b"\x00"  # no cluster id, no tags
    with socket.create_connection(("127.0.0.1", CONTROLLER_PORTS[1]), timeout=5) as conn:
        for _ in range(2):
            conn.sendall(struct.pack(">I", len(header)) + header)
            length = struct.unpack(">I", recv_exactly(conn, 4))[0]
            answer = recv_exactly(conn, length)
            fmt, key, version, outcome = struct.unpack(">BHHB", answer[:6])
            if (fmt, key, version, outcome) != (2, 900, 0, 3) or b"message 900 is not one this node knows" not in answer:
                raise AssertionError(f"an unknown message was answered {answer!r}")
    log("ok   a message of a newer release is answered as unsupported, and the connection goes on")


def recv_exactly(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise AssertionError(f"the connection closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def check(binary, tarball):
    work = work_dir("oxbow-upgrade-check-")
    with tarfile.open(tarball) as tar:
        tar.extractall(work, filter="data")
    root = os.path.join(work, "cluster")
    with open(os.path.join(root, "expected.json")) as f:
        expected = json.load(f)
    sasl_ports = {i: free_port() for i in CONTROLLER_PORTS}
    cluster = nodes(binary, root, expected["cluster_id"], extra=[
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name=PLAINTEXT",
        "sasl.enabled.mechanisms=SCRAM-SHA-256",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
    ])
    sasl = ",".join(f"127.0.0.1:{port}" for port in sasl_ports.values())
    try:
        start_all(cluster, sasl_ports)
        check_all(cluster, expected, sasl, first_start=True)
        log("ok   the previous release's data is all there under this release")
        previous_protocol_refused(cluster, expected["cluster_id"])
        for broker in cluster.values():
            broker.stop()
        start_all(cluster, sasl_ports)
        check_all(cluster, expected, sasl, first_start=False)
        log("ok   and again after a restart on the converted directories")
        for broker in cluster.values():
            broker.stop()
    except (AssertionError, KafkaException) as error:
        fail(str(error), next(iter(cluster.values())))
    finally:
        for broker in cluster.values():
            broker.kill()
    shutil.rmtree(work)


def main():
    mode, binary, tarball = sys.argv[1:4]
    {"write": write, "check": check}[mode](binary, tarball)


if __name__ == "__main__":
    main()
