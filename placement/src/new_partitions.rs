//! Replica placement: which brokers hold a new partition and which of them leads.
//!
//! Kafka's striping, made exact: brokers are put in one order (with racks, alternating
//! between racks, as Kafka's rack-aware placement does), and replica slots are filled
//! along that order, `replication_factor` consecutive brokers per partition, starting at
//! a random broker (injected, so a placement replays from its seed). Consecutive slots
//! cycle through every broker, so replicas per broker differ by at most one; consecutive
//! brokers in a rack-alternated order are in different racks. The leader is the first
//! slot, shifted by one per pass over the brokers when the replication factor and the
//! broker count share a divisor (otherwise the first slots alone would only ever land on
//! some brokers), so leaders differ by at most one too. Partitions added later continue
//! the topic's sequence.

use std::collections::BTreeMap;

/// A broker that can take replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub node_id: i32,
    pub rack: Option<String>,
}

/// Why a placement cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error("replication factor {requested} is larger than the {available} available broker(s)")]
    NotEnoughBrokers { requested: usize, available: usize },
    #[error("replication factor must be at least 1, got {0}")]
    InvalidReplicationFactor(i64),
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Brokers by id, or alternating between racks when every broker has one.
fn broker_order(candidates: &[Candidate]) -> Vec<i32> {
    let mut brokers: Vec<&Candidate> = candidates.iter().collect();
    brokers.sort_by_key(|c| c.node_id);
    brokers.dedup_by_key(|c| c.node_id);
    if !brokers.iter().all(|c| c.rack.is_some()) {
        return brokers.iter().map(|c| c.node_id).collect();
    }
    let mut racks: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for c in &brokers {
        racks
            .entry(c.rack.as_deref().unwrap_or_default())
            .or_default()
            .push(c.node_id);
    }
    let deepest = racks.values().map(Vec::len).max().unwrap_or(0);
    (0..deepest)
        .flat_map(|i| racks.values().filter_map(move |ids| ids.get(i).copied()))
        .collect()
}

/// Replica lists for `count` new partitions, leader first. `existing` are the topic's
/// current assignments (empty for a new topic); `start` picks the first broker of a new
/// topic.
pub fn place_partitions(
    candidates: &[Candidate],
    existing: &[Vec<i32>],
    count: usize,
    replication_factor: usize,
    start: usize,
) -> Result<Vec<Vec<i32>>, PlacementError> {
    if replication_factor < 1 {
        return Err(PlacementError::InvalidReplicationFactor(
            replication_factor as i64,
        ));
    }
    let order = broker_order(candidates);
    let n = order.len();
    if replication_factor > n {
        return Err(PlacementError::NotEnoughBrokers {
            requested: replication_factor,
            available: n,
        });
    }
    // A topic's partition 0 starts the sequence with its leader: continue from there.
    let start = existing
        .first()
        .and_then(|first| first.first())
        .and_then(|leader| order.iter().position(|id| id == leader))
        .unwrap_or(start % n);
    let divisor = gcd(replication_factor, n);
    let pass = n / divisor;
    let placed = (existing.len()..existing.len() + count)
        .map(|partition| {
            let base = start + partition * replication_factor;
            let mut replicas: Vec<i32> = (0..replication_factor)
                .map(|slot| order[(base + slot) % n])
                .collect();
            replicas.rotate_left((partition / pass) % divisor);
            replicas
        })
        .collect();
    Ok(placed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn candidates(n: usize, racks: usize) -> Vec<Candidate> {
        (0..n)
            .map(|i| Candidate {
                node_id: i as i32 + 1,
                rack: (racks > 0).then(|| format!("zone-{}", i % racks)),
            })
            .collect()
    }

    fn spread(counts: impl Iterator<Item = usize>) -> usize {
        let counts: Vec<usize> = counts.collect();
        counts.iter().max().unwrap_or(&0) - counts.iter().min().unwrap_or(&0)
    }

    fn check(brokers: &[Candidate], placed: &[Vec<i32>], rf: usize, rack_check: bool) {
        let mut replicas: BTreeMap<i32, usize> = brokers.iter().map(|c| (c.node_id, 0)).collect();
        let mut leaders = replicas.clone();
        for assignment in placed {
            assert_eq!(assignment.len(), rf, "{assignment:?}");
            let distinct: BTreeSet<_> = assignment.iter().collect();
            assert_eq!(distinct.len(), rf, "a broker twice in {assignment:?}");
            for node in assignment {
                *replicas.get_mut(node).unwrap() += 1;
            }
            *leaders.get_mut(&assignment[0]).unwrap() += 1;
            if rack_check {
                let racks: BTreeSet<_> = assignment
                    .iter()
                    .map(|n| {
                        brokers
                            .iter()
                            .find(|c| c.node_id == *n)
                            .unwrap()
                            .rack
                            .clone()
                    })
                    .collect();
                let all_racks: BTreeSet<_> = brokers.iter().map(|c| c.rack.clone()).collect();
                assert_eq!(racks.len(), rf.min(all_racks.len()), "{assignment:?}");
            }
        }
        assert!(
            spread(replicas.values().copied()) <= 1,
            "replicas {replicas:?}"
        );
        assert!(
            spread(leaders.values().copied()) <= 1,
            "leaders {leaders:?}"
        );
    }

    proptest! {
        #[test]
        fn replicas_and_leaders_are_balanced(
            n in 1usize..8, partitions in 1usize..40, rf in 1usize..4, start in 0usize..8,
        ) {
            let rf = rf.min(n);
            let brokers = candidates(n, 0);
            let placed = place_partitions(&brokers, &[], partitions, rf, start).unwrap();
            check(&brokers, &placed, rf, false);
        }

        #[test]
        fn racks_are_spread_when_every_broker_has_one(
            racks in 1usize..4, per_rack in 1usize..3, partitions in 1usize..30,
            rf in 1usize..4, start in 0usize..8,
        ) {
            let n = racks * per_rack;
            let rf = rf.min(n);
            let brokers = candidates(n, racks);
            let placed = place_partitions(&brokers, &[], partitions, rf, start).unwrap();
            check(&brokers, &placed, rf, true);
        }

        #[test]
        fn added_partitions_keep_the_topic_balanced(
            n in 1usize..6, first in 1usize..10, more in 1usize..10, rf in 1usize..4,
            start in 0usize..8,
        ) {
            let rf = rf.min(n);
            let brokers = candidates(n, 0);
            let mut placed = place_partitions(&brokers, &[], first, rf, start).unwrap();
            let added = place_partitions(&brokers, &placed, more, rf, start + 1).unwrap();
            placed.extend(added);
            check(&brokers, &placed, rf, false);
        }
    }

    #[test]
    fn too_few_brokers_is_refused() {
        let error = place_partitions(&candidates(2, 0), &[], 1, 3, 0).unwrap_err();
        assert_eq!(
            error,
            PlacementError::NotEnoughBrokers {
                requested: 3,
                available: 2
            }
        );
    }

    #[test]
    fn start_spreads_first_leaders_of_different_topics() {
        let brokers = candidates(3, 0);
        let leaders: BTreeSet<i32> = (0..3)
            .map(|start| place_partitions(&brokers, &[], 1, 3, start).unwrap()[0][0])
            .collect();
        assert_eq!(leaders.len(), 3);
    }
}
