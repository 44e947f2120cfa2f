//! Partition logs in Kafka's on-disk format.
//!
//! ```text
//! <log.dir>/
//!   .oxbow-clean-shutdown            present only after a clean shutdown
//!   .lock                            flock(2) held by the running broker; its pid
//!   <topic>-<partition>/
//!     partition.checkpoint           recovery point + log start offset
//!     leader-epoch-checkpoint        start offset of each leader epoch (Kafka's layout)
//!     00000000000000000000.log       RecordBatch v2 bytes, exactly as produced
//!     00000000000000000000.index     sparse offset index (8-byte entries, mmap)
//!     00000000000000000000.timeindex sparse time index (12-byte entries, mmap)
//!     00000000000000004096.log       next segment, named by its base offset
//!     ...
//! ```
//!
//! Modules, bottom-up:
//! - [`batch`]: RecordBatch v2 header, validation (length, magic, CRC32C, counts, size)
//!   and the fields the broker stamps; [`batch_builder`] encodes batches.
//! - [`record_section`]: the records of a batch read in place, and a batch rebuilt
//!   around a new records section (re-compression, compaction).
//! - [`validator`]: per-record checks on produce (keys of compacted topics, timestamp
//!   bounds; KIP-467 record errors) and re-encoding for `compression.type`, over the
//!   codecs in [`compression`].
//! - [`mapped_entries`]: the mmap'd fixed-width entry file (the only `unsafe` code),
//!   under [`offset_index`] and [`time_index`].
//! - [`segment`]: a `.log` with its indexes; active vs sealed.
//! - [`log`], [`log_read`], [`retention`], [`compaction`]: one partition's log.
//! - [`checkpoint`]: recovery points, log start offsets, clean-shutdown markers;
//!   [`leader_epochs`]: where each leader epoch began (`leader-epoch-checkpoint`).
//! - [`manager`]: every partition across the `log.dirs`, each locked ([`dir_lock`]); [`relocation`]: moving a
//!   partition to another of them while it serves (AlterReplicaLogDirs).

mod batch;
pub mod batch_builder;
mod checkpoint;
mod clock;
mod compaction;
mod compression;
mod dir_lock;
pub mod leader_epochs;
mod log;
mod log_config;
mod log_read;
mod manager;
mod mapped_entries;
mod meta_properties;
pub mod offset_index;
mod producer_state;
mod record_section;
mod relocation;
mod retention;
mod segment;
pub mod time_index;
mod transactions;
pub mod validator;

#[cfg(test)]
mod test_support;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub use crate::model::TopicPartition;
pub use batch::{BatchError, BatchHeader};
pub use checkpoint::{CheckpointError, write_atomically};
pub use clock::{Clock, ManualClock, SystemClock};
pub use compression::CompressionError;
pub use dir_lock::holder as log_dir_lock_holder;
pub use log::{AppendInfo, Log, LogError};
pub use log_config::{LogConfig, LogConfigError};
pub use log_read::{ReadLimit, ReadResult};
pub use manager::{LogManager, LogManagerError, StartupReport};
pub use meta_properties::{META_PROPERTIES, encode_uuid, ensure_directory_id};
pub use producer_state::ProducerSummary;
pub use segment::FileRegion;
pub use transactions::{AbortedTransaction, Verification};

/// Whether a log directory is usable; shared by every log in it. Once offline it stays
/// offline until the broker restarts (a failed disk is not retried).
#[derive(Debug)]
pub struct LogDirHealth {
    path: PathBuf,
    offline: AtomicBool,
}

impl LogDirHealth {
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            offline: AtomicBool::new(false),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_offline(&self) -> bool {
        self.offline.load(Ordering::Acquire)
    }

    pub fn set_offline(&self) {
        if !self.offline.swap(true, Ordering::AcqRel) {
            tracing::error!(dir = %self.path.display(), "Log directory is now offline");
        }
    }
}
