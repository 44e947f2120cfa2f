//! Topics: create (one or a batch), delete, add partitions, change configs; names and
//! placement of new replicas.

use std::collections::BTreeMap;
use std::sync::Arc;

use uuid::Uuid;

use super::{
    CommandOutcome, ControllerError, Decision, DecisionInputs, MAX_PARTITIONS,
    MAX_TOPIC_NAME_LENGTH, TopicToCreate, known_topic, reassignment,
};
use crate::controller::placement::{Candidate, PlacementError, place_partitions};
use crate::metadata::image::{ClusterImage, TopicImage};
use crate::metadata::records::{MetadataRecord, PartitionState};

pub(super) fn delete_topic(image: &ClusterImage, name: &str) -> Decision {
    let topic = known_topic(image, name)?;
    Ok((
        vec![MetadataRecord::TopicDeleted {
            name: name.to_string(),
            topic_id: topic.topic_id,
        }],
        CommandOutcome::TopicDeleted(topic.topic_id),
    ))
}

pub(super) fn set_topic_configs(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    name: &str,
    configs: &BTreeMap<String, String>,
    validate_only: bool,
) -> Decision {
    known_topic(image, name)?;
    inputs
        .log_defaults
        .with_new_topic_configs(configs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    let records = if validate_only {
        Vec::new()
    } else {
        vec![MetadataRecord::TopicConfigChanged {
            name: name.to_string(),
            configs: configs.clone(),
        }]
    };
    Ok((records, CommandOutcome::Done))
}

/// Brokers new replicas may go to: registered, unfenced, with a live session, not
/// cordoned (KIP-1066).
pub(super) fn candidates(image: &ClusterImage, inputs: &DecisionInputs<'_>) -> Vec<Candidate> {
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

pub(super) fn placement_error(error: PlacementError, requested: i16) -> ControllerError {
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
pub(super) fn new_partition(replicas: Vec<i32>) -> PartitionState {
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
pub(super) fn create_topics(
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

/// One topic of a CreateTopics.
pub(super) struct NewTopic<'a> {
    pub name: &'a str,
    pub partitions: i32,
    pub replication_factor: i16,
    pub configs: &'a BTreeMap<String, String>,
    pub assignments: &'a [Vec<i32>],
}

pub(super) fn create_topic(
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
        .with_new_topic_configs(configs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
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

pub(super) fn create_partitions(
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

pub(super) fn too_many_partitions(topic: &str, requested: i32) -> ControllerError {
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
