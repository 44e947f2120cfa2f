//! What the leader checks record by record before it appends a produce request's batches,
//! and the re-encoding a topic's `compression.type` asks for (Kafka's `LogValidator`).
//!
//! ```text
//! produce records ─► split into batches (headers only; framing errors are left to Log::append)
//!   each batch: does a rule need its records?
//!     compacted topic            every record needs a key
//!     CreateTime                 timestamps within message.timestamp.before/after.max.ms
//!     compression.type ≠ codec   the records section is re-encoded
//!   no  ─► kept as produced: the request's bytes go to the log untouched (no allocation here)
//!   yes ─► CRC checked first (a damaged batch is CORRUPT_MESSAGE, as in Kafka), records
//!          inflated when compressed, scanned; every offending record is reported with its
//!          index in the batch (KIP-467 record_errors) and the whole request is refused;
//!          with a codec to change, the records section is re-compressed and the header
//!          (attributes, length, CRC) rewritten — the copy path.
//! ```
//!
//! Timestamps of a compressed batch are judged by its header when the header settles it:
//! with no lower bound (`message.timestamp.before.max.ms` at its default, Long.MAX_VALUE)
//! a batch whose `max_timestamp` is in range has every record in range, so the common
//! case does not inflate every compressed batch. Uncompressed batches are scanned in place.
// Every read here is on bytes from the network: no indexing that can panic.
#![deny(clippy::indexing_slicing)]

use super::TopicPartition;
use super::batch::{
    BATCH_HEADER_SIZE, BatchError, BatchHeader, BatchOrigin, LOG_OVERHEAD, read_i32, validate_batch,
};
use super::compression::{self, CODEC_NONE, CompressionError, MAX_DECOMPRESSED_BYTES};
use super::log_config::{LogConfig, TimestampType};
use super::record_section;

/// A record the broker refused, by its index in its batch (KIP-467).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub batch_index: i32,
    pub message: String,
}

/// Why a produce request's records cannot be appended as they are.
#[derive(Debug, thiserror::Error)]
pub enum ValidationError {
    /// Records broke a rule; `message` is Kafka's summary of them.
    #[error("{message}")]
    RecordsRejected {
        invalid_timestamp: bool,
        errors: Vec<RecordError>,
        message: String,
    },
    #[error("{source}")]
    InvalidBatch { source: BatchError },
    #[error("record {index} of a batch is malformed: {reason}")]
    MalformedRecord { index: i32, reason: &'static str },
    #[error("{source}")]
    Codec { source: CompressionError },
}

/// The outcome of a successful validation.
#[derive(Debug, PartialEq, Eq)]
pub enum Validated {
    /// Append the request's bytes as they are.
    AsProduced,
    /// Append these bytes instead (some batches re-encoded).
    ReEncoded(Vec<u8>),
}

/// The rules a topic's config imposes on produced records.
#[derive(Debug, Clone, Copy)]
pub struct RecordRules<'a> {
    pub topic_partition: &'a TopicPartition,
    pub now_ms: i64,
    pub compacted: bool,
    /// `Some((before_max_ms, after_max_ms))` under CreateTime.
    pub timestamp_bounds: Option<(i64, i64)>,
    /// The codec batches are stored with (`None`: as produced) and its level.
    pub target_codec: Option<i16>,
    pub level: i32,
    /// A LogAppendTime topic refuses batches that claim LogAppendTime themselves: only
    /// the broker stamps that (Kafka 4.1; a CreateTime topic takes them as they are).
    pub refuse_log_append_time: bool,
}

impl<'a> RecordRules<'a> {
    pub fn new(config: &LogConfig, topic_partition: &'a TopicPartition, now_ms: i64) -> Self {
        let target_codec = config.compression_type.codec_id();
        Self {
            topic_partition,
            now_ms,
            compacted: config.cleanup_policy.compact,
            timestamp_bounds: (config.message_timestamp_type == TimestampType::CreateTime)
                .then_some((
                    config.message_timestamp_before_max_ms,
                    config.message_timestamp_after_max_ms,
                )),
            target_codec,
            refuse_log_append_time: config.message_timestamp_type == TimestampType::LogAppendTime,
            level: target_codec.map_or(0, |codec| config.compression_level(codec)),
        }
    }

    fn timestamp_error(&self, timestamp: i64, offset: i64) -> Option<String> {
        let (before, after) = self.timestamp_bounds?;
        // NO_TIMESTAMP (-1) is never judged, as in Kafka.
        if timestamp == -1 {
            return None;
        }
        let (now, ts) = (i128::from(self.now_ms), i128::from(timestamp));
        if ts - now > i128::from(after) || now - ts > i128::from(before) {
            // Kafka prints the bounds with Java's wrapping long arithmetic.
            return Some(format!(
                "Timestamp {timestamp} of message with offset {offset} is out of range. The timestamp should be within [{}, {}]",
                self.now_ms.wrapping_sub(before),
                self.now_ms.wrapping_add(after)
            ));
        }
        None
    }

    /// Whether the header alone proves every record's timestamp in range.
    fn header_settles_timestamps(&self, header: &BatchHeader) -> bool {
        match self.timestamp_bounds {
            None => true,
            Some((before, _)) => {
                before == i64::MAX && self.timestamp_error(header.max_timestamp, 0).is_none()
            }
        }
    }
}

/// Applies `rules` to every batch of `records` (a produce request's record set).
pub fn validate_records(
    records: &[u8],
    rules: &RecordRules<'_>,
) -> Result<Validated, ValidationError> {
    let mut errors = Vec::new();
    let mut invalid_timestamp = false;
    let mut rewritten: Option<Vec<u8>> = None;
    let mut position = 0;
    while let Some((header, end)) = next_batch(records, position) {
        let Some(batch) = records.get(position..end) else {
            break;
        };
        // Markers are the transaction coordinator's to write (WriteTxnMarkers), never a
        // producer's: a client's control batch could commit or abort others' records.
        if header.is_control() {
            return Err(ValidationError::RecordsRejected {
                invalid_timestamp: false,
                errors: Vec::new(),
                message: "Control records are not allowed to be produced by clients".to_string(),
            });
        }
        let codec = header.compression_codec();
        let recode = !header.is_control() && rules.target_codec.is_some_and(|c| c != codec);
        let check_keys = rules.compacted && !header.is_control();
        let claims_log_append_time = rules.refuse_log_append_time && header.is_log_append_time();
        let scan = check_keys
            || recode
            || claims_log_append_time
            || if codec == CODEC_NONE {
                rules.timestamp_bounds.is_some()
            } else {
                !rules.header_settles_timestamps(&header)
            };
        if scan {
            // A damaged batch is CORRUPT_MESSAGE whatever its records say. An uncompressed
            // batch that passes is checked again by Log::append, so here its CRC is only
            // computed when a record fails; anything inflated or rewritten is checked first.
            let crc_checked = codec != CODEC_NONE || recode;
            if crc_checked {
                check_crc(batch)?;
            }
            let body = batch.get(BATCH_HEADER_SIZE..).unwrap_or_default();
            let inflated;
            let section = if codec == CODEC_NONE {
                body
            } else {
                inflated = compression::decompress(codec, body, MAX_DECOMPRESSED_BYTES)
                    .map_err(|source| ValidationError::Codec { source })?;
                &inflated
            };
            let before = errors.len();
            let checked = check_records(section, &header, rules, check_keys, &mut errors);
            if !crc_checked && (checked.is_err() || errors.len() > before) {
                check_crc(batch)?;
            }
            checked?;
            invalid_timestamp |= errors.get(before..).unwrap_or_default().iter().any(|e| {
                e.message.starts_with("Timestamp ")
                    || e.message.starts_with("Invalid timestamp type")
            });
            if let (true, Some(target)) = (recode, rules.target_codec) {
                let out = rewritten
                    .get_or_insert_with(|| records.get(..position).unwrap_or_default().to_vec());
                record_section::rebuild_batch(
                    batch,
                    section,
                    header.record_count,
                    target,
                    rules.level,
                    out,
                )
                .map_err(|source| ValidationError::Codec { source })?;
            } else if let Some(out) = rewritten.as_mut() {
                out.extend_from_slice(batch);
            }
        } else if let Some(out) = rewritten.as_mut() {
            out.extend_from_slice(batch);
        }
        position = end;
    }
    if !errors.is_empty() {
        let message = if invalid_timestamp {
            "One or more records have been rejected due to invalid timestamp".to_string()
        } else {
            let shown: Vec<String> = errors
                .iter()
                .take(3)
                .map(|e| {
                    format!(
                        "RecordError(batchIndex={}, message='{}')",
                        e.batch_index, e.message
                    )
                })
                .collect();
            format!(
                "One or more records have been rejected due to {} record errors in total, and only showing the first three errors at most: [{}]",
                errors.len(),
                shown.join(", ")
            )
        };
        return Err(ValidationError::RecordsRejected {
            invalid_timestamp,
            errors,
            message,
        });
    }
    Ok(match rewritten {
        Some(mut out) => {
            // Whatever followed the last whole batch is kept for Log::append to judge.
            out.extend_from_slice(records.get(position..).unwrap_or_default());
            Validated::ReEncoded(out)
        }
        None => Validated::AsProduced,
    })
}

fn check_crc(batch: &[u8]) -> Result<(), ValidationError> {
    validate_batch(batch, usize::MAX, BatchOrigin::Producer)
        .map(|_| ())
        .map_err(|source| ValidationError::InvalidBatch { source })
}

/// The header and end of the batch at `position`, when its framing is whole.
fn next_batch(records: &[u8], position: usize) -> Option<(BatchHeader, usize)> {
    let rest = records.get(position..)?;
    let header = BatchHeader::parse(rest).ok()?;
    let length = usize::try_from(read_i32(rest, 8)).ok()?;
    let end = position.checked_add(LOG_OVERHEAD)?.checked_add(length)?;
    (end <= records.len() && length + LOG_OVERHEAD >= BATCH_HEADER_SIZE).then_some((header, end))
}

/// Checks every record of an uncompressed records section in place.
fn check_records(
    section: &[u8],
    header: &BatchHeader,
    rules: &RecordRules<'_>,
    check_keys: bool,
    errors: &mut Vec<RecordError>,
) -> Result<(), ValidationError> {
    for (index, view) in (0..).zip(record_section::records(section, header.record_count)) {
        let view = view.map_err(|e| ValidationError::MalformedRecord {
            index: e.index,
            reason: e.reason,
        })?;
        if check_keys && view.key.is_none() {
            errors.push(RecordError {
                batch_index: index,
                message: format!(
                    "Compacted topic cannot accept message without key in topic partition {}",
                    rules.topic_partition
                ),
            });
            continue;
        }
        let timestamp = header.base_timestamp.wrapping_add(view.timestamp_delta);
        let offset = header
            .base_offset
            .wrapping_add(i64::from(view.offset_delta));
        if rules.refuse_log_append_time && header.is_log_append_time() {
            // Kafka's words, with its DefaultRecord's description of the record.
            errors.push(RecordError {
                batch_index: index,
                message: format!(
                    "Invalid timestamp type in message DefaultRecord(offset={offset}, timestamp={timestamp}, key={} bytes, value={} bytes). Producer should not set timestamp type to LogAppendTime.",
                    view.key_bytes(),
                    view.value_bytes().unwrap_or(0)
                ),
            });
            continue;
        }
        if let Some(message) = rules.timestamp_error(timestamp, offset) {
            errors.push(RecordError {
                batch_index: index,
                message,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
