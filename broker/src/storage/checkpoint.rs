//! Small per-partition and per-directory state files, written atomically.
//!
//! `partition.checkpoint` in a partition directory:
//!
//! ```text
//! 0                      format version
//! <recovery point>       every batch below this offset is known to be on disk
//! <log start offset>     first offset readers may see (moved by retention and DeleteRecords)
//! ```
//!
//! `.oxbow-clean-shutdown` in a log directory: present only between a clean shutdown
//! and the next start-up, which deletes it; when it is missing the logs in that
//! directory are recovered from their recovery points.
//!
//! Every write goes to a temporary file that is fsynced and then renamed over the old
//! one, so a crash leaves either the old or the new content.

use std::io::Write;
use std::path::{Path, PathBuf};

pub const PARTITION_CHECKPOINT_FILE: &str = "partition.checkpoint";
pub const CLEAN_SHUTDOWN_FILE: &str = ".oxbow-clean-shutdown";
const VERSION: u32 = 0;

/// Failures reading or writing a checkpoint file.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot write checkpoint {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read checkpoint {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("checkpoint {path} is malformed: {reason}")]
    Malformed { path: PathBuf, reason: &'static str },
}

/// The durable offsets of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartitionCheckpoint {
    pub recovery_point: u64,
    pub log_start_offset: u64,
}

impl PartitionCheckpoint {
    /// Reads the checkpoint of a partition directory; `None` when there is none yet.
    pub fn read(partition_dir: &Path) -> Result<Option<Self>, CheckpointError> {
        let path = partition_dir.join(PARTITION_CHECKPOINT_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(CheckpointError::Read { path, source }),
        };
        let mut lines = text.lines().map(str::trim);
        let malformed = |reason| CheckpointError::Malformed {
            path: path.clone(),
            reason,
        };
        if lines.next() != Some("0") {
            return Err(malformed("unknown version"));
        }
        let mut number = |what| -> Result<u64, CheckpointError> {
            lines
                .next()
                .and_then(|line| line.parse().ok())
                .ok_or_else(|| malformed(what))
        };
        let recovery_point = number("recovery point missing")?;
        let log_start_offset = number("log start offset missing")?;
        Ok(Some(Self {
            recovery_point,
            log_start_offset,
        }))
    }

    pub fn write(&self, partition_dir: &Path) -> Result<(), CheckpointError> {
        write_atomically(
            &partition_dir.join(PARTITION_CHECKPOINT_FILE),
            format!(
                "{VERSION}\n{}\n{}\n",
                self.recovery_point, self.log_start_offset
            )
            .as_bytes(),
        )
    }
}

/// Writes `bytes` to `path` through a synced temporary file and a rename.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let temporary = path.with_extension("tmp");
    let fail = |source| CheckpointError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::create(&temporary).map_err(fail)?;
    file.write_all(bytes).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    std::fs::rename(&temporary, path).map_err(fail)?;
    Ok(())
}

/// Rewrites `path` in place with `bytes`, without an fsync: no new inode per write (creating
/// one is what costs on a file system full of recently deleted files, measured at 10,000
/// partitions), and a crash may leave it torn — only for files nothing of Oxbow's reads back.
pub fn overwrite(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let fail = |source| CheckpointError::Write {
        path: path.to_path_buf(),
        source,
    };
    std::fs::write(path, bytes).map_err(fail)
}

/// Whether the log directory was shut down cleanly; removes the marker so that a crash
/// from now on is noticed at the next start.
pub fn take_clean_shutdown_marker(log_dir: &Path) -> Result<bool, CheckpointError> {
    let path = log_dir.join(CLEAN_SHUTDOWN_FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(CheckpointError::Write { path, source }),
    }
}

pub fn write_clean_shutdown_marker(log_dir: &Path) -> Result<(), CheckpointError> {
    write_atomically(&log_dir.join(CLEAN_SHUTDOWN_FILE), b"clean\n")
}
