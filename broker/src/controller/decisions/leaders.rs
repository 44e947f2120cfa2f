//! Leader elections asked for by an admin (ElectLeaders) or by the controller's leader
//! balance timer: leadership goes back to each partition's preferred replica (the first
//! assigned one) when it is live and in sync, or — unclean, on request — to any live
//! replica of a partition that has no leader.

use std::collections::BTreeMap;

use super::{
    ControllerError, DecisionInputs, PartitionOutcome, known_partition, partition_changed,
};
use crate::metadata::image::ClusterImage;
use crate::metadata::records::{MetadataRecord, PartitionState};

/// Kafka's ElectLeaders election types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionType {
    /// Leadership to the first assigned replica, if it is live and in sync.
    Preferred,
    /// A leader for a leaderless partition from any live replica, in sync or not.
    Unclean,
}

fn live(image: &ClusterImage, inputs: &DecisionInputs<'_>, node_id: i32) -> bool {
    image.is_live(node_id) && inputs.live_sessions.contains(&node_id)
}

/// The new state of one partition under `election`, or why there is none.
fn elect_one(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    topic: &str,
    partition: i32,
    state: &PartitionState,
    election: ElectionType,
) -> Result<PartitionState, ControllerError> {
    let at = format!("{topic}-{partition}");
    let mut next = state.clone();
    match election {
        ElectionType::Preferred => {
            let preferred = state.replicas.first().copied().unwrap_or(-1);
            if state.leader == preferred {
                return Err(ControllerError::ElectionNotNeeded(format!(
                    "{at} is already led by its preferred replica {preferred}"
                )));
            }
            if !state.in_sync_replicas.contains(&preferred) || !live(image, inputs, preferred) {
                return Err(ControllerError::PreferredLeaderNotAvailable(format!(
                    "the preferred replica {preferred} of {at} is not a live in-sync replica (ISR {:?})",
                    state.in_sync_replicas
                )));
            }
            next.leader = preferred;
        }
        ElectionType::Unclean => {
            if state.leader >= 0 {
                return Err(ControllerError::ElectionNotNeeded(format!(
                    "{at} has a leader ({})",
                    state.leader
                )));
            }
            let candidate = state
                .replicas
                .iter()
                .copied()
                .find(|r| state.in_sync_replicas.contains(r) && live(image, inputs, *r))
                .or_else(|| {
                    state
                        .replicas
                        .iter()
                        .copied()
                        .find(|r| live(image, inputs, *r))
                })
                .ok_or_else(|| {
                    ControllerError::EligibleLeadersNotAvailable(format!(
                        "no replica of {at} ({:?}) is live",
                        state.replicas
                    ))
                })?;
            next.leader = candidate;
            if !next.in_sync_replicas.contains(&candidate) {
                // Unclean: the new leader's log is the truth from now on.
                next.in_sync_replicas = vec![candidate];
            }
        }
    }
    next.leader_epoch += 1;
    Ok(next)
}

/// ElectLeaders: one result per asked partition; `None` asks for every partition, and
/// then (as in Kafka) only partitions that needed an election are reported.
pub fn elect_leaders(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    election: ElectionType,
    partitions: Option<&[(String, i32)]>,
) -> (Vec<MetadataRecord>, Vec<PartitionOutcome>) {
    let mut records = Vec::new();
    let mut outcomes = Vec::new();
    let asked: Vec<(String, i32)> = match partitions {
        Some(asked) => asked.to_vec(),
        None => image
            .topics
            .values()
            .flat_map(|t| (0..t.partition_count()).map(|p| (t.name.clone(), p)))
            .collect(),
    };
    let mut seen = BTreeMap::new();
    for (topic, partition) in asked {
        if seen.insert((topic.clone(), partition), ()).is_some() {
            continue;
        }
        let result = known_partition(image, &topic, partition).and_then(|(known, state)| {
            let next = elect_one(image, inputs, &topic, partition, state, election)?;
            Ok((known, next))
        });
        match result {
            Ok((known, next)) => {
                records.push(partition_changed(known, partition as usize, next));
                outcomes.push(PartitionOutcome {
                    topic,
                    partition,
                    error: None,
                });
            }
            Err(ControllerError::ElectionNotNeeded(_)) if partitions.is_none() => {}
            Err(error) => outcomes.push(PartitionOutcome {
                topic,
                partition,
                error: Some(error),
            }),
        }
    }
    (records, outcomes)
}

/// The leader balance timer's decision: for every broker that leads fewer than
/// `100 - imbalance_percent` % of the partitions it is the preferred replica of, those
/// partitions go back to it (where it is live and in sync).
pub fn balance_leaders(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    imbalance_percent: u32,
) -> Vec<MetadataRecord> {
    let mut preferred: BTreeMap<i32, (usize, usize)> = BTreeMap::new();
    for state in image.topics.values().flat_map(|t| &t.partitions) {
        if let Some(first) = state.replicas.first() {
            let counts = preferred.entry(*first).or_default();
            counts.0 += 1;
            if state.leader != *first {
                counts.1 += 1;
            }
        }
    }
    let imbalanced: Vec<i32> = preferred
        .into_iter()
        .filter(|(_, (total, not_led))| {
            *not_led > 0 && *not_led * 100 > *total * imbalance_percent as usize
        })
        .map(|(node, _)| node)
        .collect();
    let mut records = Vec::new();
    for topic in image.topics.values() {
        for (partition, state) in topic.partitions.iter().enumerate() {
            if !state
                .replicas
                .first()
                .is_some_and(|first| imbalanced.contains(first))
            {
                continue;
            }
            if let Ok(next) = elect_one(
                image,
                inputs,
                &topic.name,
                partition as i32,
                state,
                ElectionType::Preferred,
            ) {
                records.push(partition_changed(topic, partition, next));
            }
        }
    }
    records
}
