"""kafka-python side of the client suite: one JSON job on stdin, one JSON result on stdout
(see roundtrip.py for the format)."""
import base64
import json
import sys
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import MessageSizeTooLargeError


def b64(data):
    return None if data is None else base64.b64encode(data).decode()


def unb64(text):
    return None if text is None else base64.b64decode(text)


def produce(job):
    compression = None if job["compression"] == "none" else job["compression"]
    producer = KafkaProducer(
        bootstrap_servers=job["bootstrap"], compression_type=compression, acks="all",
        enable_idempotence=job.get("idempotent", True), linger_ms=5,
        # Let the client send what the broker must refuse.
        max_request_size=4_000_000, batch_size=4_000_000)
    futures = [
        producer.send(job["topic"], partition=0, key=unb64(m["key"]), value=unb64(m["value"]),
                      headers=[(k, unb64(v)) for k, v in m["headers"]],
                      timestamp_ms=m["timestamp"])
        for m in job["messages"]
    ]
    producer.flush(60)
    results = []
    for future in futures:
        try:
            results.append({"offset": future.get(timeout=60).offset})
        except MessageSizeTooLargeError:
            results.append({"error": "MESSAGE_TOO_LARGE"})
        except Exception as error:  # reported, the orchestrator decides
            results.append({"error": f"{type(error).__name__}: {error}"})
    producer.close(10)
    return {"results": results}


def consume(job):
    consumer = KafkaConsumer(
        bootstrap_servers=job["bootstrap"], group_id=None, enable_auto_commit=False,
        check_crcs=True, max_partition_fetch_bytes=2 * 1024 * 1024)
    partition = TopicPartition(job["topic"], 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    messages = []
    deadline = time.monotonic() + 60
    while len(messages) < job["count"]:
        if time.monotonic() > deadline:
            raise SystemExit(f"{len(messages)} of {job['count']} messages after 60 s")
        for records in consumer.poll(timeout_ms=500).values():
            for record in records:
                messages.append({
                    "offset": record.offset,
                    "key": b64(record.key),
                    "value": b64(record.value),
                    "headers": [[k, b64(v)] for k, v in record.headers],
                    "timestamp": record.timestamp,
                    "create_time": record.timestamp_type == 0,
                })
    consumer.close()
    return {"messages": messages[:job["count"]]}


if __name__ == "__main__":
    job = json.load(sys.stdin)
    json.dump(produce(job) if job["op"] == "produce" else consume(job), sys.stdout)
