//! How followers fetch and when they leave the ISR (`replica.*`).

use super::ConfigError;
use super::raw::Raw;

/// How followers fetch and when they leave the ISR (`replica.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationConfig {
    pub lag_time_max_ms: i64,
    pub fetch_max_bytes: i32,
    pub fetch_response_max_bytes: i32,
    pub fetch_wait_max_ms: i32,
    pub fetch_backoff_ms: u64,
    pub high_watermark_checkpoint_interval_ms: u64,
}

impl ReplicationConfig {
    pub(super) fn parse(raw: Raw<'_>) -> Result<Self, ConfigError> {
        Ok(Self {
            lag_time_max_ms: raw.int("replica.lag.time.max.ms")?,
            fetch_max_bytes: raw.int("replica.fetch.max.bytes")? as i32,
            fetch_response_max_bytes: raw.int("replica.fetch.response.max.bytes")? as i32,
            fetch_wait_max_ms: raw.int("replica.fetch.wait.max.ms")? as i32,
            fetch_backoff_ms: raw.int("replica.fetch.backoff.ms")? as u64,
            high_watermark_checkpoint_interval_ms: raw
                .int("replica.high.watermark.checkpoint.interval.ms")?
                as u64,
        })
    }
}
