//! One log segment: `<base offset, 20 digits>.log` plus its `.index` and `.timeindex`.
//!
//! The `.log` file is a sequence of RecordBatch v2 byte strings exactly as producers sent
//! them (with the broker's base offset and leader epoch stamped in), one after another,
//! with no framing of our own, so Kafka's own tools can read it. Batch `n + 1` starts
//! where batch `n` ends; offsets strictly increase across batches.
//!
//! A segment is either active (the one the log appends to; only [`ActiveSegment`] can
//! write) or sealed (read-only, indexes trimmed). Readers share segments through `Arc`s
//! and only look at bytes below the published `size`, which the writer moves forward
//! after a batch is completely written: a reader never sees a half-written batch and
//! never waits for the writer.
//!
//! Crash behaviour: the log file is written with positioned writes and never extended
//! past its data (`preallocate` reserves disk without changing the length), so after an
//! unclean stop its tail may hold a torn batch; recovery
//! (see [`LogSegment::recover`]) scans batches, verifies each CRC and truncates at the
//! first bad one, rebuilding both indexes as it goes.

use std::fs::{File, OpenOptions};
use std::io::IoSlice;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use super::batch::{BATCH_HEADER_SIZE, BatchHeader, LOG_OVERHEAD};
use super::log_config::LogConfig;
use super::mapped_entries::IndexFileError;
use super::offset_index::OffsetIndex;
use super::time_index::TimeIndex;

/// Suffix of a segment file waiting out `file.delete.delay.ms`; removed on load.
pub const DELETED_SUFFIX: &str = ".deleted";

/// No timestamp seen yet.
pub const NO_TIMESTAMP: i64 = -1;

/// Failures of segment file operations, with the file involved.
#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    #[error("cannot open segment file {path}: {source}")]
    OpenLog {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write segment file {path} at position {position}: {source}")]
    Write {
        path: PathBuf,
        position: u64,
        source: std::io::Error,
    },
    #[error("cannot read segment file {path} at position {position}: {source}")]
    Read {
        path: PathBuf,
        position: u64,
        source: std::io::Error,
    },
    #[error("cannot truncate segment file {path} to {size} bytes: {source}")]
    Truncate {
        path: PathBuf,
        size: u64,
        source: std::io::Error,
    },
    #[error("cannot sync segment file {path}: {source}")]
    Sync {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot delete segment file {path}: {source}")]
    Delete {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Index(#[from] IndexFileError),
}

/// A byte range of a segment file to send: the network layer `sendfile`s it on
/// plaintext connections or copies it with [`FileRegion::read_to_vec`].
#[derive(Debug, Clone)]
pub struct FileRegion {
    pub file: Arc<File>,
    pub position: u64,
    pub length: u64,
}

impl FileRegion {
    /// Copies the region into memory (TLS connections, tests).
    pub fn read_to_vec(&self) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.read_into(&mut bytes)?;
        Ok(bytes)
    }

    /// Appends the region's bytes to `buffer`, reusing its capacity (the copying path
    /// keeps one buffer per connection instead of allocating per fetch).
    pub fn read_into(&self, buffer: &mut Vec<u8>) -> std::io::Result<()> {
        let start = buffer.len();
        buffer.resize(start + self.length as usize, 0);
        let target = buffer.get_mut(start..).unwrap_or_default();
        self.file.read_exact_at(target, self.position)
    }
}

/// File names of a segment.
pub fn log_file_name(base_offset: u64) -> String {
    format!("{base_offset:020}.log")
}

fn sibling(log_path: &Path, extension: &str) -> PathBuf {
    log_path.with_extension(extension)
}

/// A segment's files and the published state readers rely on.
#[derive(Debug)]
pub struct LogSegment {
    base_offset: u64,
    log_path: PathBuf,
    file: Arc<File>,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    /// Bytes of complete batches; readers never look past it.
    size: AtomicU64,
    /// Offset after the last batch (the base offset while empty).
    next_offset: AtomicU64,
    max_timestamp: AtomicI64,
    offset_of_max_timestamp: AtomicU64,
    /// When the first batch was appended (wall clock), for `segment.ms`.
    first_append_ms: AtomicI64,
    bytes_since_last_index_entry: AtomicU64,
}

impl LogSegment {
    /// Opens the segment files for `base_offset` in `dir`, creating any that are missing.
    /// `preallocate` sizes the indexes for appending (active segment); otherwise they are
    /// opened at their trimmed length. The returned segment has not been checked: call
    /// [`Self::load_tail`] (trusted) or [`Self::recover`] (after an unclean stop).
    pub(super) fn open_files(
        dir: &Path,
        base_offset: u64,
        config: &LogConfig,
        preallocate: bool,
    ) -> Result<(Self, bool), SegmentError> {
        let log_path = dir.join(log_file_name(base_offset));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&log_path)
            .map_err(|source| SegmentError::OpenLog {
                path: log_path.clone(),
                source,
            })?;
        let log_size = file
            .metadata()
            .map_err(|source| SegmentError::OpenLog {
                path: log_path.clone(),
                source,
            })?
            .len();
        if preallocate && config.preallocate && log_size == 0 {
            reserve(&file, &log_path, config.segment_bytes);
        }
        let index_path = sibling(&log_path, "index");
        let time_index_path = sibling(&log_path, "timeindex");
        let offset_entries = OffsetIndex::entries_in_trimmed_file(&index_path);
        let time_entries = TimeIndex::entries_in_trimmed_file(&time_index_path);
        let indexes_trusted = offset_entries.is_some() && time_entries.is_some();
        let capacity = if preallocate {
            config.segment_index_bytes
        } else {
            0
        };
        let offset_index = OffsetIndex::open(
            &index_path,
            base_offset,
            offset_entries.unwrap_or(0),
            capacity,
        )?;
        let time_index = TimeIndex::open(
            &time_index_path,
            base_offset,
            time_entries.unwrap_or(0),
            capacity,
        )?;
        let segment = Self {
            base_offset,
            log_path,
            file: Arc::new(file),
            offset_index,
            time_index,
            size: AtomicU64::new(log_size),
            next_offset: AtomicU64::new(base_offset),
            max_timestamp: AtomicI64::new(NO_TIMESTAMP),
            offset_of_max_timestamp: AtomicU64::new(base_offset),
            first_append_ms: AtomicI64::new(NO_TIMESTAMP),
            bytes_since_last_index_entry: AtomicU64::new(0),
        };
        Ok((segment, indexes_trusted))
    }

    pub fn base_offset(&self) -> u64 {
        self.base_offset
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.size() == 0
    }

    pub fn next_offset(&self) -> u64 {
        self.next_offset.load(Ordering::Acquire)
    }

    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp.load(Ordering::Acquire)
    }

    pub fn offset_of_max_timestamp(&self) -> u64 {
        self.offset_of_max_timestamp.load(Ordering::Acquire)
    }

    pub fn first_append_ms(&self) -> i64 {
        self.first_append_ms.load(Ordering::Acquire)
    }

    pub fn offset_index(&self) -> &OffsetIndex {
        &self.offset_index
    }

    pub fn time_index(&self) -> &TimeIndex {
        &self.time_index
    }

    pub(super) fn file(&self) -> &Arc<File> {
        &self.file
    }

    /// The header of the batch starting at `position`, if a whole header lies below
    /// the published size.
    pub fn header_at(&self, position: u64) -> Result<Option<BatchHeader>, SegmentError> {
        if position + BATCH_HEADER_SIZE as u64 > self.size() {
            return Ok(None);
        }
        let mut bytes = [0u8; BATCH_HEADER_SIZE];
        self.read_exact_at(&mut bytes, position)?;
        Ok(BatchHeader::parse(&bytes).ok())
    }

    /// `length` bytes from `position` (a whole batch whose header was read), no more than
    /// lie below the published size: a length read from a damaged header cannot make it
    /// allocate beyond the segment.
    pub fn read_bytes(&self, position: u64, length: usize) -> Result<Vec<u8>, SegmentError> {
        let available = self.size().saturating_sub(position);
        let mut bytes = vec![0u8; length.min(usize::try_from(available).unwrap_or(usize::MAX))];
        self.read_exact_at(&mut bytes, position)?;
        Ok(bytes)
    }

    fn read_exact_at(&self, bytes: &mut [u8], position: u64) -> Result<(), SegmentError> {
        self.file
            .read_exact_at(bytes, position)
            .map_err(|source| SegmentError::Read {
                path: self.log_path.clone(),
                position,
                source,
            })
    }

    /// The position and header of the first batch whose last offset is at or after
    /// `target`: index lookup, then a short scan.
    pub fn find_batch(&self, target: u64) -> Result<Option<(u64, BatchHeader)>, SegmentError> {
        let start = self.offset_index.lookup(target);
        self.scan_from(u64::from(start.position), |header| {
            header.last_offset() >= target as i64
        })
    }

    /// The first batch at or after `position` satisfying `found`.
    pub fn scan_from(
        &self,
        mut position: u64,
        found: impl Fn(&BatchHeader) -> bool,
    ) -> Result<Option<(u64, BatchHeader)>, SegmentError> {
        while let Some(header) = self.header_at(position)? {
            if found(&header) {
                return Ok(Some((position, header)));
            }
            position += header.total_size() as u64;
        }
        Ok(None)
    }

    /// The first batch with a max timestamp at or after `timestamp`.
    pub fn find_by_timestamp(
        &self,
        timestamp: i64,
    ) -> Result<Option<(u64, BatchHeader)>, SegmentError> {
        let start = match self.time_index.lookup_before(timestamp) {
            Some(entry) => u64::from(self.offset_index.lookup(entry.offset).position),
            None => 0,
        };
        self.scan_from(start, |header| header.max_timestamp >= timestamp)
    }

    /// Whole batches from `position` on, up to `max_bytes` in total (the first batch is
    /// always included whole, as Kafka does since KIP-74) and only batches ending
    /// before `upper_offset`. Returns the region and the offset after its last batch.
    pub fn region_from(
        &self,
        position: u64,
        max_bytes: u64,
        upper_offset: u64,
    ) -> Result<Option<(FileRegion, u64)>, SegmentError> {
        let mut end = position;
        let mut next_offset = None;
        // Skip whole batches through the index: every batch before an indexed batch that
        // starts within the budget is complete, below `upper_offset` and published.
        if let Some(entry) = self
            .offset_index
            .last_at_or_before_position(position + max_bytes, upper_offset)
        {
            let start = u64::from(entry.position);
            if start > position
                && start <= self.size()
                && let Some(header) = self.header_at(start)?
            {
                end = start;
                next_offset = Some(header.base_offset as u64);
            }
        }
        while let Some(header) = self.header_at(end)? {
            let size = header.total_size() as u64;
            if header.next_offset() as u64 > upper_offset
                || (next_offset.is_some() && end + size - position > max_bytes)
                || end + size > self.size()
            {
                break;
            }
            end += size;
            next_offset = Some(header.next_offset() as u64);
        }
        Ok(next_offset.map(|next| {
            (
                FileRegion {
                    file: Arc::clone(&self.file),
                    position,
                    length: end - position,
                },
                next,
            )
        }))
    }

    pub fn sync(&self) -> Result<(), SegmentError> {
        self.file.sync_data().map_err(|source| SegmentError::Sync {
            path: self.log_path.clone(),
            source,
        })?;
        self.offset_index.sync()?;
        self.time_index.sync()?;
        Ok(())
    }

    /// Removes the segment's files. Readers holding the segment keep working on the
    /// unlinked files until they drop it.
    /// Renames the segment's files to `<name>.deleted` (open readers keep reading) and
    /// returns the new paths, for deletion after `file.delete.delay.ms`.
    pub fn rename_to_deleted(&self) -> Result<Vec<PathBuf>, SegmentError> {
        let mut renamed = Vec::new();
        for path in [
            self.log_path.clone(),
            sibling(&self.log_path, "index"),
            sibling(&self.log_path, "timeindex"),
        ] {
            let mut target = path.clone().into_os_string();
            target.push(DELETED_SUFFIX);
            let target = PathBuf::from(target);
            match std::fs::rename(&path, &target) {
                Ok(()) => renamed.push(target),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(SegmentError::Delete { path, source }),
            }
        }
        Ok(renamed)
    }

    pub fn delete_files(&self) -> Result<(), SegmentError> {
        for path in [
            self.log_path.clone(),
            sibling(&self.log_path, "index"),
            sibling(&self.log_path, "timeindex"),
        ] {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(SegmentError::Delete { path, source }),
            }
        }
        Ok(())
    }

    /// Trusted open (clean shutdown, or a sealed segment below the recovery point):
    /// reads only the batches after the last index entry to learn the end offset and
    /// the largest timestamp. Returns false when the indexes do not fit the log, in
    /// which case the caller recovers the segment instead.
    pub(super) fn load_tail(&self) -> Result<bool, SegmentError> {
        let log_size = self.size();
        let (mut position, mut next_offset) = match self.offset_index.last_entry() {
            Some(entry) if u64::from(entry.position) < log_size => {
                (u64::from(entry.position), entry.offset)
            }
            Some(_) => return Ok(false),
            None => (0, self.base_offset),
        };
        if let Some(last) = self.time_index.last_entry() {
            self.max_timestamp.store(last.timestamp, Ordering::Release);
            self.offset_of_max_timestamp
                .store(last.offset, Ordering::Release);
        }
        while position < log_size {
            match self.header_at(position)? {
                Some(header) if header.base_offset as u64 >= self.base_offset => {
                    self.observe_timestamp(header.max_timestamp, header.last_offset() as u64);
                    next_offset = header.next_offset() as u64;
                    position += header.total_size() as u64;
                }
                _ => return Ok(false),
            }
        }
        if position != log_size {
            return Ok(false);
        }
        self.next_offset
            .store(next_offset.max(self.base_offset), Ordering::Release);
        Ok(true)
    }

    fn observe_timestamp(&self, timestamp: i64, offset: u64) {
        if timestamp > self.max_timestamp.load(Ordering::Acquire) {
            self.max_timestamp.store(timestamp, Ordering::Release);
            self.offset_of_max_timestamp
                .store(offset, Ordering::Release);
        }
    }

    /// Scans every batch, verifying its length, magic and CRC, rebuilding both indexes,
    /// and truncates the file at the first torn or corrupt batch. Returns the number of
    /// bytes cut off.
    pub(super) fn recover(&self, index_interval_bytes: u64) -> Result<u64, SegmentError> {
        self.offset_index.reset();
        self.time_index.reset();
        self.max_timestamp.store(NO_TIMESTAMP, Ordering::Release);
        self.bytes_since_last_index_entry
            .store(0, Ordering::Release);
        let file_size = self.size();
        let mut position = 0u64;
        let mut next_offset = self.base_offset;
        let mut buffer = Vec::new();
        while position + LOG_OVERHEAD as u64 <= file_size {
            let mut prefix = [0u8; LOG_OVERHEAD];
            self.file
                .read_exact_at(&mut prefix, position)
                .map_err(|source| SegmentError::Read {
                    path: self.log_path.clone(),
                    position,
                    source,
                })?;
            let length = i64::from(super::batch::read_i32(&prefix, 8));
            let total = LOG_OVERHEAD as i64 + length;
            if length < (BATCH_HEADER_SIZE - LOG_OVERHEAD) as i64
                || position + total as u64 > file_size
            {
                break;
            }
            buffer.resize(total as usize, 0);
            self.file
                .read_exact_at(&mut buffer, position)
                .map_err(|source| SegmentError::Read {
                    path: self.log_path.clone(),
                    position,
                    source,
                })?;
            let header = match super::batch::validate_batch(
                &buffer,
                usize::MAX,
                super::batch::BatchOrigin::Log,
            ) {
                Ok(header) if header.base_offset >= next_offset as i64 => header,
                _ => break,
            };
            self.index_batch(&header, position, index_interval_bytes)?;
            next_offset = header.next_offset() as u64;
            position += total as u64;
        }
        if position < file_size {
            self.file
                .set_len(position)
                .map_err(|source| SegmentError::Truncate {
                    path: self.log_path.clone(),
                    size: position,
                    source,
                })?;
        }
        self.size.store(position, Ordering::Release);
        self.next_offset.store(next_offset, Ordering::Release);
        Ok(file_size - position)
    }

    /// Adds index entries for a batch about to be published at `position`.
    fn index_batch(
        &self,
        header: &BatchHeader,
        position: u64,
        index_interval_bytes: u64,
    ) -> Result<(), SegmentError> {
        let last_offset = header.last_offset() as u64;
        self.observe_timestamp(header.max_timestamp, last_offset);
        if self.bytes_since_last_index_entry.load(Ordering::Acquire) > index_interval_bytes {
            self.offset_index.append(last_offset, position as u32)?;
            self.time_index
                .maybe_append(self.max_timestamp(), self.offset_of_max_timestamp())?;
            self.bytes_since_last_index_entry
                .store(0, Ordering::Release);
        }
        self.bytes_since_last_index_entry
            .fetch_add(header.total_size() as u64, Ordering::AcqRel);
        Ok(())
    }
}

/// The segment the log appends to. Only this type can write; sealing it yields the
/// read-only segment back.
#[derive(Debug)]
pub struct ActiveSegment(Arc<LogSegment>);

impl ActiveSegment {
    pub(super) fn new(segment: Arc<LogSegment>) -> Self {
        Self(segment)
    }

    pub fn segment(&self) -> &Arc<LogSegment> {
        &self.0
    }

    /// Writes one stamped, validated batch at the end of the segment and publishes it.
    /// The batch comes in `parts` written back to back with one vectored write (the
    /// broker's stamped header, then the produced body; a follower's batch is one part and
    /// an empty one), so produced bytes are not copied.
    pub fn append(
        &self,
        parts: [&[u8]; 2],
        header: &BatchHeader,
        index_interval_bytes: u64,
        now_ms: i64,
    ) -> Result<(), SegmentError> {
        let segment = &self.0;
        let position = segment.size();
        let length = write_all_vectored_at(&segment.file, parts, position).map_err(|source| {
            SegmentError::Write {
                path: segment.log_path.clone(),
                position,
                source,
            }
        })?;
        segment.index_batch(header, position, index_interval_bytes)?;
        if segment.first_append_ms() == NO_TIMESTAMP {
            segment.first_append_ms.store(now_ms, Ordering::Release);
        }
        segment
            .next_offset
            .store(header.next_offset() as u64, Ordering::Release);
        segment.size.store(position + length, Ordering::Release);
        Ok(())
    }

    /// True when the next batch of `batch_bytes` ending at `last_offset` must go to a
    /// new segment: size, age, full indexes, or offsets beyond 32-bit relative range.
    pub fn should_roll(
        &self,
        config: &LogConfig,
        batch_bytes: u64,
        last_offset: u64,
        now_ms: i64,
    ) -> bool {
        let segment = &self.0;
        if segment.is_empty() {
            return false;
        }
        let first = segment.first_append_ms();
        segment.size() + batch_bytes > config.segment_bytes
            || segment.size() + batch_bytes > u64::from(u32::MAX)
            || (first != NO_TIMESTAMP
                && now_ms.saturating_sub(first) > config.roll_ms(segment.base_offset))
            || segment.offset_index.is_full()
            || segment.time_index.is_full()
            || last_offset - segment.base_offset > u64::from(u32::MAX)
    }

    /// Removes every batch ending at or after `offset` (the batch containing `offset` goes
    /// too). Returns the new end offset.
    pub fn truncate_to(&self, offset: u64) -> Result<u64, SegmentError> {
        let segment = &self.0;
        let Some((position, header)) = segment.find_batch(offset)? else {
            return Ok(segment.next_offset());
        };
        segment.size.store(position, Ordering::Release);
        segment
            .file
            .set_len(position)
            .map_err(|source| SegmentError::Truncate {
                path: segment.log_path.clone(),
                size: position,
                source,
            })?;
        let new_end = header.base_offset as u64;
        segment.offset_index.truncate_to(new_end);
        segment.time_index.truncate_to(new_end);
        segment
            .next_offset
            .store(new_end.max(segment.base_offset), Ordering::Release);
        // Recompute the largest timestamp from what is left.
        segment.max_timestamp.store(NO_TIMESTAMP, Ordering::Release);
        segment
            .bytes_since_last_index_entry
            .store(0, Ordering::Release);
        let _ = segment.load_tail()?;
        Ok(segment.next_offset())
    }

    /// Seals the segment: a final time-index entry for its largest timestamp, indexes
    /// trimmed to their entries.
    pub fn seal(self) -> Result<Arc<LogSegment>, SegmentError> {
        let segment = self.0;
        if segment.max_timestamp() != NO_TIMESTAMP {
            match segment
                .time_index
                .maybe_append(segment.max_timestamp(), segment.offset_of_max_timestamp())
            {
                Ok(()) | Err(IndexFileError::Full { .. }) => {}
                Err(error) => return Err(error.into()),
            }
        }
        segment.offset_index.trim()?;
        segment.time_index.trim()?;
        // Gives back disk reserved by `preallocate` beyond the data (Linux frees blocks
        // past the end on a truncate to the same size); a no-op otherwise.
        segment
            .file
            .set_len(segment.size())
            .map_err(|source| SegmentError::Write {
                path: segment.log_path.clone(),
                position: segment.size(),
                source,
            })?;
        Ok(segment)
    }
}

/// `pwritev` until every byte of `parts` is at `position` onwards (a regular file may
/// take fewer bytes per call); returns how many bytes that was. Two parts (header, body)
/// on the stack: the append path allocates nothing per batch.
fn write_all_vectored_at(file: &File, parts: [&[u8]; 2], position: u64) -> std::io::Result<u64> {
    let [first, second] = parts;
    let total = first.len() + second.len();
    let mut written = 0usize;
    while written < total {
        // What is still unwritten of each part, skipping the `written` bytes already out.
        let first_rest = first.get(written..).unwrap_or_default();
        let second_rest = second
            .get(written.saturating_sub(first.len())..)
            .unwrap_or_default();
        let pending = [IoSlice::new(first_rest), IoSlice::new(second_rest)];
        let offset = i64::try_from(position + written as u64)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::FileTooLarge))?;
        match nix::sys::uio::pwritev(file, &pending, offset) {
            Ok(0) => return Err(std::io::Error::from(std::io::ErrorKind::WriteZero)),
            Ok(n) => written += n,
            Err(nix::errno::Errno::EINTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(total as u64)
}

/// Reserves `bytes` of disk for a new segment file (`preallocate`) without changing its
/// length, so recovery still finds the end of the data at the end of the file. A file
/// system that cannot reserve is logged and the segment used as is, as its data is safe.
fn reserve(file: &File, path: &Path, bytes: u64) {
    use nix::fcntl::{FallocateFlags, fallocate};
    let length = i64::try_from(bytes).unwrap_or(i64::MAX);
    if let Err(error) = fallocate(file, FallocateFlags::FALLOC_FL_KEEP_SIZE, 0, length) {
        tracing::warn!(path = %path.display(), %error, "Cannot preallocate a segment file");
    }
}
