//! Log compaction for `cleanup.policy=compact`: keep only the newest record of each key.
//!
//! ```text
//!   sealed segments ──► key → newest offset map ──► rewrite each sealed segment:
//!       batch whose records all survive   → copied byte for byte
//!       batch with some records dropped   → survivors re-encoded, same codec and producer
//!       batch with nothing left           → dropped
//! ```
//!
//! Only sealed segments are cleaned and only keys seen in sealed segments count (as in
//! Kafka, the active segment is the "dirty" head that the next pass picks up after a
//! roll). Tombstones (null values) are kept for `delete.retention.ms` after their
//! batch's timestamp so that consumers catching up see the delete. Records without a
//! key are kept. Offsets never change: a compacted log has gaps, never renumbering.
//!
//! Crash safety: the cleaned log is written to `<base>.log.cleaned` and fsynced; the
//! segment's old index files are deleted, the cleaned file is renamed over the old log,
//! and fresh indexes are built from it. A crash at any point leaves either the old or
//! the new log, and a segment without index files is rebuilt when the log is opened.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions};

use super::batch::BatchHeader;
use super::log::{Log, LogError};
use super::segment::{LogSegment, SegmentError};

/// What one compaction pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionReport {
    pub segments_cleaned: usize,
    pub records_removed: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

impl Log {
    /// Compacts the sealed segments once (no-op unless the policy includes `compact`).
    pub fn compact(&self) -> Result<CompactionReport, LogError> {
        self.check_usable()?;
        let config = self.config();
        let mut report = CompactionReport::default();
        if !config.cleanup_policy.compact {
            return Ok(report);
        }
        let _maintenance = self.maintenance.lock();
        let sealed = self.sealed_segments();
        let mut newest: HashMap<Bytes, u64> = HashMap::new();
        for segment in &sealed {
            for_each_batch(self, segment, |_, header, records| {
                if header.is_control() {
                    return;
                }
                for record in records {
                    if let Some(key) = &record.key {
                        newest.insert(key.clone(), record.offset as u64);
                    }
                }
            })?;
        }
        let tombstone_horizon = self
            .clock
            .now_ms()
            .saturating_sub(config.delete_retention_ms);
        for segment in sealed {
            let cleaned = self.clean_segment(&segment, &newest, tombstone_horizon, &mut report)?;
            if let Some(cleaned) = cleaned {
                self.segments.write().insert(cleaned.base_offset(), cleaned);
                report.segments_cleaned += 1;
            }
        }
        if report.segments_cleaned > 0 {
            tracing::info!(topic_partition = %self.topic_partition, removed = report.records_removed, before = report.bytes_before, after = report.bytes_after, "Compacted sealed segments");
        }
        Ok(report)
    }

    /// Rewrites one segment without its superseded records; `None` when nothing changes.
    fn clean_segment(
        &self,
        segment: &Arc<LogSegment>,
        newest: &HashMap<Bytes, u64>,
        tombstone_horizon: i64,
        report: &mut CompactionReport,
    ) -> Result<Option<Arc<LogSegment>>, LogError> {
        let mut output = Vec::with_capacity(segment.size() as usize);
        let mut removed = 0u64;
        let mut failure = None;
        for_each_batch(self, segment, |raw, header, records| {
            if header.is_control() {
                output.extend_from_slice(raw);
                return;
            }
            let survivors: Vec<&Record> = records
                .iter()
                .filter(|record| match &record.key {
                    None => true,
                    Some(key) => {
                        newest.get(key) == Some(&(record.offset as u64))
                            && (record.value.is_some() || header.max_timestamp >= tombstone_horizon)
                    }
                })
                .collect();
            removed += (records.len() - survivors.len()) as u64;
            if survivors.len() == records.len() {
                output.extend_from_slice(raw);
            } else if !survivors.is_empty()
                && let Err(error) = encode_survivors(&mut output, header, &survivors)
            {
                failure = Some(error);
            }
        })?;
        if let Some(reason) = failure {
            return Err(LogError::Decode {
                topic_partition: self.topic_partition.clone(),
                offset: segment.base_offset(),
                reason,
            });
        }
        if removed == 0 {
            return Ok(None);
        }
        report.records_removed += removed;
        report.bytes_before += segment.size();
        report.bytes_after += output.len() as u64;
        self.swap_in_cleaned(segment, &output).map(Some)
    }

    fn swap_in_cleaned(
        &self,
        segment: &Arc<LogSegment>,
        cleaned: &[u8],
    ) -> Result<Arc<LogSegment>, LogError> {
        let log_path = segment.log_path().to_path_buf();
        let cleaned_path = log_path.with_extension("log.cleaned");
        let write = |source| SegmentError::Write {
            path: cleaned_path.clone(),
            position: 0,
            source,
        };
        let result = (|| {
            let mut file = std::fs::File::create(&cleaned_path).map_err(write)?;
            file.write_all(cleaned).map_err(write)?;
            file.sync_all().map_err(write)?;
            for extension in ["index", "timeindex"] {
                let path = log_path.with_extension(extension);
                std::fs::remove_file(&path)
                    .map_err(|source| SegmentError::Delete { path, source })?;
            }
            std::fs::rename(&cleaned_path, &log_path).map_err(write)?;
            let config = self.config();
            let (fresh, _) =
                LogSegment::open_files(&self.dir(), segment.base_offset(), &config, true)?;
            fresh.recover(config.index_interval_bytes)?;
            fresh.offset_index().trim()?;
            fresh.time_index().trim()?;
            fresh.sync()?;
            Ok(Arc::new(fresh))
        })();
        result.map_err(|e| self.fail(e))
    }
}

/// Calls `visit(raw bytes, header, records)` for every batch of a segment.
fn for_each_batch(
    log: &Log,
    segment: &LogSegment,
    mut visit: impl FnMut(&[u8], &BatchHeader, &[Record]),
) -> Result<(), LogError> {
    let mut position = 0;
    while let Some(header) = segment.header_at(position).map_err(|e| log.fail(e))? {
        let size = header.total_size();
        let records = log.decode_batch_at(segment, position, size)?;
        let raw = super::segment::FileRegion {
            file: Arc::clone(segment.file()),
            position,
            length: size as u64,
        }
        .read_to_vec()
        .map_err(|source| {
            log.fail(SegmentError::Read {
                path: segment.log_path().to_path_buf(),
                position,
                source,
            })
        })?;
        visit(&raw, &header, &records);
        position += size as u64;
    }
    Ok(())
}

/// Re-encodes the surviving records of a batch with its codec and producer fields.
fn encode_survivors(
    output: &mut Vec<u8>,
    header: &BatchHeader,
    survivors: &[&Record],
) -> Result<(), String> {
    let compression = match header.compression_codec() {
        1 => Compression::Gzip,
        2 => Compression::Snappy,
        3 => Compression::Lz4,
        4 => Compression::Zstd,
        _ => Compression::None,
    };
    // The encoder splits batches where (offset - sequence) changes; deriving each
    // sequence from its offset keeps the survivors in one batch with the original
    // base sequence semantics.
    let first_offset = survivors.first().map_or(header.base_offset, |r| r.offset);
    let records: Vec<Record> = survivors
        .iter()
        .map(|record| {
            let mut record = (*record).clone();
            record.sequence = if header.base_sequence < 0 {
                // No producer sequence: keep the batch's base sequence at -1.
                (record.offset - first_offset) as i32 - 1
            } else {
                header
                    .base_sequence
                    .wrapping_add((record.offset - header.base_offset) as i32)
            };
            record
        })
        .collect();
    let mut buffer = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buffer,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .map_err(|error| error.to_string())?;
    output.extend_from_slice(&buffer);
    Ok(())
}
