//! The controller's decisions: a deterministic state machine. A command and the current
//! image go in; the metadata records that carry out the command come out (or a refusal).
//! Nothing here touches the clock, randomness, disks or sockets: the caller passes in
//! which brokers have live sessions, the random placement start and new ids, so every
//! decision replays from its inputs.
//!
//! The active controller runs each decision under one lock and commits its records
//! through the quorum before the next decision reads the image: there is no window
//! between checking ("does the topic exist?") and committing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use uuid::Uuid;

mod acls;
mod brokers;
mod cluster;
mod isr;
mod leaders;
mod reassignment;
mod topics;
mod users;

pub use leaders::ElectionType;
pub use reassignment::Reassignment;
pub use topics::validate_topic_name;
pub use users::{ScramAlteration, users_in_order};

use isr::{elect, partition_changed, unclean_allowed};

use crate::metadata::features::{FeatureUpdate, SupportedFeatures};
use crate::metadata::image::{ClusterImage, TopicImage};
use crate::metadata::records::{Endpoint, ListenerEndpoints, MetadataRecord, PartitionState};
use crate::security::acl::{AclBinding, AclFilter};
use crate::storage::LogConfig;

/// Producer ids are reserved in blocks so the log is not written per InitProducerId.
pub const PRODUCER_ID_BLOCK: i64 = 1000;
/// Most partitions one topic may have: each is a directory with open files and mapped
/// indexes, so an absurd count is refused instead of exhausting the brokers.
pub const MAX_PARTITIONS: i32 = 10_000;
/// Kafka's limit on topic name length.
pub const MAX_TOPIC_NAME_LENGTH: usize = 249;

/// Why a metadata change was refused or failed. Crosses the controller RPC unchanged, so
/// a forwarded request fails exactly as a local one would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControllerError {
    #[error("topic `{0}` already exists")]
    TopicAlreadyExists(String),
    #[error("topic `{0}` does not exist")]
    UnknownTopic(String),
    #[error("invalid topic name `{name}`: {reason}")]
    InvalidTopicName { name: String, reason: String },
    #[error("invalid partition count {requested} for `{topic}`: {reason}")]
    InvalidPartitions {
        topic: String,
        requested: i32,
        reason: String,
    },
    #[error("replication factor {requested} is larger than the {brokers} available broker(s)")]
    InvalidReplicationFactor { requested: i16, brokers: i32 },
    /// The config layer's message, which names the key and value (Kafka's wording).
    #[error("{0}")]
    InvalidConfig(String),
    #[error("node {node_id} is already registered by a live broker (incarnation {incarnation})")]
    DuplicateBrokerRegistration { node_id: i32, incarnation: Uuid },
    #[error("broker {0} is not registered")]
    UnknownBroker(i32),
    #[error("broker {node_id} still holds replicas of {partitions} partition(s)")]
    BrokerHoldsReplicas { node_id: i32, partitions: usize },
    #[error("no active controller is reachable{}", .0.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    NotController(Option<String>),
    #[error("the metadata quorum did not commit the change in time: {0}")]
    Timeout(String),
    #[error("metadata quorum failure: {0}")]
    Quorum(String),
    #[error("the quorum refused this node: {0}")]
    Refused(String),
    #[error("{0}")]
    FencedLeaderEpoch(String),
    #[error("{0}")]
    InvalidUpdateVersion(String),
    #[error("{0}")]
    UnsupportedVersion(String),
    #[error("{0}")]
    IneligibleReplica(String),
    #[error("{0}")]
    ElectionNotNeeded(String),
    #[error("{0}")]
    PreferredLeaderNotAvailable(String),
    #[error("{0}")]
    EligibleLeadersNotAvailable(String),
    #[error("{0}")]
    InvalidReplicaAssignment(String),
    #[error("{0}")]
    NoReassignmentInProgress(String),
    #[error("{0}")]
    InvalidRequest(String),
    /// Never decided by the controller: a broker's authorizer refused the topic before
    /// asking (CreateTopics answers it per topic with the controller's outcomes).
    #[error("not authorized to create topic `{0}`")]
    TopicAuthorization(String),
    #[error("{0}")]
    UnacceptableCredential(String),
    #[error("{0}")]
    UnsupportedSaslMechanism(String),
    #[error("{0}")]
    ResourceNotFound(String),
    #[error("{0}")]
    DuplicateResource(String),
}

impl From<crate::storage::LogConfigError> for ControllerError {
    fn from(error: crate::storage::LogConfigError) -> Self {
        Self::InvalidConfig(error.to_string())
    }
}

/// A change asked of the active controller (by a Kafka API, a broker's lifecycle, or the
/// controller's own timers).
#[derive(Debug, Clone, PartialEq)]
pub enum ControllerCommand {
    /// CreateTopics with several topics: decided together and committed as one batch (as
    /// Kafka's controller does), so a request of N topics costs one quorum round, not N.
    /// Each topic succeeds or fails on its own.
    CreateTopics {
        topics: Vec<TopicToCreate>,
        validate_only: bool,
    },
    DeleteTopic {
        name: String,
    },
    CreatePartitions {
        name: String,
        total: i32,
        validate_only: bool,
        /// The replicas of each new partition (CreatePartitions `assignments`); empty:
        /// placed by the controller.
        assignments: Vec<Vec<i32>>,
    },
    SetTopicConfigs {
        name: String,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    },
    AllocateProducerIds,
    RegisterBroker {
        node_id: i32,
        incarnation: Uuid,
        /// The inter-broker listener's address (followers fetch from it).
        endpoint: Endpoint,
        rack: Option<String>,
        /// Every client listener's address, by name.
        listeners: ListenerEndpoints,
        /// The feature levels the broker runs.
        supported_features: Option<SupportedFeatures>,
    },
    /// A registered broker's heartbeat; unfences it when it has caught up with the log.
    BrokerHeartbeat {
        node_id: i32,
        incarnation: Uuid,
        applied_index: u64,
    },
    /// The broker's session expired (the controller's timer).
    FenceBroker {
        node_id: i32,
    },
    UnregisterBroker {
        node_id: i32,
    },
    /// A partition leader's proposal to change its ISR (Kafka's AlterPartition): refused
    /// unless the proposer still leads in `leader_epoch` and the partition is still at
    /// `partition_epoch`, so a stale leader can neither shrink nor grow anything.
    AlterPartition {
        topic: String,
        partition: i32,
        leader: i32,
        leader_epoch: i32,
        partition_epoch: i32,
        in_sync_replicas: Vec<i32>,
    },
    /// A broker stopping on SIGTERM: its leaderships move to other in-sync replicas and
    /// it leaves every ISR before it stops, so nothing goes offline.
    ControlledShutdown {
        node_id: i32,
        incarnation: Uuid,
    },
    /// ElectLeaders: `None` means every partition.
    ElectLeaders {
        election: ElectionType,
        partitions: Option<Vec<(String, i32)>>,
    },
    /// The leader balance timer: leadership back to preferred replicas for every broker
    /// that leads fewer than `100 - imbalance_percent` % of the partitions it prefers.
    BalanceLeaders {
        imbalance_percent: u32,
    },
    /// AlterPartitionReassignments.
    ReassignPartitions {
        reassignments: Vec<Reassignment>,
    },
    /// Replaces the dynamic configs of a broker (-1: the cluster-wide defaults).
    SetBrokerConfigs {
        node_id: i32,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    },
    /// Stamps the cluster id and the first feature levels on a new cluster; on a cluster
    /// formatted before feature levels, writes the levels only.
    IdentifyCluster {
        cluster_id: String,
        features: BTreeMap<String, i16>,
    },
    /// UpdateFeatures: every level or none.
    UpdateFeatures {
        updates: Vec<FeatureUpdate>,
        validate_only: bool,
    },
    /// AlterUserScramCredentials: each user's alterations apply together or not at all.
    AlterScramCredentials {
        alterations: Vec<ScramAlteration>,
    },
    /// CreateAcls: entries already checked by the broker that received them.
    CreateAcls {
        acls: Vec<AclBinding>,
    },
    /// DeleteAcls: every entry each filter matches.
    DeleteAcls {
        filters: Vec<AclFilter>,
    },
    /// AlterClientQuotas: quotas set (`Some`) or removed (`None`), checked by the broker.
    AlterClientQuotas {
        changes: Vec<QuotaChange>,
    },
}

/// One quota of [`ControllerCommand::AlterClientQuotas`].
#[derive(Debug, Clone, PartialEq)]
pub struct QuotaChange {
    pub entity: crate::quota::QuotaEntity,
    pub key: crate::quota::QuotaKey,
    pub value: Option<f64>,
}

/// One topic of [`ControllerCommand::CreateTopics`].
#[derive(Debug, Clone, PartialEq)]
pub struct TopicToCreate {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    pub configs: BTreeMap<String, String>,
    /// A manual replica assignment per partition; empty: placed by the controller.
    pub assignments: Vec<Vec<i32>>,
}

/// What a command produced, for the caller's response.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandOutcome {
    Done,
    Topic(TopicImage),
    /// Each topic of a CreateTopics, in the command's order.
    Topics(Vec<Result<TopicImage, ControllerError>>),
    TopicDeleted(Uuid),
    ProducerIds {
        first: i64,
        end: i64,
    },
    /// A heartbeat's answer: whether the broker is (still) fenced.
    Heartbeat {
        fenced: bool,
    },
    /// Per-partition answers (ElectLeaders, AlterPartitionReassignments).
    Partitions(Vec<PartitionOutcome>),
    /// Per-user answers (AlterUserScramCredentials), in the order users first appear.
    Users(Vec<(String, Option<ControllerError>)>),
    /// The entries each DeleteAcls filter removed, in the filters' order.
    AclsDeleted(Vec<Vec<AclBinding>>),
}

/// One partition's answer to a command that names many.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionOutcome {
    pub topic: String,
    pub partition: i32,
    pub error: Option<ControllerError>,
}

/// What a decision may know beyond the image.
#[derive(Debug, Clone)]
pub struct DecisionInputs<'a> {
    /// Broker defaults, to validate topic configs.
    pub log_defaults: &'a LogConfig,
    /// Brokers whose session with the controller has not expired.
    pub live_sessions: &'a BTreeSet<i32>,
    /// Where placement ties start (random in production, fixed in tests).
    pub placement_start: usize,
    /// The id of a topic this decision may create.
    pub new_topic_id: Uuid,
    /// The log index a heartbeating broker must have applied to be unfenced.
    pub caught_up_index: u64,
}

/// What a decision produces: the records to commit and the answer, or a refusal.
type Decision = Result<(Vec<MetadataRecord>, CommandOutcome), ControllerError>;

/// The records that carry out `command` on `image`, and what to answer. One concern per
/// module: topics (create, delete, partitions, configs), brokers (registration, heartbeats,
/// fencing), isr (AlterPartition, elections' rules), leaders (ElectLeaders, balance),
/// reassignment, cluster (producer ids, broker configs, the cluster id).
pub fn decide(
    image: &ClusterImage,
    command: &ControllerCommand,
    inputs: &DecisionInputs<'_>,
) -> Decision {
    match command {
        ControllerCommand::CreateTopics {
            topics,
            validate_only,
        } => Ok(topics::create_topics(image, inputs, topics, *validate_only)),
        ControllerCommand::DeleteTopic { name } => topics::delete_topic(image, name),
        ControllerCommand::CreatePartitions {
            name,
            total,
            validate_only,
            assignments,
        } => topics::create_partitions(image, inputs, name, *total, assignments, *validate_only),
        ControllerCommand::SetTopicConfigs {
            name,
            configs,
            validate_only,
        } => topics::set_topic_configs(image, inputs, name, configs, *validate_only),
        ControllerCommand::AllocateProducerIds => Ok(cluster::allocate_producer_ids(image)),
        ControllerCommand::RegisterBroker {
            node_id,
            incarnation,
            endpoint,
            rack,
            listeners,
            supported_features,
        } => brokers::register(
            image,
            inputs,
            brokers::Registration {
                node_id: *node_id,
                incarnation: *incarnation,
                endpoint,
                rack,
                listeners,
                supported_features,
            },
        ),
        ControllerCommand::BrokerHeartbeat {
            node_id,
            incarnation,
            applied_index,
        } => brokers::heartbeat(image, inputs, *node_id, *incarnation, *applied_index),
        ControllerCommand::FenceBroker { node_id } => Ok((
            brokers::fence(image, *node_id, inputs),
            CommandOutcome::Done,
        )),
        ControllerCommand::ControlledShutdown {
            node_id,
            incarnation,
        } => brokers::controlled_shutdown(image, inputs, *node_id, *incarnation),
        ControllerCommand::AlterPartition {
            topic,
            partition,
            leader,
            leader_epoch,
            partition_epoch,
            in_sync_replicas,
        } => isr::alter_partition(
            image,
            inputs,
            topic,
            *partition,
            *leader,
            *leader_epoch,
            *partition_epoch,
            in_sync_replicas,
        ),
        ControllerCommand::UnregisterBroker { node_id } => brokers::unregister(image, *node_id),
        ControllerCommand::ElectLeaders {
            election,
            partitions,
        } => {
            let (records, outcomes) =
                leaders::elect_leaders(image, inputs, *election, partitions.as_deref());
            Ok((records, CommandOutcome::Partitions(outcomes)))
        }
        ControllerCommand::BalanceLeaders { imbalance_percent } => Ok((
            leaders::balance_leaders(image, inputs, *imbalance_percent),
            CommandOutcome::Done,
        )),
        ControllerCommand::ReassignPartitions { reassignments } => {
            let (records, outcomes) = reassignment::reassign(image, inputs, reassignments);
            Ok((records, CommandOutcome::Partitions(outcomes)))
        }
        ControllerCommand::SetBrokerConfigs {
            node_id,
            configs,
            validate_only,
        } => cluster::set_broker_configs(image, *node_id, configs, *validate_only),
        ControllerCommand::UpdateFeatures {
            updates,
            validate_only,
        } => cluster::update_features(image, updates, *validate_only),
        ControllerCommand::IdentifyCluster {
            cluster_id,
            features,
        } => Ok(cluster::identify_cluster(
            image, inputs, cluster_id, features,
        )),
        ControllerCommand::AlterScramCredentials { alterations } => {
            Ok(users::alter_scram_credentials(image, alterations))
        }
        ControllerCommand::CreateAcls { acls: entries } => Ok(acls::create_acls(image, entries)),
        ControllerCommand::DeleteAcls { filters } => Ok(acls::delete_acls(image, filters)),
        ControllerCommand::AlterClientQuotas { changes } => {
            let records = changes
                .iter()
                .map(|change| MetadataRecord::ClientQuotaChanged {
                    entity: change.entity.clone(),
                    key: change.key,
                    value: change.value.map(crate::quota::QuotaValue),
                })
                .collect();
            Ok((records, CommandOutcome::Done))
        }
    }
}

/// A partition of a known topic, and its state.
fn known_partition<'a>(
    image: &'a ClusterImage,
    topic: &str,
    partition: i32,
) -> Result<(&'a TopicImage, &'a PartitionState), ControllerError> {
    let known = known_topic(image, topic)?;
    let state = known
        .partition(partition)
        .ok_or_else(|| ControllerError::UnknownTopic(format!("{topic}-{partition}")))?;
    Ok((known, state))
}

fn known_topic<'a>(image: &'a ClusterImage, name: &str) -> Result<&'a TopicImage, ControllerError> {
    image
        .topics
        .get(name)
        .map(Arc::as_ref)
        .ok_or_else(|| ControllerError::UnknownTopic(name.to_string()))
}

#[cfg(test)]
mod tests;
