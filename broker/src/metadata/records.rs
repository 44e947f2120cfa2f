//! The metadata records: every change to the cluster's metadata, as the quorum log
//! carries it. A batch of records is one Raft entry, so a decision that needs several
//! records (a topic and its partitions, a fence and the elections it causes) is applied
//! all or nothing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use super::features::SupportedFeatures;
pub use crate::model::ScramMechanism;
pub use crate::model::acl::AclBinding;

/// Where clients reach a broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

/// A broker's advertised address on each of its client listeners, by listener name
/// (Kafka's `advertised.listeners`). Empty in registrations of brokers from before named
/// listeners: their one `endpoint` serves every listener.
pub type ListenerEndpoints = BTreeMap<String, Endpoint>;

/// One partition's placement and leadership, as a record carries it in full.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionState {
    /// Assigned replicas in preference order: the first is the preferred leader.
    pub replicas: Vec<i32>,
    pub in_sync_replicas: Vec<i32>,
    /// -1 when no in-sync replica is available (the partition is offline).
    pub leader: i32,
    /// Bumped on every leader change.
    pub leader_epoch: i32,
    /// Bumped on every change of the partition (leader, ISR or replicas).
    pub partition_epoch: i32,
    /// A reassignment in progress: replicas being added (they catch up and join the ISR)
    /// and replicas that leave once every added one is in sync. `replicas` holds both
    /// meanwhile, the target first (so its first replica is the preferred leader).
    /// Kept in the record, so a new active controller finishes what the last one began.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adding_replicas: Vec<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removing_replicas: Vec<i32>,
}

impl PartitionState {
    pub fn is_reassigning(&self) -> bool {
        !self.adding_replicas.is_empty() || !self.removing_replicas.is_empty()
    }

    /// The replicas the partition had before the reassignment in progress.
    pub fn original_replicas(&self) -> Vec<i32> {
        self.replicas
            .iter()
            .copied()
            .filter(|r| !self.adding_replicas.contains(r))
            .collect()
    }

    /// The replicas the reassignment in progress leads to.
    pub fn target_replicas(&self) -> Vec<i32> {
        self.replicas
            .iter()
            .copied()
            .filter(|r| !self.removing_replicas.contains(r))
            .collect()
    }
}

/// A change to the cluster's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MetadataRecord {
    ClusterIdentified {
        cluster_id: String,
    },
    /// A broker (re)registered; it starts fenced and is unfenced by its heartbeats.
    BrokerRegistered {
        node_id: i32,
        /// New on every process start, so a restart is told from a duplicate node id.
        incarnation: Uuid,
        endpoint: Endpoint,
        rack: Option<String>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        listeners: ListenerEndpoints,
        /// The feature levels the broker runs; `None` from a release before feature
        /// levels.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        supported_features: Option<SupportedFeatures>,
    },
    BrokerFenced {
        node_id: i32,
    },
    BrokerUnfenced {
        node_id: i32,
    },
    BrokerUnregistered {
        node_id: i32,
    },
    TopicCreated {
        name: String,
        topic_id: Uuid,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
    },
    /// A new partition of a topic (at creation and by CreatePartitions).
    PartitionCreated {
        topic: String,
        partition: i32,
        state: PartitionState,
    },
    /// A partition's leader, ISR or replicas changed.
    PartitionChanged {
        topic: String,
        partition: i32,
        state: PartitionState,
    },
    TopicConfigChanged {
        name: String,
        configs: BTreeMap<String, String>,
    },
    TopicDeleted {
        name: String,
        topic_id: Uuid,
    },
    /// The dynamic configs of one broker (`node_id` -1: the cluster-wide defaults),
    /// replaced as a whole.
    BrokerConfigChanged {
        node_id: i32,
        configs: BTreeMap<String, String>,
    },
    /// Producer ids below `next_producer_id` are handed out.
    ProducerIdsAllocated {
        next_producer_id: i64,
    },
    /// A user's SCRAM credential for one mechanism, set or replaced
    /// (AlterUserScramCredentials); the password itself is never in the log.
    ScramCredentialSet {
        user: String,
        mechanism: ScramMechanism,
        credential: ScramCredential,
    },
    ScramCredentialRemoved {
        user: String,
        mechanism: ScramMechanism,
    },
    /// An access control entry added (CreateAcls); adding one already there changes nothing.
    AclCreated {
        acl: AclBinding,
    },
    /// An access control entry removed (DeleteAcls).
    AclRemoved {
        acl: AclBinding,
    },
    /// A feature finalized at `level` (Kafka's FeatureLevelRecord); level 0 disables it.
    FeatureLevel {
        name: String,
        level: i16,
    },
    /// A client quota set, or removed when `value` is `None` (AlterClientQuotas).
    ClientQuotaChanged {
        entity: crate::model::quota::QuotaEntity,
        key: crate::model::quota::QuotaKey,
        value: Option<crate::model::quota::QuotaValue>,
    },
}

/// What brokers keep of a SCRAM password (RFC 5802): the salt, the iteration count,
/// StoredKey = H(HMAC(SaltedPassword, "Client Key")) and ServerKey = HMAC(SaltedPassword,
/// "Server Key"). Enough to check a client's proof, not to recover the password.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: u32,
}

/// What one Raft entry carries: the records of one decision.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataBatch {
    pub records: Vec<MetadataRecord>,
}

impl std::fmt::Display for MetadataBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} metadata record(s)", self.records.len())
    }
}
