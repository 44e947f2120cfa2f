//! The replicated metadata log: openraft over the controller voters.
//!
//! ```text
//!   active controller --client_write(batch)--> openraft leader
//!        |                                         | append_entries (controller listener)
//!        v                                         v
//!   LogStore (metadata-log, vote)            followers' LogStore
//!        |  committed entries, in order
//!        v
//!   MetadataStateMachine: ClusterImage + recent batches --watch--> publisher, observers
//! ```
//!
//! Everything lives under the metadata directory: the log (`metadata-log`), the vote
//! (`vote`), the purge point (`log-state`) and the latest snapshot of the image
//! (`snapshot`), so the log stays bounded: entries below a snapshot are purged. The log
//! and the snapshot are versioned binary files ([`log_format`]); those of a release before
//! them (`raft-log`, `snapshot.json`, `vote.json`, `log-state.json`) are read and converted on
//! open.

pub(super) mod events;
pub(super) mod log_format;
pub(super) mod log_store;
pub(super) mod network;
pub(super) mod state_machine;

use std::io::Cursor;

use crate::metadata::records::MetadataBatch;

openraft::declare_raft_types!(
    /// The metadata quorum's types: entries carry one decision's records.
    pub MetadataRaft:
        D = MetadataBatch,
        R = (),
        NodeId = u64,
        Node = VoterNode,
        Entry = openraft::Entry<MetadataRaft>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// The quorum's Raft handle (openraft's, which has no `Debug`).
#[derive(Clone)]
pub struct Raft(pub openraft::Raft<MetadataRaft>);

impl std::fmt::Debug for Raft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Raft(metadata quorum)")
    }
}

impl std::ops::Deref for Raft {
    type Target = openraft::Raft<MetadataRaft>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}
pub type LogId = openraft::LogId<u64>;

/// The quorum's leader as `metrics` show it. openraft goes on naming the leader of the last
/// committed vote, so a leader that removed itself from the voters, and restarted outside
/// the membership, still names itself: a node leads only in the Leader state.
pub fn known_leader(metrics: &openraft::RaftMetrics<u64, VoterNode>, node_id: u64) -> Option<u64> {
    match metrics.current_leader {
        Some(leader) if leader == node_id && !metrics.state.is_leader() => None,
        other => other,
    }
}

/// A member of the quorum: where its controller listener is, and (for a voter added with
/// AddRaftVoter) the id of its metadata directory, as KIP-853 keys voters.
///
/// Serialized as openraft's `BasicNode` was (`{"addr": ...}`), so logs and snapshots
/// written before directory ids existed still load.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VoterNode {
    pub addr: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory_id: Option<uuid::Uuid>,
}

impl VoterNode {
    pub fn new(addr: impl Into<String>) -> Self {
        Self {
            addr: addr.into(),
            directory_id: None,
        }
    }
}

impl std::fmt::Display for VoterNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.addr)
    }
}
