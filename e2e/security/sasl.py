"""SASL/SCRAM listeners with real clients (issue 33, point 2).

One broker with a PLAINTEXT listener (for the admin tools), a SASL_PLAINTEXT and a
SASL_SSL listener:

- Kafka's own `kafka-configs --alter --add-config 'SCRAM-SHA-512=[password=…]'
  --entity-type users` sets credentials (AlterUserScramCredentials; the salted password,
  never the password, crosses the wire) and `kafka-configs --describe --entity-type users`
  lists mechanisms and iterations (DescribeUserScramCredentials, DescribeClientQuotas);
- librdkafka (SCRAM-SHA-512 over SASL_PLAINTEXT, SCRAM-SHA-256 over SASL_SSL), kafka-python
  and Kafka's Java console consumer authenticate and produce/consume;
- franz-go (e2e/peers/franz-go: admin, idempotent producer, group consumer, commit) over
  SASL_SSL with SCRAM-SHA-512 and with PLAIN, verifying the broker's certificate; a wrong
  password is refused with SASL_AUTHENTICATION_FAILED (kerr.SaslAuthenticationFailed);
- refused, with SASL_AUTHENTICATION_FAILED and the connection closed: a wrong password,
  an unknown user, a deleted mechanism; a Metadata request before authenticating closes
  the connection; each is counted in oxbow_server_authentication_failures_total;
- the authenticated connection is User:alice (broker log), and credentials survive a
  broker restart (they live in the metadata log);
- OAUTHBEARER with RS256 tokens checked against a JWKS file (oauth_jwks.py): librdkafka and
  the Java client authenticate, forged, unsecured, misaddressed and expired tokens are
  refused, a rotated key set applies without a restart;
- replication over SASL_SSL with SCRAM-SHA-512 between three brokers, a leader SIGKILLed
  under an acks=all producer, a follower with a wrong password refused
  (inter_broker_sasl.py).

Usage: sasl.py BROKER_BINARY
"""

import os
import shutil
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from oxbow_e2e import Broker, free_port, wait_for  # noqa: E402
from common import fail, log, tool, work_dir  # noqa: E402
from certs import broker_store, make_ca  # noqa: E402
from oauth_jwks import signed_tokens  # noqa: E402
from inter_broker_sasl import replication_over_sasl  # noqa: E402

FRANZ_GO = os.path.join(HERE, "..", "peers", "franz-go", "run")


def franz_go(bootstrap, mechanism, user, password, ca, *extra):
    """franz-go's round trip (e2e/peers/franz-go/run) over SASL_SSL: its exit code and output."""
    result = subprocess.run([FRANZ_GO, "--bootstrap", bootstrap, "--tls-ca", ca, "--sasl-mechanism", mechanism,
                             "--sasl-user", user, "--sasl-password", password, *extra],
                            capture_output=True, text=True, timeout=180)
    return result.returncode, (result.stdout + result.stderr).strip()


def franz_go_roundtrip(broker, bootstrap, mechanism, ca, messages):
    code, output = franz_go(bootstrap, mechanism, "alice", "alice-secret", ca, "--messages", str(messages))
    if code != 0:
        fail(f"franz-go {mechanism} over SASL_SSL: exit {code}: {output[-800:]}", broker)
    return output


def franz_go_refused(broker, bootstrap, mechanism, ca):
    """A wrong password must be refused with SASL_AUTHENTICATION_FAILED (not a timeout), and
    counted on the SASL_SSL listener."""
    failures = lambda: metric_sum(broker, "oxbow_server_authentication_failures_total",  # noqa: E731
                                  listener="SASL_SSL")
    before = failures()
    code, output = franz_go(bootstrap, mechanism, "alice", "guess", ca, "--expect-auth-failure")
    if code != 0 or "SASL_AUTHENTICATION_FAILED" not in output:
        fail(f"franz-go {mechanism} with a wrong password over SASL_SSL: exit {code}: {output[-800:]}", broker)
    wait_for(lambda: failures() > before, 15, "franz-go's failure to be counted")
    return output


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


def metric_sum(broker, name, **labels):
    """The sum of every sample of `name` whose labels include `labels` (one per mechanism)."""
    import re
    total = 0.0
    for line in broker.metrics().splitlines():
        match = re.match(r"([^{ ]+)(?:\{(.*)\})? (\S+)$", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(match.group(3))
    return total


class RawConnection:
    """A hand-made Kafka connection for the SASL steps clients never take on their own:
    re-authenticating as someone else, a request after the session expired."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.correlation = 0

    def request(self, api_key, version, body):
        self.correlation += 1
        client_id = b"oxbow-e2e"
        frame = struct.pack(">hhih", api_key, version, self.correlation, len(client_id)) + client_id + body
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        head = self._read(4)
        if not head:
            return None
        body = self._read(struct.unpack(">i", head)[0])
        return body[4:] if body else None

    def _read(self, size):
        data = b""
        while len(data) < size:
            try:
                chunk = self.sock.recv(size - len(data))
            except (ConnectionResetError, socket.timeout):
                return b""
            if not chunk:
                return b""
            data += chunk
        return data

    def plain(self, user, password):
        """SaslHandshake v1 + SaslAuthenticate v1 with PLAIN: (error code, message, session ms)."""
        handshake = self.request(17, 1, struct.pack(">h", 5) + b"PLAIN")
        if handshake is None or struct.unpack(">h", handshake[:2])[0] != 0:
            return ("handshake refused", None, None)
        token = b"\0" + user.encode() + b"\0" + password.encode()
        answer = self.request(36, 1, struct.pack(">i", len(token)) + token)
        if answer is None:
            return ("closed", None, None)
        code = struct.unpack(">h", answer[:2])[0]
        length = struct.unpack(">h", answer[2:4])[0]
        message = answer[4:4 + length].decode() if length >= 0 else None
        rest = answer[4 + max(length, 0):]
        auth_length = struct.unpack(">i", rest[:4])[0]
        session = struct.unpack(">q", rest[4 + max(auth_length, 0):12 + max(auth_length, 0)])[0]
        return (code, message, session)

    def plain_v0(self, user, password):
        """SaslHandshake v0, then the PLAIN token as a raw frame (Kafka's pre-KIP-152 exchange):
        the raw reply's length, or None when the connection closed."""
        handshake = self.request(17, 0, struct.pack(">h", 5) + b"PLAIN")
        if handshake is None or struct.unpack(">h", handshake[:2])[0] != 0:
            return None
        token = b"\0" + user.encode() + b"\0" + password.encode()
        self.sock.sendall(struct.pack(">i", len(token)) + token)
        head = self._read(4)
        return struct.unpack(">i", head)[0] if head else None

    def metadata(self):
        """Metadata v1 of no topics: the answer's bytes, or None when the connection closed."""
        return self.request(3, 1, struct.pack(">i", 0))

    def close(self):
        self.sock.close()


def main():
    binary = sys.argv[1]
    work = work_dir("oxbow-sasl-")
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
        franz_go_roundtrip(broker, sasl_ssl, "SCRAM-SHA-512", ca[1], 300)
        refused = franz_go_refused(broker, sasl_ssl, "SCRAM-SHA-512", ca[1])
        log("ok franz-go SCRAM-SHA-512 over SASL_SSL (certificate verified for 127.0.0.1): admin, idempotent "
            "producer and group consumer as alice round-tripped 300 records and committed; a wrong password: "
            f"{refused.splitlines()[-1][:200]}")

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

        failures = lambda: metric_sum(broker, "oxbow_server_authentication_failures_total",  # noqa: E731
                                      listener="SASL_PLAINTEXT")
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
        mechanisms_and_reauth(work, broker, listeners, admin, sasl, sasl_ssl, sasl_port, ca)
        signed_tokens(work, broker, listeners, sasl, roundtrip, authentication_error)
        broker.stop()
        replication_over_sasl(binary, work, ca)
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


def mechanisms_and_reauth(work, broker, listeners, admin, sasl, sasl_ssl, sasl_port, ca):
    """PLAIN and OAUTHBEARER beside SCRAM, and KIP-368 re-authentication every 2 s."""
    tool("kafka-configs", "--bootstrap-server", admin, "--alter", "--entity-type", "users", "--entity-name",
         "bob", "--add-config", "SCRAM-SHA-256=[password=bob-secret]")
    broker.stop()
    broker.start(listeners, "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN,OAUTHBEARER",
                 "connections.max.reauth.ms=2000")
    plain = client_config(sasl_ssl, "PLAIN", "alice", "alice-secret", ca[1])
    problem = roundtrip(plain, "sasl-plain-mech", 100)
    if problem:
        fail(f"librdkafka PLAIN over SASL_SSL: {problem}", broker)
    wrong = authentication_error(client_config(sasl_ssl, "PLAIN", "alice", "guess", ca[1]))
    if wrong is None or "Invalid username or password" not in wrong:
        fail(f"PLAIN with a wrong password: {wrong}", broker)
    log("ok librdkafka PLAIN over SASL_SSL as alice (checked against her SCRAM-SHA-256 credential): 100 records; "
        "a wrong password is refused (Invalid username or password)")
    franz_go_roundtrip(broker, sasl_ssl, "PLAIN", ca[1], 300)
    refused = franz_go_refused(broker, sasl_ssl, "PLAIN", ca[1])
    log("ok franz-go PLAIN over SASL_SSL as alice: 300 records round-tripped and committed; a wrong password: "
        f"{refused.splitlines()[-1][:200]}")

    oauth = {"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
             "enable.sasl.oauthbearer.unsecure.jwt": True, "sasl.oauthbearer.config": "principal=carol",
             "log_level": 2}
    problem = roundtrip(oauth, "sasl-oauth", 100)
    if problem:
        fail(f"librdkafka OAUTHBEARER (unsecured JWT): {problem}", broker)
    properties = os.path.join(work, "java-oauth.properties")
    with open(properties, "w") as f:
        f.write("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
                "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                'unsecuredLoginStringClaim_sub="dave";\n')
    consumed = tool("kafka-console-consumer", "--bootstrap-server", sasl, "--consumer.config", properties,
                    "--topic", "sasl-oauth", "--from-beginning", "--max-messages", "100", "--timeout-ms", "30000")
    if len([line for line in consumed.stdout.splitlines() if line.startswith("sasl-oauth-")]) != 100:
        fail(f"the Java console consumer with OAUTHBEARER: {consumed.stdout[-400:]} {consumed.stderr[-400:]}", broker)
    with open(broker.log_path) as f:
        principals = {line.split("principal=")[1].split()[0] for line in f if "SASL authenticated" in line}
    if not {"User:carol", "User:dave"} <= principals:
        fail(f"OAUTHBEARER principals {principals}", broker)
    log("ok OAUTHBEARER with unsecured tokens: librdkafka as User:carol produced and read 100 records, the Java "
        "console consumer (OAuthBearerLoginModule) as User:dave read them")

    # KIP-368: a session of 2 s. librdkafka re-authenticates on its open connection.
    logins = lambda: metric_sum(broker, "oxbow_server_authentications_total",  # noqa: E731
                                listener="SASL_PLAINTEXT", mechanism="SCRAM-SHA-256")
    before = logins()
    from confluent_kafka import Producer
    errors = []
    producer = Producer({**client_config(sasl, "SCRAM-SHA-256", "alice", "alice-secret"),
                         "on_delivery": lambda e, m: e and errors.append(str(e))})
    # poll() returns at the first delivery report: the pace comes from sleeping.
    for i in range(80):
        producer.produce("sasl-reauth", value=f"r-{i}".encode())
        producer.poll(0)
        time.sleep(0.1)
    if producer.flush(30) != 0 or errors:
        fail(f"a producer across re-authentications: {errors[:3]}", broker)
    after = logins()
    if after - before < 3:
        fail(f"{after - before:.0f} SCRAM-SHA-256 authentications over 8 s with 2 s sessions", broker)
    log(f"ok connections.max.reauth.ms=2000: a librdkafka producer sent 80 records over 8 s without an error, "
        f"authenticating {after - before:.0f} times (oxbow_server_authentications_total)")

    raw = RawConnection(sasl_port)
    code, message, session = raw.plain("alice", "alice-secret")
    if code != 0 or session != 2000:
        fail(f"PLAIN by hand: {code} {message} session {session}", broker)
    code, message, _ = raw.plain("bob", "bob-secret")
    if code != 58 or "Cannot change principals" not in (message or ""):
        fail(f"re-authenticating as bob: {code} {message}", broker)
    if raw.metadata() is not None:
        fail("the connection stayed open after a refused re-authentication", broker)
    raw.close()
    raw = RawConnection(sasl_port)
    if raw.plain_v0("alice", "alice-secret") != 0 or raw.metadata() is None:
        fail("SaslHandshake v0 with a raw PLAIN token did not authenticate", broker)
    raw.close()
    raw = RawConnection(sasl_port)
    if raw.plain_v0("alice", "guess") is not None:
        fail("a wrong raw PLAIN token was answered", broker)
    raw.close()
    log("ok SaslHandshake v0 with raw tokens (what librdkafka before 2.10 needs listed): a raw PLAIN token "
        "authenticates, a wrong one closes the connection")
    raw = RawConnection(sasl_port)
    raw.plain("alice", "alice-secret")
    if raw.metadata() is None:
        fail("an authenticated connection was not served", broker)
    time.sleep(2.5)
    if raw.metadata() is not None:
        fail("a request after the session expired was answered", broker)
    raw.close()
    log("ok refused: re-authenticating as another principal (SASL_AUTHENTICATION_FAILED: Cannot change principals "
        "during re-authentication), a request after the session expired (connection closed)")


if __name__ == "__main__":
    main()
