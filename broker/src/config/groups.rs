//! The group coordinator's settings (`group.*`, `offsets.*`).

use super::ConfigError;
use super::raw::Raw;

/// Group settings, from the broker configuration (Kafka's names in the comments).
#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// offsets.topic.num.partitions
    pub offsets_partitions: i32,
    /// group.min.session.timeout.ms / group.max.session.timeout.ms
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    /// group.initial.rebalance.delay.ms
    pub initial_rebalance_delay_ms: i64,
    /// offsets.retention.minutes, in ms
    pub offsets_retention_ms: i64,
    /// offsets.retention.check.interval.ms
    pub retention_check_interval_ms: i64,
    /// offset.metadata.max.bytes
    pub offset_metadata_max_bytes: usize,
    /// group.consumer.session.timeout.ms (KIP-848)
    pub consumer_session_timeout_ms: i32,
    /// group.consumer.heartbeat.interval.ms (KIP-848)
    pub consumer_heartbeat_interval_ms: i32,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            offsets_partitions: 50,
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1000,
            retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
            consumer_session_timeout_ms: 45_000,
            consumer_heartbeat_interval_ms: 5_000,
        }
    }
}

impl GroupConfig {
    pub(super) fn parse(raw: Raw<'_>) -> Result<Self, ConfigError> {
        Ok(Self {
            offsets_partitions: raw.int("offsets.topic.num.partitions")? as i32,
            min_session_timeout_ms: raw.int("group.min.session.timeout.ms")? as i32,
            max_session_timeout_ms: raw.int("group.max.session.timeout.ms")? as i32,
            initial_rebalance_delay_ms: raw.int("group.initial.rebalance.delay.ms")?,
            offsets_retention_ms: raw.int("offsets.retention.minutes")? * 60_000,
            retention_check_interval_ms: raw.int("offsets.retention.check.interval.ms")?,
            offset_metadata_max_bytes: raw.int("offset.metadata.max.bytes")? as usize,
            consumer_session_timeout_ms: raw.int("group.consumer.session.timeout.ms")? as i32,
            consumer_heartbeat_interval_ms: raw.int("group.consumer.heartbeat.interval.ms")? as i32,
        })
    }
}
