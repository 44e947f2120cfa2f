//! Random histories of commands, each image checked against the invariants.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[test]
fn random_histories_keep_the_invariants() {
    for seed in 0..200u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut cluster = Cluster::new(rng.random_range(1..=5));
        let brokers = cluster.image.brokers.len() as i32;
        for step in 0..60 {
            let command = match rng.random_range(0..11) {
                0 => create(
                    &format!("t{}", rng.random_range(0..8)),
                    rng.random_range(1..6),
                    rng.random_range(1..=3),
                ),
                1 => ControllerCommand::DeleteTopic {
                    name: format!("t{}", rng.random_range(0..8)),
                },
                2 => ControllerCommand::CreatePartitions {
                    name: format!("t{}", rng.random_range(0..8)),
                    total: rng.random_range(1..10),
                    validate_only: false,
                    assignments: Vec::new(),
                },
                3 => {
                    let node_id = rng.random_range(1..=brokers);
                    cluster.live.remove(&node_id);
                    ControllerCommand::FenceBroker { node_id }
                }
                6 => {
                    let mut target: Vec<i32> = (1..=brokers).collect();
                    let keep = rng.random_range(0..=brokers as usize);
                    for i in (1..target.len()).rev() {
                        target.swap(i, rng.random_range(0..=i));
                    }
                    target.truncate(keep);
                    ControllerCommand::ReassignPartitions {
                        reassignments: vec![Reassignment {
                            topic: format!("t{}", rng.random_range(0..8)),
                            partition: rng.random_range(0..3),
                            target: rng.random_bool(0.8).then_some(target),
                        }],
                    }
                }
                7 => {
                    // A leader reports every live replica caught up.
                    let topic = format!("t{}", rng.random_range(0..8));
                    match cluster.image.partition(&topic, 0).cloned() {
                        Some(state) if state.leader >= 0 => {
                            let isr: Vec<i32> = state
                                .replicas
                                .iter()
                                .copied()
                                .filter(|r| {
                                    cluster.live.contains(r) || state.in_sync_replicas.contains(r)
                                })
                                .collect();
                            alter(
                                &topic,
                                0,
                                state.leader,
                                state.leader_epoch,
                                state.partition_epoch,
                                &isr,
                            )
                        }
                        _ => ControllerCommand::AllocateProducerIds,
                    }
                }
                8 => ControllerCommand::ElectLeaders {
                    election: if rng.random_bool(0.5) {
                        ElectionType::Preferred
                    } else {
                        ElectionType::Unclean
                    },
                    partitions: None,
                },
                9 => ControllerCommand::BalanceLeaders {
                    imbalance_percent: rng.random_range(0..=20),
                },
                _ => {
                    let node_id = rng.random_range(1..=brokers);
                    cluster.live.insert(node_id);
                    heartbeat(node_id, Uuid::from_u128(node_id as u128))
                }
            };
            let _ = cluster.run_seeded(command, seed as usize + step);
            cluster.check();
        }
    }
}
