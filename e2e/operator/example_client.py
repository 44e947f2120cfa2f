#!/usr/bin/env python3
"""Client steps of the shipped-example suite (e2e/suites/73-operator-example.sh), run inside a
pod of the cluster (k8s_pod_exec), so that every address is a cluster DNS name.

usage: example_client.py metadata ADDRESS
           JSON of one broker's own view: cluster id, controller, brokers and racks, and each
           partition's leader, replicas and ISR. Metadata v2 is written by hand (a request of
           five fields) so that the answer is exactly that broker's, not whichever broker a
           client library picks.
       example_client.py produce-until BOOTSTRAP TOPIC STOP_FILE ACKED_FILE
           kafka-python producer, acks=all, retries on: sends until STOP_FILE exists, appends
           every acknowledged value to ACKED_FILE and writes ACKED_FILE.summary (JSON: acked,
           failed, p99_ms, max_ms of the sends); exit 1 if a send failed for good.
       example_client.py consume-follow BOOTSTRAP TOPIC GROUP STOP_FILE
           a consumer group member following TOPIC until STOP_FILE exists; writes
           STOP_FILE.stall (JSON: consumed, longest_stall_s between two received records).
       example_client.py consume-all BOOTSTRAP TOPIC ACKED_FILE
           consumes TOPIC from the beginning until every value in ACKED_FILE was seen.
       example_client.py consume-some BOOTSTRAP TOPIC GROUP COUNT
           a member of consumer group GROUP consumes COUNT records, commits and leaves: the
           group then lags by whatever is produced after it."""
import json
import os
import socket
import struct
import sys
import time
import uuid


def metadata(address):
    host, port = address.rsplit(":", 1)
    client_id = b"oxbow-e2e-example"
    # Metadata v2 request: header v1 (api key 3, version 2, correlation id, client id) and
    # topics = null (all topics).
    body = struct.pack(">hhih", 3, 2, 7, len(client_id)) + client_id + struct.pack(">i", -1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)

        def read(n):
            data = b""
            while len(data) < n:
                chunk = sock.recv(n - len(data))
                if not chunk:
                    raise SystemExit("connection closed by %s" % address)
                data += chunk
            return data

        size = struct.unpack(">i", read(4))[0]
        buf, pos = read(size), 0

    def take(fmt):
        nonlocal pos
        values = struct.unpack_from(fmt, buf, pos)
        pos += struct.calcsize(fmt)
        return values[0] if len(values) == 1 else values

    def string():
        nonlocal pos
        n = take(">h")
        if n < 0:
            return None
        value = buf[pos:pos + n].decode()
        pos += n
        return value

    def ints():
        return [take(">i") for _ in range(take(">i"))]

    if take(">i") != 7:
        raise SystemExit("correlation id mismatch from %s" % address)
    brokers = {}
    for _ in range(take(">i")):
        node, host_, port_ = take(">i"), string(), take(">i")
        brokers[node] = {"host": host_, "port": port_, "rack": string()}
    cluster_id, controller = string(), take(">i")
    topics = {}
    for _ in range(take(">i")):
        error, name, internal = take(">h"), string(), take(">b")
        parts = []
        for _ in range(take(">i")):
            perror, index, leader = take(">h"), take(">i"), take(">i")
            parts.append({"partition": index, "error": perror, "leader": leader,
                          "replicas": ints(), "isr": ints()})
        topics[name] = {"error": error, "internal": bool(internal),
                        "partitions": sorted(parts, key=lambda p: p["partition"])}
    return {"cluster_id": cluster_id, "controller": controller, "brokers": brokers, "topics": topics}


def produce_until(bootstrap, topic, stop_file, acked_file):
    from kafka import KafkaProducer
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=2147483647,
                             request_timeout_ms=10000, delivery_timeout_ms=120000,
                             max_in_flight_requests_per_connection=1, linger_ms=5)
    failed = 0
    latencies = []
    with open(acked_file, "a") as out:
        while not os.path.exists(stop_file):
            value = str(uuid.uuid4())
            started = time.monotonic()
            try:
                producer.send(topic, value=value.encode()).get(timeout=120)
            except Exception as e:  # a send that failed after all its retries
                failed += 1
                print("send failed: %s" % e, file=sys.stderr)
                continue
            latencies.append((time.monotonic() - started) * 1000)
            out.write(value + "\n")
            out.flush()
            time.sleep(0.02)
    producer.close()
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99)] if latencies else 0
    summary = {"acked": len(latencies), "failed": failed,
               "p99_ms": round(p99), "max_ms": round(latencies[-1]) if latencies else 0}
    with open(acked_file + ".summary", "w") as out:
        json.dump(summary, out)
    sys.exit(1 if failed else 0)


def consume_follow(bootstrap, topic, group, stop_file):
    """A consumer group member that follows TOPIC until STOP_FILE exists; writes the longest
    gap between two records it received (the stall a client sees) to STOP_FILE.stall."""
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=True)
    last, longest, got = None, 0.0, 0
    while not os.path.exists(stop_file):
        for records in consumer.poll(timeout_ms=500).values():
            now = time.monotonic()
            if records and last is not None:
                longest = max(longest, now - last)
            if records:
                last, got = now, got + len(records)
    consumer.close()
    with open(stop_file + ".stall", "w") as out:
        json.dump({"consumed": got, "longest_stall_s": round(longest, 1)}, out)


def consume_all(bootstrap, topic, acked_file):
    from kafka import KafkaConsumer
    want = set(open(acked_file).read().split())
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=30000)
    seen = set()
    deadline = time.time() + 120
    for message in consumer:
        seen.add(message.value.decode(errors="replace"))
        if want <= seen or time.time() > deadline:
            break
    consumer.close()
    missing = len(want - seen)
    print("acknowledged %d, consumed %d of them" % (len(want), len(want) - missing))
    sys.exit(1 if missing else 0)


def consume_some(bootstrap, topic, group, count):
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=30000)
    got = 0
    for _ in consumer:
        got += 1
        if got >= int(count):
            break
    consumer.commit()
    consumer.close()
    print("group %s consumed and committed %d records of %s" % (group, got, topic))
    sys.exit(0 if got >= int(count) else 1)


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "metadata":
        print(json.dumps(metadata(args[0])))
    elif command == "produce-until":
        produce_until(*args)
    elif command == "consume-all":
        consume_all(*args)
    elif command == "consume-some":
        consume_some(*args)
    elif command == "consume-follow":
        consume_follow(*args)
    else:
        raise SystemExit(__doc__)
