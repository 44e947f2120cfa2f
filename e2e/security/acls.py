"""ACLs with Kafka's StandardAuthorizer rules and real clients (issue 33, point 3).

One broker with `authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer`,
a SASL_PLAINTEXT listener (users admin, alice, bob) and a PLAINTEXT one (User:ANONYMOUS):

- the first start makes User:ANONYMOUS a super user to set the SCRAM credentials; every
  later start names only User:admin, so the PLAINTEXT listener is an ordinary principal;
- Kafka's own `kafka-acls` adds, lists and removes entries (CreateAcls, DescribeAcls,
  DeleteAcls): a PREFIXED allow, a LITERAL deny that wins over it, group entries;
- librdkafka as alice: writes and reads `orders-*`, gets TOPIC_AUTHORIZATION_FAILED for
  `payments` and for reading `orders-secret` (denied), GROUP_AUTHORIZATION_FAILED for a
  group not granted; Metadata leaves out the topics a principal may not describe;
- Kafka's Java console consumer as bob reads what bob was granted, and is refused after
  `kafka-acls --remove`;
- admin operations refused with Kafka's errors (CreateTopics, kafka-acls --list as alice),
  DescribeCluster's authorized operations (KIP-430), denials counted in
  oxbow_server_authorization_denials_total; entries survive a restart.

Usage: acls.py BROKER_BINARY
"""

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from oxbow_e2e import Broker, free_port  # noqa: E402
from common import fail, log, tool, work_dir  # noqa: E402

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}



def java_properties(work, user):
    path = os.path.join(work, f"{user}.properties")
    with open(path, "w") as f:
        f.write("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                f'username="{user}" password="{PASSWORDS[user]}";\n')
    return path


def sasl_config(bootstrap, user):
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": PASSWORDS[user],
            "log_level": 2}


def produce(config, topic, count):
    """(delivered, the first delivery error's name or None)."""
    from confluent_kafka import Producer
    errors = []
    delivered = []

    def on_delivery(error, message):
        (errors if error else delivered).append(error.name() if error else message.offset())

    producer = Producer({**config, "acks": "all", "message.timeout.ms": 15000, "on_delivery": on_delivery})
    for i in range(count):
        producer.produce(topic, value=f"{topic}-{i}".encode())
    producer.flush(30)
    return len(delivered), (errors[0] if errors else None)


def consume(config, topic, group, count):
    """(records read, the first error's name or None)."""
    from confluent_kafka import Consumer
    consumer = Consumer({**config, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = 0
    for _ in range(30):
        for message in consumer.consume(500, timeout=1):
            if message.error():
                consumer.close()
                return got, message.error().name()
            got += 1
        if got >= count:
            break
    consumer.close()
    return got, None


def visible_topics(config):
    from confluent_kafka.admin import AdminClient
    return set(AdminClient(config).list_topics(timeout=15).topics)


def main():
    binary = sys.argv[1]
    work = work_dir("oxbow-acls-")
    sasl_port = free_port()
    broker = Broker(binary, workdir=os.path.join(work, "broker"), overrides=[
        f"authorizer.class.name={AUTHORIZER}",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "inter.broker.listener.name=PLAINTEXT",
        "auto.create.topics.enable=false",
    ])
    os.environ["RUST_LOG"] = "info,openraft=off"
    listeners = f"listeners=PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
    plain = f"127.0.0.1:{broker.port}"
    sasl = f"127.0.0.1:{sasl_port}"
    admin_props = java_properties(work, "admin")
    try:
        # Bootstrap: User:ANONYMOUS may set the credentials, once.
        broker.start(listeners, "super.users=User:ANONYMOUS;User:admin")
        for user, password in PASSWORDS.items():
            tool("kafka-configs", "--bootstrap-server", plain, "--alter", "--entity-type", "users", "--entity-name",
                 user, "--add-config", f"SCRAM-SHA-512=[password={password}]", broker=broker)
        broker.stop()
        broker.start(listeners, "super.users=User:admin")
        log("ok credentials set while User:ANONYMOUS was a super user; restarted with super.users=User:admin")

        admin = ["--bootstrap-server", sasl, "--command-config", admin_props]
        for topic in ("orders-main", "orders-public", "orders-secret", "payments"):
            tool("kafka-topics", *admin, "--create", "--topic", topic, "--partitions", "2",
                 "--replication-factor", "1", broker=broker)
        acl = lambda *args: tool("kafka-acls", *admin, *args, broker=broker)  # noqa: E731
        acl("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write",
            "--topic", "orders-", "--resource-pattern-type", "prefixed")
        acl("--add", "--deny-principal", "User:alice", "--operation", "Read", "--topic", "orders-secret")
        acl("--add", "--allow-principal", "User:alice", "--operation", "Read", "--group", "alice-readers")
        acl("--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "orders-public",
            "--group", "bob-readers")
        listed = acl("--list").stdout
        for expected in ("name=orders-, patternType=PREFIXED", "name=orders-secret, patternType=LITERAL",
                         "principal=User:alice, host=*, operation=READ, permissionType=DENY",
                         "name=bob-readers, patternType=LITERAL"):
            if expected not in listed:
                fail(f"kafka-acls --list lacks `{expected}`:\n{listed}", broker)
        log("ok kafka-acls added a PREFIXED allow, a LITERAL deny and group entries; --list shows them")

        alice, bob = sasl_config(sasl, "alice"), sasl_config(sasl, "bob")
        delivered, error = produce(alice, "orders-main", 200)
        if delivered != 200 or error:
            fail(f"alice producing to orders-main: {delivered} delivered, {error}", broker)
        got, error = consume(alice, "orders-main", "alice-readers", 200)
        if got != 200 or error:
            fail(f"alice reading orders-main in alice-readers: {got}, {error}", broker)
        log("ok alice (PREFIXED orders-) produced 200 records to orders-main and read them in group alice-readers")

        delivered, error = produce(alice, "payments", 5)
        if delivered or error != "TOPIC_AUTHORIZATION_FAILED":
            fail(f"alice producing to payments: {delivered} delivered, {error}", broker)
        produce(alice, "orders-secret", 10)
        got, error = consume(alice, "orders-secret", "alice-readers", 10)
        if got or error != "TOPIC_AUTHORIZATION_FAILED":
            fail(f"alice reading orders-secret (denied): {got}, {error}", broker)
        got, error = consume(alice, "orders-main", "bob-readers", 200)
        if got or error != "GROUP_AUTHORIZATION_FAILED":
            fail(f"alice in group bob-readers: {got}, {error}", broker)
        log("ok refused: alice writing payments (TOPIC_AUTHORIZATION_FAILED), reading orders-secret (the deny wins "
            "over the prefixed allow), joining bob-readers (GROUP_AUTHORIZATION_FAILED)")

        seen = {
            "alice": visible_topics(alice) - {"__consumer_offsets"},
            "bob": visible_topics(bob) - {"__consumer_offsets"},
            "ANONYMOUS": visible_topics({"bootstrap.servers": plain}),
            "admin": visible_topics(sasl_config(sasl, "admin")) - {"__consumer_offsets"},
        }
        expected = {"alice": {"orders-main", "orders-public", "orders-secret"}, "bob": {"orders-public"},
                    "ANONYMOUS": set(), "admin": {"orders-main", "orders-public", "orders-secret", "payments"}}
        if seen != expected:
            fail(f"Metadata per principal: {seen}, expected {expected}", broker)
        log(f"ok Metadata lists only what each principal may describe: {seen}")

        delivered, error = produce(alice, "orders-public", 50)
        if delivered != 50:
            fail(f"alice producing to orders-public: {delivered}, {error}", broker)
        bob_props = java_properties(work, "bob")
        read = tool("kafka-console-consumer", "--bootstrap-server", sasl, "--consumer.config", bob_props,
                    "--topic", "orders-public", "--group", "bob-readers", "--from-beginning", "--max-messages", "50",
                    "--timeout-ms", "30000", broker=broker)
        if len([line for line in read.stdout.splitlines() if line.startswith("orders-public-")]) != 50:
            fail(f"bob's kafka-console-consumer: {read.stdout[-400:]} {read.stderr[-400:]}", broker)
        delivered, error = produce(bob, "orders-public", 5)
        if delivered or error != "TOPIC_AUTHORIZATION_FAILED":
            fail(f"bob writing orders-public (READ only): {delivered}, {error}", broker)
        log("ok bob's Java console consumer read orders-public's 50 records in bob-readers; bob may not write it")

        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic
        alice_admin = AdminClient(alice)
        created = alice_admin.create_topics([NewTopic("alice-made", 1, 1)])["alice-made"]
        try:
            created.result(30)
            fail("alice created a topic without CREATE", broker)
        except KafkaException as error:
            if error.args[0].name() != "TOPIC_AUTHORIZATION_FAILED":
                fail(f"alice's CreateTopics: {error}", broker)
        listing = tool("kafka-acls", "--bootstrap-server", sasl, "--command-config", java_properties(work, "alice"),
                       "--list", check=False)
        if "ClusterAuthorizationException" not in listing.stdout + listing.stderr:
            fail(f"alice's kafka-acls --list: {listing.stdout[-400:]} {listing.stderr[-400:]}", broker)
        operations = {}
        for user in ("alice", "admin"):
            user_admin = AdminClient(sasl_config(sasl, user))
            cluster = user_admin.describe_cluster(include_authorized_operations=True).result(30)
            operations[user] = sorted(op.name for op in (cluster.authorized_operations or []))
        if operations["alice"] or "ALTER" not in operations["admin"] or "DESCRIBE" not in operations["admin"]:
            fail(f"DescribeCluster authorized operations: {operations}", broker)
        log(f"ok refused: alice's CreateTopics (TOPIC_AUTHORIZATION_FAILED), alice's kafka-acls --list "
            f"(ClusterAuthorizationException); DescribeCluster authorized operations {operations}")

        denials = broker.metric("oxbow_server_authorization_denials_total", resource_type="Topic",
                                operation="Write") or 0
        if denials < 1:
            fail(f"oxbow_server_authorization_denials_total{{Topic,Write}} = {denials}", broker)
        log(f"ok oxbow_server_authorization_denials_total{{resource_type=Topic,operation=Write}} = {denials:.0f}")

        acl("--remove", "--force", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "orders-public")
        got, error = consume(bob, "orders-public", "bob-readers", 50)
        if got or error != "TOPIC_AUTHORIZATION_FAILED":
            fail(f"bob reading orders-public after kafka-acls --remove: {got}, {error}", broker)
        broker.stop()
        broker.start(listeners, "super.users=User:admin")
        after = acl("--list").stdout
        if "name=orders-, patternType=PREFIXED" not in after or "name=orders-public" in after:
            fail(f"ACLs after a restart:\n{after}", broker)
        delivered, error = produce(alice, "orders-main", 10)
        if delivered != 10:
            fail(f"alice after a restart: {delivered}, {error}", broker)
        log("ok kafka-acls --remove took bob's READ away at once; the entries survived a restart")
        broker.stop()
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
