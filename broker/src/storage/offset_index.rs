//! The sparse offset index (`<base offset>.index`) of one segment.
//!
//! Layout (Kafka's): 8-byte entries, big-endian,
//!
//! ```text
//! +--------------------------+---------------------------+
//! | relative offset (u32)    | file position (u32)       |
//! +--------------------------+---------------------------+
//! ```
//!
//! `relative offset` is a batch's last offset minus the segment's base offset, and
//! `file position` is where that batch starts in the `.log`. One entry is written
//! whenever more than `index.interval.bytes` of batches were appended since the last
//! entry, so entries are strictly increasing in both fields. To find an offset, binary
//! search for the last entry whose offset is below it, then scan the log forward from
//! that position (at most about `index.interval.bytes` plus one batch).
//!
//! The file is preallocated to `segment.index.bytes` while the segment is active and
//! trimmed when it is sealed; after an unclean stop the active segment's index is
//! rebuilt from its log (see [`super::mapped_entries`]).

use std::path::Path;

use super::mapped_entries::{IndexFileError, MappedEntries};

/// One decoded entry: an absolute offset and the position of its batch in the log file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    pub offset: u64,
    pub position: u32,
}

/// The offset index of one segment.
#[derive(Debug)]
pub struct OffsetIndex {
    base_offset: u64,
    entries: MappedEntries<2>,
}

impl OffsetIndex {
    pub const ENTRY_BYTES: usize = MappedEntries::<2>::ENTRY_BYTES;

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

    /// Entries in an index file that was trimmed on seal or clean close.
    pub fn entries_in_trimmed_file(path: &Path) -> Option<usize> {
        MappedEntries::<2>::entries_in_trimmed_file(path)
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

    pub fn entry(&self, index: usize) -> Option<OffsetPosition> {
        self.entries
            .get(index)
            .map(|[relative, position]| OffsetPosition {
                offset: self.base_offset + u64::from(relative),
                position,
            })
    }

    pub fn last_entry(&self) -> Option<OffsetPosition> {
        self.entries
            .len()
            .checked_sub(1)
            .and_then(|i| self.entry(i))
    }

    /// Records that the batch ending at `last_offset` starts at `position`.
    pub fn append(&self, last_offset: u64, position: u32) -> Result<(), IndexFileError> {
        let relative = (last_offset - self.base_offset) as u32;
        self.entries.push([relative, position])
    }

    /// Where to start scanning for `target`: the last indexed batch that ends before
    /// `target`, or the start of the segment.
    pub fn lookup(&self, target: u64) -> OffsetPosition {
        let relative_target = target.saturating_sub(self.base_offset);
        self.entries
            .last_where(|[relative, _]| u64::from(*relative) < relative_target)
            .and_then(|i| self.entry(i))
            .unwrap_or(OffsetPosition {
                offset: self.base_offset,
                position: 0,
            })
    }

    /// The last indexed batch that starts at or before `position` and ends before
    /// `upper_offset`: lets a read skip to the end of its byte budget without reading
    /// every batch header on the way.
    pub fn last_at_or_before_position(
        &self,
        position: u64,
        upper_offset: u64,
    ) -> Option<OffsetPosition> {
        self.entries
            .last_where(|[relative, start]| {
                u64::from(*start) <= position
                    && self.base_offset + u64::from(*relative) < upper_offset
            })
            .and_then(|i| self.entry(i))
    }

    /// Forgets every entry before a rebuild (see [`MappedEntries::reset`]).
    pub fn reset(&self) {
        self.entries.reset();
    }

    /// Drops every entry for batches ending at or after `offset`.
    pub fn truncate_to(&self, offset: u64) {
        let keep = self
            .entries
            .last_where(|[relative, _]| self.base_offset + u64::from(*relative) < offset)
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
