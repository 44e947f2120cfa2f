//! The Raft state machine: applies committed batches to the [`ClusterImage`] and hands
//! each result to the [`MetadataFeed`]. Snapshots are the image as JSON, kept in
//! `snapshot.json` so a restart starts from the snapshot and replays only the log after it.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::RaftStateMachine;
use openraft::{
    Entry, EntryPayload, RaftSnapshotBuilder, Snapshot, SnapshotMeta, StorageError, StorageIOError,
    StoredMembership,
};
use serde::{Deserialize, Serialize};

use super::{LogId, MetadataRaft, VoterNode};
use crate::controller::feed::MetadataFeed;
use crate::metadata::image::ClusterImage;
use crate::metadata::records::MetadataRecord;
use crate::storage::write_atomically;

const SNAPSHOT_FILE: &str = "snapshot.json";

/// Why the state machine cannot be opened.
#[derive(Debug, thiserror::Error)]
pub enum StateMachineError {
    #[error("cannot read snapshot {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("snapshot {path} is malformed: {reason}")]
    Malformed { path: PathBuf, reason: String },
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct SnapshotFile {
    snapshot_id: String,
    last_applied: Option<LogId>,
    membership: StoredMembership<u64, VoterNode>,
    image: ClusterImage,
}

/// The metadata state machine.
#[derive(Debug, Clone)]
pub struct MetadataStateMachine {
    dir: PathBuf,
    last_applied: Option<LogId>,
    membership: StoredMembership<u64, VoterNode>,
    image: Arc<ClusterImage>,
    feed: Arc<MetadataFeed>,
    snapshots_built: u64,
}

impl MetadataStateMachine {
    /// Restores the last snapshot in `dir`, if any, and returns the feed it publishes to.
    pub fn open(dir: &Path) -> Result<(Self, Arc<MetadataFeed>), StateMachineError> {
        let path = dir.join(SNAPSHOT_FILE);
        let snapshot: SnapshotFile = match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|e| StateMachineError::Malformed {
                    path: path.clone(),
                    reason: e.to_string(),
                })?
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => SnapshotFile::default(),
            Err(source) => return Err(StateMachineError::Read { path, source }),
        };
        let feed = Arc::new(MetadataFeed::default());
        let image = Arc::new(snapshot.image);
        if let Some(last) = snapshot.last_applied {
            feed.publish_image(last.index, Arc::clone(&image));
        }
        Ok((
            Self {
                dir: dir.to_path_buf(),
                last_applied: snapshot.last_applied,
                membership: snapshot.membership,
                image,
                feed: Arc::clone(&feed),
                snapshots_built: 0,
            },
            feed,
        ))
    }

    fn snapshot_file(&self, snapshot_id: String) -> SnapshotFile {
        SnapshotFile {
            snapshot_id,
            last_applied: self.last_applied,
            membership: self.membership.clone(),
            image: self.image.as_ref().clone(),
        }
    }

    fn to_snapshot(file: &SnapshotFile, bytes: Vec<u8>) -> Snapshot<MetadataRaft> {
        Snapshot {
            meta: SnapshotMeta {
                last_log_id: file.last_applied,
                last_membership: file.membership.clone(),
                snapshot_id: file.snapshot_id.clone(),
            },
            snapshot: Box::new(Cursor::new(bytes)),
        }
    }
}

/// Replaces `path` with `bytes` on the blocking pool (the fsyncs must not hold a runtime
/// thread), and gives the bytes back.
async fn write_off_runtime(path: std::path::PathBuf, bytes: Vec<u8>) -> std::io::Result<Vec<u8>> {
    tokio::task::spawn_blocking(move || {
        write_atomically(&path, &bytes)
            .map(|()| bytes)
            .map_err(std::io::Error::other)
    })
    .await
    .unwrap_or_else(|error| Err(std::io::Error::other(error)))
}

impl RaftSnapshotBuilder<MetadataRaft> for MetadataStateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<MetadataRaft>, StorageError<u64>> {
        let started = std::time::Instant::now();
        self.snapshots_built += 1;
        let snapshot_id = match self.last_applied {
            Some(last) => format!("{}-{}-{}", last.leader_id, last.index, self.snapshots_built),
            None => format!("empty-{}", self.snapshots_built),
        };
        let file = self.snapshot_file(snapshot_id);
        let bytes =
            serde_json::to_vec(&file).map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        let bytes = write_off_runtime(self.dir.join(SNAPSHOT_FILE), bytes)
            .await
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        tracing::info!(
            snapshot = %file.snapshot_id,
            bytes = bytes.len(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "Metadata snapshot written"
        );
        Ok(Self::to_snapshot(&file, bytes))
    }
}

impl RaftStateMachine<MetadataRaft> for MetadataStateMachine {
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId>, StoredMembership<u64, VoterNode>), StorageError<u64>> {
        Ok((self.last_applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<MetadataRaft>> + Send,
        I::IntoIter: Send,
    {
        let mut responses = Vec::new();
        for entry in entries {
            self.last_applied = Some(entry.log_id);
            let records = match entry.payload {
                EntryPayload::Blank => Vec::new(),
                EntryPayload::Normal(batch) => {
                    let image = Arc::make_mut(&mut self.image);
                    for record in &batch.records {
                        image.apply(record);
                        if matches!(record, MetadataRecord::FeatureLevel { .. }) {
                            image.features.epoch =
                                i64::try_from(entry.log_id.index).unwrap_or(i64::MAX);
                            if let Some(reason) = image.features.unsupported_here() {
                                // The controller finalizes only levels every registered
                                // broker runs; a node that still meets one (an older
                                // binary started on newer data) must not misread what
                                // follows.
                                tracing::error!(
                                    "{reason}: this node stops; run a release that supports it"
                                );
                                std::process::exit(1);
                            }
                        }
                    }
                    batch.records
                }
                EntryPayload::Membership(membership) => {
                    self.membership = StoredMembership::new(Some(entry.log_id), membership);
                    Vec::new()
                }
            };
            self.feed
                .publish_batch(entry.log_id.index, records, Arc::clone(&self.image));
            responses.push(());
        }
        Ok(responses)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<u64>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, VoterNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<u64>> {
        let bytes = snapshot.into_inner();
        let file: SnapshotFile = serde_json::from_slice(&bytes)
            .map_err(|e| StorageIOError::read_snapshot(Some(meta.signature()), &e))?;
        write_off_runtime(self.dir.join(SNAPSHOT_FILE), bytes)
            .await
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &e))?;
        self.last_applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
        self.image = Arc::new(file.image);
        self.feed.publish_image(
            meta.last_log_id.map_or(0, |l| l.index),
            Arc::clone(&self.image),
        );
        tracing::info!(snapshot = %meta.snapshot_id, "Installed a metadata snapshot from the leader");
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<MetadataRaft>>, StorageError<u64>> {
        let path = self.dir.join(SNAPSHOT_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let file: SnapshotFile = serde_json::from_slice(&bytes)
                    .map_err(|e| StorageIOError::read_snapshot(None, &e))?;
                Ok(Some(Self::to_snapshot(&file, bytes)))
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(StorageIOError::read_snapshot(None, &error).into()),
        }
    }
}
