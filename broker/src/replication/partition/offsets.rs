//! A partition's offsets as the API asks for them: ListOffsets, OffsetForLeaderEpoch,
//! DeleteRecords, and the log end a group's offset commit waits for. The handlers ask the
//! partition; only replication touches its log.

use kafka_protocol::ResponseError;

use super::Partition;
use crate::replication::Refusal;
use crate::storage::LogError;

/// ListOffsets' special timestamps.
pub const LATEST: i64 = -1;
pub const EARLIEST: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;
pub const EARLIEST_LOCAL: i64 = -4;
pub const LATEST_TIERED: i64 = -5;

/// DeleteRecords' offset that stands for "up to the high watermark".
pub const HIGH_WATERMARK: i64 = -1;

/// Why DeleteRecords cannot move a partition's log start.
#[derive(Debug, thiserror::Error)]
pub enum DeleteRecordsError {
    #[error("the topic's cleanup policy is compact only")]
    Compacted,
    #[error("{0}")]
    OutOfRange(String),
    #[error(transparent)]
    Log(#[from] LogError),
}

impl Partition {
    pub fn log_end_offset(&self) -> u64 {
        self.log.log_end_offset()
    }

    /// The producers of this partition and their open transactions (DescribeProducers).
    pub fn producers(&self) -> Vec<(crate::storage::ProducerSummary, Option<u64>)> {
        self.log.producers()
    }

    /// The largest epoch at or below `epoch` in this log and where it ends (the next
    /// epoch's start), or None when the log holds no epoch that old.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, u64)> {
        self.log.end_offset_for_epoch(epoch)
    }

    /// (offset, timestamp) for a ListOffsets query: one of the special timestamps above, or
    /// the first offset at or after `timestamp`; (-1, -1) for none. Offsets are bounded by
    /// the high watermark, or for `read_committed` by the last stable offset (Kafka's
    /// `lastFetchableOffset`).
    pub fn offset_for_timestamp(
        &self,
        timestamp: i64,
        read_committed: bool,
    ) -> Result<(i64, i64), Refusal> {
        let log = &self.log;
        let fetchable = if read_committed {
            log.last_stable_offset()
        } else {
            log.high_watermark()
        };
        let found = |answer: Result<Option<(u64, i64)>, LogError>| match answer {
            Ok(Some((offset, ts))) if offset < fetchable => Ok((offset as i64, ts)),
            Ok(_) => Ok((-1, -1)),
            Err(error) => Err(Refusal::Log(error)),
        };
        match timestamp {
            LATEST | LATEST_TIERED => Ok((fetchable as i64, -1)),
            EARLIEST | EARLIEST_LOCAL => Ok((log.log_start_offset() as i64, -1)),
            MAX_TIMESTAMP => match log.max_timestamp_offset() {
                Ok(Some((offset, ts))) => Ok((offset as i64, ts)),
                Ok(None) => Ok((-1, -1)),
                Err(error) => Err(Refusal::Log(error)),
            },
            ts if ts < 0 => Err(Refusal::Code(ResponseError::InvalidRequest.code())),
            ts => found(log.offset_for_timestamp(ts)),
        }
    }

    /// Deletes the records below `offset` (or below the high watermark for
    /// [`HIGH_WATERMARK`]); returns the new log start offset. Refused, as in Kafka, for
    /// compact-only topics and beyond the high watermark.
    pub fn delete_records(&self, offset: i64) -> Result<u64, DeleteRecordsError> {
        let log = &self.log;
        let policy = log.config().cleanup_policy;
        if policy.compact && !policy.delete {
            return Err(DeleteRecordsError::Compacted);
        }
        let target = match offset {
            HIGH_WATERMARK => log.high_watermark(),
            offset => u64::try_from(offset).map_err(|_| {
                DeleteRecordsError::OutOfRange(
                    "offsets are -1 (the high watermark) or positive".into(),
                )
            })?,
        };
        if target > log.high_watermark() {
            return Err(DeleteRecordsError::OutOfRange(format!(
                "beyond the high watermark {}",
                log.high_watermark()
            )));
        }
        let start = log.advance_log_start_offset(target)?;
        tracing::info!(topic_partition = %self.topic_partition, log_start_offset = start, "Deleted records");
        Ok(start)
    }
}
