"""Replication over SASL: three nodes whose only client and inter-broker listener is SASL_SSL
with SCRAM-SHA-512, configured as a Kafka broker is (`sasl.mechanism.inter.broker.protocol`,
the brokers' username and password in
`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config`), under Kafka's StandardAuthorizer
with the brokers' user as the super user. Part of the SASL scenario (sasl.py calls
`replication_over_sasl`).

- No one created a credential: a broker creates its own through the quorum, and every
  replica of an RF=3 topic joins the ISR (followers authenticated to the leaders);
- a librdkafka producer (idempotent, acks=all) writes while the leader of a partition is
  SIGKILLed and restarted; every acknowledged record is read back, once, in order;
- a node restarted with a wrong inter-broker password is refused by the leaders
  (SASL_AUTHENTICATION_FAILED in its log), drops out of the ISR and comes back once
  restarted with the right one.
"""

import os
import threading
import time

from certs import broker_store
from common import fail, log
from oxbow_cluster import Cluster, Network, NODES
from oxbow_e2e import wait_for

JAAS = ('listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.'
        'ScramLoginModule required username="broker" password="{password}";')
TOPIC = "replicated-over-sasl"


def replication_over_sasl(binary, work, ca):
    store = broker_store(work, "sasl-cluster", ca, "oxbow-broker", usage="serverAuth,clientAuth")
    network = Network(False)
    directory = os.path.join(work, "sasl-cluster")
    os.makedirs(directory, exist_ok=True)
    probe = Cluster(binary, directory, network, cluster_id="sasl-cluster")

    def listeners(node):
        return (f"listeners=SASL_SSL://127.0.0.1:{probe.client_port(node)},"
                f"CONTROLLER://127.0.0.1:{probe.controller_base + node - 1}")
    node_extra = {node: [listeners(node)] for node in NODES}
    common = [
        "listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT", "inter.broker.listener.name=SASL_SSL",
        "sasl.enabled.mechanisms=SCRAM-SHA-512", "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
        JAAS.format(password="broker-secret"), f"ssl.keystore.location={store}", f"ssl.truststore.location={ca[1]}",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:broker",
        "default.replication.factor=3", "min.insync.replicas=2", "offsets.topic.replication.factor=3",
        "replica.lag.time.max.ms=5000",
    ]
    cluster = Cluster(binary, directory, network, cluster_id="sasl-cluster", extra=common, node_extra=node_extra)
    bootstrap = ",".join(f"127.0.0.1:{cluster.client_port(n)}" for n in NODES)
    config = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
              "sasl.username": "broker", "sasl.password": "broker-secret", "ssl.ca.location": ca[1],
              "log_level": 2}
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    with cluster.running():
        admin = AdminClient(config)
        # The credential exists once a broker made it: the client may then authenticate.
        created = wait_for(lambda: _create_topic(admin, NewTopic), 60, "a client to authenticate as broker",
                           interval=0.5)
        if not created:
            fail("a client could not authenticate as the brokers' user (no credential created?)")

        def partitions():
            try:
                topic = admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
            except Exception:  # noqa: BLE001 - a moment without an answer
                return {}
            return {p: (m.leader, sorted(m.isrs)) for p, m in topic.partitions.items() if not topic.error}

        def in_sync():
            current = partitions()
            return len(current) == 3 and all(isr == [1, 2, 3] for _, isr in current.values())
        if not wait_for(in_sync, 60, "every replica in sync over SASL_SSL", interval=0.5):
            fail(f"replicas not in sync over SASL_SSL: {partitions()}")
        logs = "".join(open(os.path.join(directory, f"node-{n}.log"), errors="replace").read() for n in NODES)
        creators = logs.count("Created the inter-broker SCRAM credential")
        if creators < 1:
            fail("no broker reports creating the inter-broker credential")
        log(f"ok SASL_SSL between brokers: the credential was created by {creators} broker(s) through the quorum, "
            f"every replica of {TOPIC} (3 partitions, RF=3) joined the ISR")

        acked, failed = [], []
        producer = Producer({**config, "acks": "all", "enable.idempotence": True, "linger.ms": 5})
        stop = threading.Event()

        def delivered(error, message):
            if error:
                failed.append(str(error))
            else:
                acked.append((message.partition(), message.offset(), message.value()))

        def write():
            i = 0
            while not stop.is_set():
                try:
                    producer.produce(TOPIC, value=f"s-{i}".encode(), partition=i % 3, on_delivery=delivered)
                    i += 1
                except BufferError:
                    pass
                producer.poll(0.002)
            producer.flush(60)
        writer = threading.Thread(target=write)
        writer.start()
        time.sleep(2)
        leader = partitions()[0][0]
        cluster.kill(leader)
        time.sleep(3)
        cluster.start(leader)
        if not wait_for(in_sync, 60, "the restarted leader back in every ISR", interval=0.5):
            fail(f"node {leader} did not rejoin the ISR over SASL_SSL: {partitions()}")
        time.sleep(1)
        stop.set()
        writer.join()
        if failed or not acked:
            fail(f"{len(failed)} produce failures ({failed[:3]}), {len(acked)} acknowledged")
        consumer = Consumer({**config, "group.id": "sasl-checker", "enable.auto.commit": False})
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(3)])
        read = {}
        deadline = time.monotonic() + 60
        while len(read) < len(acked) and time.monotonic() < deadline:
            for message in consumer.consume(1000, timeout=1):
                if not message.error():
                    read[(message.partition(), message.offset())] = message.value()
        consumer.close()
        lost = [a for a in acked if read.get((a[0], a[1])) != a[2]]
        if lost:
            fail(f"{len(lost)} of {len(acked)} acknowledged records not read back at their offsets: {lost[:3]}")
        log(f"ok node {leader} (a leader) SIGKILLed and restarted under an acks=all producer: all {len(acked)} "
            f"acknowledged records read back at their offsets, the replicas back in sync over SASL_SSL")

        # A follower with the wrong password: refused by the leaders, out of the ISR.
        wrong = 3
        cluster.kill(wrong)
        cluster.node_extra[wrong] = [listeners(wrong), JAAS.format(password="not-the-secret")]
        cluster.start(wrong)
        if not wait_for(lambda: cluster.ready(wrong), 60, f"node {wrong} to start", interval=0.5):
            fail(f"node {wrong} did not start with a wrong inter-broker password")
        producer = Producer({**config, "acks": "all"})
        for i in range(30):
            producer.produce(TOPIC, value=f"after-{i}".encode(), partition=i % 3)
        producer.flush(30)
        log_path = os.path.join(directory, f"node-{wrong}.log")
        refused = wait_for(lambda: "SASL_AUTHENTICATION_FAILED" in open(log_path, errors="replace").read(), 30,
                           f"node {wrong}'s fetches to be refused", interval=0.5)
        out_of_isr = wait_for(lambda: len(partitions()) == 3 and all(wrong not in isr for _, isr in partitions().values()),
                              30, f"node {wrong} out of every ISR", interval=0.5)
        if not refused or not out_of_isr:
            fail(f"a follower with a wrong password: refused {refused}, ISRs {partitions()}")
        cluster.kill(wrong)
        cluster.node_extra[wrong] = [listeners(wrong)]
        cluster.start(wrong)
        if not wait_for(in_sync, 60, f"node {wrong} back in every ISR", interval=0.5):
            fail(f"node {wrong} did not rejoin with the right password: {partitions()}")
        log(f"ok refused: node {wrong} restarted with a wrong inter-broker password (SASL_AUTHENTICATION_FAILED on "
            f"every fetch, out of the ISR, the credential left as it was); back in sync with the right one")
        problems = cluster.terminate(NODES)
        if problems:
            fail("; ".join(problems))


def _create_topic(admin, new_topic):
    try:
        admin.create_topics([new_topic(TOPIC, num_partitions=3, replication_factor=3)])[TOPIC].result(10)
        return True
    except Exception as error:  # noqa: BLE001 - authentication and "exists" both end up here
        return "TOPIC_ALREADY_EXISTS" in str(error)
