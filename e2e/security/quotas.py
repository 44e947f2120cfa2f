"""Client quotas with Kafka's tools and a real client (issue 33, point 5).

- Kafka's `kafka-configs --alter --entity-type clients|users` sets quotas
  (AlterClientQuotas) and `--describe` lists them (DescribeClientQuotas); a negative rate
  and an unknown key are refused with Kafka's INVALID_REQUEST;
- a librdkafka producer with client.id `limited` (producer_byte_rate 1 MiB/s) writes as
  fast as it can for 30 s: it must average within ±10 % of 1 MiB/s, receive
  throttle_time_ms (librdkafka's throttle callback), while a producer with another client
  id is not held back;
- a consumer under users/<default> consumer_byte_rate=512 KiB/s reads no faster than that
  (+10 %) and is told it was throttled;
- throttles are counted in oxbow_server_quota_throttle_ms_total{quota}.

Usage: quotas.py BROKER_BINARY
"""

import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from oxbow_e2e import Broker  # noqa: E402
from common import fail, log, tool, work_dir  # noqa: E402

QUOTA = 1024 * 1024
READ_QUOTA = 512 * 1024
VALUE = b"q" * 1000



def produce_for(bootstrap, client_id, topic, seconds):
    """(payload bytes acknowledged per second over `seconds`, throttle callbacks seen)."""
    from confluent_kafka import Producer
    acked = [0]
    throttles = []

    def on_delivery(error, message):
        if error is None:
            acked[0] += len(message.value())

    # The Java producer's batch size: a 1 MB batch is a whole second of this quota, and a
    # request is counted only once it has arrived (Kafka's sensors work the same way).
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "acks": "1", "linger.ms": 5,
                         "batch.size": 16384,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time),
                         "on_delivery": on_delivery, "queue.buffering.max.kbytes": 4096})
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        try:
            producer.produce(topic, value=VALUE)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    # What was acknowledged within the window counts; the queue left is abandoned.
    producer.poll(0)
    elapsed = time.monotonic() - start
    rate = acked[0] / elapsed
    producer.purge()
    producer.flush(5)
    return rate, throttles


def consume_for(bootstrap, client_id, topic, seconds):
    from confluent_kafka import Consumer
    throttles = []
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": client_id, "group.id": f"{client_id}-group",
                         "auto.offset.reset": "earliest", "fetch.max.bytes": 1048576,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    consumer.subscribe([topic])
    read = 0
    first = None
    while True:
        for message in consumer.consume(1000, timeout=0.5):
            if message.error() is None:
                first = first or time.monotonic()
                read += len(message.value())
        if first and time.monotonic() - first >= seconds:
            break
    rate = read / (time.monotonic() - first)
    consumer.close()
    return rate, throttles


def main():
    binary = sys.argv[1]
    work = work_dir("oxbow-quotas-")
    broker = Broker(binary, workdir=os.path.join(work, "broker"))
    os.environ["RUST_LOG"] = "info,openraft=off"
    broker.start()
    bootstrap = f"127.0.0.1:{broker.port}"
    admin = ["--bootstrap-server", bootstrap]
    try:
        tool("kafka-configs", *admin, "--alter", "--entity-type", "clients", "--entity-name", "limited",
             "--add-config", f"producer_byte_rate={QUOTA}", broker=broker)
        tool("kafka-configs", *admin, "--alter", "--entity-type", "users", "--entity-default",
             "--add-config", f"consumer_byte_rate={READ_QUOTA},request_percentage=200", broker=broker)
        described = tool("kafka-configs", *admin, "--describe", "--entity-type", "clients", "--entity-name",
                         "limited", broker=broker).stdout
        if f"producer_byte_rate={float(QUOTA)}" not in described:
            fail(f"kafka-configs --describe clients limited: {described}", broker)
        defaults = tool("kafka-configs", *admin, "--describe", "--entity-type", "users", "--entity-default",
                        broker=broker).stdout
        if f"consumer_byte_rate={float(READ_QUOTA)}" not in defaults:
            fail(f"kafka-configs --describe users default: {defaults}", broker)
        log(f"ok kafka-configs set and described quotas: {described.strip()} / {defaults.strip()}")

        negative = tool("kafka-configs", *admin, "--alter", "--entity-type", "clients", "--entity-name", "x",
                        "--add-config", "producer_byte_rate=-5", check=False)
        # (kafka-configs refuses unknown keys itself; the broker's own check of them is a unit test.)
        text = negative.stdout + negative.stderr
        if negative.returncode == 0 or "InvalidRequestException" not in text or "greater than 0" not in text:
            fail(f"a negative rate was not refused by the broker: {text[-600:]}", broker)
        after = tool("kafka-configs", *admin, "--describe", "--entity-type", "clients", "--entity-name", "x",
                     broker=broker).stdout
        if "producer_byte_rate" in after:
            fail(f"a refused quota was stored: {after}", broker)
        log("ok producer_byte_rate=-5 refused by the broker (InvalidRequestException: Quota producer_byte_rate must "
            "be greater than 0), nothing stored")

        tool("kafka-topics", *admin, "--create", "--topic", "quota", "--partitions", "1", "--replication-factor",
             "1", broker=broker)
        rate, throttles = produce_for(bootstrap, "limited", "quota", 30)
        if abs(rate - QUOTA) > 0.10 * QUOTA:
            fail(f"the limited producer averaged {rate / QUOTA:.3f} MiB/s over 30 s (quota 1 MiB/s)", broker)
        if not throttles:
            fail("the limited producer never received throttle_time_ms", broker)
        free_rate, free_throttles = produce_for(bootstrap, "free", "quota", 5)
        if free_rate < 3 * QUOTA or free_throttles:
            fail(f"an unlimited producer: {free_rate / QUOTA:.2f} MiB/s, throttles {free_throttles[:3]}", broker)
        log(f"ok producer_byte_rate 1 MiB/s: client limited averaged {rate / QUOTA:.3f} MiB/s over 30 s with "
            f"{len(throttles)} throttles (longest {max(throttles):.2f} s); client free {free_rate / QUOTA:.1f} MiB/s "
            "unthrottled")

        read_rate, read_throttles = consume_for(bootstrap, "reader", "quota", 20)
        if read_rate > 1.10 * READ_QUOTA or not read_throttles:
            fail(f"the consumer under users/<default> consumer_byte_rate: {read_rate / 1024:.0f} KiB/s, "
                 f"{len(read_throttles)} throttles", broker)
        log(f"ok consumer_byte_rate 512 KiB/s (users/<default>): read {read_rate / 1024:.0f} KiB/s over 20 s, "
            f"{len(read_throttles)} throttles")

        produced = broker.metric("oxbow_server_quota_throttle_ms_total", quota="produce") or 0
        fetched = broker.metric("oxbow_server_quota_throttle_ms_total", quota="fetch") or 0
        if produced <= 0 or fetched <= 0:
            fail(f"oxbow_server_quota_throttle_ms_total produce {produced} fetch {fetched}", broker)
        log(f"ok oxbow_server_quota_throttle_ms_total: produce {produced:.0f} ms, fetch {fetched:.0f} ms")
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
