//! The Raft log and vote on disk.
//!
//! `metadata-log` is a header (Oxbow's magic and the format version) and one frame per
//! entry — length, CRC32C, the entry in the versioned schema of [`super::log_format`] —
//! appended and fsynced before openraft is told the entries are durable. A last frame cut
//! short by a crash (it runs past the end of the file, or its CRC fails with nothing after
//! it) was never acknowledged and is dropped; a bad frame followed by more data is
//! corruption in the middle of the log, and the node refuses to start rather than forget
//! entries it may have acknowledged to the quorum. An intact frame this release cannot
//! decode (a newer release's) stops the node with the reason. Truncation (a conflicting
//! suffix) and purging (entries below a snapshot) rewrite the file through a temporary file
//! and a rename; both are rare and the file is bounded by the snapshot policy.
//!
//! A directory of a release before the versioned format holds `raft-log` (a line of JSON per
//! entry): it is converted once, on open, and kept beside as `raft-log.before-format-1`.
//!
//! `vote` and `log-state` (the purge point and the committed id) are small versioned
//! files (header, fields, tagged fields) replaced atomically; the release before kept them as
//! `vote.json` and `log-state.json`, read when the new ones are absent.
//!
//! Every write and fsync runs on the blocking pool, and the in-memory entries that log
//! readers (replication to the other voters) use are never locked across one: an fsync
//! that the disk holds up (a multi-GB deletion filling the filesystem's journal) delays
//! this log's own durability, never the runtime threads that serve Raft heartbeats,
//! broker heartbeats and clients.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{Entry, RaftLogReader, StorageError, StorageIOError, Vote};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::{LogId, MetadataRaft, log_format};
use crate::storage::write_atomically;

const LOG_FILE: &str = "metadata-log";
/// The log of a release before the versioned format: a line of JSON per entry.
const LEGACY_LOG_FILE: &str = "raft-log";
const LEGACY_KEPT_AS: &str = "raft-log.before-format-1";
const VOTE_FILE: &str = "vote";
const STATE_FILE: &str = "log-state";
/// The same two files of a release before the versioned format, as JSON: read when the
/// new ones are absent, removed once those are written.
const LEGACY_VOTE_FILE: &str = "vote.json";
const LEGACY_STATE_FILE: &str = "log-state.json";

/// Why the log cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum LogStoreError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the Raft log {path} is corrupt at byte {offset} with intact entries after it; remove the metadata directory to rejoin the quorum from the other voters"
    )]
    Corrupt { path: PathBuf, offset: usize },
    #[error("{path} is malformed: {reason}")]
    Malformed { path: PathBuf, reason: String },
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct LogStateFile {
    last_purged: Option<LogId>,
    committed: Option<LogId>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    entries: BTreeMap<u64, Entry<MetadataRaft>>,
    state: LogStateFile,
    vote: Option<Vote<u64>>,
}

/// The Raft log store; clones share the same log (openraft's log readers).
#[derive(Debug, Clone)]
pub struct LogStore {
    inner: Arc<Mutex<Inner>>,
    /// The open `raft-log`, touched only on the blocking pool (appends, rewrites).
    file: Arc<Mutex<File>>,
}

/// [`write_atomically`] as an I/O result.
fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically(path, bytes).map_err(std::io::Error::other)
}

/// Runs blocking file work on the blocking pool; a task that could not run is an I/O error.
async fn on_blocking_pool<T: Send + 'static>(
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| Err(std::io::Error::other(error)))
}

/// A line of the legacy `raft-log`: `<crc32c, 8 hex digits> <entry as JSON>\n`.
fn decode_legacy_line(line: &[u8]) -> Option<Entry<MetadataRaft>> {
    let line = line.strip_suffix(b"\n")?;
    let (crc, json) = (line.get(..8)?, line.get(9..)?);
    let crc = u32::from_str_radix(std::str::from_utf8(crc).ok()?, 16).ok()?;
    (crc32c::crc32c(json) == crc)
        .then(|| serde_json::from_slice(json).ok())
        .flatten()
}

/// The entries of a legacy `raft-log`, as its reader took them: a torn last line dropped,
/// damage before intact lines refused.
fn read_legacy(path: &Path, bytes: &[u8]) -> Result<Vec<Entry<MetadataRaft>>, LogStoreError> {
    let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
    let mut entries = Vec::new();
    let mut offset = 0;
    for (number, line) in lines.iter().enumerate() {
        match decode_legacy_line(line) {
            Some(entry) => entries.push(entry),
            None if number + 1 == lines.len() => break,
            None => {
                return Err(LogStoreError::Corrupt {
                    path: path.to_path_buf(),
                    offset,
                });
            }
        }
        offset += line.len();
    }
    Ok(entries)
}

/// Converts a legacy `raft-log` in `dir` to `metadata-log`, once: the new file is written
/// whole and renamed into place before the old one is set aside, so a crash midway leaves
/// the old log to convert again.
fn convert_legacy(dir: &Path) -> Result<(), LogStoreError> {
    let legacy = dir.join(LEGACY_LOG_FILE);
    let bytes = match std::fs::read(&legacy) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(LogStoreError::Read {
                path: legacy,
                source,
            });
        }
    };
    let entries = read_legacy(&legacy, &bytes)?;
    let mut file = log_format::header(log_format::LOG_MAGIC);
    for entry in &entries {
        file.extend(log_format::frame(entry));
    }
    let path = dir.join(LOG_FILE);
    replace_file(&path, &file).map_err(|source| LogStoreError::Write {
        path: path.clone(),
        source,
    })?;
    std::fs::rename(&legacy, dir.join(LEGACY_KEPT_AS)).map_err(|source| LogStoreError::Write {
        path: legacy.clone(),
        source,
    })?;
    tracing::info!(
        entries = entries.len(),
        from = %legacy.display(),
        to = %path.display(),
        "Converted the metadata log of a release before the versioned format"
    );
    Ok(())
}

/// A file in this release's format, `None` when absent.
fn read_versioned<T>(
    path: &Path,
    decode: impl FnOnce(&[u8]) -> Result<T, String>,
) -> Result<Option<T>, LogStoreError> {
    match std::fs::read(path) {
        Ok(bytes) => decode(&bytes)
            .map(Some)
            .map_err(|reason| LogStoreError::Malformed {
                path: path.to_path_buf(),
                reason,
            }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(LogStoreError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Writes `name` in this release's format in place of the JSON file `legacy`.
fn convert_small_file(
    dir: &Path,
    name: &str,
    legacy: &str,
    bytes: &[u8],
) -> Result<(), LogStoreError> {
    let path = dir.join(name);
    replace_file(&path, bytes).map_err(|source| LogStoreError::Write { path, source })?;
    forget_legacy(&dir.join(legacy));
    Ok(())
}

/// Removes a superseded JSON file of the release before (best effort: the versioned file
/// beside it is read first).
fn forget_legacy(path: &Path) {
    if let Err(error) = std::fs::remove_file(path)
        && error.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(%error, path = %path.display(), "Cannot remove a superseded JSON file");
    }
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, LogStoreError> {
    match std::fs::read(path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| LogStoreError::Malformed {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(LogStoreError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

impl LogStore {
    /// Opens (creating) the log in `dir`.
    pub fn open(dir: &Path) -> Result<Self, LogStoreError> {
        let path = dir.join(LOG_FILE);
        let read = |source| LogStoreError::Read {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(read)?;
        if !path.exists() {
            convert_legacy(dir)?;
        }
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(error) => return Err(read(error)),
        };
        let header_len = log_format::HEADER_LEN;
        if bytes.len() >= header_len {
            log_format::check_header(&bytes, log_format::LOG_MAGIC, &path.display().to_string())
                .map_err(|reason| LogStoreError::Unreadable {
                    path: path.clone(),
                    reason,
                })?;
        }
        // A header cut short is a file created by a crash before its first append.
        let body = bytes.get(header_len..).unwrap_or_default();
        let frames = log_format::read_frames(body).map_err(|error| match error {
            log_format::FrameError::Corrupt(offset) => LogStoreError::Corrupt {
                path: path.clone(),
                offset: offset + header_len,
            },
            log_format::FrameError::Unreadable { .. } => LogStoreError::Unreadable {
                path: path.clone(),
                reason: error.to_string(),
            },
        })?;
        if frames.torn {
            tracing::warn!(path = %path.display(), offset = frames.good_length + header_len, "Raft log ends in a torn entry (a crash during an append); dropping it");
        }
        let entries: BTreeMap<u64, Entry<MetadataRaft>> = frames
            .entries
            .into_iter()
            .map(|e| (e.log_id.index, e))
            .collect();
        let good_length = header_len + frames.good_length;
        if bytes.len() < header_len {
            replace_file(&path, &log_format::header(log_format::LOG_MAGIC)).map_err(|source| {
                LogStoreError::Write {
                    path: path.clone(),
                    source,
                }
            })?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(read)?;
        if bytes.len() >= header_len && good_length < bytes.len() {
            file.set_len(good_length as u64)
                .map_err(|source| LogStoreError::Write {
                    path: path.clone(),
                    source,
                })?;
        }
        let state = match read_versioned(&dir.join(STATE_FILE), log_format::decode_log_state)? {
            Some((last_purged, committed)) => LogStateFile {
                last_purged,
                committed,
            },
            None => {
                let legacy: Option<LogStateFile> = read_json(&dir.join(LEGACY_STATE_FILE))?;
                if let Some(state) = &legacy {
                    let bytes = log_format::encode_log_state(
                        state.last_purged.as_ref(),
                        state.committed.as_ref(),
                    );
                    convert_small_file(dir, STATE_FILE, LEGACY_STATE_FILE, &bytes)?;
                }
                legacy.unwrap_or_default()
            }
        };
        let vote = match read_versioned(&dir.join(VOTE_FILE), log_format::decode_vote)? {
            Some(vote) => Some(vote),
            None => {
                let legacy: Option<Vote<u64>> = read_json(&dir.join(LEGACY_VOTE_FILE))?;
                if let Some(vote) = &legacy {
                    let bytes = log_format::encode_vote(vote);
                    convert_small_file(dir, VOTE_FILE, LEGACY_VOTE_FILE, &bytes)?;
                }
                legacy
            }
        };
        Ok(Self {
            inner: Arc::new(Mutex::new(Inner {
                dir: dir.to_path_buf(),
                entries,
                state,
                vote,
            })),
            file: Arc::new(Mutex::new(file)),
        })
    }

    /// Whether nothing was ever written: the node has never been part of a quorum.
    pub fn is_pristine(&self) -> bool {
        let inner = self.inner.lock();
        inner.entries.is_empty() && inner.state.last_purged.is_none() && inner.vote.is_none()
    }
}

// openraft's trait methods return its (large) StorageError; these helpers feed them.
#[allow(clippy::result_large_err)]
impl LogStore {
    /// Writes `log-state.json` from the state held in memory.
    async fn write_state(&self) -> Result<(), StorageError<u64>> {
        let (dir, bytes) = {
            let inner = self.inner.lock();
            let bytes = log_format::encode_log_state(
                inner.state.last_purged.as_ref(),
                inner.state.committed.as_ref(),
            );
            (inner.dir.clone(), bytes)
        };
        on_blocking_pool(move || {
            replace_file(&dir.join(STATE_FILE), &bytes)?;
            forget_legacy(&dir.join(LEGACY_STATE_FILE));
            Ok(())
        })
        .await
        .map_err(|e| StorageIOError::write(&e).into())
    }

    /// Replaces the log file with the entries held in memory.
    async fn rewrite(&self) -> Result<(), StorageError<u64>> {
        let (path, text) = {
            let inner = self.inner.lock();
            let mut text = log_format::header(log_format::LOG_MAGIC);
            for entry in inner.entries.values() {
                text.extend(log_format::frame(entry));
            }
            (inner.dir.join(LOG_FILE), text)
        };
        let file = Arc::clone(&self.file);
        on_blocking_pool(move || {
            let mut file = file.lock();
            replace_file(&path, &text)?;
            *file = OpenOptions::new().append(true).open(&path)?;
            Ok(())
        })
        .await
        .map_err(|e| StorageIOError::write_logs(&e).into())
    }
}

impl RaftLogReader<MetadataRaft> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<MetadataRaft>>, StorageError<u64>> {
        let inner = self.inner.lock();
        Ok(inner
            .entries
            .range(range)
            .map(|(_, entry)| entry.clone())
            .collect())
    }
}

impl RaftLogStorage<MetadataRaft> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<MetadataRaft>, StorageError<u64>> {
        let inner = self.inner.lock();
        let last_purged_log_id = inner.state.last_purged;
        let last_log_id = inner
            .entries
            .values()
            .next_back()
            .map(|e| e.log_id)
            .or(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        let bytes = log_format::encode_vote(vote);
        let dir = self.inner.lock().dir.clone();
        on_blocking_pool(move || {
            replace_file(&dir.join(VOTE_FILE), &bytes)?;
            forget_legacy(&dir.join(LEGACY_VOTE_FILE));
            Ok(())
        })
        .await
        .map_err(|e| StorageIOError::write_vote(&e))?;
        self.inner.lock().vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        Ok(self.inner.lock().vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError<u64>> {
        self.inner.lock().state.committed = committed;
        self.write_state().await
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError<u64>> {
        Ok(self.inner.lock().state.committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<MetadataRaft>,
    ) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<MetadataRaft>> + Send,
        I::IntoIter: Send,
    {
        let mut text = Vec::new();
        let mut appended = Vec::new();
        for entry in entries {
            text.extend(log_format::frame(&entry));
            appended.push(entry);
        }
        let file = Arc::clone(&self.file);
        let result = on_blocking_pool(move || {
            let mut file = file.lock();
            file.write_all(&text)?;
            file.sync_data()
        })
        .await;
        if let Err(error) = &result {
            tracing::error!(%error, "Appending to the Raft log failed");
        } else {
            let mut inner = self.inner.lock();
            for entry in appended {
                inner.entries.insert(entry.log_id.index, entry);
            }
        }
        callback.log_io_completed(result);
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError<u64>> {
        let removed = self.inner.lock().entries.split_off(&log_id.index);
        if !removed.is_empty() {
            tracing::info!(
                from = log_id.index,
                entries = removed.len(),
                "Truncating a conflicting Raft log suffix"
            );
            self.rewrite().await?;
        }
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError<u64>> {
        // The purge point is recorded first: a crash between the two steps leaves
        // entries below it, which are ignored, never a hole above it.
        self.inner.lock().state.last_purged = Some(log_id);
        self.write_state().await?;
        {
            let mut inner = self.inner.lock();
            let kept = inner.entries.split_off(&(log_id.index + 1));
            inner.entries = kept;
        }
        self.rewrite().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::quorum::state_machine::MetadataStateMachine;
    use openraft::testing::{StoreBuilder, Suite};

    struct Builder;

    impl StoreBuilder<MetadataRaft, LogStore, MetadataStateMachine, tempfile::TempDir> for Builder {
        async fn build(
            &self,
        ) -> Result<(tempfile::TempDir, LogStore, MetadataStateMachine), StorageError<u64>>
        {
            let dir = tempfile::tempdir().map_err(|e| StorageIOError::write(&e))?;
            let log = LogStore::open(dir.path()).map_err(|e| StorageIOError::write(&e))?;
            let (machine, _) =
                MetadataStateMachine::open(dir.path()).map_err(|e| StorageIOError::write(&e))?;
            Ok((dir, log, machine))
        }
    }

    #[test]
    fn passes_openraft_storage_suite() {
        Suite::test_all(Builder).unwrap();
    }

    fn entry(index: u64) -> Entry<MetadataRaft> {
        Entry::<MetadataRaft> {
            log_id: openraft::LogId::new(openraft::CommittedLeaderId::new(1, 0), index),
            ..Default::default()
        }
    }

    #[test]
    fn a_torn_last_entry_is_dropped_and_a_corrupt_middle_refuses_to_open() {
        let dir = tempfile::tempdir().unwrap();
        let frame = |index| log_format::frame(&entry(index));
        let header = log_format::header(log_format::LOG_MAGIC);
        let path = dir.path().join(LOG_FILE);
        let intact = [header.clone(), frame(1), frame(2)].concat();
        let mut bytes = intact.clone();
        bytes.extend_from_slice(&frame(3)[..7]);
        std::fs::write(&path, &bytes).unwrap();
        let store = LogStore::open(dir.path()).unwrap();
        assert_eq!(store.inner.lock().entries.len(), 2);
        drop(store);
        assert_eq!(std::fs::read(&path).unwrap(), intact);

        let mut corrupt = frame(1);
        corrupt[10] ^= 0xff;
        std::fs::write(&path, [header, corrupt, frame(2)].concat()).unwrap();
        let error = LogStore::open(dir.path()).unwrap_err();
        assert!(
            matches!(error, LogStoreError::Corrupt { offset: 10, .. }),
            "{error}"
        );
    }

    #[test]
    fn a_newer_format_stops_the_node_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let mut header = log_format::header(log_format::LOG_MAGIC);
        header[9] = 2;
        std::fs::write(dir.path().join(LOG_FILE), header).unwrap();
        let error = LogStore::open(dir.path()).unwrap_err().to_string();
        assert!(
            error.contains("written by a newer Oxbow release"),
            "{error}"
        );
    }

    #[test]
    fn a_legacy_json_log_is_converted_once_and_kept_beside() {
        let dir = tempfile::tempdir().unwrap();
        let line = |entry: &Entry<MetadataRaft>| {
            let json = serde_json::to_vec(entry).unwrap();
            let mut line = format!("{:08x} ", crc32c::crc32c(&json)).into_bytes();
            line.extend_from_slice(&json);
            line.push(b'\n');
            line
        };
        let mut normal = entry(2);
        normal.payload = openraft::EntryPayload::Normal(crate::metadata::records::MetadataBatch {
            records: crate::metadata::record_format::tests::one_of_each(),
        });
        let legacy = [line(&entry(1)), line(&normal), b"0000abcd {\"torn".to_vec()].concat();
        std::fs::write(dir.path().join(LEGACY_LOG_FILE), &legacy).unwrap();
        let vote = Vote::new_committed(3, 1);
        std::fs::write(
            dir.path().join(LEGACY_VOTE_FILE),
            serde_json::to_vec(&vote).unwrap(),
        )
        .unwrap();
        let state = LogStateFile {
            last_purged: None,
            committed: Some(normal.log_id),
        };
        std::fs::write(
            dir.path().join(LEGACY_STATE_FILE),
            serde_json::to_vec(&state).unwrap(),
        )
        .unwrap();
        let store = LogStore::open(dir.path()).unwrap();
        assert_eq!(store.inner.lock().vote, Some(vote));
        assert_eq!(store.inner.lock().state.committed, Some(normal.log_id));
        for (new, old) in [
            (VOTE_FILE, LEGACY_VOTE_FILE),
            (STATE_FILE, LEGACY_STATE_FILE),
        ] {
            assert!(dir.path().join(new).exists() && !dir.path().join(old).exists());
        }
        assert_eq!(
            store
                .inner
                .lock()
                .entries
                .values()
                .cloned()
                .collect::<Vec<_>>(),
            vec![entry(1), normal.clone()]
        );
        drop(store);
        assert!(!dir.path().join(LEGACY_LOG_FILE).exists());
        assert_eq!(
            std::fs::read(dir.path().join(LEGACY_KEPT_AS)).unwrap(),
            legacy
        );
        // Opened again, the converted log is read as it is.
        let store = LogStore::open(dir.path()).unwrap();
        assert_eq!(store.inner.lock().entries.len(), 2);
    }
}
