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

use serde::{Deserialize, Serialize};
use uuid::Uuid;

mod leaders;
mod reassignment;

pub use leaders::ElectionType;
pub use reassignment::Reassignment;

use super::placement::{Candidate, PlacementError, place_partitions};
use crate::metadata::image::{ClusterImage, TopicImage};
use crate::metadata::records::{Endpoint, ListenerEndpoints, MetadataRecord, PartitionState};
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
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
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
}

impl From<crate::storage::LogConfigError> for ControllerError {
    fn from(error: crate::storage::LogConfigError) -> Self {
        Self::InvalidConfig(error.to_string())
    }
}

/// A change asked of the active controller (by a Kafka API, a broker's lifecycle, or the
/// controller's own timers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ControllerCommand {
    /// One topic. Brokers of this version send [`Self::CreateTopics`]; this is still decided
    /// for brokers of the previous version forwarding it during a rolling upgrade.
    CreateTopic {
        name: String,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
        validate_only: bool,
        /// A manual replica assignment per partition (CreateTopics `assignments`); empty:
        /// placed by the controller.
        #[serde(default)]
        assignments: Vec<Vec<i32>>,
    },
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
        #[serde(default)]
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
        #[serde(default)]
        listeners: ListenerEndpoints,
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
    /// Stamps the cluster id on a new cluster.
    IdentifyCluster {
        cluster_id: String,
    },
}

/// One topic of [`ControllerCommand::CreateTopics`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopicToCreate {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    pub configs: BTreeMap<String, String>,
    /// A manual replica assignment per partition; empty: placed by the controller.
    pub assignments: Vec<Vec<i32>>,
}

/// What a command produced, for the caller's response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// One partition's answer to a command that names many.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// The records that carry out `command` on `image`, and what to answer.
pub fn decide(
    image: &ClusterImage,
    command: &ControllerCommand,
    inputs: &DecisionInputs<'_>,
) -> Result<(Vec<MetadataRecord>, CommandOutcome), ControllerError> {
    match command {
        ControllerCommand::CreateTopic {
            name,
            partitions,
            replication_factor,
            configs,
            validate_only,
            assignments,
        } => create_topic(
            image,
            inputs,
            NewTopic {
                name,
                partitions: *partitions,
                replication_factor: *replication_factor,
                configs,
                assignments,
            },
            *validate_only,
        ),
        ControllerCommand::CreateTopics {
            topics,
            validate_only,
        } => Ok(create_topics(image, inputs, topics, *validate_only)),
        ControllerCommand::DeleteTopic { name } => {
            let topic = known_topic(image, name)?;
            Ok((
                vec![MetadataRecord::TopicDeleted {
                    name: name.clone(),
                    topic_id: topic.topic_id,
                }],
                CommandOutcome::TopicDeleted(topic.topic_id),
            ))
        }
        ControllerCommand::CreatePartitions {
            name,
            total,
            validate_only,
            assignments,
        } => create_partitions(image, inputs, name, *total, assignments, *validate_only),
        ControllerCommand::SetTopicConfigs {
            name,
            configs,
            validate_only,
        } => {
            known_topic(image, name)?;
            inputs
                .log_defaults
                .with_topic_configs(configs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
            let records = if *validate_only {
                Vec::new()
            } else {
                vec![MetadataRecord::TopicConfigChanged {
                    name: name.clone(),
                    configs: configs.clone(),
                }]
            };
            Ok((records, CommandOutcome::Done))
        }
        ControllerCommand::AllocateProducerIds => {
            let first = image.next_producer_id;
            let end = first + PRODUCER_ID_BLOCK;
            Ok((
                vec![MetadataRecord::ProducerIdsAllocated {
                    next_producer_id: end,
                }],
                CommandOutcome::ProducerIds { first, end },
            ))
        }
        ControllerCommand::RegisterBroker {
            node_id,
            incarnation,
            endpoint,
            rack,
            listeners,
        } => {
            if let Some(existing) = image.brokers.get(node_id)
                && existing.incarnation != *incarnation
                && !existing.fenced
                && inputs.live_sessions.contains(node_id)
            {
                return Err(ControllerError::DuplicateBrokerRegistration {
                    node_id: *node_id,
                    incarnation: existing.incarnation,
                });
            }
            if image
                .brokers
                .get(node_id)
                .is_some_and(|b| b.incarnation == *incarnation)
            {
                return Ok((Vec::new(), CommandOutcome::Done));
            }
            let mut records = fence(image, *node_id, inputs);
            records.push(MetadataRecord::BrokerRegistered {
                node_id: *node_id,
                incarnation: *incarnation,
                endpoint: endpoint.clone(),
                rack: rack.clone(),
                listeners: listeners.clone(),
            });
            Ok((records, CommandOutcome::Done))
        }
        ControllerCommand::BrokerHeartbeat {
            node_id,
            incarnation,
            applied_index,
        } => {
            let broker = image
                .brokers
                .get(node_id)
                .filter(|b| b.incarnation == *incarnation)
                .ok_or(ControllerError::UnknownBroker(*node_id))?;
            if broker.fenced && *applied_index >= inputs.caught_up_index {
                return Ok((
                    unfence(image, *node_id),
                    CommandOutcome::Heartbeat { fenced: false },
                ));
            }
            // A live broker whose session looked expired when a leader was fenced may have
            // been the last in-sync replica of a partition that went offline, and then
            // heartbeated before being fenced itself: it takes those partitions back now.
            let records = if broker.fenced {
                Vec::new()
            } else {
                revive_offline(image, *node_id)
            };
            Ok((
                records,
                CommandOutcome::Heartbeat {
                    fenced: broker.fenced,
                },
            ))
        }
        ControllerCommand::FenceBroker { node_id } => {
            Ok((fence(image, *node_id, inputs), CommandOutcome::Done))
        }
        ControllerCommand::ControlledShutdown {
            node_id,
            incarnation,
        } => {
            image
                .brokers
                .get(node_id)
                .filter(|b| b.incarnation == *incarnation)
                .ok_or(ControllerError::UnknownBroker(*node_id))?;
            Ok((fence(image, *node_id, inputs), CommandOutcome::Done))
        }
        ControllerCommand::AlterPartition {
            topic,
            partition,
            leader,
            leader_epoch,
            partition_epoch,
            in_sync_replicas,
        } => alter_partition(
            image,
            inputs,
            topic,
            *partition,
            *leader,
            *leader_epoch,
            *partition_epoch,
            in_sync_replicas,
        ),
        ControllerCommand::UnregisterBroker { node_id } => {
            if !image.brokers.contains_key(node_id) {
                return Err(ControllerError::UnknownBroker(*node_id));
            }
            let holding = image
                .topics
                .values()
                .flat_map(|t| &t.partitions)
                .filter(|p| p.replicas.contains(node_id))
                .count();
            if holding > 0 {
                return Err(ControllerError::BrokerHoldsReplicas {
                    node_id: *node_id,
                    partitions: holding,
                });
            }
            Ok((
                vec![MetadataRecord::BrokerUnregistered { node_id: *node_id }],
                CommandOutcome::Done,
            ))
        }
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
        } => {
            let fixed: Vec<&str> = configs
                .keys()
                .map(String::as_str)
                .filter(|key| !crate::metadata::dynamic_configs::is_dynamic(key))
                .collect();
            if !fixed.is_empty() {
                return Err(ControllerError::InvalidRequest(format!(
                    "Cannot update these configs dynamically: Set({})",
                    fixed.join(", ")
                )));
            }
            if *node_id == crate::metadata::dynamic_configs::CLUSTER_DEFAULT
                && configs.contains_key(crate::metadata::dynamic_configs::CORDONED_LOG_DIRS)
            {
                return Err(ControllerError::InvalidRequest(format!(
                    "{} is set per broker, not as a cluster-wide default",
                    crate::metadata::dynamic_configs::CORDONED_LOG_DIRS
                )));
            }
            // Kafka answers INVALID_REQUEST (not INVALID_CONFIG) for a bad broker value.
            for (key, value) in configs {
                crate::metadata::dynamic_configs::validate(key, value)
                    .map_err(ControllerError::InvalidRequest)?;
            }
            let unchanged = image
                .broker_configs
                .get(node_id)
                .map_or(configs.is_empty(), |c| c == configs);
            let records = if *validate_only || unchanged {
                Vec::new()
            } else {
                vec![MetadataRecord::BrokerConfigChanged {
                    node_id: *node_id,
                    configs: configs.clone(),
                }]
            };
            Ok((records, CommandOutcome::Done))
        }
        ControllerCommand::IdentifyCluster { cluster_id } => {
            let records = if image.cluster_id.is_none() {
                // Kafka 4 formats a cluster with `min.insync.replicas` as a cluster-wide
                // dynamic default (for eligible leader replicas); tools see it as one.
                let mut defaults = image
                    .broker_configs
                    .get(&crate::metadata::dynamic_configs::CLUSTER_DEFAULT)
                    .cloned()
                    .unwrap_or_default();
                defaults
                    .entry("min.insync.replicas".to_string())
                    .or_insert_with(|| inputs.log_defaults.min_insync_replicas.to_string());
                vec![
                    MetadataRecord::ClusterIdentified {
                        cluster_id: cluster_id.clone(),
                    },
                    MetadataRecord::BrokerConfigChanged {
                        node_id: crate::metadata::dynamic_configs::CLUSTER_DEFAULT,
                        configs: defaults,
                    },
                ]
            } else {
                Vec::new()
            };
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

/// Brokers new replicas may go to: registered, unfenced, with a live session, not
/// cordoned (KIP-1066).
fn candidates(image: &ClusterImage, inputs: &DecisionInputs<'_>) -> Vec<Candidate> {
    image
        .live_brokers()
        .filter(|b| inputs.live_sessions.contains(&b.node_id))
        .filter(|b| {
            !crate::metadata::dynamic_configs::is_cordoned(&image.broker_configs, b.node_id)
        })
        .map(|b| Candidate {
            node_id: b.node_id,
            rack: b.rack.clone(),
        })
        .collect()
}

fn placement_error(error: PlacementError, requested: i16) -> ControllerError {
    match error {
        PlacementError::NotEnoughBrokers { available, .. } => {
            ControllerError::InvalidReplicationFactor {
                requested,
                brokers: i32::try_from(available).unwrap_or(i32::MAX),
            }
        }
        PlacementError::InvalidReplicationFactor(_) => ControllerError::InvalidReplicationFactor {
            requested,
            brokers: 0,
        },
    }
}

/// A new partition's state: its first replica leads and every replica is in sync (all
/// logs are empty, as in Kafka); a replica that does not follow leaves the ISR after
/// `replica.lag.time.max.ms`.
fn new_partition(replicas: Vec<i32>) -> PartitionState {
    let leader = replicas.first().copied().unwrap_or(-1);
    PartitionState {
        in_sync_replicas: replicas.clone(),
        replicas,
        leader,
        leader_epoch: 0,
        partition_epoch: 0,
        ..Default::default()
    }
}

/// Decides each topic against the image as the topics before it in the batch leave it
/// (a name twice: the second already exists), with its own id and placement start.
fn create_topics(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    topics: &[TopicToCreate],
    validate_only: bool,
) -> (Vec<MetadataRecord>, CommandOutcome) {
    let mut scratch = image.clone();
    let mut records = Vec::new();
    let mut outcomes = Vec::with_capacity(topics.len());
    let mut created_so_far = 0;
    for (index, topic) in topics.iter().enumerate() {
        // Distinct ids by flipping low bits of the random one (the version and variant
        // bits of a v4 id are in the middle); leaders of successive topics start on
        // successive brokers, as separate requests would spread them.
        let topic_inputs = DecisionInputs {
            new_topic_id: Uuid::from_u128(inputs.new_topic_id.as_u128() ^ index as u128),
            placement_start: inputs.placement_start.wrapping_add(created_so_far),
            ..inputs.clone()
        };
        let decided = create_topic(
            &scratch,
            &topic_inputs,
            NewTopic {
                name: &topic.name,
                partitions: topic.partitions,
                replication_factor: topic.replication_factor,
                configs: &topic.configs,
                assignments: &topic.assignments,
            },
            validate_only,
        );
        outcomes.push(match decided {
            Ok((decided_records, CommandOutcome::Topic(created))) => {
                if validate_only {
                    // Later topics of the batch see this one, as they would after it.
                    scratch
                        .topics
                        .insert(created.name.clone(), Arc::new(created.clone()));
                }
                for record in &decided_records {
                    scratch.apply(record);
                }
                records.extend(decided_records);
                created_so_far += 1;
                Ok(created)
            }
            Ok((_, other)) => Err(ControllerError::InvalidRequest(format!(
                "unexpected outcome of a topic creation: {other:?}"
            ))),
            Err(error) => Err(error),
        });
    }
    (records, CommandOutcome::Topics(outcomes))
}

/// What CreateTopic asks for.
struct NewTopic<'a> {
    name: &'a str,
    partitions: i32,
    replication_factor: i16,
    configs: &'a BTreeMap<String, String>,
    assignments: &'a [Vec<i32>],
}

fn create_topic(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    new: NewTopic<'_>,
    validate_only: bool,
) -> Result<(Vec<MetadataRecord>, CommandOutcome), ControllerError> {
    let NewTopic {
        name,
        configs,
        assignments,
        ..
    } = new;
    let (partitions, replication_factor) = match assignments.first() {
        Some(first) => (
            i32::try_from(assignments.len()).unwrap_or(i32::MAX),
            i16::try_from(first.len()).unwrap_or(i16::MAX),
        ),
        None => (new.partitions, new.replication_factor),
    };
    validate_topic_name(name)?;
    if image.topics.contains_key(name) {
        return Err(ControllerError::TopicAlreadyExists(name.to_string()));
    }
    if partitions < 1 {
        return Err(ControllerError::InvalidPartitions {
            topic: name.to_string(),
            requested: partitions,
            reason: "must be at least 1".into(),
        });
    }
    if partitions > MAX_PARTITIONS {
        return Err(too_many_partitions(name, partitions));
    }
    if replication_factor < 1 {
        return Err(ControllerError::InvalidReplicationFactor {
            requested: replication_factor,
            brokers: i32::try_from(candidates(image, inputs).len()).unwrap_or(i32::MAX),
        });
    }
    inputs
        .log_defaults
        .with_topic_configs(configs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    let assignments = if assignments.is_empty() {
        place_partitions(
            &candidates(image, inputs),
            &[],
            usize::try_from(partitions).unwrap_or(0),
            usize::try_from(replication_factor).unwrap_or(0),
            inputs.placement_start,
        )
        .map_err(|e| placement_error(e, replication_factor))?
    } else {
        let replicas = usize::try_from(replication_factor).unwrap_or(0);
        for assignment in assignments {
            reassignment::validate_target(image, assignment)?;
            if assignment.len() != replicas {
                return Err(ControllerError::InvalidReplicaAssignment(format!(
                    "all partitions of a manual assignment need the same number of replicas, not {replicas} and {}",
                    assignment.len()
                )));
            }
        }
        assignments.to_vec()
    };
    let topic = TopicImage {
        name: name.to_string(),
        topic_id: inputs.new_topic_id,
        replication_factor,
        configs: configs.clone(),
        partitions: assignments.into_iter().map(new_partition).collect(),
    };
    if validate_only {
        return Ok((Vec::new(), CommandOutcome::Topic(topic)));
    }
    let mut records = vec![MetadataRecord::TopicCreated {
        name: topic.name.clone(),
        topic_id: topic.topic_id,
        replication_factor,
        configs: topic.configs.clone(),
    }];
    records.extend(
        topic
            .partitions
            .iter()
            .enumerate()
            .map(|(partition, state)| MetadataRecord::PartitionCreated {
                topic: topic.name.clone(),
                partition: partition as i32,
                state: state.clone(),
            }),
    );
    Ok((records, CommandOutcome::Topic(topic)))
}

fn create_partitions(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    name: &str,
    total: i32,
    assignments: &[Vec<i32>],
    validate_only: bool,
) -> Result<(Vec<MetadataRecord>, CommandOutcome), ControllerError> {
    let topic = known_topic(image, name)?;
    let current = topic.partition_count();
    if total <= current {
        return Err(ControllerError::InvalidPartitions {
            topic: name.to_string(),
            requested: total,
            reason: if total == current {
                format!("the topic already has {total} partition(s)")
            } else {
                format!("the topic has {current} partition(s); partitions can only grow")
            },
        });
    }
    if total > MAX_PARTITIONS {
        return Err(too_many_partitions(name, total));
    }
    let existing: Vec<Vec<i32>> = topic
        .partitions
        .iter()
        .map(|p| p.replicas.clone())
        .collect();
    let replication_factor = topic
        .partitions
        .first()
        .map_or(topic.replication_factor, |p| p.replicas.len() as i16);
    let new_partitions = usize::try_from(total - current).unwrap_or(0);
    let replicas = usize::try_from(replication_factor).unwrap_or(0);
    let added = if assignments.is_empty() {
        place_partitions(
            &candidates(image, inputs),
            &existing,
            new_partitions,
            replicas,
            inputs.placement_start,
        )
        .map_err(|e| placement_error(e, replication_factor))?
    } else {
        if assignments.len() != new_partitions {
            return Err(ControllerError::InvalidReplicaAssignment(format!(
                "{} assignment(s) given for {new_partitions} new partition(s)",
                assignments.len()
            )));
        }
        for assignment in assignments {
            reassignment::validate_target(image, assignment)?;
            if assignment.len() != replicas {
                return Err(ControllerError::InvalidReplicaAssignment(format!(
                    "a partition with {} replica(s) is not consistent with the topic's replication factor {replication_factor}",
                    assignment.len()
                )));
            }
        }
        assignments.to_vec()
    };
    if validate_only {
        return Ok((Vec::new(), CommandOutcome::Done));
    }
    let records = added
        .into_iter()
        .enumerate()
        .map(|(offset, replicas)| MetadataRecord::PartitionCreated {
            topic: name.to_string(),
            partition: current + offset as i32,
            state: new_partition(replicas),
        })
        .collect();
    Ok((records, CommandOutcome::Done))
}

#[allow(clippy::too_many_arguments)]
fn alter_partition(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    topic: &str,
    partition: i32,
    leader: i32,
    leader_epoch: i32,
    partition_epoch: i32,
    in_sync_replicas: &[i32],
) -> Result<(Vec<MetadataRecord>, CommandOutcome), ControllerError> {
    let known = known_topic(image, topic)?;
    let index =
        usize::try_from(partition).map_err(|_| ControllerError::UnknownTopic(topic.into()))?;
    let state = known
        .partitions
        .get(index)
        .ok_or_else(|| ControllerError::UnknownTopic(format!("{topic}-{partition}")))?;
    if state.leader != leader || state.leader_epoch != leader_epoch {
        return Err(ControllerError::FencedLeaderEpoch(format!(
            "{topic}-{partition} is led by {} in epoch {}, not by {leader} in epoch {leader_epoch}",
            state.leader, state.leader_epoch
        )));
    }
    if state.partition_epoch != partition_epoch {
        return Err(ControllerError::InvalidUpdateVersion(format!(
            "{topic}-{partition} is at partition epoch {}, not {partition_epoch}",
            state.partition_epoch
        )));
    }
    let mut isr: Vec<i32> = Vec::new();
    for replica in in_sync_replicas {
        if !isr.contains(replica) {
            isr.push(*replica);
        }
    }
    let added_ineligible = isr.iter().find(|r| {
        !state.replicas.contains(r) || (!state.in_sync_replicas.contains(r) && !image.is_live(**r))
    });
    if !isr.contains(&leader) || added_ineligible.is_some() {
        return Err(ControllerError::IneligibleReplica(format!(
            "ISR {isr:?} of {topic}-{partition} must hold the leader {leader} and only live assigned replicas {:?}",
            state.replicas
        )));
    }
    if isr == state.in_sync_replicas {
        return Ok((Vec::new(), CommandOutcome::Done));
    }
    let mut next = state.clone();
    next.in_sync_replicas = isr;
    // The replicas a reassignment added are in sync: it finishes.
    let next = reassignment::complete_if_caught_up(image, inputs, next);
    Ok((
        vec![partition_changed(known, index, next)],
        CommandOutcome::Done,
    ))
}

/// The in-sync replica to lead next: the first of the assigned replicas (preferred order)
/// that is in sync and live; with unclean election allowed, any live replica.
fn elect(state: &PartitionState, live: &dyn Fn(i32) -> bool, unclean: bool) -> Option<i32> {
    state
        .replicas
        .iter()
        .copied()
        .find(|r| state.in_sync_replicas.contains(r) && live(*r))
        .or_else(|| {
            unclean
                .then(|| state.replicas.iter().copied().find(|r| live(*r)))
                .flatten()
        })
}

/// `unclean.leader.election.enable` of the topic, or the broker default.
/// Whether a topic allows unclean elections: its own config, else the cluster-wide
/// dynamic default, else the static one.
fn unclean_allowed(image: &ClusterImage, topic: &TopicImage, defaults: &LogConfig) -> bool {
    crate::metadata::dynamic_configs::log_defaults(
        defaults,
        &image.broker_configs,
        crate::metadata::dynamic_configs::CLUSTER_DEFAULT,
    )
    .with_topic_configs(topic.configs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    .is_ok_and(|config| config.unclean_leader_election)
}

/// Fences `node_id`: it leaves every ISR it is in (but the last member stays, so the data
/// it alone holds is not forgotten), and partitions it led get a new leader from the ISR,
/// or none (offline) when no in-sync replica is live.
pub fn fence(
    image: &ClusterImage,
    node_id: i32,
    inputs: &DecisionInputs<'_>,
) -> Vec<MetadataRecord> {
    let Some(broker) = image.brokers.get(&node_id) else {
        return Vec::new();
    };
    let live = |n: i32| n != node_id && image.is_live(n) && inputs.live_sessions.contains(&n);
    let mut records = Vec::new();
    if !broker.fenced {
        records.push(MetadataRecord::BrokerFenced { node_id });
    }
    for topic in image.topics.values() {
        for (partition, state) in topic.partitions.iter().enumerate() {
            let in_isr = state.in_sync_replicas.contains(&node_id);
            if state.leader != node_id && !in_isr {
                continue;
            }
            let mut next = state.clone();
            if in_isr && state.in_sync_replicas.len() > 1 {
                next.in_sync_replicas.retain(|r| *r != node_id);
            }
            if state.leader == node_id {
                let unclean = unclean_allowed(image, topic, inputs.log_defaults);
                next.leader = elect(&next, &live, unclean).unwrap_or(-1);
                if next.leader != -1 && !next.in_sync_replicas.contains(&next.leader) {
                    // Unclean: the new leader's log is the truth from now on.
                    next.in_sync_replicas = vec![next.leader];
                }
                next.leader_epoch += 1;
            }
            if next != *state {
                records.push(partition_changed(topic, partition, next));
            }
        }
    }
    records
}

/// Unfences `node_id`: offline partitions whose ISR holds it get it as leader.
pub fn unfence(image: &ClusterImage, node_id: i32) -> Vec<MetadataRecord> {
    let mut records = vec![MetadataRecord::BrokerUnfenced { node_id }];
    records.extend(revive_offline(image, node_id));
    records
}

/// Offline partitions whose ISR holds `node_id` get it as leader.
fn revive_offline(image: &ClusterImage, node_id: i32) -> Vec<MetadataRecord> {
    let mut records = Vec::new();
    for topic in image.topics.values() {
        for (partition, state) in topic.partitions.iter().enumerate() {
            if state.leader == -1 && state.in_sync_replicas.contains(&node_id) {
                let mut next = state.clone();
                next.leader = node_id;
                next.leader_epoch += 1;
                records.push(partition_changed(topic, partition, next));
            }
        }
    }
    records
}

/// The record of a partition's change; every change bumps the partition epoch.
fn partition_changed(
    topic: &TopicImage,
    partition: usize,
    mut next: PartitionState,
) -> MetadataRecord {
    next.partition_epoch += 1;
    MetadataRecord::PartitionChanged {
        topic: topic.name.clone(),
        partition: partition as i32,
        state: next,
    }
}

fn too_many_partitions(topic: &str, requested: i32) -> ControllerError {
    ControllerError::InvalidPartitions {
        topic: topic.to_string(),
        requested,
        reason: format!("more than the {MAX_PARTITIONS} partitions a topic may have"),
    }
}

/// Kafka's topic name rules.
pub fn validate_topic_name(name: &str) -> Result<(), ControllerError> {
    let invalid = |reason: &str| ControllerError::InvalidTopicName {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    if name.is_empty() {
        return Err(invalid("empty"));
    }
    if name == "." || name == ".." {
        return Err(invalid("'.' and '..' are not allowed"));
    }
    if name.len() > MAX_TOPIC_NAME_LENGTH {
        return Err(invalid("longer than 249 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(invalid(
            "only ASCII letters, digits, '.', '_' and '-' are allowed",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
