#!/usr/bin/env python3
"""Admin APIs of a real Oxbow broker process, driven by real clients.

confluent-kafka's AdminClient (librdkafka) for DeleteTopics, CreatePartitions,
DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, DescribeCluster and DeleteRecords;
kafka-python for DescribeLogDirs (librdkafka has no such call). Each check asserts the
Kafka error code a bad request gets, and that topic configs take effect on the live log:
segments roll at segment.bytes and retention deletes them, max.message.bytes refuses big
batches, LogAppendTime stamps records, min.insync.replicas refuses acks=all, compaction
refuses DeleteRecords. Configs survive a restart.

    35-admin.py BINARY      (run by 35-admin.sh, which builds the binary)

Waits are on conditions (a bounded poll of a check), never a bare sleep.
"""
import os
import warnings
import shutil
import sys
import tempfile
import time

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
    TIMESTAMP_LOG_APPEND_TIME,
)
from confluent_kafka import TopicCollection
from confluent_kafka.admin import (
    AclOperation,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from oxbow_e2e import Broker, wait_for  # noqa: E402

# AlterConfigs is deprecated in the clients but still a Kafka API, so it is tested.
warnings.filterwarnings("ignore", category=DeprecationWarning)

BINARY = sys.argv[1]
TIMEOUT = 20
CHECKS = []


def check(name):
    def register(function):
        CHECKS.append((name, function))
        return function

    return register


# --- helpers -----------------------------------------------------------------------


def result_of(future):
    return future.result(timeout=TIMEOUT)


def error_of(future):
    """The KafkaError a future fails with (the check fails if it succeeds)."""
    try:
        future.result(timeout=TIMEOUT)
    except KafkaException as exception:
        return exception.args[0]
    raise AssertionError("expected the request to fail, it succeeded")


def expect_error(future, code, label):
    error = error_of(future)
    assert error.code() == code, f"{label}: expected {KafkaError(code).name()}, got {error.name()} ({error.str()})"
    return error


def only(futures):
    (future,) = futures.values()
    return future


def create(admin, name, partitions=1, config=None):
    result_of(only(admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])))


def topic_configs(admin, name):
    return result_of(only(admin.describe_configs([ConfigResource(ResourceType.TOPIC, name)])))


def incremental(admin, name, *entries, resource_type=ResourceType.TOPIC, validate_only=False):
    resource = ConfigResource(resource_type, name, incremental_configs=list(entries))
    return only(admin.incremental_alter_configs([resource], validate_only=validate_only))


def op(name, value, operation):
    return ConfigEntry(name, value, incremental_operation=operation)


def produce(bootstrap, topic, values, partition=0, timestamp=0, batch_each=False, **config):
    """Produces `values` and returns the delivery reports; `batch_each` sends every value
    in a batch of its own (waiting for each), so segments can roll between them."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **config})
    reports = []
    for value in values:
        producer.produce(topic, value, partition=partition, timestamp=timestamp,
                         on_delivery=lambda err, msg: reports.append((err, msg)))
        if batch_each:
            producer.flush(TIMEOUT)
        producer.poll(0)
    producer.flush(TIMEOUT)
    assert len(reports) == len(values), f"{len(reports)} of {len(values)} delivery reports"
    return reports


def watermarks(bootstrap, topic, partition=0):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "admin-watermarks"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT)
    finally:
        consumer.close()


def consume(bootstrap, topic, count, partition=0):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"admin-{topic}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, partition, -2)])
    messages = []
    deadline = time.monotonic() + TIMEOUT
    while len(messages) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            messages.append(message)
    consumer.close()
    assert len(messages) == count, f"consumed {len(messages)} of {count}"
    return messages


def partition_files(broker, topic, partition=0, suffix=".log"):
    directory = os.path.join(broker.data, f"{topic}-{partition}")
    return sorted(f for f in os.listdir(directory) if f.endswith(suffix))


# --- checks ------------------------------------------------------------------------


@check("DescribeCluster (kafka-python; librdkafka answers describe_cluster from Metadata)")
def describe_cluster(broker, admin):
    from kafka import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        cluster = client.describe_cluster()
    finally:
        client.close()
    assert cluster["cluster_id"], cluster
    assert cluster["controller_id"] == 0, cluster
    assert [(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]] == \
        [(0, "127.0.0.1", broker.port)], cluster
    assert "DESCRIBE_CONFIGS" in cluster["authorized_operations"], cluster
    metadata_view = result_of(admin.describe_cluster(include_authorized_operations=True))
    assert metadata_view.cluster_id == cluster["cluster_id"]
    assert [n.id for n in metadata_view.nodes] == [0], metadata_view.nodes
    assert AclOperation.DESCRIBE_CONFIGS in (metadata_view.authorized_operations or []), \
        metadata_view.authorized_operations
    create(admin, "described-topic")
    topic = result_of(only(admin.describe_topics(TopicCollection(["described-topic"]),
                                                 include_authorized_operations=True)))
    assert AclOperation.ALTER_CONFIGS in (topic.authorized_operations or []), topic.authorized_operations


@check("CreatePartitions grows, refuses shrinking, unknown topics and bad assignments")
def create_partitions(broker, admin):
    create(admin, "grow")
    result_of(only(admin.create_partitions([NewPartitions("grow", 3)])))
    metadata = admin.list_topics("grow", timeout=TIMEOUT)
    assert sorted(metadata.topics["grow"].partitions) == [0, 1, 2]
    reports = produce(broker.bootstrap, "grow", [b"to-the-new-partition"], partition=2)
    assert reports[0][0] is None, reports[0][0]
    result_of(only(admin.create_partitions([NewPartitions("grow", 5)], validate_only=True)))
    assert len(admin.list_topics("grow", timeout=TIMEOUT).topics["grow"].partitions) == 3
    expect_error(only(admin.create_partitions([NewPartitions("grow", 2)])),
                 KafkaError.INVALID_PARTITIONS, "shrink")
    expect_error(only(admin.create_partitions([NewPartitions("grow", 3)])),
                 KafkaError.INVALID_PARTITIONS, "same count")
    expect_error(only(admin.create_partitions([NewPartitions("grow", 99999)])),
                 KafkaError.INVALID_PARTITIONS, "absurd count")
    expect_error(only(admin.create_partitions([NewPartitions("no-such-topic", 4)])),
                 KafkaError.UNKNOWN_TOPIC_OR_PART, "unknown topic")
    expect_error(only(admin.create_partitions([NewPartitions("grow", 4, replica_assignment=[[7]])])),
                 KafkaError.INVALID_REPLICA_ASSIGNMENT, "assignment to a missing broker")
    result_of(only(admin.create_partitions([NewPartitions("grow", 4, replica_assignment=[[0]])])))
    assert len(admin.list_topics("grow", timeout=TIMEOUT).topics["grow"].partitions) == 4


@check("DescribeConfigs: topic values, sources and synonyms as Kafka reports them")
def describe_topic_configs(broker, admin):
    create(admin, "described", config={"retention.ms": "123456"})
    configs = topic_configs(admin, "described")
    expected = {"cleanup.policy", "delete.retention.ms", "flush.messages", "flush.ms",
                "index.interval.bytes", "max.message.bytes", "message.timestamp.type",
                "min.insync.replicas", "retention.bytes", "retention.ms", "segment.bytes",
                "segment.index.bytes", "segment.ms"}
    assert expected <= set(configs), sorted(configs)
    retention = configs["retention.ms"]
    assert retention.value == "123456" and retention.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert not retention.is_default and not retention.is_read_only
    synonyms = [(s.name, s.value, s.source) for s in retention.synonyms.values()]
    # Kafka 4.1: log.retention.ms has no default of its own (log.retention.hours gives it),
    # so below the topic's setting no broker synonym is listed.
    assert synonyms == [("retention.ms", "123456", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)], synonyms
    bytes_ = configs["retention.bytes"]
    assert bytes_.value == "-1" and bytes_.source == ConfigSource.DEFAULT_CONFIG.value and bytes_.is_default
    # The broker was started with log.roll.ms set: its topics inherit it as a static config.
    roll = configs["segment.ms"]
    assert roll.value == "3600000" and roll.source == ConfigSource.STATIC_BROKER_CONFIG.value, (roll.value, roll.source)
    assert configs["cleanup.policy"].value == "delete"
    assert configs["message.timestamp.type"].value == "CreateTime"
    expect_error(only(admin.describe_configs([ConfigResource(ResourceType.TOPIC, "no-such-topic")])),
                 KafkaError.UNKNOWN_TOPIC_OR_PART, "describe unknown topic")


@check("Invalid topic names get Kafka's answers")
def invalid_topic_names(broker, admin):
    for name in ["bad name!", "x" * 250]:
        expect_error(only(admin.describe_configs([ConfigResource(ResourceType.TOPIC, name)])),
                     KafkaError.TOPIC_EXCEPTION, "describe an invalid name")
        expect_error(incremental(admin, name, op("retention.ms", "1000", AlterConfigOpType.SET)),
                     KafkaError.TOPIC_EXCEPTION, "alter an invalid name")
        # Kafka answers these two as unknown topics.
        expect_error(only(admin.create_partitions([NewPartitions(name, 3)])),
                     KafkaError.UNKNOWN_TOPIC_OR_PART, "grow an invalid name")
        expect_error(only(admin.delete_topics([name])),
                     KafkaError.UNKNOWN_TOPIC_OR_PART, "delete an invalid name")
    expect_error(only(admin.create_topics([NewTopic("bad name!", 1, 1)])),
                 KafkaError.TOPIC_EXCEPTION, "create an invalid name")


@check("DescribeConfigs: broker resource, static configs read-only, dynamic ones alterable")
def describe_broker_configs(broker, admin):
    def broker_configs():
        return result_of(only(admin.describe_configs([ConfigResource(ResourceType.BROKER, "0")])))
    configs = broker_configs()
    assert configs["num.partitions"].value == "1"
    assert configs["num.partitions"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["log.dirs"].value == broker.data
    assert configs["log.dirs"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["log.dirs"].is_read_only and configs["node.id"].is_read_only
    # As in Kafka, the log defaults topics fall back to are dynamic broker configs.
    assert configs["log.roll.ms"].value == "3600000"
    assert not configs["log.roll.ms"].is_read_only
    expect_error(incremental(admin, "0", op("node.id", "7", AlterConfigOpType.SET),
                             resource_type=ResourceType.BROKER),
                 KafkaError.INVALID_REQUEST, "altering a static broker config")
    result_of(incremental(admin, "0", op("log.retention.ms", "1000", AlterConfigOpType.SET),
                          resource_type=ResourceType.BROKER))
    retention = broker_configs()["log.retention.ms"]
    assert retention.value == "1000" and retention.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    result_of(incremental(admin, "0", op("log.retention.ms", None, AlterConfigOpType.DELETE),
                          resource_type=ResourceType.BROKER))
    assert broker_configs()["log.retention.ms"].source != ConfigSource.DYNAMIC_BROKER_CONFIG.value


@check("IncrementalAlterConfigs: SET, DELETE, APPEND, SUBTRACT and validate_only")
def incremental_alter(broker, admin):
    create(admin, "altered")
    result_of(incremental(admin, "altered", op("retention.ms", "86400000", AlterConfigOpType.SET),
                          op("max.message.bytes", "200000", AlterConfigOpType.SET)))
    configs = topic_configs(admin, "altered")
    assert configs["retention.ms"].value == "86400000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["max.message.bytes"].value == "200000"
    result_of(incremental(admin, "altered", op("retention.ms", None, AlterConfigOpType.DELETE)))
    configs = topic_configs(admin, "altered")
    assert configs["retention.ms"].value == "604800000"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["max.message.bytes"].value == "200000", "DELETE of one key keeps the others"
    result_of(incremental(admin, "altered", op("cleanup.policy", "compact", AlterConfigOpType.APPEND)))
    assert set(topic_configs(admin, "altered")["cleanup.policy"].value.split(",")) == {"compact", "delete"}
    result_of(incremental(admin, "altered", op("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT)))
    assert topic_configs(admin, "altered")["cleanup.policy"].value == "compact"
    result_of(incremental(admin, "altered", op("segment.bytes", "4096", AlterConfigOpType.SET),
                          validate_only=True))
    assert topic_configs(admin, "altered")["segment.bytes"].value == "1073741824", "validate_only changed it"
    # Deleting a key that is not set is accepted, as by Kafka.
    result_of(incremental(admin, "altered", op("flush.ms", None, AlterConfigOpType.DELETE)))


@check("IncrementalAlterConfigs: bad input gets Kafka's error codes and nothing changes")
def incremental_alter_refused(broker, admin):
    create(admin, "guarded")
    refused = [
        (op("no.such.config", "1", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (op("segment.bytes", "-5", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (op("segment.bytes", "99999999999", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (op("retention.ms", "-2", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (op("retention.ms", "abc", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (op("retention.bytes", "99999999999999999999", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (op("max.message.bytes", "-1", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (op("min.insync.replicas", "0", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (op("cleanup.policy", "shred", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (op("message.timestamp.type", "Foo", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (op("retention.ms", "5", AlterConfigOpType.APPEND), KafkaError.INVALID_CONFIG),
        # Kafka 4.2+ (KIP-1161): a list naming a value twice is refused.
        (op("cleanup.policy", "delete,delete", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (op("cleanup.policy", "delete,", AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
    ]
    for entry, code in refused:
        error = expect_error(incremental(admin, "guarded", entry), code,
                             f"{entry.name}={entry.value} ({entry.incremental_operation})")
        assert entry.name in error.str(), f"the message names the config: {error.str()}"
    # A resource is altered all or nothing: one bad entry leaves the good one unapplied.
    expect_error(incremental(admin, "guarded", op("retention.ms", "1000", AlterConfigOpType.SET),
                             op("segment.bytes", "-1", AlterConfigOpType.SET)),
                 KafkaError.INVALID_CONFIG, "mixed good and bad")
    configs = topic_configs(admin, "guarded")
    assert all(c.source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value for c in configs.values()), \
        [(c.name, c.value) for c in configs.values() if c.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value]
    expect_error(incremental(admin, "no-such-topic", op("retention.ms", "1000", AlterConfigOpType.SET)),
                 KafkaError.UNKNOWN_TOPIC_OR_PART, "unknown topic")


@check("AlterConfigs replaces a topic's configs; refuses unknown keys")
def alter_configs(broker, admin):
    create(admin, "replaced", config={"retention.ms": "1000000", "segment.bytes": "100000"})
    resource = ConfigResource(ResourceType.TOPIC, "replaced", set_config={"retention.bytes": "5000000"})
    result_of(only(admin.alter_configs([resource])))
    own = {c.name: c.value for c in topic_configs(admin, "replaced").values()
           if c.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}
    assert own == {"retention.bytes": "5000000"}, own
    resource = ConfigResource(ResourceType.TOPIC, "replaced", set_config={"no.such.config": "1"})
    expect_error(only(admin.alter_configs([resource])), KafkaError.INVALID_CONFIG, "unknown key")


@check("Live: segment.bytes rolls segments and retention.bytes deletes old ones")
def live_segment_and_retention(broker, admin):
    create(admin, "rolling")
    result_of(incremental(admin, "rolling", op("segment.bytes", "2000", AlterConfigOpType.SET),
                          op("retention.bytes", "6000", AlterConfigOpType.SET)))
    produce(broker.bootstrap, "rolling", [bytes([i % 256]) * 400 for i in range(60)], batch_each=True)
    wait_for(lambda: len(partition_files(broker, "rolling")) > 1, TIMEOUT, "segments to roll")
    wait_for(lambda: watermarks(broker.bootstrap, "rolling")[0] > 0, TIMEOUT, "retention to advance the log start")
    low, high = watermarks(broker.bootstrap, "rolling")
    assert high == 60 and low > 0, (low, high)
    wait_for(lambda: sum(os.path.getsize(os.path.join(broker.data, "rolling-0", f))
                         for f in partition_files(broker, "rolling")) <= 6000 + 2000,
             TIMEOUT, "the partition to shrink under retention.bytes plus a segment")
    first = consume(broker.bootstrap, "rolling", 1)[0]
    assert first.offset() == watermarks(broker.bootstrap, "rolling")[0], "reading starts at the log start"


@check("Live: retention.ms deletes segments of old records")
def live_retention_ms(broker, admin):
    create(admin, "aging", config={"segment.bytes": "1000"})
    two_days_ago = int(time.time() * 1000) - 2 * 86400 * 1000
    produce(broker.bootstrap, "aging", [b"x" * 300] * 10, timestamp=two_days_ago, batch_each=True)
    produce(broker.bootstrap, "aging", [b"y" * 300] * 4, batch_each=True)
    assert watermarks(broker.bootstrap, "aging")[0] == 0, "the default retention (7 days) keeps them"
    result_of(incremental(admin, "aging", op("retention.ms", str(86400 * 1000), AlterConfigOpType.SET)))
    wait_for(lambda: watermarks(broker.bootstrap, "aging")[0] >= 10, TIMEOUT,
             "retention.ms to delete the old segments")


@check("Live: an empty cleanup.policy keeps every record (Kafka 4.2+), DeleteRecords still deletes")
def live_empty_cleanup_policy(broker, admin):
    two_days_ago = int(time.time() * 1000) - 2 * 86400 * 1000
    day = str(86400 * 1000)
    create(admin, "kept", config={"segment.bytes": "1000", "retention.ms": day})
    # SUBTRACT of the only policy leaves the list empty: infinite retention (Kafka 4.1 refused it).
    result_of(incremental(admin, "kept", op("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT)))
    assert topic_configs(admin, "kept")["cleanup.policy"].value == ""
    produce(broker.bootstrap, "kept", [b"x" * 300] * 10, timestamp=two_days_ago, batch_each=True)
    produce(broker.bootstrap, "kept", [b"y" * 300] * 4, batch_each=True)
    # A topic written after it, with the same retention and the default policy: once
    # retention has deleted its old segments, it has visited `kept` too.
    create(admin, "expiring", config={"segment.bytes": "1000", "retention.ms": day})
    produce(broker.bootstrap, "expiring", [b"x" * 300] * 10, timestamp=two_days_ago, batch_each=True)
    produce(broker.bootstrap, "expiring", [b"y" * 300] * 4, batch_each=True)
    wait_for(lambda: watermarks(broker.bootstrap, "expiring")[0] >= 10, TIMEOUT,
             "retention.ms to delete the old segments of the topic beside it")
    assert watermarks(broker.bootstrap, "kept") == (0, 14), watermarks(broker.bootstrap, "kept")
    deleted = result_of(only(admin.delete_records([TopicPartition("kept", 0, 5)])))
    assert deleted.low_watermark == 5, deleted.low_watermark
    assert watermarks(broker.bootstrap, "kept")[0] == 5


@check("Live: max.message.bytes, message.timestamp.type, min.insync.replicas")
def live_record_configs(broker, admin):
    create(admin, "strict")
    result_of(incremental(admin, "strict", op("max.message.bytes", "1000", AlterConfigOpType.SET)))
    (error, _), = produce(broker.bootstrap, "strict", [b"z" * 2000], retries=0)
    assert error is not None and error.code() == KafkaError.MSG_SIZE_TOO_LARGE, error
    (error, _), = produce(broker.bootstrap, "strict", [b"small"])
    assert error is None, error
    result_of(incremental(admin, "strict", op("message.timestamp.type", "LogAppendTime", AlterConfigOpType.SET)))
    before = int(time.time() * 1000)
    produce(broker.bootstrap, "strict", [b"stamped"], timestamp=1_000_000)
    stamped = consume(broker.bootstrap, "strict", 2)[1]
    kind, timestamp = stamped.timestamp()
    assert kind == TIMESTAMP_LOG_APPEND_TIME and timestamp >= before - 1000, (kind, timestamp)
    result_of(incremental(admin, "strict", op("min.insync.replicas", "2", AlterConfigOpType.SET)))
    (error, _), = produce(broker.bootstrap, "strict", [b"all"], acks="all", retries=0,
                          **{"enable.idempotence": False})
    assert error is not None and error.code() == KafkaError.NOT_ENOUGH_REPLICAS, error
    (error, _), = produce(broker.bootstrap, "strict", [b"one"], acks=1)
    assert error is None, "acks=1 does not need the in-sync replicas"


@check("DeleteRecords moves the log start; refuses offsets beyond the high watermark and compacted topics")
def delete_records(broker, admin):
    create(admin, "trimmed")
    produce(broker.bootstrap, "trimmed", [b"%d" % i for i in range(10)])
    deleted = result_of(only(admin.delete_records([TopicPartition("trimmed", 0, 4)])))
    assert deleted.low_watermark == 4, deleted.low_watermark
    assert watermarks(broker.bootstrap, "trimmed") == (4, 10)
    assert consume(broker.bootstrap, "trimmed", 1)[0].offset() == 4
    expect_error(only(admin.delete_records([TopicPartition("trimmed", 0, 11)])),
                 KafkaError.OFFSET_OUT_OF_RANGE, "beyond the high watermark")
    deleted = result_of(only(admin.delete_records([TopicPartition("trimmed", 0, -1)])))
    assert deleted.low_watermark == 10, deleted.low_watermark
    create(admin, "compacted", config={"cleanup.policy": "compact"})
    produce(broker.bootstrap, "compacted", [b"v"])
    expect_error(only(admin.delete_records([TopicPartition("compacted", 0, 1)])),
                 KafkaError.POLICY_VIOLATION, "compacted topic")


@check("DescribeLogDirs (kafka-python) reports partitions and sizes")
def describe_log_dirs(broker, admin):
    from kafka import KafkaAdminClient

    create(admin, "sized", partitions=2)
    produce(broker.bootstrap, "sized", [b"q" * 1000] * 5, partition=1)
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        response = client.describe_log_dirs()
    finally:
        client.close()
    text = repr(response)
    assert broker.data in text, text[:2000]
    assert "sized" in text, text[:2000]
    sizes = find_partition_sizes(response, "sized")
    assert sizes.get(0) == 0 and sizes.get(1, 0) > 5000, sizes


def find_partition_sizes(response, topic):
    """{partition: size} of `topic` from kafka-python's describe_log_dirs answer (a list of
    dicts or response objects, depending on the version)."""
    sizes = {}

    def walk(node):
        if isinstance(node, dict):
            name = node.get("name", node.get("topic"))
            if name == topic and "partitions" in node:
                for p in node["partitions"]:
                    sizes[p.get("partition_index")] = p.get("partition_size")
            for value in node.values():
                walk(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                walk(value)
        elif hasattr(node, "to_object"):
            walk(node.to_object())

    walk(response)
    return sizes


@check("DeleteTopics removes data; unknown topics refused; the name can be reused")
def delete_topics(broker, admin):
    create(admin, "doomed", partitions=2)
    produce(broker.bootstrap, "doomed", [b"gone"])
    result_of(only(admin.delete_topics(["doomed"])))
    assert "doomed" not in admin.list_topics(timeout=TIMEOUT).topics
    assert not os.path.exists(os.path.join(broker.data, "doomed-0"))
    expect_error(only(admin.delete_topics(["doomed"])), KafkaError.UNKNOWN_TOPIC_OR_PART, "deleted twice")
    expect_error(only(admin.delete_topics(["never-was"])), KafkaError.UNKNOWN_TOPIC_OR_PART, "unknown")
    create(admin, "doomed")
    assert watermarks(broker.bootstrap, "doomed") == (0, 0), "a new topic starts empty"


CHECKS_AFTER_RESTART = []


def after_restart(function):
    CHECKS_AFTER_RESTART.append(function)
    return function


@after_restart
def configs_survive_restart(broker, admin):
    configs = topic_configs(admin, "altered")
    assert configs["max.message.bytes"].value == "200000"
    assert configs["cleanup.policy"].value == "compact"
    assert len(admin.list_topics("grow", timeout=TIMEOUT).topics["grow"].partitions) == 4
    assert "doomed" in admin.list_topics(timeout=TIMEOUT).topics
    assert watermarks(broker.bootstrap, "trimmed")[0] == 10, "DeleteRecords survives a restart"


def main():
    workdir = tempfile.mkdtemp(prefix="oxbow-admin-")
    broker = Broker(BINARY, workdir, {"log.retention.check.interval.ms": "100", "log.roll.ms": "3600000",
                              "auto.create.topics.enable": "false"})
    failures = 0
    try:
        broker.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for name, function in CHECKS:
            try:
                function(broker, admin)
                print(f"ok   {name}")
            except Exception as error:  # report every check, then fail
                failures += 1
                print(f"FAIL {name}: {type(error).__name__}: {error}")
        broker.stop()
        broker.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for function in CHECKS_AFTER_RESTART:
            try:
                function(broker, admin)
                print("ok   after restart: topics, configs and log starts are kept")
            except Exception as error:
                failures += 1
                print(f"FAIL after restart: {type(error).__name__}: {error}")
    finally:
        broker.stop()
        if failures:
            print(f"broker log: {broker.log_path}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if failures:
        sys.exit(f"{failures} admin check(s) failed")
    print("all admin checks passed")


if __name__ == "__main__":
    main()
