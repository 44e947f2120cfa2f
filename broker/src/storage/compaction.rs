//! Log compaction for `cleanup.policy=compact`: keep only the newest record of each key.
//!
//! ```text
//!   sealed segments ──► key → newest offset map ──► rewrite each sealed segment:
//!       batch whose records all survive   → copied byte for byte
//!       batch with some records dropped   → the same header (base offset, last offset
//!                                           delta, timestamps, producer id/epoch/base
//!                                           sequence, codec) around the survivors' bytes,
//!                                           re-compressed; length, count and CRC anew
//!       batch with nothing left           → dropped, unless it is an idempotent producer's
//!                                           last: then kept empty (no records), so its
//!                                           sequence survives a restart (Kafka's rule)
//!       transaction marker                → dropped once no batch of its transaction
//!                                           is left (none seen by this pass) and it is
//!                                           older than `delete.retention.ms`
//! ```
//!
//! Aborted transactions' records are removed (they never count as a key's value), and
//! nothing at or past the last stable offset is cleaned. A marker goes in a pass after
//! its transaction's data went, as Kafka's cleaner does it: a consumer that read the data
//! still finds the marker for `delete.retention.ms`.
//!
//! A record's offset and timestamp are deltas from its batch's header, so keeping the
//! header keeps every survivor at its original offset without re-encoding a record; the
//! batch's offset span then holds fewer records than offsets (`BatchOrigin::Log`).
//!
//! Only sealed segments are cleaned and only keys seen in them count (as in Kafka, the
//! active segment is the head that the next pass picks up after a roll), and of those
//! only segments whose records are all older than `min.compaction.lag.ms`. A pass runs
//! when the bytes written since the last one (the dirty part) are at least
//! `min.cleanable.dirty.ratio` of the cleanable bytes, or when a dirty record is older
//! than `max.compaction.lag.ms` (which also caps how long a segment stays active). Tombstones (null values) are kept for `delete.retention.ms` after their
//! batch's timestamp so that consumers catching up see the delete. Records without a
//! key are kept. Offsets never change: a compacted log has gaps, never renumbering.
//!
//! Crash safety: the cleaned log is written to `<base>.log.cleaned` and fsynced; the
//! segment's old index files are deleted, the cleaned file is renamed over the old log,
//! and fresh indexes are built from it. A crash at any point leaves either the old or
//! the new log, and a segment without index files is rebuilt when the log is opened.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::Arc;

use bytes::Bytes;

use super::batch::{BATCH_HEADER_SIZE, BatchHeader};
use super::compression::{self, CODEC_NONE, MAX_DECOMPRESSED_BYTES};
use super::log::{Log, LogError};
use super::log_config::LogConfig;
use super::record_section;
use super::segment::{LogSegment, SegmentError};

/// The cleaner's position in one log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanerState {
    /// Offsets below this are clean (compacted); the rest is dirty.
    pub first_dirty_offset: u64,
    /// When the oldest tombstone the last pass kept passes `delete.retention.ms`: a pass
    /// is due then even with nothing dirty, so the tombstone goes.
    pub tombstone_expiry_ms: Option<i64>,
}

/// What one compaction pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionReport {
    pub segments_cleaned: usize,
    pub records_removed: u64,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Largest timestamp of the oldest batch holding a tombstone (or of the oldest
    /// marker of a transaction with no data left) that was kept.
    pub oldest_kept_tombstone_ms: Option<i64>,
}

impl Log {
    /// Compacts the cleanable segments once when the cleaner's rules say they are due
    /// (no-op unless the policy includes `compact`).
    pub fn compact(&self) -> Result<CompactionReport, LogError> {
        self.check_usable()?;
        let config = self.config();
        let mut report = CompactionReport::default();
        if !config.cleanup_policy.compact {
            return Ok(report);
        }
        let _maintenance = self.maintenance.lock();
        let now = self.clock.now_ms();
        let cleanable = self.cleanable_segments(&config, now);
        let Some(last) = cleanable.last() else {
            return Ok(report);
        };
        let state = *self.cleaner.lock();
        let first_dirty = state.first_dirty_offset.max(self.log_start_offset());
        let tombstones_expire = state.tombstone_expiry_ms.is_some_and(|at| at <= now);
        if !tombstones_expire && !self.cleaning_due(&config, &cleanable, first_dirty, now)? {
            return Ok(report);
        }
        let end = last.next_offset();
        // Aborted transactions' records never count as a key's value: they are removed,
        // and must not hide the committed value before them.
        let aborted = self.transactions.lock().aborted_by_producer();
        let mut newest: HashMap<Bytes, u64> = HashMap::new();
        for segment in &cleanable {
            for_each_batch(self, segment, |_, header, section| {
                if header.is_control() || is_aborted(&aborted, header) {
                    return Ok(());
                }
                for record in record_section::records(section, header.record_count) {
                    let record = record.map_err(|e| e.to_string())?;
                    if let Some(key) = record.key {
                        let offset = header
                            .base_offset
                            .wrapping_add(i64::from(record.offset_delta));
                        newest.insert(Bytes::copy_from_slice(key), offset as u64);
                    }
                }
                Ok(())
            })?;
        }
        let tombstone_horizon = now.saturating_sub(config.delete_retention_ms);
        let producers_last = self.writer.lock().producers.last_offsets();
        let rules = CleaningRules {
            newest: &newest,
            tombstone_horizon,
            producers_last: &producers_last,
            aborted: &aborted,
        };
        let mut pass = PassState::default();
        for segment in cleanable {
            let cleaned = self.clean_segment(&segment, &rules, &mut pass, &mut report)?;
            if let Some(cleaned) = cleaned {
                self.segments.write().insert(cleaned.base_offset(), cleaned);
                report.segments_cleaned += 1;
            }
        }
        if !pass.removed_markers.is_empty() {
            self.transactions
                .lock()
                .forget_markers(&pass.removed_markers);
        }
        *self.cleaner.lock() = CleanerState {
            first_dirty_offset: end,
            tombstone_expiry_ms: report
                .oldest_kept_tombstone_ms
                .map(|at| at.saturating_add(config.delete_retention_ms)),
        };
        if report.segments_cleaned > 0 {
            tracing::info!(topic_partition = %self.topic_partition, removed = report.records_removed, before = report.bytes_before, after = report.bytes_after, "Compacted sealed segments");
        }
        Ok(report)
    }

    /// The sealed segments the cleaner may rewrite: oldest first, up to the first one
    /// holding a record younger than `min.compaction.lag.ms` or at or after the last
    /// stable offset (Kafka's first uncleanable offset: an undecided transaction's
    /// records are not cleaned before its outcome is known).
    fn cleanable_segments(&self, config: &LogConfig, now: i64) -> Vec<Arc<LogSegment>> {
        let youngest_cleanable = now.saturating_sub(config.min_compaction_lag_ms);
        let last_stable = self.last_stable_offset();
        self.sealed_segments()
            .into_iter()
            .take_while(|segment| {
                segment.next_offset() <= last_stable
                    && (config.min_compaction_lag_ms == 0
                        || segment.max_timestamp() <= youngest_cleanable)
            })
            .collect()
    }

    /// Whether the cleanable part is dirty enough (`min.cleanable.dirty.ratio`), or holds
    /// a dirty record older than `max.compaction.lag.ms`, to be cleaned now.
    fn cleaning_due(
        &self,
        config: &LogConfig,
        cleanable: &[Arc<LogSegment>],
        first_dirty: u64,
        now: i64,
    ) -> Result<bool, LogError> {
        let (mut clean_bytes, mut dirty_bytes) = (0u64, 0u64);
        let mut first_dirty_segment = None;
        for segment in cleanable {
            if segment.next_offset() <= first_dirty {
                clean_bytes += segment.size();
            } else {
                dirty_bytes += segment.size();
                first_dirty_segment.get_or_insert(segment);
            }
        }
        let Some(first_dirty_segment) = first_dirty_segment else {
            return Ok(false);
        };
        let ratio = dirty_bytes as f64 / (clean_bytes + dirty_bytes) as f64;
        if ratio >= config.min_cleanable_dirty_ratio.0 {
            return Ok(true);
        }
        // Kafka dates a segment by its first batch's largest timestamp.
        let first_batch = first_dirty_segment
            .header_at(0)
            .map_err(|e| self.fail(e))?
            .map(|header| header.max_timestamp);
        Ok(first_batch.is_some_and(|timestamp| {
            timestamp >= 0 && now.saturating_sub(timestamp) > config.max_compaction_lag_ms
        }))
    }

    /// Rewrites one segment without its superseded records; `None` when nothing changes.
    fn clean_segment(
        &self,
        segment: &Arc<LogSegment>,
        rules: &CleaningRules<'_>,
        pass: &mut PassState,
        report: &mut CompactionReport,
    ) -> Result<Option<Arc<LogSegment>>, LogError> {
        let CleaningRules {
            newest,
            tombstone_horizon,
            producers_last,
            aborted,
        } = *rules;
        let mut output = Vec::with_capacity(segment.size() as usize);
        let mut removed = 0u64;
        let config = self.config();
        for_each_batch(self, segment, |raw, header, section| {
            if header.is_control() {
                let emptied_transaction = header.is_transactional()
                    && header.has_producer_id()
                    && !pass.transactions_seen.remove(&header.producer_id);
                if emptied_transaction && header.max_timestamp < tombstone_horizon {
                    removed += u64::from(header.record_count.unsigned_abs());
                    pass.removed_markers.insert(header.base_offset as u64);
                    return Ok(());
                }
                if emptied_transaction {
                    // Due later, as a tombstone is.
                    let oldest = report.oldest_kept_tombstone_ms.get_or_insert(i64::MAX);
                    *oldest = (*oldest).min(header.max_timestamp);
                }
                output.extend_from_slice(raw);
                return Ok(());
            }
            if header.is_transactional() && header.has_producer_id() {
                pass.transactions_seen.insert(header.producer_id);
            }
            let mut survivors = Vec::with_capacity(section.len());
            let (mut kept, mut kept_tombstone) = (0i32, false);
            let aborted = is_aborted(aborted, header);
            for record in record_section::records(section, header.record_count) {
                let record = record.map_err(|e| e.to_string())?;
                let keep = !aborted
                    && match record.key {
                        None => true,
                        Some(key) => {
                            let offset = (header
                                .base_offset
                                .wrapping_add(i64::from(record.offset_delta)))
                                as u64;
                            newest.get(key) == Some(&offset)
                                && (record.value_bytes().is_some()
                                    || header.max_timestamp >= tombstone_horizon)
                        }
                    };
                if keep {
                    survivors.extend_from_slice(record.raw);
                    kept += 1;
                    kept_tombstone |= record.key.is_some() && record.value_bytes().is_none();
                }
            }
            removed += u64::from((header.record_count - kept).unsigned_abs());
            if kept_tombstone {
                let oldest = report.oldest_kept_tombstone_ms.get_or_insert(i64::MAX);
                *oldest = (*oldest).min(header.max_timestamp);
            }
            // A producer's last batch stays, emptied if all its records went: its header
            // carries the producer's sequence, which a restart rebuilds the state from.
            let producers_last_batch = header.has_producer_id()
                && producers_last.get(&header.producer_id) == Some(&(header.last_offset() as u64));
            if kept == header.record_count {
                output.extend_from_slice(raw);
            } else if kept > 0 || producers_last_batch {
                // An emptied batch is written uncompressed, as Kafka writes it.
                let codec = if kept == 0 {
                    CODEC_NONE
                } else {
                    header.compression_codec()
                };
                record_section::rebuild_batch(
                    raw,
                    &survivors,
                    kept,
                    codec,
                    config.compression_level(codec),
                    &mut output,
                )
                .map_err(|e| e.to_string())?;
            }
            Ok(())
        })?;
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

/// What decides which records of a pass survive.
#[derive(Clone, Copy)]
struct CleaningRules<'a> {
    /// The newest offset of each key in the cleanable segments.
    newest: &'a HashMap<Bytes, u64>,
    /// Tombstones in batches older than this go.
    tombstone_horizon: i64,
    /// Each idempotent producer's last offset in the log.
    producers_last: &'a HashMap<i64, u64>,
    /// Each producer's aborted transactions, `(first offset, marker offset)`.
    aborted: &'a HashMap<i64, Vec<(u64, u64)>>,
}

/// What one pass carries from segment to segment (they are cleaned in offset order).
#[derive(Debug, Default)]
struct PassState {
    /// Producers with a batch of their current transaction seen so far.
    transactions_seen: HashSet<i64>,
    /// The offsets of the markers removed.
    removed_markers: HashSet<u64>,
}

/// Whether `header` is a data batch of an aborted transaction.
fn is_aborted(aborted: &HashMap<i64, Vec<(u64, u64)>>, header: &BatchHeader) -> bool {
    if !header.is_transactional() || header.is_control() {
        return false;
    }
    let offset = header.base_offset.max(0) as u64;
    aborted.get(&header.producer_id).is_some_and(|ranges| {
        ranges
            .iter()
            .any(|(first, marker)| *first <= offset && offset < *marker)
    })
}

/// Calls `visit(raw batch, header, records section inflated)` for every batch of a
/// segment; a batch `visit` cannot read fails the pass with its reason.
fn for_each_batch(
    log: &Log,
    segment: &LogSegment,
    mut visit: impl FnMut(&[u8], &BatchHeader, &[u8]) -> Result<(), String>,
) -> Result<(), LogError> {
    let mut position = 0;
    while let Some(header) = segment.header_at(position).map_err(|e| log.fail(e))? {
        let size = header.total_size();
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
        let body = raw.get(BATCH_HEADER_SIZE..).unwrap_or_default();
        let codec = header.compression_codec();
        let inflated;
        let section = if codec == CODEC_NONE {
            body
        } else {
            inflated =
                compression::decompress(codec, body, MAX_DECOMPRESSED_BYTES).map_err(|error| {
                    LogError::Decode {
                        topic_partition: log.topic_partition.clone(),
                        offset: header.base_offset.max(0) as u64,
                        reason: error.to_string(),
                    }
                })?;
            &inflated
        };
        visit(&raw, &header, section).map_err(|reason| LogError::Decode {
            topic_partition: log.topic_partition.clone(),
            offset: header.base_offset.max(0) as u64,
            reason,
        })?;
        position += size as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
