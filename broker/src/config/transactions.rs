//! The transaction coordinator's settings (`transaction.*`).

use super::ConfigError;
use super::raw::Raw;

/// Transaction coordinator settings (Kafka's names in the comments).
#[derive(Debug, Clone)]
pub struct TransactionConfig {
    /// transaction.state.log.num.partitions
    pub state_partitions: i32,
    /// transaction.state.log.replication.factor
    pub state_replication_factor: i16,
    /// transaction.state.log.min.isr
    pub state_min_isr: i32,
    /// transaction.max.timeout.ms
    pub max_timeout_ms: i64,
    /// transaction.abort.timed.out.transaction.cleanup.interval.ms
    pub abort_check_interval_ms: i64,
    /// transactional.id.expiration.ms
    pub id_expiration_ms: i64,
    /// transaction.partition.verification.enable
    pub partition_verification: bool,
    /// transaction.version: the `transaction.version` feature finalized in ApiVersions
    /// (2: KIP-890 part 2, the epoch bumped at every transaction end).
    pub version: i16,
}

impl Default for TransactionConfig {
    fn default() -> Self {
        Self {
            state_partitions: 50,
            state_replication_factor: 3,
            state_min_isr: 2,
            max_timeout_ms: 900_000,
            abort_check_interval_ms: 10_000,
            id_expiration_ms: 7 * 24 * 60 * 60 * 1000,
            partition_verification: true,
            version: 2,
        }
    }
}

impl TransactionConfig {
    pub(super) fn parse(raw: Raw<'_>) -> Result<Self, ConfigError> {
        Ok(Self {
            state_partitions: raw.int("transaction.state.log.num.partitions")? as i32,
            state_replication_factor: raw.int("transaction.state.log.replication.factor")? as i16,
            state_min_isr: raw.int("transaction.state.log.min.isr")? as i32,
            max_timeout_ms: raw.int("transaction.max.timeout.ms")?,
            abort_check_interval_ms: raw
                .int("transaction.abort.timed.out.transaction.cleanup.interval.ms")?,
            id_expiration_ms: raw.int("transactional.id.expiration.ms")?,
            partition_verification: raw.boolean("transaction.partition.verification.enable")?,
            version: raw.int("transaction.version")? as i16,
        })
    }
}
