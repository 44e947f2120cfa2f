//! The Raft state machine: applies committed batches to the [`ClusterImage`] and hands
//! each result to the [`MetadataFeed`]. A snapshot is the image as the metadata records
//! that build it (versioned, as in the log: [`super::log_format`]) behind a header with
//! the format version, kept in `snapshot` so a restart starts from it and replays only the
//! log after it. A directory of a release before the versioned format has `snapshot.json`
//! (the image as JSON): read when there is no `snapshot`, and replaced by the next one.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::RaftStateMachine;
use openraft::{
    Entry, EntryPayload, RaftSnapshotBuilder, Snapshot, SnapshotMeta, StorageError, StorageIOError,
    StoredMembership,
};
use serde::{Deserialize, Serialize};

use super::log_format::{self, SNAPSHOT_MAGIC};
use super::{LogId, MetadataRaft, VoterNode};
use crate::controller::feed::MetadataFeed;
use crate::metadata::image::ClusterImage;
use crate::metadata::record_format::{decode_image, encode_image};
use crate::metadata::records::MetadataRecord;
use crate::metadata::wire::{Reader, WireResult, Writer};
use crate::storage::write_atomically;

const SNAPSHOT_FILE: &str = "snapshot";
const LEGACY_SNAPSHOT_FILE: &str = "snapshot.json";

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

impl SnapshotFile {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.bytes_raw(&log_format::header(SNAPSHOT_MAGIC));
        w.string(&self.snapshot_id);
        let optional_log_id = |w: &mut Writer, id: Option<&LogId>| match id {
            Some(id) => {
                w.bool(true);
                log_format::log_id(w, id);
            }
            None => w.bool(false),
        };
        optional_log_id(&mut w, self.last_applied.as_ref());
        optional_log_id(&mut w, self.membership.log_id().as_ref());
        log_format::membership(&mut w, self.membership.membership());
        encode_image(&mut w, &self.image);
        w.tagged(&[]);
        w.into_bytes()
    }

    /// A snapshot in this release's format, or a legacy one (the image as JSON).
    fn decode(bytes: &[u8]) -> Result<Self, String> {
        if !bytes.starts_with(SNAPSHOT_MAGIC) {
            return serde_json::from_slice(bytes).map_err(|e| e.to_string());
        }
        log_format::check_header(bytes, SNAPSHOT_MAGIC, "the metadata snapshot")?;
        let mut r = Reader::new(bytes.get(log_format::HEADER_LEN..).unwrap_or_default());
        Self::read(&mut r).map_err(|e| e.to_string())
    }

    fn read(r: &mut Reader<'_>) -> WireResult<Self> {
        let snapshot_id = r.string("snapshot id")?;
        let optional_log_id = |r: &mut Reader<'_>| -> WireResult<Option<LogId>> {
            r.bool("log id present")?
                .then(|| log_format::read_log_id(r))
                .transpose()
        };
        let last_applied = optional_log_id(r)?;
        let membership_log_id = optional_log_id(r)?;
        let membership = log_format::read_membership(r)?;
        let image = decode_image(r)?;
        r.tagged(|_, _| Ok(false))?;
        Ok(Self {
            snapshot_id,
            last_applied,
            membership: StoredMembership::new(membership_log_id, membership),
            image,
        })
    }
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
        let mut path = dir.join(SNAPSHOT_FILE);
        if !path.exists() && dir.join(LEGACY_SNAPSHOT_FILE).exists() {
            path = dir.join(LEGACY_SNAPSHOT_FILE);
        }
        let snapshot: SnapshotFile = match std::fs::read(&path) {
            Ok(bytes) => {
                SnapshotFile::decode(&bytes).map_err(|reason| StateMachineError::Malformed {
                    path: path.clone(),
                    reason,
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

    /// The snapshot of a release before the versioned format, once a new one is written.
    fn forget_legacy_snapshot(&self) {
        let legacy = self.dir.join(LEGACY_SNAPSHOT_FILE);
        if let Err(error) = std::fs::remove_file(&legacy)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(%error, path = %legacy.display(), "Cannot remove the superseded JSON snapshot");
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
        let bytes = write_off_runtime(self.dir.join(SNAPSHOT_FILE), file.encode())
            .await
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        self.forget_legacy_snapshot();
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
        let file = SnapshotFile::decode(&bytes).map_err(|reason| {
            StorageIOError::read_snapshot(Some(meta.signature()), &std::io::Error::other(reason))
        })?;
        // Kept in this release's format whatever the leader's release sent.
        write_off_runtime(self.dir.join(SNAPSHOT_FILE), file.encode())
            .await
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), &e))?;
        self.forget_legacy_snapshot();
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
        let mut path = self.dir.join(SNAPSHOT_FILE);
        if !path.exists() {
            path = self.dir.join(LEGACY_SNAPSHOT_FILE);
        }
        match std::fs::read(&path) {
            Ok(bytes) => {
                let file = SnapshotFile::decode(&bytes).map_err(|reason| {
                    StorageIOError::read_snapshot(None, &std::io::Error::other(reason))
                })?;
                // Sent to followers in this release's format.
                let bytes = file.encode();
                Ok(Some(Self::to_snapshot(&file, bytes)))
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(StorageIOError::read_snapshot(None, &error).into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use openraft::{CommittedLeaderId, Membership};

    use super::*;
    use crate::metadata::record_format::tests::one_of_each;

    /// An image with something of everything: brokers fenced and not, topics, configs,
    /// credentials, ACLs, quotas, features.
    fn image() -> ClusterImage {
        let mut image = ClusterImage::default();
        for record in one_of_each() {
            // Keep what the deletions would take away.
            if matches!(
                record,
                MetadataRecord::TopicDeleted { .. }
                    | MetadataRecord::AclRemoved { .. }
                    | MetadataRecord::ScramCredentialRemoved { .. }
                    | MetadataRecord::BrokerFenced { .. }
            ) {
                continue;
            }
            image.apply(&record);
        }
        image.apply(&MetadataRecord::BrokerRegistered {
            node_id: 2,
            incarnation: uuid::Uuid::from_u128(2),
            endpoint: crate::metadata::records::Endpoint {
                host: "b2".into(),
                port: 1,
            },
            rack: None,
            listeners: BTreeMap::new(),
            supported_features: None,
        });
        image.features.epoch = 42;
        image
    }

    fn snapshot(image: ClusterImage) -> SnapshotFile {
        let log_id = LogId::new(CommittedLeaderId::new(2, 1), 99);
        SnapshotFile {
            snapshot_id: "1-99-3".into(),
            last_applied: Some(log_id),
            membership: StoredMembership::new(
                Some(log_id),
                Membership::new(
                    vec![BTreeSet::from([1])],
                    BTreeMap::from([(1, VoterNode::new("c1:9093"))]),
                ),
            ),
            image,
        }
    }

    #[test]
    fn a_snapshot_rebuilds_the_image_it_was_taken_of() {
        let file = snapshot(image());
        assert!(file.image.brokers[&1].supported_features.is_some());
        assert!(!file.image.client_quotas.is_empty());
        assert!(!file.image.brokers[&1].fenced && file.image.brokers[&2].fenced);
        assert!(!file.image.scram_credentials.is_empty() && !file.image.acls.is_empty());
        let back = SnapshotFile::decode(&file.encode()).unwrap();
        assert_eq!(back.image, file.image);
        assert_eq!(back.image.digest(), file.image.digest());
        let mut other = file.image.clone();
        other.client_quotas.clear();
        assert_ne!(
            other.digest(),
            file.image.digest(),
            "quotas count in the digest"
        );
        assert_eq!(back.last_applied, file.last_applied);
        assert_eq!(back.membership, file.membership);
        assert_eq!(back.snapshot_id, file.snapshot_id);
    }

    #[test]
    fn a_legacy_json_snapshot_is_read_and_a_newer_format_refused() {
        // The release before could not write a snapshot with client quotas in JSON (their
        // keys are structured); its snapshots have none.
        let mut legacy = image();
        legacy.client_quotas.clear();
        let file = snapshot(legacy);
        let json = serde_json::to_vec(&file).unwrap();
        assert_eq!(SnapshotFile::decode(&json).unwrap().image, file.image);
        let mut newer = file.encode();
        newer[9] = 7;
        let error = SnapshotFile::decode(&newer).unwrap_err();
        assert!(
            error.contains("written by a newer Oxbow release"),
            "{error}"
        );
        let mut cut = file.encode();
        cut.truncate(cut.len() / 2);
        assert!(SnapshotFile::decode(&cut).is_err());
    }
}
