"""Transactions with librdkafka (confluent-kafka) against one real Oxbow broker:

1. commit and abort across three partitions: a read_committed consumer sees exactly the
   committed records, a read_uncommitted one every record;
2. an open transaction holds read_committed consumers at its first offset (even records
   written after it by others) until it commits;
3. consume-transform-produce with the group's offsets in the transaction
   (send_offsets_to_transaction), every third transaction aborted and redone: the output
   holds every input record exactly once and the group's committed offsets are the ends;
4. a second producer with the same transactional.id fences the first, whose open
   transaction is aborted;
5. a transaction past transaction.timeout.ms is aborted by the coordinator;
6. SIGKILL and restart: committed transactions stay visible, the coordinator reloads
   the id and a new producer session commits.

Numbers of records and partitions are small; every check reads back every record."""

import os
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from oxbow_e2e import Broker, fail, wait_for  # noqa: E402

from confluent_kafka import (  # noqa: E402
    OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

PARTITIONS = 3


def create_topic(bootstrap, name, partitions=PARTITIONS):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, num_partitions=partitions,
                                                replication_factor=1)]).values():
        future.result(30)


def txn_producer(bootstrap, transactional_id, **extra):
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": transactional_id,
        "linger.ms": 5,
        **extra,
    })
    producer.init_transactions(30)
    return producer


def send(producer, topic, values):
    for i, value in enumerate(values):
        producer.produce(topic, key=str(i).encode(), value=value.encode())
    producer.flush(30)


def read_all(bootstrap, topic, isolation, expect=None, idle=3.0, timeout=60.0):
    """Every data record of `topic` from the beginning, as strings, reading until `expect`
    records arrived (or, without `expect`, until nothing came for `idle` seconds)."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"reader-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "isolation.level": isolation,
    })
    # Assigned, not subscribed: no group join to wait for before the first record.
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    values = []
    deadline = time.monotonic() + timeout
    last = time.monotonic()
    while time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is None or message.error():
            if expect is None and time.monotonic() - last > idle:
                break
            continue
        values.append(message.value().decode())
        last = time.monotonic()
        if expect is not None and len(values) >= expect:
            # Anything beyond what was expected would be a defect: look a little longer.
            extra_deadline = time.monotonic() + 1.0
            while time.monotonic() < extra_deadline:
                more = consumer.poll(0.2)
                if more is not None and not more.error():
                    values.append(more.value().decode())
            break
    consumer.close()
    return values


def check_same(what, got, expected):
    if sorted(got) != sorted(expected):
        missing = sorted(set(expected) - set(got))[:5]
        extra = sorted(set(got) - set(expected))[:5]
        dupes = len(got) - len(set(got))
        fail(f"{what}: {len(got)} records, expected {len(expected)}; missing {missing}, "
             f"unexpected {extra}, duplicates {dupes}")


def commit_and_abort(bootstrap):
    topic = "txn-basic"
    create_topic(bootstrap, topic)
    producer = txn_producer(bootstrap, "tx-basic")
    committed = []
    for round_, commit in enumerate([True, False, True, False, True]):
        values = [f"r{round_}-{i}" for i in range(30)]
        producer.begin_transaction()
        send(producer, topic, values)
        if commit:
            producer.commit_transaction(30)
            committed += values
        else:
            producer.abort_transaction(30)
    check_same("read_committed after commit/abort", read_all(bootstrap, topic, "read_committed",
                                                               expect=len(committed)), committed)
    everything = read_all(bootstrap, topic, "read_uncommitted", expect=150)
    if len(everything) != 150:
        fail(f"read_uncommitted saw {len(everything)} of 150 records")
    print(f"ok 1 - 3 committed and 2 aborted transactions over {PARTITIONS} partitions: "
          f"read_committed saw exactly the {len(committed)} committed records, read_uncommitted all 150")


def open_transaction_blocks(bootstrap):
    topic = "txn-open"
    create_topic(bootstrap, topic)
    producer = txn_producer(bootstrap, "tx-open")
    producer.begin_transaction()
    opened = [f"open-{i}" for i in range(20)]
    send(producer, topic, opened)
    plain = Producer({"bootstrap.servers": bootstrap})
    after = [f"after-{i}" for i in range(20)]
    send(plain, topic, after)
    seen = read_all(bootstrap, topic, "read_committed", idle=3.0)
    # Plain records written before the open transaction's first offset on a partition
    # are readable; none written after it, and none of the transaction.
    if any(v.startswith("open-") for v in seen):
        fail(f"read_committed saw records of an open transaction: {seen[:5]}")
    uncommitted = read_all(bootstrap, topic, "read_uncommitted", expect=40)
    if len(uncommitted) != 40:
        fail(f"read_uncommitted saw {len(uncommitted)} of 40")
    producer.commit_transaction(30)
    check_same("read_committed once the transaction committed",
               read_all(bootstrap, topic, "read_committed", expect=40), opened + after)
    print(f"ok 2 - an open transaction held read_committed back ({len(seen)} of 20 later plain "
          "records visible, none of the transaction's) until it committed; then all 40")


def consume_transform_produce(bootstrap):
    source, sink, group = "ctp-in", "ctp-out", "ctp-group"
    create_topic(bootstrap, source)
    create_topic(bootstrap, sink)
    inputs = [f"in-{i}" for i in range(300)]
    send(Producer({"bootstrap.servers": bootstrap}), source, inputs)
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
    })
    consumer.subscribe([source])
    producer = txn_producer(bootstrap, "tx-ctp")
    processed, transactions, aborted = 0, 0, 0
    deadline = time.monotonic() + 120
    while processed < len(inputs) and time.monotonic() < deadline:
        batch = consumer.consume(25, 1.0)
        batch = [m for m in batch if not m.error()]
        if not batch:
            continue
        producer.begin_transaction()
        for message in batch:
            producer.produce(sink, key=message.key(), value=message.value().replace(b"in-", b"out-"))
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), 30)
        transactions += 1
        if transactions % 3 == 0:
            producer.abort_transaction(30)
            aborted += 1
            # Redo the batch: back to the group's committed offsets.
            for tp in consumer.committed(consumer.assignment(), 30):
                consumer.seek(TopicPartition(tp.topic, tp.partition,
                                             tp.offset if tp.offset >= 0 else 0))
        else:
            producer.commit_transaction(30)
            processed += len(batch)
    consumer.close()
    expected = [v.replace("in-", "out-") for v in inputs]
    check_same("consume-transform-produce output", read_all(bootstrap, sink, "read_committed",
                                                            expect=len(expected)), expected)
    check = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    committed = check.committed([TopicPartition(source, p) for p in range(PARTITIONS)], 30)
    ends = [check.get_watermark_offsets(TopicPartition(source, p), 30)[1] for p in range(PARTITIONS)]
    check.close()
    if [tp.offset for tp in committed] != ends:
        fail(f"the group's committed offsets {[tp.offset for tp in committed]} are not the ends {ends}")
    print(f"ok 3 - consume-transform-produce: {len(inputs)} records in {transactions} transactions "
          f"({aborted} aborted and redone); the output holds each exactly once and the group "
          f"committed {ends} in the transactions")


def fencing(bootstrap):
    topic = "txn-fence"
    create_topic(bootstrap, topic)
    old = txn_producer(bootstrap, "tx-fence")
    old.begin_transaction()
    send(old, topic, [f"zombie-{i}" for i in range(10)])
    new = txn_producer(bootstrap, "tx-fence")
    try:
        old.commit_transaction(30)
        fail("a fenced producer committed")
    except KafkaException as error:
        if not (error.args[0].fatal() or error.args[0].txn_requires_abort()):
            fail(f"the fenced producer's commit failed with {error}, not a fencing error")
    new.begin_transaction()
    fresh = [f"fresh-{i}" for i in range(10)]
    send(new, topic, fresh)
    new.commit_transaction(30)
    check_same("after fencing", read_all(bootstrap, topic, "read_committed", expect=10), fresh)
    print("ok 4 - a second producer with the same transactional.id fenced the first: its commit "
          "failed, its open transaction was aborted, the new session committed")


def timeout(bootstrap):
    topic = "txn-timeout"
    create_topic(bootstrap, topic)
    hung = txn_producer(bootstrap, "tx-hung", **{"transaction.timeout.ms": 2000})
    hung.begin_transaction()
    send(hung, topic, [f"hung-{i}" for i in range(10)])
    later = [f"later-{i}" for i in range(10)]
    send(Producer({"bootstrap.servers": bootstrap}), topic, later)
    started = time.monotonic()
    seen = read_all(bootstrap, topic, "read_committed", expect=10, timeout=30)
    check_same("after the coordinator aborted a hung transaction", seen, later)
    waited = time.monotonic() - started
    try:
        hung.commit_transaction(10)
        fail("a transaction aborted for its timeout committed")
    except KafkaException:
        pass
    print(f"ok 5 - a transaction past its 2 s timeout was aborted by the coordinator: "
          f"read_committed got past it after {waited:.1f} s, the producer's late commit failed")


def restart(broker):
    bootstrap = broker.bootstrap
    topic = "txn-restart"
    create_topic(bootstrap, topic)
    producer = txn_producer(bootstrap, "tx-restart")
    producer.begin_transaction()
    committed = [f"kept-{i}" for i in range(20)]
    send(producer, topic, committed)
    producer.commit_transaction(30)
    producer.begin_transaction()
    send(producer, topic, [f"lost-{i}" for i in range(20)])
    broker.kill()
    broker.start()
    bootstrap = broker.bootstrap
    again = txn_producer(bootstrap, "tx-restart")
    again.begin_transaction()
    more = [f"more-{i}" for i in range(20)]
    send(again, topic, more)
    again.commit_transaction(30)
    check_same("after SIGKILL and restart", read_all(bootstrap, topic, "read_committed",
                                                     expect=40), committed + more)
    print("ok 6 - SIGKILL with a transaction open: after the restart the committed records are "
          "there, the open transaction was aborted when the id's next session began, and it committed")


def main():
    with Broker(overrides=["transaction.state.log.num.partitions=3",
                           "offsets.topic.num.partitions=3",
                           "transaction.abort.timed.out.transaction.cleanup.interval.ms=500"]) as broker:
        commit_and_abort(broker.bootstrap)
        open_transaction_blocks(broker.bootstrap)
        consume_transform_produce(broker.bootstrap)
        fencing(broker.bootstrap)
        timeout(broker.bootstrap)
        restart(broker)


if __name__ == "__main__":
    main()
