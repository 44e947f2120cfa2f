//! Retention: deleting whole sealed segments by age (`retention.ms`), by total size
//! (`retention.bytes`) and below the log start offset (DeleteRecords). The active
//! segment is never deleted; only a prefix of the log ever is, so offsets stay dense
//! from the log start offset to the log end.
//!
//! A deleted segment leaves the log at once but its files are only renamed `.deleted`
//! and removed `file.delete.delay.ms` later (by a later retention pass), so a fetch
//! already reading them finishes; files left by a stop are removed when the log loads.

use std::path::PathBuf;
use std::sync::Arc;

use super::log::{Log, LogError};
use super::segment::{LogSegment, SegmentError};

/// What a retention pass deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionReport {
    pub deleted_segments: usize,
    pub deleted_bytes: u64,
}

impl Log {
    /// Applies the retention policy once; called periodically by the log manager.
    pub fn apply_retention(&self) -> Result<RetentionReport, LogError> {
        self.check_usable()?;
        let _maintenance = self.maintenance.lock();
        let config = self.config();
        let now = self.clock.now_ms();
        self.remove_deleted_files_due(now)?;
        let log_start = self.log_start_offset();
        let sealed = self.sealed_segments();
        let mut total: i64 = self.size_bytes() as i64;
        let mut doomed = Vec::new();
        for segment in sealed {
            let below_start = segment.next_offset() <= log_start;
            let expired = config.cleanup_policy.delete
                && config.retention_ms >= 0
                && segment.max_timestamp() < now.saturating_sub(config.retention_ms);
            let oversized = config.cleanup_policy.delete
                && config.retention_bytes >= 0
                && total - segment.size() as i64 >= config.retention_bytes;
            if !(below_start || expired || oversized) {
                break;
            }
            total -= segment.size() as i64;
            doomed.push(segment);
        }
        self.delete_segments(doomed)
    }

    /// Deletes sealed segments that lie wholly below the log start offset.
    pub(super) fn delete_segments_below_log_start(&self) -> Result<RetentionReport, LogError> {
        let _maintenance = self.maintenance.lock();
        let log_start = self.log_start_offset();
        let doomed = self
            .sealed_segments()
            .into_iter()
            .take_while(|s| s.next_offset() <= log_start)
            .collect();
        self.delete_segments(doomed)
    }

    /// All segments but the active one, oldest first.
    pub(super) fn sealed_segments(&self) -> Vec<Arc<LogSegment>> {
        let active_base = self.writer.lock().active.segment().base_offset();
        self.segments
            .read()
            .range(..active_base)
            .map(|(_, s)| Arc::clone(s))
            .collect()
    }

    fn delete_segments(&self, doomed: Vec<Arc<LogSegment>>) -> Result<RetentionReport, LogError> {
        let mut report = RetentionReport::default();
        let Some(last) = doomed.last() else {
            return Ok(report);
        };
        let new_start = last.next_offset();
        {
            let mut segments = self.segments.write();
            for segment in &doomed {
                segments.remove(&segment.base_offset());
            }
        }
        self.set_log_start_offset_at_least(new_start)?;
        self.write_checkpoint()?;
        let delay = self.config().file_delete_delay_ms;
        let due = self.clock.now_ms().saturating_add(delay);
        for segment in doomed {
            report.deleted_segments += 1;
            report.deleted_bytes += segment.size();
            if delay == 0 {
                segment.delete_files().map_err(|e| self.fail(e))?;
            } else {
                let renamed = segment.rename_to_deleted().map_err(|e| self.fail(e))?;
                self.pending_deletes
                    .lock()
                    .extend(renamed.into_iter().map(|path| (due, path)));
            }
        }
        tracing::info!(topic_partition = %self.topic_partition, segments = report.deleted_segments, bytes = report.deleted_bytes, log_start_offset = self.log_start_offset(), "Deleted old segments");
        Ok(report)
    }

    /// Removes the files of deleted segments whose `file.delete.delay.ms` has passed.
    pub(super) fn remove_deleted_files_due(&self, now: i64) -> Result<usize, LogError> {
        let due: Vec<PathBuf> = {
            let mut pending = self.pending_deletes.lock();
            let (due, waiting) = pending.drain(..).partition(|(at, _)| *at <= now);
            *pending = waiting;
            due.into_iter().map(|(_, path)| path).collect()
        };
        for path in &due {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                // The log moved to another directory or was deleted meanwhile.
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(self.fail(SegmentError::Delete {
                        path: path.clone(),
                        source,
                    }));
                }
            }
        }
        Ok(due.len())
    }
}

#[cfg(test)]
mod tests;
