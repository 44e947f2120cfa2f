//! The leader-epoch cache of one partition: at which offset each leader epoch began.
//! Replication uses it to find where a follower's log diverges from its leader's
//! (KIP-101/279: the end offset of an epoch is the start offset of the next one).
//!
//! Kept on disk as `leader-epoch-checkpoint` in the partition directory, in Kafka's
//! layout (version, entry count, one `epoch start-offset` line per entry), rewritten
//! atomically on every change. At load the cache is rebuilt from the batch headers of
//! the log (the batches carry their epochs), so it can never disagree with the data it
//! describes; the file is what Kafka's tools and an operator reading the directory see.
//! Since Oxbow never reads it back, it is written without an fsync: one per partition
//! on every leadership change (10,000 of them when a broker takes over 10,000
//! partitions) would make its durability the slowest part of a failover while
//! protecting nothing.

use std::path::Path;

use super::checkpoint::{CheckpointError, overwrite};

pub const LEADER_EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";

/// One entry: leader epoch `epoch` wrote its first record at `start_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: u64,
}

/// Epoch start offsets, epochs and offsets both increasing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderEpochCache {
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    /// Records that `epoch` starts at `start_offset` (a leader's first append in a new
    /// epoch, or a follower appending the first batch of one). Older or equal epochs are
    /// ignored; entries at or after `start_offset` from older epochs are dropped (they
    /// were truncated away). Returns whether the cache changed.
    pub fn assign(&mut self, epoch: i32, start_offset: u64) -> bool {
        if epoch < 0 || self.latest_epoch().is_some_and(|latest| latest >= epoch) {
            return false;
        }
        self.entries.retain(|e| e.start_offset < start_offset);
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        true
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.epoch)
    }

    #[cfg(test)]
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    /// Kafka's `endOffsetFor(epoch)`: the largest epoch at or below `epoch` this log
    /// knows and the offset where it ends (the next epoch's start, or `log_end_offset`
    /// for the latest). `None` when every known epoch is newer than `epoch` (or none is
    /// known): the requester must truncate to its own view.
    pub fn end_offset_for(&self, epoch: i32, log_end_offset: u64) -> Option<(i32, u64)> {
        let position = self.entries.iter().rposition(|e| e.epoch <= epoch)?;
        let found = self.entries.get(position)?;
        let end = self
            .entries
            .get(position + 1)
            .map_or(log_end_offset, |next| next.start_offset);
        Some((found.epoch, end))
    }

    /// Drops what a truncation to `end_offset` removed. Returns whether the cache changed.
    pub fn truncate_from_end(&mut self, end_offset: u64) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.start_offset < end_offset);
        before != self.entries.len()
    }

    /// Drops entries wholly below a new log start offset (the last one below it stays,
    /// moved up to the log start: it still covers the first records), as Kafka trims its
    /// cache when retention or DeleteRecords moves the log start.
    pub fn truncate_from_start(&mut self, log_start_offset: u64) -> bool {
        let Some(keep_from) = self
            .entries
            .iter()
            .rposition(|e| e.start_offset <= log_start_offset)
        else {
            return false;
        };
        let changed = keep_from > 0
            || self
                .entries
                .first()
                .is_some_and(|e| e.start_offset < log_start_offset);
        self.entries.drain(..keep_from);
        if let Some(first) = self.entries.first_mut() {
            first.start_offset = first.start_offset.max(log_start_offset);
        }
        changed
    }

    pub fn write(&self, partition_dir: &Path) -> Result<(), CheckpointError> {
        let mut text = format!("0\n{}\n", self.entries.len());
        for entry in &self.entries {
            text.push_str(&format!("{} {}\n", entry.epoch, entry.start_offset));
        }
        overwrite(
            &partition_dir.join(LEADER_EPOCH_CHECKPOINT_FILE),
            text.as_bytes(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(entries: &[(i32, u64)]) -> LeaderEpochCache {
        let mut cache = LeaderEpochCache::default();
        for (epoch, start) in entries {
            assert!(cache.assign(*epoch, *start));
        }
        cache
    }

    #[test]
    fn end_offsets_follow_the_next_epoch_start() {
        let epochs = cache(&[(0, 0), (2, 10), (5, 30)]);
        assert_eq!(epochs.end_offset_for(0, 50), Some((0, 10)));
        // Epoch 1 never wrote: the largest epoch below it answers.
        assert_eq!(epochs.end_offset_for(1, 50), Some((0, 10)));
        assert_eq!(epochs.end_offset_for(2, 50), Some((2, 30)));
        assert_eq!(epochs.end_offset_for(5, 50), Some((5, 50)));
        assert_eq!(epochs.end_offset_for(9, 50), Some((5, 50)));
        assert_eq!(cache(&[(3, 0)]).end_offset_for(2, 7), None);
    }

    #[test]
    fn stale_epochs_are_ignored_and_truncation_drops_entries() {
        let mut epochs = cache(&[(0, 0), (2, 10)]);
        assert!(!epochs.assign(1, 20), "an older epoch never enters");
        assert!(!epochs.assign(2, 20), "nor the same one again");
        assert!(epochs.truncate_from_end(10));
        assert_eq!(epochs.latest_epoch(), Some(0));
        assert!(epochs.assign(3, 10));
        assert!(epochs.truncate_from_start(12));
        assert_eq!(
            epochs.entries(),
            &[EpochEntry {
                epoch: 3,
                start_offset: 12
            }]
        );
    }

    #[test]
    fn written_in_kafkas_layout() {
        let dir = tempfile::tempdir().unwrap();
        cache(&[(0, 0), (4, 17)]).write(dir.path()).unwrap();
        let text = std::fs::read_to_string(dir.path().join(LEADER_EPOCH_CHECKPOINT_FILE)).unwrap();
        assert_eq!(text, "0\n2\n0 0\n4 17\n");
    }
}
