#!/usr/bin/env python3
"""Real Kafka client (kafka-python) steps of the operator flow.
usage: kafka_client.py BOOTSTRAP produce-consume TOPIC COUNT
       kafka_client.py BOOTSTRAP topics                 (prints topic names)
       kafka_client.py BOOTSTRAP supports API_KEY       (exit 0 if the broker offers the API)
       kafka_client.py BOOTSTRAP config TOPIC KEY       (prints the topic config value)
       kafka_client.py BOOTSTRAP broker-config ID KEY   (prints broker ID's config, asked of it)
       kafka_client.py BOOTSTRAP await-broker-config ID KEY VALUE SECONDS
                       (asks broker ID every 0.2 s until KEY is VALUE: prints it, exit 0;
                        exit 1 with the last answer or error after SECONDS)"""
import os, sys, time, uuid
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
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from kafka_wire import api_keys
    host, port = bootstrap.rsplit(":", 1)
    sys.exit(0 if int(args[0]) in api_keys(host, int(port)) else 1)
elif command == "config":
    admin = KafkaAdminClient(**common)
    result = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, args[0], configs=[args[1]])])
    print(result)
elif command == "broker-config":
    # kafka-python sends a broker's own configs request to that broker, as Kafka's tools do.
    admin = KafkaAdminClient(**common)
    result = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, args[0], configs=[args[1]])])
    print(result)
elif command == "await-broker-config":
    node, key, wanted, seconds = args[0], args[1], args[2], float(args[3])
    admin = KafkaAdminClient(**common)
    deadline, last = time.time() + seconds, "nothing asked yet"
    while time.time() < deadline:
        try:
            # kafka-python 3: {resource type: {name: {key: {"value": ..., ...}}}}
            result = admin.describe_configs(
                [ConfigResource(ConfigResourceType.BROKER, node, configs=[key])], config_filter="all")
            entry = result.get("broker", {}).get(node, {}).get(key)
            value = entry.get("value") if isinstance(entry, dict) else entry
            last = f"{key}={value!r}"
            if value == wanted:
                print(last)
                sys.exit(0)
        except Exception as error:  # the broker may not be known yet, or gone
            last = f"{type(error).__name__}: {error}"
        time.sleep(0.2)
    sys.exit(f"broker {node} never had {key}={wanted} within {seconds:.0f} s; last: {last}")
else:
    sys.exit(f"unknown command {command}")
