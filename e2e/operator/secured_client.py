#!/usr/bin/env python3
"""A librdkafka client (confluent-kafka) of a secured Cluster, as one User: prints one JSON
line {"ok", "count", "errors"} where errors are Kafka error names (TOPIC_AUTHORIZATION_FAILED,
SASL_AUTHENTICATION_FAILED, ...), so a test can tell an allowed action from a refused one.

usage: secured_client.py produce BOOTSTRAP TOPIC COUNT AUTH...
       secured_client.py consume BOOTSTRAP TOPIC GROUP COUNT AUTH...
       secured_client.py produce-until BOOTSTRAP TOPIC STOP_FILE AUTH...
AUTH:  scram MECHANISM USER PASSWORD CA_FILE   (SASL_SSL)
       tls CERT_FILE KEY_FILE CA_FILE          (SSL with a client certificate)
       oauth TOKEN_FILE CA_FILE                (SASL_SSL, OAUTHBEARER with the token in the file)
       none CA_FILE                            (SSL, no credentials)
produce: COUNT records with acks=all; ok when every one is acknowledged.
consume: from the beginning in GROUP until COUNT records, then commits; ok when COUNT records
         were read and the commit succeeded.
produce-until: acks=all records until STOP_FILE exists, with a new producer (new connections,
         new TLS handshakes) every 2 s; writes the acknowledged count to STOP_FILE.progress as it
         goes; ok when every record sent was acknowledged ("failed" counts the others)."""
import json, os, sys, time, uuid
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer


def security(args):
    kind = args[0]
    if kind == "scram":
        mechanism, user, password, ca = args[1:5]
        return {"security.protocol": "SASL_SSL", "sasl.mechanisms": mechanism,
                "sasl.username": user, "sasl.password": password, "ssl.ca.location": ca}
    if kind == "tls":
        cert, key, ca = args[1:4]
        return {"security.protocol": "SSL", "ssl.certificate.location": cert,
                "ssl.key.location": key, "ssl.ca.location": ca}
    if kind == "oauth":
        token_file, ca = args[1:3]
        with open(token_file) as source:
            token = source.read().strip()
        return {"security.protocol": "SASL_SSL", "sasl.mechanisms": "OAUTHBEARER",
                "oauth_cb": lambda _config: (token, time.time() + 3600), "ssl.ca.location": ca}
    if kind == "none":
        return {"security.protocol": "SSL", "ssl.ca.location": args[1]}
    raise SystemExit(f"unknown AUTH {kind}")


def main():
    command, bootstrap = sys.argv[1], sys.argv[2]
    # librdkafka's own log of the refusals a test provokes on purpose would bury the result;
    # SECURED_CLIENT_LOG=7 brings it back.
    quiet = {"log_level": int(os.environ.get("SECURED_CLIENT_LOG", "0"))}
    errors, transport = [], []

    def on_error(error):
        # Transport hiccups (a broker's connection closing) are not the answer sought; kept
        # apart for the reader of a failure.
        if error.code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
            transport.append(error.str())
        else:
            errors.append(error.name())

    if command == "produce":
        topic, count, auth = sys.argv[3], int(sys.argv[4]), sys.argv[5:]
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                             "message.timeout.ms": 20000, "error_cb": on_error, **quiet, **security(auth)})
        acked = []

        def delivered(error, message):
            if error is None:
                acked.append(message.offset())
            else:
                errors.append(error.name())

        for i in range(count):
            producer.produce(topic, value=f"{uuid.uuid4()}-{i}".encode(), on_delivery=delivered)
            producer.poll(0)
        deadline = time.time() + 30
        while len(acked) + len([e for e in errors if e]) < count and time.time() < deadline:
            producer.flush(1)
            if not acked and any("AUTHENTICATION" in e for e in errors):
                break
        result = {"ok": len(acked) == count and not errors, "count": len(acked)}
    elif command == "produce-until":
        topic, stop_file, auth = sys.argv[3], sys.argv[4], sys.argv[5:]
        acked, failed = [0], []

        def delivered(error, message):
            if error is None:
                acked[0] += 1
            else:
                failed.append(error.name())

        sent = 0
        while not os.path.exists(stop_file):
            producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                 "message.timeout.ms": 30000, "error_cb": on_error,
                                 **quiet, **security(auth)})
            until = time.time() + 2
            while time.time() < until and not os.path.exists(stop_file):
                producer.produce(topic, value=f"{uuid.uuid4()}".encode(), on_delivery=delivered)
                sent += 1
                producer.poll(0.01)
            producer.flush(40)
            with open(stop_file + ".progress", "w") as out:
                out.write(str(acked[0]))
        errors.extend(failed)
        result = {"ok": acked[0] == sent and not failed, "count": acked[0], "sent": sent,
                  "failed": len(failed) + (sent - acked[0] - len(failed))}
    elif command == "consume":
        topic, group, count, auth = sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6:]
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "error_cb": on_error, **quiet, **security(auth)})
        consumer.subscribe([topic])
        got = 0
        deadline = time.time() + 40
        while got < count and time.time() < deadline and not errors:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                if message.error().code() != KafkaError._PARTITION_EOF:
                    errors.append(message.error().name())
                continue
            got += 1
        committed = False
        if got:
            try:
                consumer.commit(asynchronous=False)
                committed = True
            except KafkaException as error:
                errors.append(error.args[0].name())
        consumer.close()
        result = {"ok": got >= count and committed and not errors, "count": got}
    else:
        raise SystemExit(__doc__)
    result["errors"] = sorted(set(errors))
    result["transport"] = sorted(set(transport))[:3]
    print(json.dumps(result))


main()
