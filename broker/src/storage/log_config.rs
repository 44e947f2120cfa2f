//! Per-partition log configuration, named and defaulted as Kafka's topic configs.
//!
//! Broker-wide defaults come from the broker config (`log.segment.bytes`, …); a topic's
//! own configs (`segment.bytes`, …) override them through [`LogConfig::with_topic_configs`].

use std::collections::BTreeMap;

pub const DEFAULT_SEGMENT_BYTES: u64 = 1024 * 1024 * 1024;
pub const DEFAULT_SEGMENT_MS: i64 = 7 * 24 * 60 * 60 * 1000;
pub const DEFAULT_SEGMENT_INDEX_BYTES: u64 = 10 * 1024 * 1024;
pub const DEFAULT_INDEX_INTERVAL_BYTES: u64 = 4096;
pub const DEFAULT_RETENTION_MS: i64 = 7 * 24 * 60 * 60 * 1000;
pub const DEFAULT_RETENTION_BYTES: i64 = -1;
pub const DEFAULT_DELETE_RETENTION_MS: i64 = 24 * 60 * 60 * 1000;
/// Kafka's `message.max.bytes` default: 1 MiB of records plus the 12-byte log overhead.
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 1024 * 1024 + 12;
/// Kafka's default for `flush.messages` and `flush.ms`: never force an fsync.
pub const NEVER_FLUSH: i64 = i64::MAX;
pub const DEFAULT_MIN_INSYNC_REPLICAS: i32 = 1;
/// Kafka 4's `log.message.timestamp.before.max.ms`: no lower bound on CreateTime.
pub const DEFAULT_TIMESTAMP_BEFORE_MAX_MS: i64 = i64::MAX;
/// Kafka 4's `log.message.timestamp.after.max.ms`: at most an hour into the future.
pub const DEFAULT_TIMESTAMP_AFTER_MAX_MS: i64 = 60 * 60 * 1000;
/// Kafka's `compression.gzip.level` default: -1, zlib's own default (6).
pub const DEFAULT_GZIP_LEVEL: i32 = -1;
pub const DEFAULT_LZ4_LEVEL: i32 = 9;
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;
/// Kafka's `log.segment.delete.delay.ms`: a deleted segment's files stay (renamed
/// `.deleted`) this long, so reads already under way finish.
pub const DEFAULT_FILE_DELETE_DELAY_MS: i64 = 60_000;
/// Kafka's `log.cleaner.min.cleanable.ratio`.
pub const DEFAULT_MIN_CLEANABLE_DIRTY_RATIO: DirtyRatio = DirtyRatio(0.5);
/// Kafka's `log.local.retention.*` default: follow `retention.*` (-2).
pub const LOCAL_RETENTION_FOLLOWS_RETENTION: i64 = -2;
/// Smallest segment Kafka accepts for `segment.bytes`.
pub const MIN_SEGMENT_BYTES: u64 = 14;

/// What happens to old data: deleted by retention, compacted by key, both, or neither —
/// an empty `cleanup.policy` keeps everything (Kafka 4.2, KIP-1161: as `retention.ms` and
/// `retention.bytes` -1; DeleteRecords still deletes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    pub delete: bool,
    pub compact: bool,
}

impl CleanupPolicy {
    pub const DELETE: Self = Self {
        delete: true,
        compact: false,
    };
    pub const COMPACT: Self = Self {
        delete: false,
        compact: true,
    };

    /// A comma-separated list of `delete` and `compact`, possibly empty; a repeated value
    /// counts once (a new config with one is refused by [`CleanupPolicy::duplicated`]).
    pub fn parse(value: &str) -> Result<Self, &'static str> {
        let mut policy = Self {
            delete: false,
            compact: false,
        };
        if value.trim().is_empty() {
            return Ok(policy);
        }
        for part in value.split(',').map(str::trim) {
            match part {
                "delete" => policy.delete = true,
                "compact" => policy.compact = true,
                "" => return Err("values must not be empty"),
                _ => return Err("String must be one of: compact, delete"),
            }
        }
        Ok(policy)
    }

    /// Whether `value` names a policy twice, which Kafka (4.2+, KIP-1161) refuses in a new
    /// config; one already stored is read as if named once.
    pub fn duplicated(value: &str) -> bool {
        let parts: Vec<&str> = value.split(',').map(str::trim).collect();
        parts
            .iter()
            .enumerate()
            .any(|(i, part)| parts[..i].contains(part))
    }

    pub fn as_kafka_value(&self) -> &'static str {
        match (self.delete, self.compact) {
            (true, true) => "compact,delete",
            (false, true) => "compact",
            (true, false) => "delete",
            (false, false) => "",
        }
    }
}

/// Kafka's `compression.type`: keep the producer's codec, or store one codec.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CompressionType {
    #[default]
    Producer,
    Uncompressed,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl CompressionType {
    /// Kafka accepts exactly these spellings (case-sensitive).
    pub const VALUES: &'static str = "uncompressed, zstd, lz4, snappy, gzip, producer";

    pub fn parse(value: &str) -> Option<Self> {
        Some(match value.trim() {
            "producer" => Self::Producer,
            "uncompressed" => Self::Uncompressed,
            "gzip" => Self::Gzip,
            "snappy" => Self::Snappy,
            "lz4" => Self::Lz4,
            "zstd" => Self::Zstd,
            _ => return None,
        })
    }

    pub fn as_kafka_value(&self) -> &'static str {
        match self {
            Self::Producer => "producer",
            Self::Uncompressed => "uncompressed",
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }

    /// The RecordBatch attributes codec id this type stores; `None` for `producer`.
    pub fn codec_id(&self) -> Option<i16> {
        match self {
            Self::Producer => None,
            Self::Uncompressed => Some(0),
            Self::Gzip => Some(1),
            Self::Snappy => Some(2),
            Self::Lz4 => Some(3),
            Self::Zstd => Some(4),
        }
    }
}

/// `min.cleanable.dirty.ratio`: the share of a compacted log that must be dirty (not
/// yet cleaned) before the cleaner rewrites it, 0 to 1 (Kafka's DOUBLE).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DirtyRatio(pub f64);

// The ratio is parsed from text and checked to lie in 0..=1, so it is never NaN.
impl Eq for DirtyRatio {}

impl DirtyRatio {
    /// As Java's `Double.toString` spells it (`1.0`, not `1`), so describes match Kafka.
    pub fn as_kafka_value(&self) -> String {
        if self.0.fract() == 0.0 {
            format!("{:.1}", self.0)
        } else {
            self.0.to_string()
        }
    }
}

/// Whose clock stamps record timestamps: the producer's or the broker's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

/// Kafka's `leader.replication.throttled.replicas` / `follower.replication.throttled.replicas`:
/// which (partition, broker) replicas the replication throttle applies to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ThrottledReplicas {
    #[default]
    None,
    /// `*`: every replica of the topic.
    All,
    /// `partition:broker,...`.
    Listed(Vec<(i32, i32)>),
}

impl ThrottledReplicas {
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        if value.is_empty() {
            return Some(Self::None);
        }
        if value == "*" {
            return Some(Self::All);
        }
        value
            .split(',')
            .map(|pair| {
                let (partition, broker) = pair.trim().split_once(':')?;
                Some((partition.trim().parse().ok()?, broker.trim().parse().ok()?))
            })
            .collect::<Option<Vec<_>>>()
            .map(Self::Listed)
    }

    pub fn contains(&self, partition: i32, broker: i32) -> bool {
        match self {
            Self::None => false,
            Self::All => true,
            Self::Listed(pairs) => pairs.contains(&(partition, broker)),
        }
    }

    pub fn as_kafka_value(&self) -> String {
        match self {
            Self::None => String::new(),
            Self::All => "*".into(),
            Self::Listed(pairs) => pairs
                .iter()
                .map(|(p, b)| format!("{p}:{b}"))
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

/// Configuration of one partition log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    pub segment_bytes: u64,
    pub segment_ms: i64,
    pub segment_index_bytes: u64,
    pub index_interval_bytes: u64,
    pub retention_ms: i64,
    pub retention_bytes: i64,
    pub cleanup_policy: CleanupPolicy,
    pub delete_retention_ms: i64,
    pub max_message_bytes: u64,
    pub flush_messages: i64,
    pub flush_ms: i64,
    pub message_timestamp_type: TimestampType,
    /// CreateTime records older than now minus this are refused (INVALID_TIMESTAMP).
    pub message_timestamp_before_max_ms: i64,
    /// CreateTime records newer than now plus this are refused (INVALID_TIMESTAMP).
    pub message_timestamp_after_max_ms: i64,
    /// The codec batches are stored with; others are re-encoded on produce.
    pub compression_type: CompressionType,
    pub compression_gzip_level: i32,
    pub compression_lz4_level: i32,
    pub compression_zstd_level: i32,
    pub min_insync_replicas: i32,
    /// A replica outside the ISR may lead when no in-sync one is left (data loss).
    pub unclean_leader_election: bool,
    /// Replicas this broker, leading, serves under `leader.replication.throttled.rate`.
    pub leader_throttled_replicas: ThrottledReplicas,
    /// Replicas this broker, following, fetches under `follower.replication.throttled.rate`.
    pub follower_throttled_replicas: ThrottledReplicas,
    /// How long a segment deleted by retention keeps its files (renamed `.deleted`).
    pub file_delete_delay_ms: i64,
    /// The cleaner compacts a log once this share of its cleanable bytes is dirty.
    pub min_cleanable_dirty_ratio: DirtyRatio,
    /// A record stays uncompacted at least this long after its timestamp.
    pub min_compaction_lag_ms: i64,
    /// A record is compacted at most this long after its timestamp, whatever the ratio.
    pub max_compaction_lag_ms: i64,
    /// Reserve `segment.bytes` of disk for a new segment when it is created.
    pub preallocate: bool,
    /// Segments roll up to this much earlier than `segment.ms`, so logs created together
    /// do not all roll together.
    pub segment_jitter_ms: i64,
    /// Tiered storage (KIP-405) settings: accepted and reported as Kafka does with
    /// `remote.log.storage.system.enable=false`, where they have no effect.
    pub local_retention_ms: i64,
    pub local_retention_bytes: i64,
    pub remote_log_copy_disable: bool,
    pub remote_log_delete_on_disable: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            segment_ms: DEFAULT_SEGMENT_MS,
            segment_index_bytes: DEFAULT_SEGMENT_INDEX_BYTES,
            index_interval_bytes: DEFAULT_INDEX_INTERVAL_BYTES,
            retention_ms: DEFAULT_RETENTION_MS,
            retention_bytes: DEFAULT_RETENTION_BYTES,
            cleanup_policy: CleanupPolicy::DELETE,
            delete_retention_ms: DEFAULT_DELETE_RETENTION_MS,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            flush_messages: NEVER_FLUSH,
            flush_ms: NEVER_FLUSH,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: DEFAULT_TIMESTAMP_BEFORE_MAX_MS,
            message_timestamp_after_max_ms: DEFAULT_TIMESTAMP_AFTER_MAX_MS,
            compression_type: CompressionType::Producer,
            compression_gzip_level: DEFAULT_GZIP_LEVEL,
            compression_lz4_level: DEFAULT_LZ4_LEVEL,
            compression_zstd_level: DEFAULT_ZSTD_LEVEL,
            min_insync_replicas: DEFAULT_MIN_INSYNC_REPLICAS,
            unclean_leader_election: false,
            leader_throttled_replicas: ThrottledReplicas::None,
            follower_throttled_replicas: ThrottledReplicas::None,
            file_delete_delay_ms: DEFAULT_FILE_DELETE_DELAY_MS,
            min_cleanable_dirty_ratio: DEFAULT_MIN_CLEANABLE_DIRTY_RATIO,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            preallocate: false,
            segment_jitter_ms: 0,
            local_retention_ms: LOCAL_RETENTION_FOLLOWS_RETENTION,
            local_retention_bytes: LOCAL_RETENTION_FOLLOWS_RETENTION,
            remote_log_copy_disable: false,
            remote_log_delete_on_disable: false,
        }
    }
}

/// A topic config that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogConfigError {
    // Kafka's wording, which admin tools show their users as is.
    #[error("Unknown topic config name: {key}")]
    UnknownKey { key: String },
    #[error("Invalid value {value} for configuration {key}: {reason}")]
    InvalidValue {
        key: String,
        value: String,
        reason: String,
    },
    #[error(
        "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
    )]
    TieredStorageDisabled,
}

impl LogConfig {
    /// The level `compression.<codec>.level` sets for a codec (snappy and none have none).
    pub fn compression_level(&self, codec: i16) -> i32 {
        match codec {
            super::compression::CODEC_GZIP => self.compression_gzip_level,
            super::compression::CODEC_LZ4 => self.compression_lz4_level,
            super::compression::CODEC_ZSTD => self.compression_zstd_level,
            _ => 0,
        }
    }

    /// This config with a topic's configs applied on top; every key is checked.
    pub fn with_topic_configs<'a>(
        &self,
        configs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, LogConfigError> {
        let mut config = self.clone();
        for (key, value) in configs {
            config.set(key, value)?;
        }
        Ok(config)
    }

    /// [`LogConfig::with_topic_configs`] for configs a user sets now: also refuses what
    /// Kafka refuses in a new value but reads in a stored one (a list naming a value twice).
    pub fn with_new_topic_configs<'a>(
        &self,
        configs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, LogConfigError> {
        let mut config = self.clone();
        for (key, value) in configs {
            if key == "cleanup.policy" && CleanupPolicy::duplicated(value) {
                return Err(LogConfigError::InvalidValue {
                    key: key.to_string(),
                    value: value.to_string(),
                    reason: "values must not be duplicated".to_string(),
                });
            }
            config.set(key, value)?;
        }
        Ok(config)
    }

    /// Applies one topic config.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), LogConfigError> {
        let invalid = |reason: &str| LogConfigError::InvalidValue {
            key: key.to_string(),
            value: value.to_string(),
            reason: reason.to_string(),
        };
        // Kafka types these configs LONG (i64) or INT (i32); larger values are refused.
        let long = |min: i64| -> Result<i64, LogConfigError> {
            let parsed: i64 = value
                .trim()
                .parse()
                .map_err(|_| invalid("Not a number of type LONG"))?;
            if parsed < min {
                return Err(invalid(&format!("Value must be at least {min}")));
            }
            Ok(parsed)
        };
        let int = |min: i64| -> Result<i64, LogConfigError> {
            if value.trim().parse::<i32>().is_err() {
                return Err(invalid("Not a number of type INT"));
            }
            long(min)
        };
        let boolean = || -> Result<bool, LogConfigError> {
            match value.trim().to_ascii_lowercase().as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                _ => Err(invalid("Expected value to be either true or false")),
            }
        };
        match key {
            "segment.bytes" => self.segment_bytes = int(MIN_SEGMENT_BYTES as i64)? as u64,
            "segment.ms" => self.segment_ms = long(1)?,
            "segment.index.bytes" => {
                self.segment_index_bytes = int(OFFSET_INDEX_MIN_BYTES)? as u64;
            }
            "index.interval.bytes" => self.index_interval_bytes = int(0)? as u64,
            "retention.ms" => self.retention_ms = long(-1)?,
            "retention.bytes" => self.retention_bytes = long(-1)?,
            "delete.retention.ms" => self.delete_retention_ms = long(0)?,
            "max.message.bytes" => self.max_message_bytes = int(0)? as u64,
            "flush.messages" => self.flush_messages = long(1)?,
            "flush.ms" => self.flush_ms = long(0)?,
            "min.insync.replicas" => {
                let parsed = int(1)?;
                self.min_insync_replicas =
                    i32::try_from(parsed).map_err(|_| invalid("Not a number of type INT"))?;
            }
            "unclean.leader.election.enable" => self.unclean_leader_election = boolean()?,
            "file.delete.delay.ms" => self.file_delete_delay_ms = long(0)?,
            "min.cleanable.dirty.ratio" => {
                let ratio: f64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|r: &f64| !r.is_nan())
                    .ok_or_else(|| invalid("Not a number of type DOUBLE"))?;
                if ratio < 0.0 {
                    return Err(invalid("Value must be at least 0"));
                }
                if ratio > 1.0 {
                    return Err(invalid("Value must be no more than 1"));
                }
                self.min_cleanable_dirty_ratio = DirtyRatio(ratio);
            }
            "min.compaction.lag.ms" => self.min_compaction_lag_ms = long(0)?,
            "max.compaction.lag.ms" => self.max_compaction_lag_ms = long(1)?,
            "preallocate" => self.preallocate = boolean()?,
            "segment.jitter.ms" => self.segment_jitter_ms = long(0)?,
            "local.retention.ms" => self.local_retention_ms = long(-2)?,
            "local.retention.bytes" => self.local_retention_bytes = long(-2)?,
            "remote.log.copy.disable" => self.remote_log_copy_disable = boolean()?,
            "remote.log.delete.on.disable" => self.remote_log_delete_on_disable = boolean()?,
            // No remote log storage exists here, so as Kafka without one: false only.
            "remote.storage.enable" => {
                if boolean()? {
                    return Err(LogConfigError::TieredStorageDisabled);
                }
            }
            "leader.replication.throttled.replicas" | "follower.replication.throttled.replicas" => {
                let parsed = ThrottledReplicas::parse(value)
                    .ok_or_else(|| invalid("expected `*` or a list of partition:broker pairs"))?;
                if key.starts_with("leader") {
                    self.leader_throttled_replicas = parsed;
                } else {
                    self.follower_throttled_replicas = parsed;
                }
            }
            "cleanup.policy" => {
                self.cleanup_policy = CleanupPolicy::parse(value).map_err(invalid)?
            }
            "message.timestamp.before.max.ms" => self.message_timestamp_before_max_ms = long(0)?,
            "message.timestamp.after.max.ms" => self.message_timestamp_after_max_ms = long(0)?,
            "compression.type" => {
                self.compression_type = CompressionType::parse(value).ok_or_else(|| {
                    invalid(&format!(
                        "String must be one of: {}",
                        CompressionType::VALUES
                    ))
                })?;
            }
            // Kafka's ranges: gzip 1..=9 or -1 (zlib default), lz4 1..=17, zstd
            // -131072..=22 (negative levels are zstd's fast modes).
            "compression.gzip.level" => {
                let level = int(i64::from(i32::MIN))?;
                if level != -1 && !(1..=9).contains(&level) {
                    return Err(invalid("Value must be between 1 and 9 or equal to -1"));
                }
                self.compression_gzip_level = bounded_int(level, 9, &invalid)?;
            }
            "compression.lz4.level" => {
                self.compression_lz4_level = bounded_int(int(1)?, 17, &invalid)?;
            }
            "compression.zstd.level" => {
                self.compression_zstd_level = bounded_int(int(-131072)?, 22, &invalid)?;
            }
            "message.timestamp.type" => {
                self.message_timestamp_type = match value.trim() {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => return Err(invalid("expected CreateTime or LogAppendTime")),
                };
            }
            _ => {
                return Err(LogConfigError::UnknownKey {
                    key: key.to_string(),
                });
            }
        }
        Ok(())
    }

    /// Every topic config with its current value, in Kafka's spelling (DescribeConfigs).
    pub fn to_topic_configs(&self) -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            (
                "cleanup.policy",
                self.cleanup_policy.as_kafka_value().to_string(),
            ),
            (
                "compression.gzip.level",
                self.compression_gzip_level.to_string(),
            ),
            (
                "compression.lz4.level",
                self.compression_lz4_level.to_string(),
            ),
            (
                "compression.type",
                self.compression_type.as_kafka_value().to_string(),
            ),
            (
                "compression.zstd.level",
                self.compression_zstd_level.to_string(),
            ),
            ("delete.retention.ms", self.delete_retention_ms.to_string()),
            (
                "file.delete.delay.ms",
                self.file_delete_delay_ms.to_string(),
            ),
            (
                "local.retention.bytes",
                self.local_retention_bytes.to_string(),
            ),
            ("local.retention.ms", self.local_retention_ms.to_string()),
            (
                "max.compaction.lag.ms",
                self.max_compaction_lag_ms.to_string(),
            ),
            (
                "min.cleanable.dirty.ratio",
                self.min_cleanable_dirty_ratio.as_kafka_value(),
            ),
            (
                "min.compaction.lag.ms",
                self.min_compaction_lag_ms.to_string(),
            ),
            ("preallocate", self.preallocate.to_string()),
            (
                "remote.log.copy.disable",
                self.remote_log_copy_disable.to_string(),
            ),
            (
                "remote.log.delete.on.disable",
                self.remote_log_delete_on_disable.to_string(),
            ),
            ("remote.storage.enable", "false".to_string()),
            ("segment.jitter.ms", self.segment_jitter_ms.to_string()),
            ("flush.messages", self.flush_messages.to_string()),
            ("flush.ms", self.flush_ms.to_string()),
            (
                "follower.replication.throttled.replicas",
                self.follower_throttled_replicas.as_kafka_value(),
            ),
            (
                "leader.replication.throttled.replicas",
                self.leader_throttled_replicas.as_kafka_value(),
            ),
            (
                "index.interval.bytes",
                self.index_interval_bytes.to_string(),
            ),
            ("max.message.bytes", self.max_message_bytes.to_string()),
            (
                "message.timestamp.type",
                match self.message_timestamp_type {
                    TimestampType::CreateTime => "CreateTime",
                    TimestampType::LogAppendTime => "LogAppendTime",
                }
                .to_string(),
            ),
            (
                "message.timestamp.after.max.ms",
                self.message_timestamp_after_max_ms.to_string(),
            ),
            (
                "message.timestamp.before.max.ms",
                self.message_timestamp_before_max_ms.to_string(),
            ),
            ("min.insync.replicas", self.min_insync_replicas.to_string()),
            ("retention.bytes", self.retention_bytes.to_string()),
            ("retention.ms", self.retention_ms.to_string()),
            ("segment.bytes", self.segment_bytes.to_string()),
            ("segment.index.bytes", self.segment_index_bytes.to_string()),
            ("segment.ms", self.segment_ms.to_string()),
            (
                "unclean.leader.election.enable",
                self.unclean_leader_election.to_string(),
            ),
        ])
    }
}

impl LogConfig {
    /// How long the active segment of the log based at `base_offset` may stay open:
    /// `segment.ms`, capped by `max.compaction.lag.ms` on a compacted log (its newest
    /// records can only be cleaned once sealed), less this segment's jitter.
    pub fn roll_ms(&self, base_offset: u64) -> i64 {
        let limit = if self.cleanup_policy.compact {
            self.segment_ms.min(self.max_compaction_lag_ms)
        } else {
            self.segment_ms
        };
        limit.saturating_sub(self.roll_jitter_ms(base_offset, limit))
    }

    /// This segment's share of `segment.jitter.ms`, below both the jitter and `limit`.
    /// Kafka draws it at random; a hash of the base offset spreads segments as well and
    /// replays the same in a test.
    fn roll_jitter_ms(&self, base_offset: u64, limit: i64) -> i64 {
        let bound = self.segment_jitter_ms.min(limit);
        if bound <= 0 {
            return 0;
        }
        // splitmix64's finaliser: neighbouring base offsets land far apart.
        let mut z = base_offset.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z % bound as u64) as i64
    }
}

/// `value` (already checked against its minimum) as an INT no larger than `max`.
fn bounded_int(
    value: i64,
    max: i64,
    invalid: &dyn Fn(&str) -> LogConfigError,
) -> Result<i32, LogConfigError> {
    if value > max {
        return Err(invalid(&format!("Value must be no more than {max}")));
    }
    i32::try_from(value).map_err(|_| invalid("Not a number of type INT"))
}

/// An index must hold at least one entry of the larger (time index) kind.
const OFFSET_INDEX_MIN_BYTES: i64 = 12;

#[cfg(test)]
mod tests;
