"""SASL/SCRAM listeners with real clients (issue 33, point 2).

One broker with a PLAINTEXT listener (for the admin tools), a SASL_PLAINTEXT and a
SASL_SSL listener:

- Kafka's own `kafka-configs --alter --add-config 'SCRAM-SHA-512=[password=…]'
  --entity-type users` sets credentials (AlterUserScramCredentials; the salted password,
  never the password, crosses the wire) and `kafka-configs --describe --entity-type users`
  lists mechanisms and iterations (DescribeUserScramCredentials, DescribeClientQuotas);
- librdkafka (SCRAM-SHA-512 over SASL_PLAINTEXT, SCRAM-SHA-256 over SASL_SSL), kafka-python
  and Kafka's Java console consumer authenticate and produce/consume;
- refused, with SASL_AUTHENTICATION_FAILED and the connection closed: a wrong password,
  an unknown user, a deleted mechanism; a Metadata request before authenticating closes
  the connection; each is counted in oxbow_server_authentication_failures_total;
- the authenticated connection is User:alice (broker log), and credentials survive a
  broker restart (they live in the metadata log).

Usage: sasl.py BROKER_BINARY
"""

import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from oxbow_e2e import Broker, free_port, wait_for  # noqa: E402
from tls import broker_store, make_ca  # noqa: E402

KAFKA_BIN = os.path.join(HERE, "..", "peers", "kafka", "bin")


# The run's temporary directory, named when a check fails.
WORK = []


def log(message):
    print(message, flush=True)


def fail(message, broker=None):
    log(f"FAIL {message}")
    log(f"work dir kept: {WORK[0] if WORK else '(none)'}")
    if broker is not None:
        log(f"--- broker log ---\n{broker.log_tail(60)}")
    sys.exit(1)


def tool(name, *args, check=True):
    result = subprocess.run([os.path.join(KAFKA_BIN, name), *args], capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        fail(f"{name} {' '.join(args)}: {result.stdout[-800:]} {result.stderr[-800:]}")
    return result


def client_config(bootstrap, mechanism, user, password, ca=None):
    config = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL" if ca else "SASL_PLAINTEXT",
              "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password, "log_level": 2}
    if ca:
        config["ssl.ca.location"] = ca
    return config


def roundtrip(config, topic, count):
    from confluent_kafka import Consumer, Producer
    producer = Producer({**config, "acks": "all"})
    values = [f"{topic}-{i}".encode() for i in range(count)]
    for value in values:
        producer.produce(topic, value=value)
    if producer.flush(60) != 0:
        return f"{len(producer)} records not delivered"
    consumer = Consumer({**config, "group.id": f"{topic}-readers", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = set()
    for _ in range(60):
        for message in consumer.consume(500, timeout=1):
            if message.error():
                consumer.close()
                return str(message.error())
            got.add(message.value())
        if got >= set(values):
            break
    consumer.close()
    return None if got >= set(values) else f"read {len(got)} of {count}"


def authentication_error(config):
    """The error a client gets connecting with `config`, or None if it got metadata."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    errors = []
    admin = AdminClient({**config, "error_cb": lambda e: errors.append(str(e))})
    try:
        admin.list_topics(timeout=8)
        return None
    except KafkaException as error:
        # The authentication error reaches error_cb, which runs on poll.
        admin.poll(1)
        return "; ".join(errors) or str(error)


def metadata_before_authenticating(port):
    body = struct.pack(">hhih", 3, 1, 5, 4) + b"test" + struct.pack(">i", -1)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(struct.pack(">i", len(body)) + body)
        try:
            return raw.recv(64)
        except ConnectionResetError:
            return b""


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp(prefix="oxbow-sasl-")
    WORK.append(work)
    ca = make_ca(work, "ca", "/CN=Oxbow test CA")
    store = broker_store(work, "broker", ca, "broker")
    sasl_port, sasl_ssl_port = free_port(), free_port()
    broker = Broker(binary, workdir=os.path.join(work, "broker"), overrides=[
        f"ssl.keystore.location={store}",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "inter.broker.listener.name=PLAINTEXT",
    ])
    os.environ["RUST_LOG"] = "info,openraft=off,oxbow_broker::server=debug"
    listeners = (f"listeners=PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
                 f"SASL_SSL://127.0.0.1:{sasl_ssl_port}")
    broker.start(listeners)
    admin = f"127.0.0.1:{broker.port}"
    sasl = f"127.0.0.1:{sasl_port}"
    sasl_ssl = f"127.0.0.1:{sasl_ssl_port}"
    try:
        tool("kafka-configs", "--bootstrap-server", admin, "--alter", "--entity-type", "users", "--entity-name",
             "alice", "--add-config", "SCRAM-SHA-512=[password=alice-secret],SCRAM-SHA-256=[iterations=8192,"
             "password=alice-secret]")
        # kafka-configs --describe --entity-type users asks DescribeClientQuotas and
        # DescribeUserScramCredentials.
        shown = tool("kafka-configs", "--bootstrap-server", admin, "--describe", "--entity-type", "users",
                     "--entity-name", "alice").stdout
        if "SCRAM-SHA-256=iterations=8192" not in shown or "SCRAM-SHA-512=iterations=4096" not in shown:
            fail(f"kafka-configs --describe --entity-type users --entity-name alice: {shown}", broker)
        from confluent_kafka.admin import AdminClient
        admin_client = AdminClient({"bootstrap.servers": admin})
        described = admin_client.describe_user_scram_credentials(["alice"])
        infos = sorted((i.mechanism.name, i.iterations) for i in described["alice"].result(30).scram_credential_infos)
        if infos != [("SCRAM_SHA_256", 8192), ("SCRAM_SHA_512", 4096)]:
            fail(f"DescribeUserScramCredentials for alice: {infos}", broker)
        log(f"ok kafka-configs set alice's SCRAM-SHA-256 and -512 credentials; DescribeUserScramCredentials: {infos}")
        too_few = tool("kafka-configs", "--bootstrap-server", admin, "--alter", "--entity-type", "users",
                       "--entity-name", "bob", "--add-config", "SCRAM-SHA-256=[iterations=10,password=x]",
                       check=False)
        if "iterations" not in (too_few.stdout + too_few.stderr).lower() or too_few.returncode == 0:
            fail(f"10 iterations were accepted: {too_few.stdout[-500:]} {too_few.stderr[-500:]}", broker)
        log("ok a credential with 10 iterations is refused (UnacceptableCredentialException)")

        problem = roundtrip(client_config(sasl, "SCRAM-SHA-512", "alice", "alice-secret"), "sasl-plain", 200)
        if problem:
            fail(f"librdkafka SCRAM-SHA-512 over SASL_PLAINTEXT: {problem}", broker)
        problem = roundtrip(client_config(sasl_ssl, "SCRAM-SHA-256", "alice", "alice-secret", ca[1]), "sasl-tls", 200)
        if problem:
            fail(f"librdkafka SCRAM-SHA-256 over SASL_SSL: {problem}", broker)
        log("ok librdkafka authenticated as alice: SCRAM-SHA-512 over SASL_PLAINTEXT, SCRAM-SHA-256 over SASL_SSL; "
            "200 records each produced and consumed")

        from kafka import KafkaConsumer, KafkaProducer
        python_settings = {"bootstrap_servers": sasl, "security_protocol": "SASL_PLAINTEXT",
                           "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "alice",
                           "sasl_plain_password": "alice-secret"}
        producer = KafkaProducer(acks="all", **python_settings)
        for i in range(100):
            producer.send("sasl-python", value=f"py-{i}".encode())
        producer.flush(30)
        producer.close()
        consumer = KafkaConsumer("sasl-python", auto_offset_reset="earliest", consumer_timeout_ms=10_000,
                                 group_id=None, **python_settings)
        got = [m.value for m in consumer]
        consumer.close()
        if len(got) != 100:
            fail(f"kafka-python over SASL_PLAINTEXT read {len(got)} of 100", broker)
        log("ok kafka-python SCRAM-SHA-256 over SASL_PLAINTEXT: 100 records produced and read back")

        properties = os.path.join(work, "java-sasl.properties")
        with open(properties, "w") as f:
            f.write("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                    f"ssl.truststore.type=PEM\nssl.truststore.location={ca[1]}\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                    'username="alice" password="alice-secret";\n')
        consumed = tool("kafka-console-consumer", "--bootstrap-server", sasl_ssl, "--consumer.config", properties,
                        "--topic", "sasl-python", "--from-beginning", "--max-messages", "100", "--timeout-ms", "30000")
        if len([line for line in consumed.stdout.splitlines() if line.startswith("py-")]) != 100:
            fail(f"kafka-console-consumer over SASL_SSL: {consumed.stdout[-500:]} {consumed.stderr[-500:]}", broker)
        log("ok kafka-console-consumer (Java, ScramLoginModule, SCRAM-SHA-512) over SASL_SSL read kafka-python's 100")

        with open(broker.log_path) as f:
            principals = {line.split("principal=")[1].split()[0] for line in f if "SASL authenticated" in line}
        if principals != {"User:alice"}:
            fail(f"SASL connections authenticated as {principals}, expected User:alice", broker)
        log("ok every SASL connection is the principal User:alice")

        failures = lambda: broker.metric("oxbow_server_authentication_failures_total", listener="SASL_PLAINTEXT") or 0
        before = failures()
        wrong = authentication_error(client_config(sasl, "SCRAM-SHA-512", "alice", "guess"))
        unknown = authentication_error(client_config(sasl, "SCRAM-SHA-512", "mallory", "alice-secret"))
        for what, error in (("a wrong password", wrong), ("an unknown user", unknown)):
            if error is None or "Authentication failed" not in error:
                fail(f"{what} was not refused with an authentication failure: {error}", broker)
        answer = metadata_before_authenticating(sasl_port)
        if answer:
            fail(f"a Metadata request before SASL authentication was answered: {answer!r}", broker)
        wait_for(lambda: failures() >= before + 3, 15, "the failures to be counted")
        log(f"ok refused: a wrong password ({wrong.split(';')[0][:120]}), an unknown user, Metadata before "
            f"authenticating (connection closed); oxbow_server_authentication_failures_total {before:.0f} -> "
            f"{failures():.0f}")

        tool("kafka-configs", "--bootstrap-server", admin, "--alter", "--entity-type", "users", "--entity-name",
             "alice", "--delete-config", "SCRAM-SHA-512")
        if authentication_error(client_config(sasl, "SCRAM-SHA-512", "alice", "alice-secret")) is None:
            fail("alice still authenticates with SCRAM-SHA-512 after its deletion", broker)
        broker.stop()
        broker.start(listeners)
        error = authentication_error(client_config(sasl, "SCRAM-SHA-256", "alice", "alice-secret"))
        if error is not None:
            fail(f"alice's SCRAM-SHA-256 credential did not survive a restart: {error}", broker)
        log("ok a deleted SCRAM-SHA-512 credential is refused at once; SCRAM-SHA-256 still works after a restart")
        broker.stop()
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
