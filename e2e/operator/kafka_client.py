#!/usr/bin/env python3
"""Real Kafka client (kafka-python) steps of the operator flow.
usage: kafka_client.py BOOTSTRAP produce-consume TOPIC COUNT
       kafka_client.py BOOTSTRAP topics                 (prints topic names)
       kafka_client.py BOOTSTRAP supports API_KEY       (exit 0 if the broker offers the API)
       kafka_client.py BOOTSTRAP config TOPIC KEY       (prints the topic config value)
       kafka_client.py BOOTSTRAP broker-config ID KEY   (prints broker ID's config, asked of it)"""
import sys, time, uuid
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType

bootstrap, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
common = dict(bootstrap_servers=bootstrap, request_timeout_ms=20000)

if command == "produce-consume":
    topic, count = args[0], int(args[1])
    producer = KafkaProducer(acks="all", linger_ms=5, **common)
    sent = [f"{uuid.uuid4()}-{i}".encode() for i in range(count)]
    for value in sent:
        producer.send(topic, value=value)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=20000, **common)
    got = set()
    deadline = time.time() + 60
    for message in consumer:
        got.add(message.value)
        if len(got & set(sent)) == count or time.time() > deadline:
            break
    consumer.close()
    missing = count - len(got & set(sent))
    print(f"produced {count}, consumed {count - missing} of them")
    sys.exit(1 if missing else 0)
elif command == "topics":
    admin = KafkaAdminClient(**common)
    print("\n".join(sorted(admin.list_topics())))
elif command == "supports":
    # ApiVersions v0 by hand: is API key N offered by the broker?
    import socket, struct
    host, port = bootstrap.rsplit(":", 1)
    client_id = b"oxbow-e2e"
    body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        def read(n):
            data = b""
            while len(data) < n:
                chunk = sock.recv(n - len(data))
                if not chunk:
                    raise SystemExit("connection closed")
                data += chunk
            return data
        (size,) = struct.unpack(">i", read(4))
        payload = read(size)
    _, error, count = struct.unpack(">ihi", payload[:10])
    keys = {struct.unpack(">hhh", payload[10 + 6 * i:16 + 6 * i])[0] for i in range(count)}
    sys.exit(0 if int(args[0]) in keys else 1)
elif command == "config":
    admin = KafkaAdminClient(**common)
    result = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, args[0], configs=[args[1]])])
    print(result)
elif command == "broker-config":
    # kafka-python sends a broker's own configs request to that broker, as Kafka's tools do.
    admin = KafkaAdminClient(**common)
    result = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, args[0], configs=[args[1]])])
    print(result)
else:
    sys.exit(f"unknown command {command}")
