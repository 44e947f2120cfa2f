//! One partition's log: an ordered set of segments, the last one active.
//!
//! ```text
//!   appends ─► writer lock ─► ActiveSegment.append ─► publish size / log end offset
//!   reads   ─► segments snapshot (Arc clones) ─► index lookup + scan ─► FileRegion(s)
//! ```
//!
//! Appends are serialised by the writer lock; readers never take it. They clone the
//! `Arc`s of the segments they need from a read-mostly map (written only on roll,
//! retention, truncation and compaction) and then read files below the published
//! sizes, so a read never blocks an append and never sees a half-written batch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use super::batch::{
    BATCH_HEADER_SIZE, BatchError, BatchOrigin, stamped_header, validate_record_set,
};
use super::checkpoint::{CheckpointError, PartitionCheckpoint};
use super::clock::Clock;
use super::leader_epochs::{LEADER_EPOCH_CHECKPOINT_FILE, LeaderEpochCache};
use super::log_config::{LogConfig, TimestampType};
use super::producer_state::{ProducerStateTable, SequenceCheck, SequenceError};
use super::segment::{ActiveSegment, LogSegment, SegmentError};
use super::transactions::{AbortedTransaction, TransactionState, Verification};
use super::{LogDirHealth, TopicPartition};

/// Failures of partition log operations.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("invalid record batch for {topic_partition}: {source}")]
    InvalidBatch {
        topic_partition: TopicPartition,
        source: BatchError,
    },
    #[error(
        "offset {offset} is out of range for {topic_partition} (log start {log_start_offset}, log end {log_end_offset})"
    )]
    OffsetOutOfRange {
        topic_partition: TopicPartition,
        offset: u64,
        log_start_offset: u64,
        log_end_offset: u64,
    },
    #[error("storage failure in {topic_partition}: {source}")]
    Segment {
        topic_partition: TopicPartition,
        source: SegmentError,
    },
    #[error("checkpoint failure in {topic_partition}: {source}")]
    Checkpoint {
        topic_partition: TopicPartition,
        source: CheckpointError,
    },
    #[error("cannot create or list partition directory {path}: {source}")]
    Directory {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("log directory {dir} is offline after an I/O failure")]
    DirOffline { dir: PathBuf },
    #[error("log of {topic_partition} is closed")]
    Closed { topic_partition: TopicPartition },
    #[error("out-of-order sequence in {topic_partition}: {source}")]
    OutOfOrderSequence {
        topic_partition: TopicPartition,
        source: SequenceError,
    },
    #[error("fenced producer in {topic_partition}: {source}")]
    ProducerFenced {
        topic_partition: TopicPartition,
        source: SequenceError,
    },
    #[error(
        "{topic_partition}: a transactional write of producer {producer_id} that is not part of an ongoing transaction"
    )]
    TransactionNotVerified {
        topic_partition: TopicPartition,
        producer_id: i64,
    },
    #[error("stale transaction marker in {topic_partition}: {source}")]
    CoordinatorFenced {
        topic_partition: TopicPartition,
        source: SequenceError,
    },
    #[error("cannot decode a stored batch of {topic_partition} at offset {offset}: {reason}")]
    Decode {
        topic_partition: TopicPartition,
        offset: u64,
        reason: String,
    },
}

impl LogError {
    /// True for failures of the disk: the log directory goes offline, never retried.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            Self::Segment { .. }
                | Self::Checkpoint { .. }
                | Self::Directory { .. }
                | Self::DirOffline { .. }
        )
    }
}

/// What an append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendInfo {
    pub base_offset: u64,
    pub last_offset: u64,
    /// The broker's timestamp when the log uses LogAppendTime.
    pub log_append_time: Option<i64>,
    pub log_start_offset: u64,
    pub record_count: u64,
    /// The batches were retries of batches already in the log; nothing was appended.
    pub duplicate: bool,
}

pub(super) struct LogWriter {
    pub(super) active: ActiveSegment,
    unflushed_messages: i64,
    last_flush_ms: i64,
    pub(super) producers: ProducerStateTable,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("active", &self.active.segment().base_offset())
            .finish()
    }
}

/// A partition log. Cheap to share: every method takes `&self`.
#[derive(Debug)]
pub struct Log {
    pub(super) topic_partition: TopicPartition,
    /// The partition directory; moves with the log to another log directory
    /// (AlterReplicaLogDirs), as does `health`.
    pub(super) dir: RwLock<PathBuf>,
    pub(super) config: RwLock<Arc<LogConfig>>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) health: RwLock<Arc<LogDirHealth>>,
    pub(super) writer: Mutex<LogWriter>,
    /// Every segment by base offset; the last one is the active segment.
    pub(super) segments: RwLock<BTreeMap<u64, Arc<LogSegment>>>,
    /// Serialises maintenance (retention, compaction, truncation) with itself.
    pub(super) maintenance: Mutex<()>,
    /// Where each leader epoch began (replication's divergence checks).
    pub(super) epochs: Mutex<LeaderEpochCache>,
    log_start_offset: AtomicU64,
    log_end_offset: AtomicU64,
    high_watermark: AtomicU64,
    recovery_point: AtomicU64,
    /// Until replication exists the high watermark follows the log end offset.
    high_watermark_follows_log_end: AtomicBool,
    closed: AtomicBool,
    /// Files of deleted segments and when they may go (`file.delete.delay.ms`).
    pub(super) pending_deletes: Mutex<Vec<(i64, PathBuf)>>,
    /// Where the cleaner stands (kept in memory: after a restart the whole log counts
    /// as dirty once).
    pub(super) cleaner: Mutex<super::compaction::CleanerState>,
    /// Open and aborted transactions; written under the writer lock, read by fetches.
    pub(super) transactions: Mutex<TransactionState>,
}

/// What loading a partition found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    pub segments: usize,
    pub recovered_segments: usize,
    pub truncated_bytes: u64,
}

impl Log {
    /// Creates the directory of a new, empty partition log under `log_dir`.
    pub fn create(
        log_dir: &Path,
        topic_partition: TopicPartition,
        config: LogConfig,
        clock: Arc<dyn Clock>,
        health: Arc<LogDirHealth>,
    ) -> Result<Self, LogError> {
        let dir = log_dir.join(topic_partition.dir_name());
        std::fs::create_dir_all(&dir).map_err(|source| LogError::Directory {
            path: dir.clone(),
            source,
        })?;
        Ok(Self::open(&dir, topic_partition, config, clock, health, true)?.0)
    }

    /// Opens an existing partition directory. With `clean` (the log directory was shut
    /// down cleanly) the segments are trusted; otherwise every segment from the recovery
    /// point on is scanned, CRC-checked and truncated at the first bad batch, and
    /// indexes that are missing or do not fit their log are rebuilt.
    pub fn open(
        dir: &Path,
        topic_partition: TopicPartition,
        config: LogConfig,
        clock: Arc<dyn Clock>,
        health: Arc<LogDirHealth>,
        clean: bool,
    ) -> Result<(Self, LoadReport), LogError> {
        let tp = topic_partition.clone();
        let segment_error = |source| LogError::Segment {
            topic_partition: tp.clone(),
            source,
        };
        let checkpoint = PartitionCheckpoint::read(dir)
            .map_err(|source| LogError::Checkpoint {
                topic_partition: tp.clone(),
                source,
            })?
            .unwrap_or_default();
        let bases = list_segment_bases(dir)?;
        let mut report = LoadReport::default();
        let mut segments = BTreeMap::new();
        let count = bases.len();
        for (i, base) in bases.iter().copied().enumerate() {
            let is_last = i + 1 == count;
            let below_recovery_point = bases
                .get(i + 1)
                .is_some_and(|next| *next <= checkpoint.recovery_point);
            // Opened with room for index entries so that recovery can rebuild them; the
            // indexes of sealed segments are trimmed again below.
            let (segment, indexes_trusted) =
                LogSegment::open_files(dir, base, &config, true).map_err(segment_error)?;
            let trusted = indexes_trusted && (clean || below_recovery_point);
            let mut cut = 0;
            if !(trusted && segment.load_tail().map_err(segment_error)?) {
                cut = segment
                    .recover(config.index_interval_bytes)
                    .map_err(segment_error)?;
                report.recovered_segments += 1;
                report.truncated_bytes += cut;
            }
            segments.insert(base, Arc::new(segment));
            if cut > 0 && !is_last {
                // Sealed segments are only ever trimmed by compaction, so a sealed segment
                // with a torn or corrupt batch is where the valid log ends (Kafka's rule).
                tracing::warn!(%topic_partition, base, cut, "Truncated a corrupt sealed segment; dropping the segments after it");
                for later in bases.iter().skip(i + 1) {
                    let (dropped, _) = LogSegment::open_files(dir, *later, &config, false)
                        .map_err(segment_error)?;
                    dropped.delete_files().map_err(segment_error)?;
                }
                break;
            }
        }
        let active = match segments.pop_last() {
            Some((_, last)) => last,
            None => {
                let (segment, _) =
                    LogSegment::open_files(dir, checkpoint.log_start_offset, &config, true)
                        .map_err(segment_error)?;
                Arc::new(segment)
            }
        };
        for sealed in segments.values() {
            sealed
                .offset_index()
                .trim()
                .map_err(|e| segment_error(e.into()))?;
            sealed
                .time_index()
                .trim()
                .map_err(|e| segment_error(e.into()))?;
        }
        segments.insert(active.base_offset(), Arc::clone(&active));
        report.segments = segments.len();
        let first_base = segments.keys().next().copied().unwrap_or(0);
        let log_end_offset = active.next_offset();
        let log_start_offset = checkpoint
            .log_start_offset
            .max(first_base)
            .min(log_end_offset);
        let now = clock.now_ms();
        let log = Self {
            topic_partition,
            dir: RwLock::new(dir.to_path_buf()),
            config: RwLock::new(Arc::new(config)),
            clock,
            health: RwLock::new(health),
            writer: Mutex::new(LogWriter {
                active: ActiveSegment::new(active),
                unflushed_messages: 0,
                last_flush_ms: now,
                producers: ProducerStateTable::default(),
            }),
            segments: RwLock::new(segments),
            maintenance: Mutex::new(()),
            epochs: Mutex::new(LeaderEpochCache::default()),
            log_start_offset: AtomicU64::new(log_start_offset),
            log_end_offset: AtomicU64::new(log_end_offset),
            high_watermark: AtomicU64::new(log_end_offset),
            recovery_point: AtomicU64::new(checkpoint.recovery_point.min(log_end_offset)),
            high_watermark_follows_log_end: AtomicBool::new(true),
            closed: AtomicBool::new(false),
            pending_deletes: Mutex::new(Vec::new()),
            cleaner: Mutex::new(Default::default()),
            transactions: Mutex::new(TransactionState::default()),
        };
        if report.recovered_segments > 0 {
            log.flush()?;
        }
        log.rebuild_producer_state()?;
        Ok((log, report))
    }

    pub fn topic_partition(&self) -> &TopicPartition {
        &self.topic_partition
    }

    pub fn dir(&self) -> PathBuf {
        self.dir.read().clone()
    }

    /// The log's clock: the broker's wall clock (a manual one in tests).
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub fn config(&self) -> Arc<LogConfig> {
        Arc::clone(&self.config.read())
    }

    /// Applies new configuration to the live log (the next append, roll or retention
    /// pass uses it).
    pub fn update_config(&self, config: LogConfig) {
        *self.config.write() = Arc::new(config);
    }

    pub fn log_start_offset(&self) -> u64 {
        self.log_start_offset.load(Ordering::Acquire)
    }

    pub fn log_end_offset(&self) -> u64 {
        self.log_end_offset.load(Ordering::Acquire)
    }

    pub fn high_watermark(&self) -> u64 {
        self.high_watermark.load(Ordering::Acquire)
    }

    pub fn recovery_point(&self) -> u64 {
        self.recovery_point.load(Ordering::Acquire)
    }

    /// Replication takes over the high watermark; it no longer follows the log end.
    pub fn set_high_watermark(&self, offset: u64) {
        self.high_watermark_follows_log_end
            .store(false, Ordering::Release);
        self.high_watermark
            .store(offset.min(self.log_end_offset()), Ordering::Release);
    }

    /// Total bytes of all segments.
    pub fn size_bytes(&self) -> u64 {
        self.segments.read().values().map(|s| s.size()).sum()
    }

    pub fn segment_count(&self) -> usize {
        self.segments.read().len()
    }

    /// The segments, oldest first (a snapshot; the last one was active when taken).
    pub fn segments(&self) -> Vec<Arc<LogSegment>> {
        self.segments.read().values().cloned().collect()
    }

    pub(super) fn check_usable(&self) -> Result<(), LogError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(LogError::Closed {
                topic_partition: self.topic_partition.clone(),
            });
        }
        if self.health.read().is_offline() {
            return Err(LogError::DirOffline {
                dir: self.health.read().path().to_path_buf(),
            });
        }
        Ok(())
    }

    /// Turns a disk failure into a fatal error and takes the log directory offline.
    pub(super) fn fail(&self, source: SegmentError) -> LogError {
        tracing::error!(topic_partition = %self.topic_partition, error = %source, "Storage failure; taking the log directory offline");
        self.health.read().set_offline();
        LogError::Segment {
            topic_partition: self.topic_partition.clone(),
            source,
        }
    }

    /// Validates every batch of a produce request's record set, then appends them all
    /// (or nothing): assigns offsets, stamps the leader epoch and, with LogAppendTime,
    /// the broker's timestamp. `records` is not copied or changed: each batch is written
    /// as the broker's stamped copy of its 61-byte header followed by its produced body.
    pub fn append(&self, records: &[u8], leader_epoch: i32) -> Result<AppendInfo, LogError> {
        self.append_verified(records, leader_epoch, Verification::Unchecked)
    }

    /// [`Log::append`] of a producer's request whose transactional batches were checked
    /// with their transaction coordinator (KIP-890 part 1): a batch that would open a
    /// transaction without the current guard is refused (a late write of a transaction
    /// that already ended must not open a new one nobody will end).
    pub fn append_verified(
        &self,
        records: &[u8],
        leader_epoch: i32,
        verification: Verification,
    ) -> Result<AppendInfo, LogError> {
        self.check_usable()?;
        let config = self.config();
        let batches = validate_record_set(
            records,
            config.max_message_bytes as usize,
            BatchOrigin::Producer,
        )
        .map_err(|source| LogError::InvalidBatch {
            topic_partition: self.topic_partition.clone(),
            source,
        })?;
        let now = self.clock.now_ms();
        let log_append_time =
            (config.message_timestamp_type == TimestampType::LogAppendTime).then_some(now);
        let mut writer = self.writer.lock();
        self.check_usable()?;
        if let Some(duplicate) = self.check_sequences(&writer.producers, records, &batches)? {
            return Ok(duplicate);
        }
        if verification != Verification::Unchecked {
            let transactions = self.transactions.lock();
            let unverified = batches.iter().find(|(_, _, header)| {
                header.is_transactional()
                    && !header.is_control()
                    && !transactions.admits(
                        header.producer_id,
                        verification,
                        writer
                            .producers
                            .epoch(header.producer_id)
                            .is_some_and(|current| header.producer_epoch > current),
                    )
            });
            if let Some((_, _, header)) = unverified {
                return Err(LogError::TransactionNotVerified {
                    topic_partition: self.topic_partition.clone(),
                    producer_id: header.producer_id,
                });
            }
        }
        let base_offset = self.log_end_offset();
        self.note_epoch_start(leader_epoch, base_offset)?;
        let mut next_offset = base_offset;
        let mut record_count = 0u64;
        for (start, end, header) in batches {
            let Some(bytes) = records.get(start..end) else {
                continue;
            };
            let last_offset = next_offset + header.last_offset_delta as u64;
            if writer
                .active
                .should_roll(&config, bytes.len() as u64, last_offset, now)
            {
                self.roll_locked(&mut writer, next_offset)?;
            }
            let head = stamped_header(bytes, next_offset as i64, leader_epoch, log_append_time);
            let body = bytes.get(BATCH_HEADER_SIZE..).unwrap_or_default();
            let mut stamped = header;
            stamped.base_offset = next_offset as i64;
            if let Some(time) = log_append_time {
                stamped.max_timestamp = time;
            }
            writer
                .active
                .append([&head, body], &stamped, config.index_interval_bytes, now)
                .map_err(|e| self.fail(e))?;
            writer.producers.record(&stamped, bytes);
            // Only transactional batches (and their markers) touch the transactions.
            if stamped.is_transactional() {
                self.transactions.lock().record(&stamped, bytes);
            }
            next_offset = last_offset + 1;
            record_count += header.record_count as u64;
            self.log_end_offset.store(next_offset, Ordering::Release);
        }
        if self.high_watermark_follows_log_end.load(Ordering::Acquire) {
            self.high_watermark.store(next_offset, Ordering::Release);
        }
        writer.unflushed_messages += record_count as i64;
        if writer.unflushed_messages >= config.flush_messages
            || now.saturating_sub(writer.last_flush_ms) >= config.flush_ms
        {
            self.flush_locked(&mut writer)?;
        }
        Ok(AppendInfo {
            base_offset,
            last_offset: next_offset - 1,
            log_append_time,
            log_start_offset: self.log_start_offset(),
            record_count,
            duplicate: false,
        })
    }

    /// Idempotence: `Some` when every batch is a retry already in the log (answered
    /// with the original offsets), an error for gaps and fenced epochs.
    fn check_sequences(
        &self,
        producers: &ProducerStateTable,
        records: &[u8],
        batches: &[(usize, usize, super::batch::BatchHeader)],
    ) -> Result<Option<AppendInfo>, LogError> {
        let mut duplicates = Vec::new();
        for (start, end, header) in batches {
            let batch = records.get(*start..*end).unwrap_or_default();
            match producers.check(header, batch) {
                Ok(SequenceCheck::Append) => {}
                Ok(SequenceCheck::Duplicate {
                    base_offset,
                    last_offset,
                }) => duplicates.push((base_offset, last_offset)),
                Err(source @ SequenceError::OutOfOrder { .. }) => {
                    return Err(LogError::OutOfOrderSequence {
                        topic_partition: self.topic_partition.clone(),
                        source,
                    });
                }
                Err(source @ SequenceError::Fenced { .. }) => {
                    return Err(LogError::ProducerFenced {
                        topic_partition: self.topic_partition.clone(),
                        source,
                    });
                }
                Err(source @ SequenceError::CoordinatorFenced { .. }) => {
                    return Err(LogError::CoordinatorFenced {
                        topic_partition: self.topic_partition.clone(),
                        source,
                    });
                }
            }
        }
        match (duplicates.first(), duplicates.last(), batches.first()) {
            (Some(first), Some(last), _) if duplicates.len() == batches.len() => {
                Ok(Some(AppendInfo {
                    base_offset: first.0,
                    last_offset: last.1,
                    log_append_time: None,
                    log_start_offset: self.log_start_offset(),
                    record_count: 0,
                    duplicate: true,
                }))
            }
            // Some batches of the request were appended before and some were not: the
            // producer resent a mix, which Kafka rejects as out of order.
            (Some(_), _, Some((_, _, header))) => Err(LogError::OutOfOrderSequence {
                topic_partition: self.topic_partition.clone(),
                source: SequenceError::OutOfOrder {
                    producer_id: header.producer_id,
                    expected: -1,
                    received: header.base_sequence,
                },
            }),
            _ => Ok(None),
        }
    }

    /// Rebuilds idempotent-producer state, transactions and the leader-epoch cache from
    /// the batch headers in the log (after recovery, and after a truncation removed
    /// batches); only transaction markers are read past their header.
    fn rebuild_producer_state(&self) -> Result<(), LogError> {
        let mut table = ProducerStateTable::default();
        let mut transactions = TransactionState::default();
        let mut epochs = LeaderEpochCache::default();
        for segment in self.segments() {
            let mut position = 0;
            while let Some(header) = segment.header_at(position).map_err(|e| self.fail(e))? {
                // Only markers are read past their header.
                let bytes = if header.is_control() && header.is_transactional() {
                    segment
                        .read_bytes(position, header.total_size())
                        .map_err(|e| self.fail(e))?
                } else {
                    Vec::new()
                };
                table.record(&header, &bytes);
                if header.is_transactional() {
                    transactions.record(&header, &bytes);
                }
                epochs.assign(header.partition_leader_epoch, header.base_offset as u64);
                position += header.total_size() as u64;
            }
        }
        transactions.forget_before(self.log_start_offset());
        epochs.truncate_from_start(self.log_start_offset());
        // Markers below the high watermark as this log knows it now no longer hold the
        // last stable offset (at open that is the log end: a restart forgets them).
        transactions.first_unstable_offset(self.high_watermark());
        let mut writer = self.writer.lock();
        writer.producers = table;
        *self.transactions.lock() = transactions;
        drop(writer);
        let mut cache = self.epochs.lock();
        if *cache != epochs || !self.dir().join(LEADER_EPOCH_CHECKPOINT_FILE).exists() {
            *cache = epochs;
            self.write_epochs(&cache)?;
        }
        Ok(())
    }

    pub(super) fn write_epochs(&self, cache: &LeaderEpochCache) -> Result<(), LogError> {
        cache.write(&self.dir()).map_err(|source| {
            self.health.read().set_offline();
            LogError::Checkpoint {
                topic_partition: self.topic_partition.clone(),
                source,
            }
        })
    }

    /// Records that `epoch` begins at `offset` unless it is already known.
    fn note_epoch_start(&self, epoch: i32, offset: u64) -> Result<(), LogError> {
        let mut cache = self.epochs.lock();
        if cache.assign(epoch, offset) {
            self.write_epochs(&cache)?;
        }
        Ok(())
    }

    /// A new leader's epoch starts at its log end offset (Kafka assigns it on becoming
    /// leader, before any write of the epoch).
    pub fn assign_leader_epoch(&self, epoch: i32) -> Result<(), LogError> {
        let _writer = self.writer.lock();
        self.note_epoch_start(epoch, self.log_end_offset())
    }

    /// The latest leader epoch of the log's batches (or of its assignment as leader).
    pub fn latest_epoch(&self) -> Option<i32> {
        self.epochs.lock().latest_epoch()
    }

    /// The largest epoch at or below `epoch` and the offset it ends at.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> Option<(i32, u64)> {
        let _writer = self.writer.lock();
        self.epochs
            .lock()
            .end_offset_for(epoch, self.log_end_offset())
    }

    /// A follower's append: batches exactly as the leader has them (offsets, epochs and
    /// timestamps kept), CRC-checked. Batches wholly below the log end (a fetch that
    /// overlapped) are skipped; a batch straddling the log end refuses the lot.
    pub fn append_replicated(&self, records: &[u8]) -> Result<AppendInfo, LogError> {
        self.check_usable()?;
        let config = self.config();
        // The leader already enforced its size limit; a follower takes what it has.
        let batches =
            validate_record_set(records, usize::MAX, BatchOrigin::Log).map_err(|source| {
                LogError::InvalidBatch {
                    topic_partition: self.topic_partition.clone(),
                    source,
                }
            })?;
        let now = self.clock.now_ms();
        let mut writer = self.writer.lock();
        self.check_usable()?;
        let base_offset = self.log_end_offset();
        let mut next_offset = base_offset;
        let mut record_count = 0u64;
        for (start, end, header) in batches {
            if header.next_offset() <= next_offset as i64 {
                continue;
            }
            // A batch above the log end is a gap compaction left in the leader's log (as
            // Kafka's appendAsFollower takes); one that starts below it but ends above
            // cannot be placed.
            if header.base_offset < next_offset as i64 {
                return Err(LogError::OffsetOutOfRange {
                    topic_partition: self.topic_partition.clone(),
                    offset: header.base_offset.max(0) as u64,
                    log_start_offset: self.log_start_offset(),
                    log_end_offset: next_offset,
                });
            }
            let Some(bytes) = records.get(start..end) else {
                continue;
            };
            let last_offset = header.last_offset() as u64;
            if writer
                .active
                .should_roll(&config, bytes.len() as u64, last_offset, now)
            {
                self.roll_locked(&mut writer, next_offset)?;
            }
            self.note_epoch_start(header.partition_leader_epoch, header.base_offset as u64)?;
            writer
                .active
                .append([bytes, &[]], &header, config.index_interval_bytes, now)
                .map_err(|e| self.fail(e))?;
            writer.producers.record(&header, bytes);
            if header.is_transactional() {
                self.transactions.lock().record(&header, bytes);
            }
            next_offset = last_offset + 1;
            record_count += header.record_count as u64;
            self.log_end_offset.store(next_offset, Ordering::Release);
        }
        writer.unflushed_messages += record_count as i64;
        if record_count > 0
            && (writer.unflushed_messages >= config.flush_messages
                || now.saturating_sub(writer.last_flush_ms) >= config.flush_ms)
        {
            self.flush_locked(&mut writer)?;
        }
        Ok(AppendInfo {
            base_offset,
            last_offset: next_offset.saturating_sub(1),
            log_append_time: None,
            log_start_offset: self.log_start_offset(),
            record_count,
            duplicate: false,
        })
    }

    /// Seals the active segment and starts a new one at the log end offset.
    pub fn roll(&self) -> Result<(), LogError> {
        self.check_usable()?;
        let mut writer = self.writer.lock();
        if writer.active.segment().is_empty() {
            return Ok(());
        }
        let next = self.log_end_offset();
        self.roll_locked(&mut writer, next)
    }

    fn roll_locked(&self, writer: &mut LogWriter, next_offset: u64) -> Result<(), LogError> {
        let config = self.config();
        let (fresh, _) = LogSegment::open_files(&self.dir(), next_offset, &config, true)
            .map_err(|e| self.fail(e))?;
        let fresh = Arc::new(fresh);
        let previous =
            std::mem::replace(&mut writer.active, ActiveSegment::new(Arc::clone(&fresh)));
        previous.seal().map_err(|e| self.fail(e))?;
        self.segments.write().insert(next_offset, fresh);
        tracing::debug!(topic_partition = %self.topic_partition, base_offset = next_offset, "Rolled a new segment");
        Ok(())
    }

    /// Forces everything appended so far to disk and moves the recovery point to the
    /// log end offset.
    pub fn flush(&self) -> Result<(), LogError> {
        let mut writer = self.writer.lock();
        self.flush_locked(&mut writer)
    }

    fn flush_locked(&self, writer: &mut LogWriter) -> Result<(), LogError> {
        let recovery_point = self.recovery_point();
        let end = self.log_end_offset();
        let pending: Vec<Arc<LogSegment>> = self
            .segments
            .read()
            .values()
            .filter(|segment| segment.next_offset() > recovery_point || segment.is_empty())
            .cloned()
            .collect();
        for segment in pending {
            segment.sync().map_err(|e| self.fail(e))?;
        }
        self.recovery_point.store(end, Ordering::Release);
        writer.unflushed_messages = 0;
        writer.last_flush_ms = self.clock.now_ms();
        self.write_checkpoint()
    }

    /// Flushes when `flush.ms` has passed since the last flush (called periodically).
    pub fn flush_if_due(&self) -> Result<bool, LogError> {
        let config = self.config();
        let mut writer = self.writer.lock();
        let due = writer.unflushed_messages > 0
            && self.clock.now_ms().saturating_sub(writer.last_flush_ms) >= config.flush_ms;
        if due {
            self.flush_locked(&mut writer)?;
        }
        Ok(due)
    }

    /// Flushes sealed segments not yet on disk, advancing the recovery point to the
    /// active segment's base, so a later crash only rescans the active segment.
    pub fn flush_sealed(&self) -> Result<(), LogError> {
        let active_base = self.writer.lock().active.segment().base_offset();
        let recovery_point = self.recovery_point();
        if active_base <= recovery_point {
            return Ok(());
        }
        let pending: Vec<Arc<LogSegment>> = self
            .segments
            .read()
            .range(..active_base)
            .map(|(_, s)| Arc::clone(s))
            .filter(|s| s.next_offset() > recovery_point)
            .collect();
        for segment in pending {
            segment.sync().map_err(|e| self.fail(e))?;
        }
        self.recovery_point.fetch_max(active_base, Ordering::AcqRel);
        self.write_checkpoint()
    }

    pub(super) fn write_checkpoint(&self) -> Result<(), LogError> {
        PartitionCheckpoint {
            recovery_point: self.recovery_point(),
            log_start_offset: self.log_start_offset(),
        }
        .write(&self.dir())
        .map_err(|source| {
            self.health.read().set_offline();
            LogError::Checkpoint {
                topic_partition: self.topic_partition.clone(),
                source,
            }
        })
    }

    /// Clean close: flush, trim the active segment's indexes, refuse further use.
    pub fn close(&self) -> Result<(), LogError> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let mut writer = self.writer.lock();
        self.flush_locked(&mut writer)?;
        let active = writer.active.segment();
        active
            .offset_index()
            .trim()
            .map_err(|e| self.fail(e.into()))?;
        active
            .time_index()
            .trim()
            .map_err(|e| self.fail(e.into()))?;
        Ok(())
    }

    /// Moves the log start offset forward (DeleteRecords), never past the high
    /// watermark, and deletes segments that now lie wholly below it.
    pub fn advance_log_start_offset(&self, offset: u64) -> Result<u64, LogError> {
        self.check_usable()?;
        let high_watermark = self.high_watermark();
        if offset > high_watermark {
            return Err(LogError::OffsetOutOfRange {
                topic_partition: self.topic_partition.clone(),
                offset,
                log_start_offset: self.log_start_offset(),
                log_end_offset: self.log_end_offset(),
            });
        }
        self.set_log_start_offset_at_least(offset)?;
        let new_start = self.log_start_offset();
        self.write_checkpoint()?;
        self.delete_segments_below_log_start()?;
        Ok(new_start)
    }

    /// Removes every batch at or after `offset` (replication truncating a divergent
    /// follower). Offsets below the log start truncate the whole log and restart it there.
    pub fn truncate_to(&self, offset: u64) -> Result<u64, LogError> {
        self.check_usable()?;
        let _maintenance = self.maintenance.lock();
        let mut writer = self.writer.lock();
        if offset >= self.log_end_offset() {
            // No records go, but an epoch assigned at the end without records does (a
            // former leader's epoch that wrote nothing must not count as this log's).
            let mut epochs = self.epochs.lock();
            if epochs.truncate_from_end(offset) {
                self.write_epochs(&epochs)?;
            }
            return Ok(self.log_end_offset());
        }
        let config = self.config();
        let removed: Vec<Arc<LogSegment>> = {
            let mut segments = self.segments.write();
            let later: Vec<u64> = segments
                .range(offset.saturating_add(1)..)
                .map(|(b, _)| *b)
                .collect();
            let keep_any = segments.range(..=offset).next().is_some();
            let mut removed = Vec::new();
            for base in later {
                if let Some(segment) = segments.remove(&base) {
                    removed.push(segment);
                }
            }
            if !keep_any {
                // Everything goes: start an empty log at `offset`.
                removed.extend(std::mem::take(&mut *segments).into_values());
            }
            removed
        };
        for segment in &removed {
            segment.delete_files().map_err(|e| self.fail(e))?;
        }
        let tail = self.segments.read().values().next_back().cloned();
        let new_end = match tail {
            Some(tail) => {
                // Reopen the last remaining segment for appends (its indexes grow again).
                let (segment, _) =
                    LogSegment::open_files(&self.dir(), tail.base_offset(), &config, true)
                        .map_err(|e| self.fail(e))?;
                if !segment.load_tail().map_err(|e| self.fail(e))? {
                    segment
                        .recover(config.index_interval_bytes)
                        .map_err(|e| self.fail(e))?;
                }
                let active = ActiveSegment::new(Arc::new(segment));
                let end = active.truncate_to(offset).map_err(|e| self.fail(e))?;
                self.segments
                    .write()
                    .insert(tail.base_offset(), Arc::clone(active.segment()));
                writer.active = active;
                end
            }
            None => {
                let (segment, _) = LogSegment::open_files(&self.dir(), offset, &config, true)
                    .map_err(|e| self.fail(e))?;
                let segment = Arc::new(segment);
                self.segments.write().insert(offset, Arc::clone(&segment));
                writer.active = ActiveSegment::new(segment);
                self.log_start_offset.store(offset, Ordering::Release);
                offset
            }
        };
        self.log_end_offset.store(new_end, Ordering::Release);
        self.high_watermark.fetch_min(new_end, Ordering::AcqRel);
        self.recovery_point.fetch_min(new_end, Ordering::AcqRel);
        self.log_start_offset.fetch_min(new_end, Ordering::AcqRel);
        self.write_checkpoint()?;
        drop(writer);
        // Idempotent-producer state and epochs of the removed range go with it.
        self.rebuild_producer_state()?;
        Ok(new_end)
    }

    /// Empties the log and restarts it at `offset` (a follower whose leader's log starts
    /// past everything this replica has).
    pub fn reset_to(&self, offset: u64) -> Result<(), LogError> {
        self.check_usable()?;
        let _maintenance = self.maintenance.lock();
        let mut writer = self.writer.lock();
        let config = self.config();
        let removed: Vec<Arc<LogSegment>> = std::mem::take(&mut *self.segments.write())
            .into_values()
            .collect();
        for segment in &removed {
            segment.delete_files().map_err(|e| self.fail(e))?;
        }
        let (segment, _) =
            LogSegment::open_files(&self.dir(), offset, &config, true).map_err(|e| self.fail(e))?;
        let segment = Arc::new(segment);
        self.segments.write().insert(offset, Arc::clone(&segment));
        writer.active = ActiveSegment::new(segment);
        writer.producers = ProducerStateTable::default();
        *self.transactions.lock() = TransactionState::default();
        self.log_start_offset.store(offset, Ordering::Release);
        self.log_end_offset.store(offset, Ordering::Release);
        self.high_watermark.store(offset, Ordering::Release);
        self.recovery_point.store(offset, Ordering::Release);
        self.write_checkpoint()?;
        let mut epochs = self.epochs.lock();
        *epochs = LeaderEpochCache::default();
        self.write_epochs(&epochs)
    }

    /// Deletes the partition's files (DeleteTopics, a replica moved away). The directory is
    /// renamed at once (so a new log of the same partition can start) and removed in the
    /// background. The log must not be used afterwards.
    pub fn delete(&self) -> Result<(), LogError> {
        self.closed.store(true, Ordering::Release);
        let _writer = self.writer.lock();
        retire_dir(&self.dir())
    }

    pub(super) fn set_log_start_offset_at_least(&self, offset: u64) -> Result<(), LogError> {
        self.log_start_offset.fetch_max(offset, Ordering::AcqRel);
        let start = self.log_start_offset();
        self.transactions.lock().forget_before(start);
        // Epochs that ended below the new start go (OffsetsForLeaderEpoch must not answer
        // an end offset this log no longer has). The epochs lock is always taken last.
        let mut epochs = self.epochs.lock();
        if epochs.truncate_from_start(start) {
            self.write_epochs(&epochs)?;
        }
        Ok(())
    }

    /// The last stable offset: below it every transaction is decided (committed or
    /// aborted), so a `read_committed` consumer may read up to it. Never above the high
    /// watermark.
    pub fn last_stable_offset(&self) -> u64 {
        let high_watermark = self.high_watermark();
        self.transactions
            .lock()
            .first_unstable_offset(high_watermark)
            .map_or(high_watermark, |first| first.min(high_watermark))
    }

    /// The aborted transactions a `read_committed` read of `[from, upper)` reports.
    pub fn aborted_transactions(&self, from: u64, upper: u64) -> Vec<AbortedTransaction> {
        self.transactions.lock().aborted_between(from, upper)
    }

    /// Starts verifying `producer_id`'s transaction (KIP-890 part 1): `None` when it is
    /// open here already, else the guard for [`Log::append_verified`].
    pub fn start_verification(&self, producer_id: i64, epoch: i16) -> Option<u64> {
        let writer = self.writer.lock();
        let open_is_older = writer
            .producers
            .epoch(producer_id)
            .is_some_and(|current| epoch > current);
        self.transactions
            .lock()
            .start_verification(producer_id, open_is_older, self.clock.now_ms())
    }

    /// The first offset of `producer_id`'s open transaction here, if it has one.
    pub fn open_transaction(&self, producer_id: i64) -> Option<u64> {
        self.transactions.lock().open_transaction(producer_id)
    }

    /// Every producer of this partition with the first offset of its open transaction
    /// (DescribeProducers).
    pub fn producers(&self) -> Vec<(super::ProducerSummary, Option<u64>)> {
        let writer = self.writer.lock();
        let transactions = self.transactions.lock();
        writer
            .producers
            .summaries()
            .into_iter()
            .map(|p| (p, transactions.open_transaction(p.producer_id)))
            .collect()
    }

    /// How many transactions are open in this partition.
    pub fn open_transactions(&self) -> usize {
        self.transactions.lock().open_count()
    }
}

/// Renames a partition directory out of the way at once (so a new log of the same
/// partition can start there) and removes it in the background.
pub(super) fn retire_dir(dir: &Path) -> Result<(), LogError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let doomed = dir.with_file_name(format!(
        "{name}.{}{}",
        uuid::Uuid::new_v4().simple(),
        super::manager::DELETED_SUFFIX
    ));
    std::fs::rename(dir, &doomed).map_err(|source| LogError::Directory {
        path: dir.to_path_buf(),
        source,
    })?;
    super::manager::remove_in_background(doomed);
    Ok(())
}

/// Base offsets of the segments in a partition directory, sorted; removes leftovers of
/// interrupted compaction (`*.cleaned`) and checkpoint writes (`*.tmp`).
fn list_segment_bases(dir: &Path) -> Result<Vec<u64>, LogError> {
    let entries = std::fs::read_dir(dir).map_err(|source| LogError::Directory {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut bases = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| LogError::Directory {
            path: dir.to_path_buf(),
            source,
        })?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.ends_with(".cleaned")
            || name.ends_with(".tmp")
            || name.ends_with(super::segment::DELETED_SUFFIX)
        {
            let _ = std::fs::remove_file(entry.path());
            continue;
        }
        if let Some(base) = name
            .strip_suffix(".log")
            .and_then(|stem| stem.parse::<u64>().ok())
        {
            bases.push(base);
        }
    }
    bases.sort_unstable();
    Ok(bases)
}

#[cfg(test)]
mod tests;
