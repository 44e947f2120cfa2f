//! The sparse time index (`<base offset>.timeindex`) of one segment.
//!
//! Layout (Kafka's): 12-byte entries, big-endian,
//!
//! ```text
//! +-------------------------------------+--------------------------+
//! | timestamp (i64, ms)                 | relative offset (u32)    |
//! +-------------------------------------+--------------------------+
//! ```
//!
//! An entry `(t, o)` says: the largest timestamp among the batches up to and including
//! the one ending at offset `o` is `t`. Entries are written at the same sparse points as
//! the offset index, only when the largest timestamp grew, so timestamps strictly
//! increase. On seal one last entry records the segment's largest timestamp, which is
//! therefore the last entry of a sealed segment's time index.
//!
//! To find the first batch with a timestamp at or after `t`: binary search for the last
//! entry whose timestamp is below `t`; every batch up to its offset is older than `t`,
//! so scanning the log from there finds the answer.

use std::path::Path;

use super::mapped_entries::{IndexFileError, MappedEntries};

/// One decoded entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    pub timestamp: i64,
    pub offset: u64,
}

/// The time index of one segment.
#[derive(Debug)]
pub struct TimeIndex {
    base_offset: u64,
    entries: MappedEntries<3>,
}

impl TimeIndex {
    pub const ENTRY_BYTES: usize = MappedEntries::<3>::ENTRY_BYTES;

    pub fn open(
        path: &Path,
        base_offset: u64,
        valid_entries: usize,
        capacity_bytes: u64,
    ) -> Result<Self, IndexFileError> {
        Ok(Self {
            base_offset,
            entries: MappedEntries::open(path, valid_entries, capacity_bytes)?,
        })
    }

    pub fn entries_in_trimmed_file(path: &Path) -> Option<usize> {
        MappedEntries::<3>::entries_in_trimmed_file(path)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.entries.is_full()
    }

    pub fn entry(&self, index: usize) -> Option<TimestampOffset> {
        self.entries
            .get(index)
            .map(|[high, low, relative]| TimestampOffset {
                timestamp: ((u64::from(high) << 32) | u64::from(low)) as i64,
                offset: self.base_offset + u64::from(relative),
            })
    }

    pub fn last_entry(&self) -> Option<TimestampOffset> {
        self.entries
            .len()
            .checked_sub(1)
            .and_then(|i| self.entry(i))
    }

    /// Appends `(timestamp, offset)` if `timestamp` is larger than the last entry's.
    pub fn maybe_append(&self, timestamp: i64, offset: u64) -> Result<(), IndexFileError> {
        if self
            .last_entry()
            .is_some_and(|last| last.timestamp >= timestamp || last.offset > offset)
        {
            return Ok(());
        }
        let bits = timestamp as u64;
        let relative = (offset - self.base_offset) as u32;
        self.entries
            .push([(bits >> 32) as u32, bits as u32, relative])
    }

    /// The last entry with a timestamp below `target`, if any.
    pub fn lookup_before(&self, target: i64) -> Option<TimestampOffset> {
        self.entries
            .last_where(|[high, low, _]| {
                (((u64::from(*high) << 32) | u64::from(*low)) as i64) < target
            })
            .and_then(|i| self.entry(i))
    }

    /// Forgets every entry before a rebuild (see [`MappedEntries::reset`]).
    pub fn reset(&self) {
        self.entries.reset();
    }

    /// Drops every entry for offsets at or after `offset`.
    pub fn truncate_to(&self, offset: u64) {
        let keep = self
            .entries
            .last_where(|[_, _, relative]| self.base_offset + u64::from(*relative) < offset)
            .map_or(0, |i| i + 1);
        self.entries.truncate(keep);
    }

    pub fn sync(&self) -> Result<(), IndexFileError> {
        self.entries.sync()
    }

    pub fn trim(&self) -> Result<(), IndexFileError> {
        self.entries.trim()
    }
}
