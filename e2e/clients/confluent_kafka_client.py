"""confluent-kafka (librdkafka) side of the client suite: one JSON job on stdin, one JSON
result on stdout (see roundtrip.py for the format)."""
import base64
import json
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition


def b64(data):
    return None if data is None else base64.b64encode(data).decode()


def unb64(text):
    return None if text is None else base64.b64decode(text)


def produce(job):
    producer = Producer({
        "bootstrap.servers": job["bootstrap"],
        "compression.type": job["compression"],
        "enable.idempotence": job.get("idempotent", True),
        "acks": "all",
        "linger.ms": 5,
        # Let the client send what the broker must refuse.
        "message.max.bytes": 4_000_000,
        "batch.size": 4_000_000,
    })
    results = [None] * len(job["messages"])

    def report(index):
        def callback(error, message):
            if error is None:
                results[index] = {"offset": message.offset()}
            elif error.code() == KafkaError.MSG_SIZE_TOO_LARGE:
                results[index] = {"error": "MESSAGE_TOO_LARGE"}
            else:
                results[index] = {"error": str(error)}
        return callback

    for index, message in enumerate(job["messages"]):
        producer.produce(
            job["topic"], partition=0, key=unb64(message["key"]), value=unb64(message["value"]),
            headers=[(k, unb64(v)) for k, v in message["headers"]],
            timestamp=message["timestamp"], on_delivery=report(index))
        producer.poll(0)
    remaining = producer.flush(60)
    if remaining:
        raise SystemExit(f"{remaining} messages not delivered within 60 s")
    return {"results": results}


def consume(job):
    consumer = Consumer({
        "bootstrap.servers": job["bootstrap"],
        "group.id": "oxbow-client-suite",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "check.crcs": True,
    })
    consumer.assign([TopicPartition(job["topic"], 0, OFFSET_BEGINNING)])
    messages = []
    deadline = time.monotonic() + 60
    while len(messages) < job["count"]:
        if time.monotonic() > deadline:
            raise SystemExit(f"{len(messages)} of {job['count']} messages after 60 s")
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            raise SystemExit(f"consume error: {message.error()}")
        timestamp_type, timestamp = message.timestamp()
        messages.append({
            "offset": message.offset(),
            "key": b64(message.key()),
            "value": b64(message.value()),
            "headers": [[k, b64(v)] for k, v in (message.headers() or [])],
            "timestamp": timestamp,
            "create_time": timestamp_type == 1,
        })
    consumer.close()
    return {"messages": messages}


if __name__ == "__main__":
    job = json.load(sys.stdin)
    json.dump(produce(job) if job["op"] == "produce" else consume(job), sys.stdout)
