//! Partition reassignment (Kafka's AlterPartitionReassignments, KIP-455), as KRaft does
//! it: the partition's replicas become the target followed by the replicas to remove;
//! the added ones fetch from the leader and join the ISR through the leader's ISR
//! proposals; when every added replica is in sync the controller drops the removed ones
//! (and moves leadership if the leader was one of them). A cancel returns to the replicas
//! from before. The progress lives in the partition records, so a new active controller
//! carries on where the last one stopped.

use std::collections::BTreeSet;

use super::{
    ControllerError, DecisionInputs, PartitionOutcome, known_partition, partition_changed,
};
use crate::metadata::image::ClusterImage;
use crate::metadata::records::{MetadataRecord, PartitionState};

/// One partition's requested reassignment: `None` cancels the one in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reassignment {
    pub topic: String,
    pub partition: i32,
    pub target: Option<Vec<i32>>,
}

/// AlterPartitionReassignments: one result per asked partition.
pub fn reassign(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    reassignments: &[Reassignment],
) -> (Vec<MetadataRecord>, Vec<PartitionOutcome>) {
    let mut records = Vec::new();
    let mut outcomes = Vec::new();
    let mut seen = BTreeSet::new();
    for asked in reassignments {
        let result = if seen.insert((asked.topic.clone(), asked.partition)) {
            known_partition(image, &asked.topic, asked.partition).and_then(|(topic, state)| {
                let next = match &asked.target {
                    Some(target) => start(image, inputs, state, target),
                    None => cancel(image, inputs, state),
                }?;
                if next != *state {
                    records.push(partition_changed(topic, asked.partition as usize, next));
                }
                Ok(())
            })
        } else {
            Err(ControllerError::InvalidReplicaAssignment(format!(
                "{}-{} appears more than once in the request",
                asked.topic, asked.partition
            )))
        };
        outcomes.push(PartitionOutcome {
            topic: asked.topic.clone(),
            partition: asked.partition,
            error: result.err(),
        });
    }
    (records, outcomes)
}

/// Kafka's checks of a manual assignment.
pub(super) fn validate_target(image: &ClusterImage, target: &[i32]) -> Result<(), ControllerError> {
    if target.is_empty() {
        return Err(ControllerError::InvalidReplicaAssignment(
            "the manual partition assignment includes an empty replica list".into(),
        ));
    }
    let mut seen = BTreeSet::new();
    for replica in target {
        if !seen.insert(*replica) {
            return Err(ControllerError::InvalidReplicaAssignment(format!(
                "the manual partition assignment includes the broker {replica} more than once"
            )));
        }
        if !image.brokers.contains_key(replica) {
            return Err(ControllerError::InvalidReplicaAssignment(format!(
                "the manual partition assignment includes broker {replica}, but no such broker is registered"
            )));
        }
    }
    Ok(())
}

/// Starts (or replaces) a reassignment to `target`, counted from the replicas the
/// partition had before any reassignment in progress.
fn start(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    state: &PartitionState,
    target: &[i32],
) -> Result<PartitionState, ControllerError> {
    validate_target(image, target)?;
    let original = state.original_replicas();
    let mut next = state.clone();
    next.replicas = target.to_vec();
    next.replicas
        .extend(original.iter().filter(|r| !target.contains(r)));
    next.adding_replicas = target
        .iter()
        .copied()
        .filter(|r| !original.contains(r))
        .collect();
    next.removing_replicas = original
        .iter()
        .copied()
        .filter(|r| !target.contains(r))
        .collect();
    // Replicas a replaced reassignment was adding, and this one does not want, go.
    next.in_sync_replicas.retain(|r| next.replicas.contains(r));
    if next.in_sync_replicas.is_empty() {
        return Err(ControllerError::InvalidReplicaAssignment(format!(
            "the reassignment would leave no in-sync replica (ISR {:?})",
            state.in_sync_replicas
        )));
    }
    keep_leader_within(image, inputs, &mut next);
    Ok(complete_if_caught_up(image, inputs, next))
}

/// Returns to the replicas from before the reassignment in progress.
fn cancel(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    state: &PartitionState,
) -> Result<PartitionState, ControllerError> {
    if !state.is_reassigning() {
        return Err(ControllerError::NoReassignmentInProgress(
            "no reassignment of this partition is in progress".into(),
        ));
    }
    let mut next = state.clone();
    next.replicas = state.original_replicas();
    next.adding_replicas.clear();
    next.removing_replicas.clear();
    next.in_sync_replicas.retain(|r| next.replicas.contains(r));
    if next.in_sync_replicas.is_empty() {
        return Err(ControllerError::InvalidReplicaAssignment(format!(
            "cancelling would leave no in-sync replica: only the added replicas {:?} are in sync",
            state.adding_replicas
        )));
    }
    keep_leader_within(image, inputs, &mut next);
    Ok(next)
}

/// A leader outside the partition's replicas hands over to the first live in-sync one.
fn keep_leader_within(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    next: &mut PartitionState,
) {
    if next.leader >= 0 && next.replicas.contains(&next.leader) {
        return;
    }
    let live = |r: i32| image.is_live(r) && inputs.live_sessions.contains(&r);
    next.leader = next
        .replicas
        .iter()
        .copied()
        .find(|r| next.in_sync_replicas.contains(r) && live(*r))
        .unwrap_or(-1);
    next.leader_epoch += 1;
}

/// Finishes the reassignment once every target replica is in sync (as KRaft does): the
/// removed replicas leave the replicas and the ISR, and leadership moves if the leader
/// was one of them.
pub fn complete_if_caught_up(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    mut next: PartitionState,
) -> PartitionState {
    let target = next.target_replicas();
    if !next.is_reassigning() || !target.iter().all(|r| next.in_sync_replicas.contains(r)) {
        return next;
    }
    next.in_sync_replicas.retain(|r| target.contains(r));
    next.replicas = target;
    next.adding_replicas.clear();
    next.removing_replicas.clear();
    keep_leader_within(image, inputs, &mut next);
    next
}
