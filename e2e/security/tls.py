"""TLS listeners with real clients (issue 33, point 1).

One broker with a PLAINTEXT and an SSL listener, key and trust stores as PEM files made
with `openssl` (a CA, the broker's certificate for 127.0.0.1, client certificates from
that CA and from a CA the broker does not trust), `ssl.client.auth=required`:

- librdkafka (confluent-kafka, OpenSSL), kafka-python (Python's ssl) and Kafka's own Java
  tools produce and consume over TLS with a client certificate; every record comes back
  byte for byte, small and 200 KB values, gzip and none (record bytes cross TLS by copy,
  not sendfile);
- refused: a client without a certificate, one whose CA is not trusted, plaintext bytes
  on the TLS port (no Kafka answer comes back in clear); the broker counts each in
  oxbow_server_tls_handshake_failures_total and stays up;
- the client certificate's subject becomes the principal by ssl.principal.mapping.rules;
- the key store rotated in place under a producer: new connections get the new
  certificate within the 5 s re-read, the open connection carries on, no delivery fails;
- three brokers whose only client and inter-broker listener is SSL with mTLS required:
  followers fetch from leaders over TLS with the broker's own certificate, an acks=all
  producer runs through a SIGKILL of a leader, every acknowledged record reads back once
  and every ISR is whole again (the restarted broker caught up over TLS).

Usage: tls.py BROKER_BINARY
"""

import os
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from oxbow_e2e import Broker, free_port, wait_for  # noqa: E402
from common import KAFKA_BIN, fail, log, work_dir  # noqa: E402
from oxbow_cluster import Cluster, Network, NODES  # noqa: E402
from certs import broker_store, concat, issue, make_ca  # noqa: E402

# Kafka's perf tools move this many 1 KiB records over TLS: fetch responses of megabytes.
BULK_RECORDS = 150_000
RULES = "RULE:^CN=([^,]*),OU=apps,O=Example$/$1/,DEFAULT"


def api_versions_request():
    body = struct.pack(">hhih", 18, 0, 7, 4) + b"probe"
    return struct.pack(">i", len(body)) + body


def tls_context(ca, client=None):
    context = ssl.create_default_context(cafile=ca)
    if client is not None:
        context.load_cert_chain(client[1], client[0])
    return context


def api_versions_over_tls(port, context):
    """An ApiVersions round trip over TLS: the response's correlation id, or the error."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(api_versions_request())
                header = tls.recv(8)
                if len(header) < 8:
                    return "closed"
                return struct.unpack(">ii", header)[1]
    except (ssl.SSLError, OSError) as error:
        return f"{type(error).__name__}: {error}"


def server_subject(port, ca):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with tls_context(ca).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            subject = dict(item[0] for item in tls.getpeercert()["subject"])
            return subject.get("commonName")


def librdkafka_config(bootstrap, ca, client):
    return {"bootstrap.servers": bootstrap, "security.protocol": "SSL", "ssl.ca.location": ca,
            "ssl.certificate.location": client[1], "ssl.key.location": client[0], "log_level": 2}


def roundtrip_librdkafka(bootstrap, ca, client, topic):
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient(librdkafka_config(bootstrap, ca, client))
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(30)
    sent = {}
    for codec in ("none", "gzip"):
        producer = Producer({**librdkafka_config(bootstrap, ca, client), "acks": "all",
                             "compression.type": codec, "linger.ms": 5})
        for i in range(400):
            size = 200_000 if i % 50 == 0 else 10 + (i * 37) % 3000
            value = (f"{codec}-{i}-".encode() + os.urandom(size // 2).hex().encode())[:size]
            key = f"{codec}-{i}".encode()
            sent[key] = value
            while True:
                try:
                    producer.produce(topic, key=key, value=value)
                    break
                except BufferError:
                    producer.poll(0.1)
        if producer.flush(60) != 0:
            fail(f"librdkafka over TLS: {codec} records not delivered")
    consumer = Consumer({**librdkafka_config(bootstrap, ca, client), "group.id": "tls-readers",
                         "auto.offset.reset": "earliest", "fetch.max.bytes": 1 << 20})
    consumer.subscribe([topic])
    got = {}
    deadline = time.time() + 90
    while len(got) < len(sent) and time.time() < deadline:
        for message in consumer.consume(500, timeout=1):
            if message.error():
                fail(f"librdkafka consumer over TLS: {message.error()}")
            got[message.key()] = message.value()
    consumer.close()
    wrong = [k for k in sent if got.get(k) != sent[k]]
    if wrong:
        fail(f"librdkafka over TLS: {len(wrong)} of {len(sent)} records missing or changed, e.g. {wrong[:3]}")
    return len(sent), sum(len(v) for v in sent.values())


def roundtrip_kafka_python(bootstrap, ca, client, topic):
    from kafka import KafkaConsumer, KafkaProducer
    settings = {"bootstrap_servers": bootstrap, "security_protocol": "SSL", "ssl_cafile": ca,
                "ssl_certfile": client[1], "ssl_keyfile": client[0]}
    producer = KafkaProducer(acks="all", **settings)
    values = [f"kafka-python-{i}".encode() * (1 + i % 40) for i in range(300)]
    for value in values:
        producer.send(topic, value=value)
    producer.flush(60)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=10_000,
                             group_id=None, **settings)
    got = [m.value for m in consumer if m.value.startswith(b"kafka-python-")]
    consumer.close()
    if sorted(got) != sorted(values):
        fail(f"kafka-python over TLS: read {len(got)} of {len(values)} records back")
    return len(values)


def java_tools(bootstrap, ca, client, work, topic, python_topic, big_records):
    keystore = concat(os.path.join(work, "java-client.pem"), client[0], client[1])
    properties = os.path.join(work, "java-ssl.properties")
    with open(properties, "w") as f:
        f.write("security.protocol=SSL\nssl.truststore.type=PEM\n"
                f"ssl.truststore.location={ca}\nssl.keystore.type=PEM\nssl.keystore.location={keystore}\n")
    described = subprocess.run([os.path.join(KAFKA_BIN, "kafka-topics"), "--bootstrap-server", bootstrap,
                                "--command-config", properties, "--describe", "--topic", topic],
                               capture_output=True, text=True, timeout=120)
    if described.returncode != 0 or "PartitionCount: 3" not in described.stdout:
        fail(f"kafka-topics over TLS: {described.stdout[-800:]} {described.stderr[-800:]}")
    consumed = subprocess.run([os.path.join(KAFKA_BIN, "kafka-console-consumer"), "--bootstrap-server", bootstrap,
                               "--consumer.config", properties, "--topic", python_topic, "--from-beginning",
                               "--max-messages", "300", "--timeout-ms", "30000"],
                              capture_output=True, text=True, timeout=120)
    lines = [line for line in consumed.stdout.splitlines() if line.startswith("kafka-python-")]
    if len(lines) != 300:
        fail(f"kafka-console-consumer over TLS read {len(lines)} of 300: {consumed.stderr[-800:]}")
    # Megabytes in fetch responses of up to a megabyte each: the Java consumer waits for one
    # before it sends the next, so a response whose end stays in the TLS buffer stalls it.
    big = subprocess.run([os.path.join(KAFKA_BIN, "kafka-console-consumer"), "--bootstrap-server", bootstrap,
                          "--consumer.config", properties, "--topic", topic, "--from-beginning",
                          "--max-messages", str(big_records), "--timeout-ms", "20000",
                          "--property", "print.value=false", "--property", "print.offset=true"],
                         capture_output=True, text=True, timeout=120)
    offsets = [line for line in big.stdout.splitlines() if line.startswith("Offset:")]
    perf = os.path.join(work, "java-perf.properties")
    with open(properties) as f, open(perf, "w") as out:
        out.write(f.read() + f"bootstrap.servers={bootstrap}\n")
    produced = subprocess.run([os.path.join(KAFKA_BIN, "kafka-producer-perf-test"), "--topic", "tls-bulk",
                               "--num-records", str(BULK_RECORDS), "--record-size", "1024", "--throughput", "-1",
                               "--producer.config", perf, "--producer-props", "acks=1", "linger.ms=5",
                               "batch.size=262144"], capture_output=True, text=True, timeout=300)
    if produced.returncode != 0 or f"{BULK_RECORDS} records sent" not in produced.stdout:
        fail(f"kafka-producer-perf-test over TLS: {produced.stdout[-600:]} {produced.stderr[-600:]}")
    bulk = subprocess.run([os.path.join(KAFKA_BIN, "kafka-consumer-perf-test"), "--bootstrap-server", bootstrap,
                           "--consumer.config", perf, "--topic", "tls-bulk", "--messages", str(BULK_RECORDS),
                           "--timeout", "20000"], capture_output=True, text=True, timeout=300)
    row = bulk.stdout.strip().splitlines()[-1].split(", ") if bulk.stdout.strip() else []
    if len(row) < 5 or int(row[4]) != BULK_RECORDS:
        fail(f"kafka-consumer-perf-test over TLS did not read {BULK_RECORDS} records: {bulk.stdout[-600:]} "
             f"{bulk.stderr[-600:]}")
    if len(offsets) != big_records:
        fail(f"kafka-console-consumer over TLS read {len(offsets)} of {big_records} records of {topic} "
             f"(up to 200 KB each): {big.stderr[-800:]}")


class Writer(threading.Thread):
    """A librdkafka producer writing all along over one TLS connection per broker."""

    def __init__(self, bootstrap, ca, client, topic):
        super().__init__(daemon=True)
        from confluent_kafka import Producer
        self.producer = Producer({**librdkafka_config(bootstrap, ca, client), "acks": "all",
                                  "linger.ms": 5, "message.timeout.ms": 30000})
        self.topic = topic
        self.stop = threading.Event()
        self.acked = 0
        self.failed = []

    def run(self):
        def delivered(error, _message):
            if error is None:
                self.acked += 1
            else:
                self.failed.append(str(error))
        i = 0
        while not self.stop.is_set():
            self.producer.produce(self.topic, value=f"rotation-{i}".encode(), on_delivery=delivered)
            self.producer.poll(0.005)
            i += 1
        self.producer.flush(30)


def controller_refusals(port, ca, client, stranger):
    """What the SSL controller port does with a plaintext frame, no certificate, a
    certificate from another CA, and the cluster's own: (answers, handshakes) by case."""
    outcome = {}
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(struct.pack(">I", 3) + b"\x01{}")
        try:
            outcome["plaintext"] = raw.recv(64)
        except (ConnectionResetError, socket.timeout):
            outcome["plaintext"] = b""
    for name, identity in (("no certificate", None), ("another CA", stranger), ("the cluster's CA", client)):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                with tls_context(ca, identity).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                    # TLS 1.3 reports a refused client certificate on the first read.
                    tls.sendall(struct.pack(">I", 3) + b"\x01{}")
                    tls.recv(64)
                    outcome[name] = "accepted"
        except (ssl.SSLError, OSError) as error:
            outcome[name] = type(error).__name__
    return outcome


def tls_only_cluster(binary, work, ca, client, stranger):
    """Three nodes, SSL the only client, inter-broker and controller listener, mTLS required."""
    store = broker_store(work, "cluster-broker", ca, "oxbow-broker", usage="serverAuth,clientAuth")
    network = Network(False)
    os.makedirs(os.path.join(work, "cluster"), exist_ok=True)
    probe = Cluster(binary, os.path.join(work, "cluster"), network, cluster_id="tls-cluster")
    node_extra = {}
    for node in NODES:
        listeners = f"SSL://127.0.0.1:{probe.client_port(node)},CONTROLLER://127.0.0.1:{probe.controller_base + node - 1}"
        node_extra[node] = [f"listeners={listeners}"]
    cluster = Cluster(binary, os.path.join(work, "cluster"), network, cluster_id="tls-cluster", extra=[
        "listener.security.protocol.map=SSL:SSL,CONTROLLER:SSL", "inter.broker.listener.name=SSL",
        f"ssl.keystore.location={store}", f"ssl.truststore.location={ca[1]}", "ssl.client.auth=required",
        "default.replication.factor=3", "min.insync.replicas=2", "offsets.topic.replication.factor=3",
    ], node_extra=node_extra)
    bootstrap = ",".join(f"127.0.0.1:{cluster.client_port(n)}" for n in NODES)
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    with cluster.running():
        admin = AdminClient(librdkafka_config(bootstrap, ca[1], client))
        admin.create_topics([NewTopic("replicated", num_partitions=3, replication_factor=3)])["replicated"].result(30)

        def partitions():
            topic = admin.list_topics("replicated", timeout=10).topics["replicated"]
            return {p: (m.leader, sorted(m.isrs)) for p, m in topic.partitions.items()}
        wait_for(lambda: all(isr == [1, 2, 3] for _, isr in partitions().values()), 60,
                 "every replica of replicated in sync over TLS")
        acked, failed = [], []
        producer = Producer({**librdkafka_config(bootstrap, ca[1], client), "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5})

        def delivered(error, message):
            (failed if error else acked).append((message.partition(), message.offset(), message.value())
                                                if not error else str(error))
        stop = threading.Event()

        def write():
            i = 0
            while not stop.is_set():
                try:
                    producer.produce("replicated", value=f"r-{i}".encode(), partition=i % 3, on_delivery=delivered)
                    i += 1
                except BufferError:
                    pass
                producer.poll(0.002)
            producer.flush(60)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        wait_for(lambda: len(acked) > 500, 30, "acks before the kill")
        leader = partitions()[0][0]
        cluster.kill(leader)
        time.sleep(2.0)
        cluster.start(leader)
        wait_for(lambda: all(isr == [1, 2, 3] for _, isr in partitions().values()), 90,
                 f"broker {leader} back in every ISR after its restart (fetching over TLS)")
        before = len(acked)
        wait_for(lambda: len(acked) > before + 500, 30, "acks after the restart")
        stop.set()
        writer.join(90)
        if failed:
            fail(f"{len(failed)} acks=all deliveries failed in the TLS cluster: {failed[:3]}")
        consumer = Consumer({**librdkafka_config(bootstrap, ca[1], client), "group.id": "tls-cluster-check",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition("replicated", p, 0) for p in range(3)])
        read = {}
        deadline = time.time() + 60
        wanted = {(p, o) for p, o, _ in acked}
        while not wanted <= set(read) and time.time() < deadline:
            for message in consumer.consume(1000, timeout=1):
                if not message.error():
                    read[(message.partition(), message.offset())] = message.value()
        consumer.close()
        lost = [(p, o) for p, o, v in acked if read.get((p, o)) != v]
        if lost:
            fail(f"{len(lost)} of {len(acked)} acknowledged records not read back at their offsets: {lost[:5]}")
        values = [v for v in read.values()]
        if len(values) != len(set(values)):
            fail("a record was written twice in the TLS cluster")
        refusals = controller_refusals(cluster.controller_base, ca[1], client, stranger)
        # In clear the port sends at most a TLS alert record (0x15), never an RPC frame.
        if refusals["plaintext"][:1] not in (b"", b"\x15") or refusals["the cluster's CA"] != "accepted" or "accepted" in (
                refusals["no certificate"], refusals["another CA"]):
            fail(f"the SSL controller port: {refusals}")
        problems = cluster.terminate(NODES)
        if problems:
            fail("; ".join(problems))
        return len(acked), leader, refusals


def listener_own_stores(broker, work, ca, ssl_port):
    """An EXTERNAL SSL listener with its own key store and no client certificates
    (`listener.name.external.ssl.*`) beside the SSL listener's mTLS with the broker-wide
    stores; the listener's own store is re-read when it changes too."""
    external_port = free_port()
    external_store = broker_store(work, "external", ca, "broker-external")
    broker.start(f"listeners=PLAINTEXT://127.0.0.1:{broker.port},SSL://127.0.0.1:{ssl_port},"
                 f"EXTERNAL://127.0.0.1:{external_port}",
                 "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,EXTERNAL:SSL",
                 "inter.broker.listener.name=PLAINTEXT",
                 f"listener.name.external.ssl.keystore.location={external_store}",
                 "listener.name.external.ssl.client.auth=none")
    subjects = (server_subject(ssl_port, ca[1]), server_subject(external_port, ca[1]))
    if subjects != ("broker-after", "broker-external"):
        fail(f"the certificates the SSL and EXTERNAL listeners present: {subjects}", broker)
    anonymous = api_versions_over_tls(external_port, tls_context(ca[1]))
    refused = api_versions_over_tls(ssl_port, tls_context(ca[1]))
    if not isinstance(anonymous, int) or isinstance(refused, int):
        fail(f"without a client certificate: EXTERNAL answered {anonymous!r}, SSL answered {refused!r}", broker)
    os.replace(broker_store(work, "external-rotated", ca, "broker-external-2"), external_store)
    if not wait_for(lambda: server_subject(external_port, ca[1]) == "broker-external-2", 30,
                    "the EXTERNAL listener's rotated certificate"):
        fail("the EXTERNAL listener's own key store was not re-read", broker)
    log("ok listener.name.external.ssl.*: the EXTERNAL listener presents its own certificate (CN=broker-external) "
        "and asks for none, the SSL listener keeps the broker-wide store and mTLS; the EXTERNAL store rotated in "
        "place is served to new connections")


def main():
    binary = sys.argv[1]
    work = work_dir("oxbow-tls-")
    ca = make_ca(work, "ca", "/CN=Oxbow test CA")
    rogue_ca = make_ca(work, "rogue-ca", "/CN=Someone else")
    store = broker_store(work, "broker", ca, "broker-before")
    client = issue(work, "producer-app", "/O=Example/OU=apps/CN=producer-app", ca, "extendedKeyUsage=clientAuth\n")
    stranger = issue(work, "stranger", "/O=Example/OU=apps/CN=stranger", rogue_ca, "extendedKeyUsage=clientAuth\n")
    ssl_port = free_port()
    broker = Broker(binary, workdir=os.path.join(work, "broker"), overrides=[
        f"ssl.keystore.location={store}", f"ssl.truststore.location={ca[1]}",
        "ssl.client.auth=required", f"ssl.principal.mapping.rules={RULES}",
    ])
    os.environ["RUST_LOG"] = "info,openraft=off,oxbow_broker::server=debug"
    broker.start(f"listeners=PLAINTEXT://127.0.0.1:{broker.port},SSL://127.0.0.1:{ssl_port}",
                 "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL",
                 "inter.broker.listener.name=PLAINTEXT")
    tls_bootstrap = f"127.0.0.1:{ssl_port}"
    try:
        wait_for(lambda: isinstance(api_versions_over_tls(ssl_port, tls_context(ca[1], client)), int), 30,
                 "the SSL listener to answer")
        records, size = roundtrip_librdkafka(tls_bootstrap, ca[1], client, "tls-orders")
        log(f"ok librdkafka over TLS with a client certificate: {records} records ({size / 2**20:.1f} MiB, "
            f"none and gzip, up to 200 KB) produced and consumed back byte for byte")
        count = roundtrip_kafka_python(tls_bootstrap, ca[1], client, "tls-python")
        log(f"ok kafka-python over TLS: {count} records produced and read back")
        java_tools(tls_bootstrap, ca[1], client, work, "tls-orders", "tls-python", records)
        log(f"ok kafka-topics and kafka-console-consumer (Java, PEM stores) over TLS: kafka-python's 300 records, "
            f"librdkafka's {records} ({size / 2**20:.1f} MiB); kafka-producer-perf-test and kafka-consumer-perf-test "
            f"{BULK_RECORDS} x 1 KiB")

        with open(broker.log_path) as f:
            principals = {line.split("principal=")[1].split()[0] for line in f if "TLS connection" in line}
        if principals != {"User:producer-app"}:
            fail(f"principals of the TLS connections: {principals}, expected User:producer-app "
                 f"(ssl.principal.mapping.rules {RULES})", broker)
        log("ok the client certificate CN=producer-app,OU=apps,O=Example is the principal User:producer-app")

        failures = lambda: broker.metric("oxbow_server_tls_handshake_failures_total", listener="SSL") or 0
        before = failures()
        no_certificate = api_versions_over_tls(ssl_port, tls_context(ca[1]))
        untrusted = api_versions_over_tls(ssl_port, tls_context(ca[1], stranger))
        if isinstance(no_certificate, int) or isinstance(untrusted, int):
            fail(f"a client without a trusted certificate was answered: {no_certificate!r} {untrusted!r}", broker)
        with socket.create_connection(("127.0.0.1", ssl_port), timeout=10) as raw:
            raw.sendall(api_versions_request())
            answer = raw.recv(64)
        if answer[4:8] == struct.pack(">i", 7):
            fail(f"plaintext on the TLS port got a Kafka answer in clear: {answer!r}", broker)
        if not wait_for(lambda: failures() >= before + 3, 15, "the handshake failures to be counted"):
            fail(f"oxbow_server_tls_handshake_failures_total went {before} -> {failures()}", broker)
        if not broker.running():
            fail("the broker stopped after refused handshakes", broker)
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as raw:
            raw.sendall(api_versions_request())
            plain = raw.recv(8)
        if plain[4:8] != struct.pack(">i", 7):
            fail(f"the PLAINTEXT listener did not answer ApiVersions after the refusals: {plain!r}", broker)
        log(f"ok refused: no client certificate ({no_certificate}), an untrusted CA ({untrusted}), plaintext "
            f"on the TLS port (no Kafka answer); oxbow_server_tls_handshake_failures_total {before:.0f} -> "
            f"{failures():.0f}; plaintext listener unaffected")

        writer = Writer(tls_bootstrap, ca[1], client, "tls-rotation")
        writer.start()
        if not wait_for(lambda: writer.acked > 100, 30, "the writer's first acks"):
            fail(f"the TLS writer got no acks: {writer.failed[:3]}", broker)
        rotated = broker_store(work, "broker-rotated", ca, "broker-after")
        os.replace(rotated, store)
        began = time.time()
        if not wait_for(lambda: server_subject(ssl_port, ca[1]) == "broker-after", 30,
                        "new connections to get the rotated certificate"):
            fail(f"new TLS connections still get {server_subject(ssl_port, ca[1])} 30 s after the rotation", broker)
        took = time.time() - began
        acked_at_rotation = writer.acked
        wait_for(lambda: writer.acked > acked_at_rotation + 100, 30, "acks after the rotation")
        writer.stop.set()
        writer.join(60)
        if writer.failed:
            fail(f"{len(writer.failed)} deliveries failed across the rotation: {writer.failed[:3]}", broker)
        log(f"ok key store rotated in place: new connections got CN=broker-after {took:.1f} s later; the open "
            f"producer carried on, {writer.acked} records acknowledged, 0 failed")
        broker.stop()
        listener_own_stores(broker, work, ca, ssl_port)
        broker.stop()
        acked, killed, refusals = tls_only_cluster(binary, work, ca, client, stranger)
        log(f"ok three nodes with SSL as the only client, inter-broker and controller listener (mTLS): {acked} "
            f"acks=all records through a SIGKILL of leader {killed}, every one read back once at its offset; every "
            f"ISR whole again after the restart (followers fetch and the quorum votes over TLS)")
        log(f"ok the SSL controller port answers a plaintext frame with a TLS alert only and refuses a client "
            f"without a certificate or with one from another CA: {refusals}")
        # A failed run keeps its directory (named in the failure) to look at; a passing one
        # leaves nothing behind.
        shutil.rmtree(work, ignore_errors=True)
    except SystemExit:
        broker.kill()
        raise
    except BaseException:
        log(f"--- broker log ---\n{broker.log_tail(60)}")
        broker.kill()
        raise


if __name__ == "__main__":
    main()
