//! Moving a partition's files to another log directory of this broker while it serves
//! (AlterReplicaLogDirs).
//!
//! ```text
//!   <target>/<topic>-<p>.<id>-future/   every segment copied as it is, appends go on
//!   appends wait: the tail written since, the indexes, then
//!   rename to <target>/<topic>-<p>/, reopen the segments there, switch the log over,
//!   write its checkpoints there; the old directory goes as a deleted partition does
//! ```
//!
//! Kafka copies into a "future" replica with a replica fetcher of its own; here the
//! segment files are copied byte for byte (they are Kafka's on-disk format either way), so
//! offsets, epochs and producer state need no replaying. Neither appends nor maintenance
//! (retention, compaction, truncation) wait for the bulk copy; both wait for the last step,
//! which also copies again any segment maintenance replaced or cut meanwhile. A move the
//! broker did not finish (a crash, a cancel) leaves a `-future` directory that is removed,
//! and the replica stays where it was.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::LogDirHealth;
use super::log::{Log, LogError, retire_dir};
use super::offset_index::OffsetIndex;
use super::segment::{ActiveSegment, LogSegment};
use super::time_index::TimeIndex;

/// Suffix of a partition directory being filled by a move (Kafka's name for it too).
pub const FUTURE_SUFFIX: &str = "-future";

const COPY_CHUNK: u64 = 1 << 20;

/// Segments copied before the switch, by base offset: the segment as it was, and how many
/// of its bytes.
type Copied = BTreeMap<u64, (Arc<LogSegment>, u64)>;

/// A move in progress, as DescribeLogDirs reports it (Kafka's "future" replica).
#[derive(Debug)]
pub struct Relocation {
    target: Arc<LogDirHealth>,
    copied_bytes: AtomicU64,
    /// The offset below which every batch has been copied.
    copied_offset: AtomicU64,
    cancelled: AtomicBool,
}

impl Relocation {
    pub fn new(target: Arc<LogDirHealth>) -> Self {
        Self {
            target,
            copied_bytes: AtomicU64::new(0),
            copied_offset: AtomicU64::new(0),
            cancelled: AtomicBool::new(false),
        }
    }

    pub fn target(&self) -> &Arc<LogDirHealth> {
        &self.target
    }

    pub fn copied_bytes(&self) -> u64 {
        self.copied_bytes.load(Ordering::Acquire)
    }

    pub fn copied_offset(&self) -> u64 {
        self.copied_offset.load(Ordering::Acquire)
    }

    /// Stops the move at its next step; the replica stays where it is.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }
}

impl Log {
    /// Moves this log's directory under `relocation`'s target log directory. Readers and
    /// writers keep using the same `Log` throughout.
    pub fn relocate(&self, relocation: &Relocation) -> Result<(), LogError> {
        self.check_usable()?;
        let target = relocation.target();
        let name = self.topic_partition.dir_name();
        let staging = target.path().join(format!(
            "{name}.{}{FUTURE_SUFFIX}",
            uuid::Uuid::new_v4().simple()
        ));
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| LogError::Directory { path, source }
        };
        std::fs::create_dir_all(&staging).map_err(io(&staging))?;
        let outcome = self.copy_and_switch(relocation, &staging, &target.path().join(&name));
        if outcome.is_err() {
            let _ = std::fs::remove_dir_all(&staging);
        }
        outcome
    }

    fn copy_and_switch(
        &self,
        relocation: &Relocation,
        staging: &Path,
        destination: &Path,
    ) -> Result<(), LogError> {
        let copied = self.copy_segments(relocation, staging)?;
        self.switch(relocation, staging, destination, &copied)
    }

    /// Every segment as it is now, while appends and maintenance go on: what was copied
    /// of which segment.
    fn copy_segments(&self, relocation: &Relocation, staging: &Path) -> Result<Copied, LogError> {
        let cancelled = || LogError::Closed {
            topic_partition: self.topic_partition.clone(),
        };
        let mut copied = Copied::new();
        let snapshot: Vec<Arc<LogSegment>> = self.segments.read().values().cloned().collect();
        for segment in snapshot {
            if relocation.is_cancelled() {
                return Err(cancelled());
            }
            let next_offset = segment.next_offset();
            let size = segment.size();
            // A truncation may cut the file under the copy (the segment is reopened as a new
            // one, which the switch copies again whole): what was there is copied.
            let reached =
                copy_log_bytes(&segment, staging, 0, size, relocation, UpTo::AsFarAsItGoes)?;
            copied.insert(segment.base_offset(), (segment, reached));
            relocation
                .copied_offset
                .fetch_max(next_offset, Ordering::AcqRel);
        }
        Ok(copied)
    }

    /// With maintenance and appends waiting: the tail written since (and again whatever
    /// maintenance replaced), the indexes, then the switch to `destination`.
    fn switch(
        &self,
        relocation: &Relocation,
        staging: &Path,
        destination: &Path,
        copied: &Copied,
    ) -> Result<(), LogError> {
        let dir_error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| LogError::Directory { path, source }
        };
        let cancelled = || LogError::Closed {
            topic_partition: self.topic_partition.clone(),
        };
        let _maintenance = self.maintenance.lock();
        let mut writer = self.writer.lock();
        self.check_usable()?;
        if relocation.is_cancelled() {
            return Err(cancelled());
        }
        let mut segments = self.segments.write();
        for (base, _) in copied.iter().filter(|(b, _)| !segments.contains_key(b)) {
            // Retention or compaction removed it meanwhile.
            let gone = staging.join(super::segment::log_file_name(*base));
            std::fs::remove_file(&gone).map_err(dir_error(&gone))?;
        }
        for segment in segments.values() {
            // A segment compaction replaced or truncation cut is copied again whole.
            let from = match copied.get(&segment.base_offset()) {
                Some((before, size)) if Arc::ptr_eq(before, segment) && segment.size() >= *size => {
                    *size
                }
                _ => 0,
            };
            copy_log_bytes(
                segment,
                staging,
                from,
                segment.size(),
                relocation,
                UpTo::Exactly,
            )?;
            copy_index_prefix(
                &segment.log_path().with_extension("index"),
                staging,
                segment.offset_index().len() * OffsetIndex::ENTRY_BYTES,
            )?;
            copy_index_prefix(
                &segment.log_path().with_extension("timeindex"),
                staging,
                segment.time_index().len() * TimeIndex::ENTRY_BYTES,
            )?;
        }
        sync_dir(staging)?;
        std::fs::rename(staging, destination).map_err(dir_error(destination))?;
        if let Some(parent) = destination.parent() {
            sync_dir(parent)?;
        }
        let config = self.config();
        let active_base = writer.active.segment().base_offset();
        let mut reopened = BTreeMap::new();
        for base in segments.keys().copied() {
            let segment_error = |source| LogError::Segment {
                topic_partition: self.topic_partition.clone(),
                source,
            };
            let (segment, trusted) =
                LogSegment::open_files(destination, base, &config, base == active_base)
                    .map_err(segment_error)?;
            if !(trusted && segment.load_tail().map_err(segment_error)?) {
                segment
                    .recover(config.index_interval_bytes)
                    .map_err(segment_error)?;
            }
            reopened.insert(base, Arc::new(segment));
        }
        let Some(active) = reopened.get(&active_base).cloned() else {
            return Err(cancelled());
        };
        let previous = self.dir();
        *segments = reopened;
        writer.active = ActiveSegment::new(active);
        *self.dir.write() = destination.to_path_buf();
        *self.health.write() = Arc::clone(relocation.target());
        drop(segments);
        self.write_checkpoint()?;
        self.write_epochs(&self.epochs.lock())?;
        drop(writer);
        tracing::info!(topic_partition = %self.topic_partition, from = %previous.display(), to = %destination.display(), bytes = relocation.copied_bytes(), "Moved a replica to another log directory");
        retire_dir(&previous)
    }
}

/// How far [`copy_log_bytes`] must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UpTo {
    /// To the end asked for: the file cannot shrink (the switch holds maintenance).
    Exactly,
    /// To the end asked for, or the file's end if it became shorter meanwhile.
    AsFarAsItGoes,
}

/// Appends `[from, to)` of a segment's log file to its copy under `staging`, read through
/// the open file (a rename of the old directory does not disturb it), then syncs the copy.
/// Returns where the copy ends.
fn copy_log_bytes(
    segment: &LogSegment,
    staging: &Path,
    from: u64,
    to: u64,
    relocation: &Relocation,
    up_to: UpTo,
) -> Result<u64, LogError> {
    let Some(name) = segment.log_path().file_name() else {
        return Ok(from);
    };
    let path = staging.join(name);
    let io = |source| LogError::Directory {
        path: path.clone(),
        source,
    };
    let out = if from == 0 {
        File::create(&path)
    } else {
        OpenOptions::new().append(true).open(&path)
    }
    .map_err(io)?;
    let mut buffer = vec![0u8; COPY_CHUNK as usize];
    let mut position = from;
    while position < to {
        let chunk = (to - position).min(COPY_CHUNK) as usize;
        let read = segment
            .file()
            .read_at(&mut buffer[..chunk], position)
            .map_err(io)?;
        if read == 0 && up_to == UpTo::AsFarAsItGoes {
            break;
        }
        if read == 0 {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "segment shorter than its size",
            )));
        }
        (&out).write_all(&buffer[..read]).map_err(io)?;
        position += read as u64;
        relocation
            .copied_bytes
            .fetch_add(read as u64, Ordering::AcqRel);
    }
    out.sync_all().map_err(io)?;
    Ok(position)
}

/// Copies the first `bytes` of an index file (its entries, not its preallocated room).
fn copy_index_prefix(source: &Path, staging: &Path, bytes: usize) -> Result<(), LogError> {
    let Some(name) = source.file_name() else {
        return Ok(());
    };
    let target: PathBuf = staging.join(name);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LogError::Directory { path, source }
    };
    let input = File::open(source).map_err(io(source))?;
    let mut entries = vec![0u8; bytes];
    input.read_exact_at(&mut entries, 0).map_err(io(source))?;
    let mut out = File::create(&target).map_err(io(&target))?;
    out.write_all(&entries).map_err(io(&target))?;
    out.sync_all().map_err(io(&target))
}

fn sync_dir(dir: &Path) -> Result<(), LogError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| LogError::Directory {
            path: dir.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests;
