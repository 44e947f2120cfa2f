//! Rack-aware replica placement: pure functions, no Kubernetes or Kafka clients.
//!
//! The algorithm follows Kafka's round-robin-with-shift placement: brokers are listed
//! alternating between racks, partition `p`'s leader is the `p`-th broker of that list
//! (from a start index), and followers are taken at a shift that grows every full round,
//! skipping brokers whose rack already holds a replica while racks without one remain.
//! The result spreads leaders evenly and puts the replicas of a partition in different
//! racks whenever there are at least as many racks as replicas.

use std::collections::{BTreeMap, BTreeSet};

/// A broker as placement sees it: its node id and, when known, its rack (zone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerSlot {
    pub id: i32,
    pub rack: Option<String>,
}

/// Why a placement cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error(
        "replication factor {replication_factor} is larger than the {brokers} available brokers"
    )]
    ReplicationFactorTooLarge {
        replication_factor: usize,
        brokers: usize,
    },
    #[error("replication factor must be at least 1, got {0}")]
    ReplicationFactorZero(usize),
    #[error("broker id {0} is listed twice")]
    DuplicateBroker(i32),
}

/// Replica lists, one per partition (index = partition id), first replica = preferred leader.
pub type Assignment = Vec<Vec<i32>>;

/// Assigns `partitions` partitions with `replication_factor` replicas each over `brokers`.
///
/// `start` rotates the whole assignment (Kafka picks it at random per topic so that
/// many small topics do not all lead on the same broker); pass a fixed value in tests.
pub fn assign_replicas(
    brokers: &[BrokerSlot],
    partitions: usize,
    replication_factor: usize,
    start: usize,
) -> Result<Assignment, PlacementError> {
    if replication_factor == 0 {
        return Err(PlacementError::ReplicationFactorZero(replication_factor));
    }
    if replication_factor > brokers.len() {
        return Err(PlacementError::ReplicationFactorTooLarge {
            replication_factor,
            brokers: brokers.len(),
        });
    }
    let mut seen = BTreeSet::new();
    for broker in brokers {
        if !seen.insert(broker.id) {
            return Err(PlacementError::DuplicateBroker(broker.id));
        }
    }
    let ordered = rack_alternating(brokers);
    let racks: BTreeSet<&str> = ordered.iter().map(rack_of).collect();
    let broker_count = ordered.len();
    let mut assignment = Vec::with_capacity(partitions);
    for partition in 0..partitions {
        let leader_index = (start + partition) % broker_count;
        let round = (start + partition) / broker_count;
        // The shift moves followers by one more broker every round so that the
        // followers of successive rounds do not pile onto the same brokers.
        let shift = if broker_count > 1 {
            1 + round % (broker_count - 1)
        } else {
            0
        };
        let mut replicas = vec![ordered[leader_index].id];
        let mut used_racks: BTreeSet<&str> = BTreeSet::from([rack_of(&ordered[leader_index])]);
        let mut candidate = leader_index;
        let mut steps = 0;
        while replicas.len() < replication_factor {
            candidate = (candidate + if steps == 0 { shift } else { 1 }) % broker_count;
            steps += 1;
            let broker = &ordered[candidate];
            if replicas.contains(&broker.id) {
                continue;
            }
            let all_racks_used = used_racks.len() == racks.len();
            // After a full lap without a fresh rack, accept any unused broker.
            if !all_racks_used && used_racks.contains(rack_of(broker)) && steps <= broker_count {
                continue;
            }
            used_racks.insert(rack_of(broker));
            replicas.push(broker.id);
        }
        assignment.push(replicas);
    }
    Ok(assignment)
}

fn rack_of(broker: &BrokerSlot) -> &str {
    broker.rack.as_deref().unwrap_or("")
}

/// Orders brokers so that consecutive entries alternate between racks
/// (rack1-b0, rack2-b0, rack3-b0, rack1-b1, ...), each rack's brokers by id.
fn rack_alternating(brokers: &[BrokerSlot]) -> Vec<BrokerSlot> {
    let mut by_rack: BTreeMap<&str, Vec<&BrokerSlot>> = BTreeMap::new();
    for broker in brokers {
        by_rack.entry(rack_of(broker)).or_default().push(broker);
    }
    for list in by_rack.values_mut() {
        list.sort_by_key(|b| b.id);
    }
    let longest = by_rack.values().map(Vec::len).max().unwrap_or(0);
    let mut ordered = Vec::with_capacity(brokers.len());
    for i in 0..longest {
        for list in by_rack.values() {
            if let Some(broker) = list.get(i) {
                ordered.push((*broker).clone());
            }
        }
    }
    ordered
}

#[cfg(test)]
mod tests;
