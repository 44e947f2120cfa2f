//! The ISR: leaders' AlterPartition proposals, which replica may lead next, and the record
//! of a partition's change.

use super::{CommandOutcome, ControllerError, DecisionInputs, known_topic, reassignment};
use crate::metadata::image::{ClusterImage, TopicImage};
use crate::metadata::records::{MetadataRecord, PartitionState};
use crate::storage::LogConfig;

#[allow(clippy::too_many_arguments)]
pub(super) fn alter_partition(
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
pub(super) fn elect(
    state: &PartitionState,
    live: &dyn Fn(i32) -> bool,
    unclean: bool,
) -> Option<i32> {
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
pub(super) fn unclean_allowed(
    image: &ClusterImage,
    topic: &TopicImage,
    defaults: &LogConfig,
) -> bool {
    crate::metadata::dynamic_configs::log_defaults(
        defaults,
        &image.broker_configs,
        crate::metadata::dynamic_configs::CLUSTER_DEFAULT,
    )
    .with_topic_configs(topic.configs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    .is_ok_and(|config| config.unclean_leader_election)
}

/// The record of a partition's change; every change bumps the partition epoch.
pub(super) fn partition_changed(
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
