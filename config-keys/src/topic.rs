//! Topic keys (Kafka's topic-level names), each with the broker key that gives its default
//! or, for a topic-only key, its own type and documentation.

use crate::{Kind, TopicKey};

/// Every topic configuration key the broker's logs understand.
pub const TOPIC_KEYS: &[TopicKey] = &[
    TopicKey::falls_back_to("cleanup.policy", "log.cleanup.policy"),
    TopicKey::falls_back_to("compression.gzip.level", "compression.gzip.level"),
    TopicKey::falls_back_to("compression.lz4.level", "compression.lz4.level"),
    TopicKey::falls_back_to("compression.type", "compression.type"),
    TopicKey::falls_back_to("compression.zstd.level", "compression.zstd.level"),
    TopicKey::falls_back_to("delete.retention.ms", "log.cleaner.delete.retention.ms"),
    TopicKey::falls_back_to("file.delete.delay.ms", "log.segment.delete.delay.ms"),
    TopicKey::falls_back_to("flush.messages", "log.flush.interval.messages"),
    TopicKey::falls_back_to("flush.ms", "log.flush.interval.ms"),
    TopicKey::topic_only(
        "follower.replication.throttled.replicas",
        Kind::List,
        "replicas (`partition:broker`, or `*`) whose follower fetches are throttled by `follower.replication.throttled.rate`",
    ),
    TopicKey::falls_back_to("index.interval.bytes", "log.index.interval.bytes"),
    TopicKey::topic_only(
        "leader.replication.throttled.replicas",
        Kind::List,
        "replicas (`partition:broker`, or `*`) the leader serves under `leader.replication.throttled.rate`",
    ),
    TopicKey::falls_back_to("local.retention.bytes", "log.local.retention.bytes"),
    TopicKey::falls_back_to("local.retention.ms", "log.local.retention.ms"),
    TopicKey::falls_back_to("max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"),
    TopicKey::falls_back_to("max.message.bytes", "message.max.bytes"),
    TopicKey::falls_back_to(
        "message.timestamp.after.max.ms",
        "log.message.timestamp.after.max.ms",
    ),
    TopicKey::falls_back_to(
        "message.timestamp.before.max.ms",
        "log.message.timestamp.before.max.ms",
    ),
    TopicKey::falls_back_to("message.timestamp.type", "log.message.timestamp.type"),
    TopicKey::falls_back_to(
        "min.cleanable.dirty.ratio",
        "log.cleaner.min.cleanable.ratio",
    ),
    TopicKey::falls_back_to("min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"),
    TopicKey::falls_back_to("min.insync.replicas", "min.insync.replicas"),
    TopicKey::falls_back_to("preallocate", "log.preallocate"),
    TopicKey::topic_only(
        "remote.log.copy.disable",
        Kind::Boolean,
        "stop copying segments to remote storage (tiered storage only; no effect without it)",
    ),
    TopicKey::topic_only(
        "remote.log.delete.on.disable",
        Kind::Boolean,
        "delete remote data when tiered storage is turned off (tiered storage only; no effect without it)",
    ),
    TopicKey::topic_only(
        "remote.storage.enable",
        Kind::Boolean,
        "tiered storage for the topic; the broker has no remote log storage, so only `false` is accepted",
    ),
    TopicKey::falls_back_to("retention.bytes", "log.retention.bytes"),
    TopicKey::falls_back_to("retention.ms", "log.retention.ms"),
    TopicKey::falls_back_to("segment.bytes", "log.segment.bytes"),
    TopicKey::falls_back_to("segment.index.bytes", "log.index.size.max.bytes"),
    TopicKey::falls_back_to("segment.jitter.ms", "log.roll.jitter.ms"),
    TopicKey::falls_back_to("segment.ms", "log.roll.ms"),
    TopicKey::falls_back_to(
        "unclean.leader.election.enable",
        "unclean.leader.election.enable",
    ),
];
