use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

struct Cluster {
    image: ClusterImage,
    live: BTreeSet<i32>,
    defaults: LogConfig,
}

impl Cluster {
    fn new(brokers: i32) -> Self {
        let mut cluster = Self {
            image: ClusterImage::default(),
            live: BTreeSet::new(),
            defaults: LogConfig::default(),
        };
        for node_id in 1..=brokers {
            cluster.live.insert(node_id);
            cluster
                .run(register(node_id, Uuid::from_u128(node_id as u128)))
                .unwrap();
            cluster
                .run(heartbeat(node_id, Uuid::from_u128(node_id as u128)))
                .unwrap();
        }
        cluster
    }

    fn run(&mut self, command: ControllerCommand) -> Result<CommandOutcome, ControllerError> {
        self.run_seeded(command, 0)
    }

    fn run_seeded(
        &mut self,
        command: ControllerCommand,
        seed: usize,
    ) -> Result<CommandOutcome, ControllerError> {
        let inputs = DecisionInputs {
            log_defaults: &self.defaults,
            live_sessions: &self.live,
            placement_start: seed,
            new_topic_id: Uuid::from_u128(seed as u128 + 1000),
            caught_up_index: 0,
        };
        let (records, outcome) = decide(&self.image, &command, &inputs)?;
        for record in &records {
            self.image.apply(record);
        }
        Ok(outcome)
    }

    /// Invariants every image must keep.
    fn check(&self) {
        for topic in self.image.topics.values() {
            for (p, state) in topic.partitions.iter().enumerate() {
                let at = format!("{}-{p}: {state:?}", topic.name);
                assert!(!state.in_sync_replicas.is_empty(), "empty ISR {at}");
                let distinct: BTreeSet<i32> = state.replicas.iter().copied().collect();
                assert_eq!(distinct.len(), state.replicas.len(), "a replica twice {at}");
                assert!(
                    state
                        .adding_replicas
                        .iter()
                        .chain(&state.removing_replicas)
                        .all(|r| state.replicas.contains(r)),
                    "moving replicas outside the replicas {at}"
                );
                assert!(
                    state
                        .adding_replicas
                        .iter()
                        .all(|r| !state.removing_replicas.contains(r)),
                    "added and removed at once {at}"
                );
                assert!(
                    !state.target_replicas().is_empty(),
                    "a reassignment to nothing {at}"
                );
                assert!(
                    state
                        .in_sync_replicas
                        .iter()
                        .all(|r| state.replicas.contains(r)),
                    "ISR outside replicas {at}"
                );
                if state.leader != -1 {
                    assert!(
                        state.in_sync_replicas.contains(&state.leader),
                        "leader not in ISR {at}"
                    );
                    assert!(self.image.is_live(state.leader), "fenced leader {at}");
                }
            }
        }
    }
}

fn register(node_id: i32, incarnation: Uuid) -> ControllerCommand {
    ControllerCommand::RegisterBroker {
        node_id,
        incarnation,
        endpoint: Endpoint {
            host: format!("broker-{node_id}"),
            port: 9092,
        },
        rack: None,
        listeners: Default::default(),
    }
}

fn heartbeat(node_id: i32, incarnation: Uuid) -> ControllerCommand {
    ControllerCommand::BrokerHeartbeat {
        node_id,
        incarnation,
        applied_index: 0,
    }
}

fn create(name: &str, partitions: i32, rf: i16) -> ControllerCommand {
    ControllerCommand::CreateTopic {
        name: name.into(),
        partitions,
        replication_factor: rf,
        configs: BTreeMap::new(),
        validate_only: false,
        assignments: Vec::new(),
    }
}

#[test]
fn topics_are_placed_on_live_brokers_and_refused_beyond_them() {
    let mut cluster = Cluster::new(3);
    let CommandOutcome::Topic(topic) = cluster.run(create("t", 6, 3)).unwrap() else {
        panic!("no topic");
    };
    assert_eq!(topic.partition_count(), 6);
    assert_eq!(*cluster.image.topics["t"], topic);
    let leaders: BTreeSet<i32> = topic.partitions.iter().map(|p| p.leader).collect();
    assert_eq!(leaders, BTreeSet::from([1, 2, 3]));
    assert_eq!(
        cluster.run(create("t", 1, 1)),
        Err(ControllerError::TopicAlreadyExists("t".into()))
    );
    assert_eq!(
        cluster.run(create("u", 1, 4)),
        Err(ControllerError::InvalidReplicationFactor {
            requested: 4,
            brokers: 3
        })
    );
    // A broker without a live session takes no new replicas.
    cluster.live.remove(&3);
    assert_eq!(
        cluster.run(create("u", 1, 3)),
        Err(ControllerError::InvalidReplicationFactor {
            requested: 3,
            brokers: 2
        })
    );
    cluster.check();
}

fn cordon(node_id: i32, value: &str) -> ControllerCommand {
    ControllerCommand::SetBrokerConfigs {
        node_id,
        configs: BTreeMap::from([(
            crate::metadata::dynamic_configs::CORDONED_LOG_DIRS.to_string(),
            value.to_string(),
        )]),
        validate_only: false,
    }
}

#[test]
fn a_cordoned_broker_takes_no_new_replicas_until_uncordoned_or_unregistered() {
    let mut cluster = Cluster::new(4);
    cluster.run(create("before", 4, 2)).unwrap();
    cluster.run(cordon(4, "*")).unwrap();
    let CommandOutcome::Topic(topic) = cluster.run(create("during", 6, 3)).unwrap() else {
        panic!("no topic");
    };
    assert!(
        topic.partitions.iter().all(|p| !p.replicas.contains(&4)),
        "a new topic landed on the cordoned broker: {topic:?}"
    );
    assert!(
        cluster.image.topics["before"]
            .partitions
            .iter()
            .any(|p| p.replicas.contains(&4)),
        "cordoning moves nothing that is there already"
    );
    // Only three brokers take replicas: RF 4 is refused, as on a three-broker cluster.
    assert_eq!(
        cluster.run(create("wide", 1, 4)),
        Err(ControllerError::InvalidReplicationFactor {
            requested: 4,
            brokers: 3
        })
    );
    // Not as a cluster-wide default: that would cordon every broker.
    assert!(matches!(
        cluster.run(cordon(-1, "*")),
        Err(ControllerError::InvalidRequest(_))
    ));
    // An empty list uncordons.
    cluster.run(cordon(4, "")).unwrap();
    cluster.run(create("wide", 1, 4)).unwrap();
    // A cordon ends with the registration: the same id joins again uncordoned.
    cluster.run(cordon(3, "*")).unwrap();
    cluster
        .run(ControllerCommand::FenceBroker { node_id: 3 })
        .unwrap();
    assert!(
        crate::metadata::dynamic_configs::is_cordoned(&cluster.image.broker_configs, 3),
        "a fenced broker stays cordoned"
    );
    cluster.check();
    cluster
        .image
        .apply(&MetadataRecord::BrokerUnregistered { node_id: 3 });
    assert!(!crate::metadata::dynamic_configs::is_cordoned(
        &cluster.image.broker_configs,
        3
    ));
}

#[test]
fn a_duplicate_node_id_is_refused_while_the_first_is_alive() {
    let mut cluster = Cluster::new(2);
    let impostor = Uuid::from_u128(77);
    assert_eq!(
        cluster.run(register(1, impostor)),
        Err(ControllerError::DuplicateBrokerRegistration {
            node_id: 1,
            incarnation: Uuid::from_u128(1)
        })
    );
    // Once the first one's session is gone, a restart (new incarnation) registers.
    cluster.live.remove(&1);
    cluster.run(register(1, impostor)).unwrap();
    assert!(cluster.image.brokers[&1].fenced);
    assert_eq!(
        cluster.run(heartbeat(1, Uuid::from_u128(1))),
        Err(ControllerError::UnknownBroker(1))
    );
    cluster.live.insert(1);
    assert_eq!(
        cluster.run(heartbeat(1, impostor)),
        Ok(CommandOutcome::Heartbeat { fenced: false })
    );
}

#[test]
fn fencing_the_last_in_sync_leader_takes_the_partition_offline_until_it_returns() {
    let mut cluster = Cluster::new(3);
    cluster.run(create("t", 3, 3)).unwrap();
    let led_by_1: Vec<usize> = cluster.image.topics["t"]
        .partitions
        .iter()
        .enumerate()
        .filter(|(_, p)| p.leader == 1)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(led_by_1.len(), 1);
    // The followers fell behind: the leader alone is in sync.
    cluster.run(alter("t", led_by_1[0], 1, 0, 0, &[1])).unwrap();
    cluster.live.remove(&1);
    cluster
        .run(ControllerCommand::FenceBroker { node_id: 1 })
        .unwrap();
    let offline = &cluster.image.topics["t"].partitions[led_by_1[0]];
    assert_eq!(offline.leader, -1);
    assert_eq!(offline.in_sync_replicas, vec![1]);
    assert_eq!(offline.leader_epoch, 1);
    cluster.check();
    cluster.live.insert(1);
    cluster.run(heartbeat(1, Uuid::from_u128(1))).unwrap();
    let back = &cluster.image.topics["t"].partitions[led_by_1[0]];
    assert_eq!(
        (back.leader, back.leader_epoch, back.partition_epoch),
        (1, 2, 3)
    );
}

fn alter(
    topic: &str,
    partition: usize,
    leader: i32,
    leader_epoch: i32,
    partition_epoch: i32,
    isr: &[i32],
) -> ControllerCommand {
    ControllerCommand::AlterPartition {
        topic: topic.into(),
        partition: partition as i32,
        leader,
        leader_epoch,
        partition_epoch,
        in_sync_replicas: isr.to_vec(),
    }
}

#[test]
fn isr_changes_need_the_current_leader_and_partition_epochs() {
    let mut cluster = Cluster::new(3);
    cluster.run(create("t", 1, 3)).unwrap();
    let state = cluster.image.topics["t"].partitions[0].clone();
    assert_eq!(
        state.in_sync_replicas.len(),
        3,
        "a new partition is all in sync"
    );
    let leader = state.leader;
    let others: Vec<i32> = state
        .replicas
        .iter()
        .copied()
        .filter(|r| *r != leader)
        .collect();
    let before = cluster.image.clone();
    let refusals = [
        (
            alter("t", 0, others[0], 0, 0, &[others[0]]),
            "not the leader",
        ),
        (
            alter("t", 0, leader, 1, 0, &[leader]),
            "future leader epoch",
        ),
        (
            alter("t", 0, leader, 0, 7, &[leader]),
            "stale partition epoch",
        ),
        (
            alter("t", 0, leader, 0, 0, &[others[0]]),
            "ISR without its leader",
        ),
        (alter("t", 0, leader, 0, 0, &[leader, 9]), "not a replica"),
        (alter("u", 0, leader, 0, 0, &[leader]), "unknown topic"),
    ];
    for (command, why) in refusals {
        assert!(cluster.run(command).is_err(), "{why} must be refused");
        assert_eq!(cluster.image, before, "{why}: nothing changed");
    }
    assert!(matches!(
        cluster.run(alter("t", 0, leader, 0, 7, &[leader])),
        Err(ControllerError::InvalidUpdateVersion(_))
    ));
    assert!(matches!(
        cluster.run(alter("t", 0, others[0], 0, 0, &[others[0]])),
        Err(ControllerError::FencedLeaderEpoch(_))
    ));
    cluster
        .run(alter("t", 0, leader, 0, 0, &[leader, others[0]]))
        .unwrap();
    let shrunk = &cluster.image.topics["t"].partitions[0];
    assert_eq!(shrunk.in_sync_replicas, vec![leader, others[0]]);
    assert_eq!((shrunk.leader_epoch, shrunk.partition_epoch), (0, 1));
    // A fenced broker cannot join the ISR.
    cluster.live.remove(&others[1]);
    cluster
        .run(ControllerCommand::FenceBroker { node_id: others[1] })
        .unwrap();
    assert!(matches!(
        cluster.run(alter("t", 0, leader, 0, 1, &[leader, others[0], others[1]])),
        Err(ControllerError::IneligibleReplica(_))
    ));
    cluster.check();
}

#[test]
fn controlled_shutdown_moves_leadership_and_leaves_the_isr() {
    let mut cluster = Cluster::new(3);
    cluster.run(create("t", 3, 3)).unwrap();
    cluster
        .run(ControllerCommand::ControlledShutdown {
            node_id: 2,
            incarnation: Uuid::from_u128(2),
        })
        .unwrap();
    for state in &cluster.image.topics["t"].partitions {
        assert_ne!(state.leader, 2);
        assert!(state.leader >= 0, "nothing offline");
        assert!(!state.in_sync_replicas.contains(&2));
    }
    assert!(cluster.image.brokers[&2].fenced);
    assert!(
        cluster
            .run(ControllerCommand::ControlledShutdown {
                node_id: 2,
                incarnation: Uuid::from_u128(99),
            })
            .is_err(),
        "another incarnation's shutdown is refused"
    );
    cluster.check();
}

#[test]
fn fencing_moves_leadership_to_a_live_in_sync_replica() {
    let mut cluster = Cluster::new(3);
    cluster.run(create("t", 1, 3)).unwrap();
    // Followers in sync, as replication will report them.
    let mut state = cluster.image.topics["t"].partitions[0].clone();
    state.in_sync_replicas = state.replicas.clone();
    cluster.image.apply(&MetadataRecord::PartitionChanged {
        topic: "t".into(),
        partition: 0,
        state: state.clone(),
    });
    let old = state.leader;
    cluster.live.remove(&old);
    cluster
        .run(ControllerCommand::FenceBroker { node_id: old })
        .unwrap();
    let next = &cluster.image.topics["t"].partitions[0];
    assert_eq!(next.leader, state.replicas[1]);
    assert!(!next.in_sync_replicas.contains(&old));
    assert_eq!(next.leader_epoch, state.leader_epoch + 1);
    cluster.check();
}

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

#[test]
fn producer_ids_come_in_disjoint_blocks() {
    let mut cluster = Cluster::new(1);
    let first = cluster.run(ControllerCommand::AllocateProducerIds).unwrap();
    let second = cluster.run(ControllerCommand::AllocateProducerIds).unwrap();
    assert_eq!(
        first,
        CommandOutcome::ProducerIds {
            first: 0,
            end: PRODUCER_ID_BLOCK
        }
    );
    assert_eq!(
        second,
        CommandOutcome::ProducerIds {
            first: PRODUCER_ID_BLOCK,
            end: 2 * PRODUCER_ID_BLOCK
        }
    );
}

#[test]
fn a_live_broker_takes_back_a_partition_left_offline_while_its_session_looked_expired() {
    let mut cluster = Cluster::new(3);
    cluster.run(create("t", 1, 3)).unwrap();
    let state = cluster.image.topics["t"].partitions[0].clone();
    let leader = state.leader;
    let survivor = *state.replicas.iter().find(|r| **r != leader).unwrap();
    let third = *state
        .replicas
        .iter()
        .find(|r| **r != leader && **r != survivor)
        .unwrap();
    cluster
        .run(alter("t", 0, leader, 0, 0, &[leader, survivor]))
        .unwrap();
    // The leader dies while the survivor's session looks expired (a new controller's
    // grace ran out before its heartbeat arrived): nobody in sync is live.
    cluster.live.remove(&leader);
    cluster.live.remove(&survivor);
    cluster.live.remove(&third);
    cluster
        .run(ControllerCommand::FenceBroker { node_id: leader })
        .unwrap();
    let offline = &cluster.image.topics["t"].partitions[0];
    assert_eq!(
        (offline.leader, offline.in_sync_replicas.clone()),
        (-1, vec![survivor])
    );
    assert!(
        !cluster.image.brokers[&survivor].fenced,
        "never fenced itself"
    );
    // Its next heartbeat brings the partition back.
    cluster.live.insert(survivor);
    cluster
        .run(heartbeat(survivor, Uuid::from_u128(survivor as u128)))
        .unwrap();
    let back = &cluster.image.topics["t"].partitions[0];
    assert_eq!(back.leader, survivor);
    assert_eq!(back.leader_epoch, 2);
    cluster.check();
}

/// Sets a partition's replicas, ISR and leader directly (as earlier decisions would have).
fn place(
    cluster: &mut Cluster,
    topic: &str,
    partition: i32,
    replicas: &[i32],
    isr: &[i32],
    leader: i32,
) {
    let mut state = cluster.image.topics[topic].partitions[partition as usize].clone();
    state.replicas = replicas.to_vec();
    state.in_sync_replicas = isr.to_vec();
    state.leader = leader;
    cluster.image.apply(&MetadataRecord::PartitionChanged {
        topic: topic.into(),
        partition,
        state,
    });
}

fn reassign(topic: &str, partition: i32, target: Option<&[i32]>) -> ControllerCommand {
    ControllerCommand::ReassignPartitions {
        reassignments: vec![Reassignment {
            topic: topic.into(),
            partition,
            target: target.map(|t| t.to_vec()),
        }],
    }
}

fn errors_of(outcome: CommandOutcome) -> Vec<Option<ControllerError>> {
    match outcome {
        CommandOutcome::Partitions(outcomes) => outcomes.into_iter().map(|o| o.error).collect(),
        other => panic!("unexpected outcome {other:?}"),
    }
}

/// The leader's ISR proposal, from the partition's current epochs.
fn propose_isr(
    cluster: &mut Cluster,
    topic: &str,
    isr: &[i32],
) -> Result<CommandOutcome, ControllerError> {
    let state = cluster.image.topics[topic].partitions[0].clone();
    cluster.run(alter(
        topic,
        0,
        state.leader,
        state.leader_epoch,
        state.partition_epoch,
        isr,
    ))
}

#[test]
fn a_reassignment_adds_replicas_waits_for_their_catch_up_then_drops_the_old_ones() {
    let mut cluster = Cluster::new(5);
    cluster.run(create("t", 1, 3)).unwrap();
    place(&mut cluster, "t", 0, &[1, 2, 3], &[1, 2, 3], 1);
    let errors = errors_of(cluster.run(reassign("t", 0, Some(&[3, 4, 5]))).unwrap());
    assert_eq!(errors, vec![None]);
    let moving = cluster.image.topics["t"].partitions[0].clone();
    assert_eq!(
        moving.replicas,
        vec![3, 4, 5, 1, 2],
        "target first, then the leaving ones"
    );
    assert_eq!(moving.adding_replicas, vec![4, 5]);
    assert_eq!(moving.removing_replicas, vec![1, 2]);
    assert_eq!(
        moving.in_sync_replicas,
        vec![1, 2, 3],
        "added replicas are not in sync yet"
    );
    assert_eq!(moving.leader, 1, "leadership stays while the data moves");
    cluster.check();

    // One added replica caught up: still moving.
    propose_isr(&mut cluster, "t", &[1, 2, 3, 4]).unwrap();
    let half = cluster.image.topics["t"].partitions[0].clone();
    assert!(half.is_reassigning());
    assert_eq!(half.replicas, vec![3, 4, 5, 1, 2]);

    // Both in sync: the old replicas leave and the leader, being one of them, hands over.
    propose_isr(&mut cluster, "t", &[1, 2, 3, 4, 5]).unwrap();
    let done = cluster.image.topics["t"].partitions[0].clone();
    assert!(!done.is_reassigning());
    assert_eq!(done.replicas, vec![3, 4, 5]);
    assert_eq!(done.in_sync_replicas, vec![3, 4, 5]);
    assert_eq!(done.leader, 3);
    assert_eq!(done.leader_epoch, half.leader_epoch + 1);
    cluster.check();
}

#[test]
fn a_cancel_returns_to_the_replicas_from_before_and_a_second_cancel_is_refused() {
    let mut cluster = Cluster::new(5);
    cluster.run(create("t", 1, 3)).unwrap();
    place(&mut cluster, "t", 0, &[1, 2, 3], &[1, 2, 3], 2);
    cluster.run(reassign("t", 0, Some(&[3, 4, 5]))).unwrap();
    propose_isr(&mut cluster, "t", &[1, 2, 3, 4]).unwrap();
    let errors = errors_of(cluster.run(reassign("t", 0, None)).unwrap());
    assert_eq!(errors, vec![None]);
    let back = cluster.image.topics["t"].partitions[0].clone();
    assert!(!back.is_reassigning());
    let mut replicas = back.replicas.clone();
    replicas.sort();
    assert_eq!(replicas, vec![1, 2, 3]);
    assert_eq!(
        back.in_sync_replicas,
        vec![1, 2, 3],
        "the added replica 4 leaves the ISR"
    );
    assert_eq!(
        back.leader, 2,
        "the leader was an original replica and stays"
    );
    cluster.check();

    let errors = errors_of(cluster.run(reassign("t", 0, None)).unwrap());
    assert!(matches!(
        errors[0],
        Some(ControllerError::NoReassignmentInProgress(_))
    ));
}

#[test]
fn reassignment_bad_input_gets_kafkas_errors_and_changes_nothing() {
    let mut cluster = Cluster::new(3);
    cluster.run(create("t", 1, 3)).unwrap();
    let before = cluster.image.clone();
    let cases: [(&str, i32, Option<&[i32]>); 5] = [
        ("t", 0, Some(&[1, 2, 9])),
        ("t", 0, Some(&[1, 1, 2])),
        ("t", 0, Some(&[])),
        ("nope", 0, Some(&[1, 2, 3])),
        ("t", 7, Some(&[1, 2, 3])),
    ];
    for (topic, partition, target) in cases {
        let errors = errors_of(cluster.run(reassign(topic, partition, target)).unwrap());
        let expected_unknown = topic == "nope" || partition == 7;
        match &errors[0] {
            Some(ControllerError::InvalidReplicaAssignment(_)) if !expected_unknown => {}
            Some(ControllerError::UnknownTopic(_)) if expected_unknown => {}
            other => panic!("{topic}-{partition} {target:?}: {other:?}"),
        }
    }
    // The same partition twice in one request: the second is refused.
    let twice = ControllerCommand::ReassignPartitions {
        reassignments: vec![
            Reassignment {
                topic: "t".into(),
                partition: 0,
                target: Some(vec![1, 2, 3]),
            },
            Reassignment {
                topic: "t".into(),
                partition: 0,
                target: Some(vec![3, 2, 1]),
            },
        ],
    };
    let errors = errors_of(cluster.run(twice).unwrap());
    assert!(errors[1].is_some());
    assert_eq!(
        cluster.image.topics["t"], before.topics["t"],
        "nothing changed"
    );
}

#[test]
fn a_reassignment_within_the_isr_completes_at_once() {
    let mut cluster = Cluster::new(3);
    cluster.run(create("t", 1, 3)).unwrap();
    place(&mut cluster, "t", 0, &[1, 2, 3], &[1, 2, 3], 1);
    cluster.run(reassign("t", 0, Some(&[2, 3]))).unwrap();
    let done = cluster.image.topics["t"].partitions[0].clone();
    assert!(!done.is_reassigning());
    assert_eq!(done.replicas, vec![2, 3]);
    assert_eq!(done.leader, 2);
    cluster.check();
}

#[test]
fn preferred_election_moves_leadership_back_only_to_a_live_in_sync_preferred_replica() {
    let mut cluster = Cluster::new(3);
    cluster.run(create("t", 2, 3)).unwrap();
    place(&mut cluster, "t", 0, &[1, 2, 3], &[1, 2, 3], 2);
    place(&mut cluster, "t", 1, &[3, 1, 2], &[1, 2], 1);
    let elect = |partitions: Option<Vec<(String, i32)>>| ControllerCommand::ElectLeaders {
        election: ElectionType::Preferred,
        partitions,
    };
    let asked = vec![
        ("t".to_string(), 0),
        ("t".to_string(), 1),
        ("u".to_string(), 0),
    ];
    let errors = errors_of(cluster.run(elect(Some(asked.clone()))).unwrap());
    assert_eq!(errors[0], None);
    assert!(matches!(
        errors[1],
        Some(ControllerError::PreferredLeaderNotAvailable(_))
    ));
    assert!(matches!(errors[2], Some(ControllerError::UnknownTopic(_))));
    assert_eq!(cluster.image.topics["t"].partitions[0].leader, 1);
    assert_eq!(cluster.image.topics["t"].partitions[1].leader, 1);
    let errors = errors_of(cluster.run(elect(Some(asked[..1].to_vec()))).unwrap());
    assert!(matches!(
        errors[0],
        Some(ControllerError::ElectionNotNeeded(_))
    ));
    // Every partition: the ones that needed nothing are left out of the answer.
    let errors = errors_of(cluster.run(elect(None)).unwrap());
    assert_eq!(errors.len(), 1, "only t-1 is reported: {errors:?}");
    cluster.check();
}

#[test]
fn unclean_election_picks_a_live_replica_only_for_a_leaderless_partition() {
    let mut cluster = Cluster::new(3);
    cluster.run(create("t", 1, 3)).unwrap();
    place(&mut cluster, "t", 0, &[1, 2, 3], &[1], -1);
    cluster.live.remove(&1);
    cluster
        .run(ControllerCommand::FenceBroker { node_id: 1 })
        .unwrap();
    let unclean = ControllerCommand::ElectLeaders {
        election: ElectionType::Unclean,
        partitions: Some(vec![("t".into(), 0)]),
    };
    assert_eq!(errors_of(cluster.run(unclean.clone()).unwrap()), vec![None]);
    let state = cluster.image.topics["t"].partitions[0].clone();
    assert_eq!(state.leader, 2);
    assert_eq!(state.in_sync_replicas, vec![2]);
    let errors = errors_of(cluster.run(unclean).unwrap());
    assert!(matches!(
        errors[0],
        Some(ControllerError::ElectionNotNeeded(_))
    ));

    place(&mut cluster, "t", 0, &[1], &[1], -1);
    let errors = errors_of(
        cluster
            .run(ControllerCommand::ElectLeaders {
                election: ElectionType::Unclean,
                partitions: Some(vec![("t".into(), 0)]),
            })
            .unwrap(),
    );
    assert!(matches!(
        errors[0],
        Some(ControllerError::EligibleLeadersNotAvailable(_))
    ));
}

#[test]
fn leader_balance_moves_leadership_only_for_brokers_over_the_imbalance_threshold() {
    let mut cluster = Cluster::new(3);
    cluster.run(create("t", 10, 2)).unwrap();
    for p in 0..10 {
        place(
            &mut cluster,
            "t",
            p,
            &[1, 2],
            &[1, 2],
            if p == 0 { 2 } else { 1 },
        );
    }
    // Broker 1 leads 9 of its 10: 10 % not led, not over a 10 % threshold.
    cluster
        .run(ControllerCommand::BalanceLeaders {
            imbalance_percent: 10,
        })
        .unwrap();
    assert_eq!(cluster.image.topics["t"].partitions[0].leader, 2);
    // Over 5 %: back to the preferred replica.
    cluster
        .run(ControllerCommand::BalanceLeaders {
            imbalance_percent: 5,
        })
        .unwrap();
    assert_eq!(cluster.image.topics["t"].partitions[0].leader, 1);
    cluster.check();
}

#[test]
fn a_batch_of_topics_is_one_decision_each_topic_on_its_own() {
    let mut cluster = Cluster::new(3);
    cluster.run(create("old", 1, 1)).unwrap();
    let spec = |name: &str, partitions: i32| TopicToCreate {
        name: name.into(),
        partitions,
        replication_factor: 1,
        configs: BTreeMap::new(),
        assignments: Vec::new(),
    };
    let topics = vec![
        spec("a", 1),
        spec("old", 1),
        spec("b", 1),
        spec("b", 1),
        spec("c", 0),
        spec("d", 1),
    ];
    let validated = cluster
        .run(ControllerCommand::CreateTopics {
            topics: topics.clone(),
            validate_only: true,
        })
        .unwrap();
    assert!(
        !cluster.image.topics.contains_key("a"),
        "validate_only creates nothing"
    );
    let CommandOutcome::Topics(outcomes) = cluster
        .run(ControllerCommand::CreateTopics {
            topics,
            validate_only: false,
        })
        .unwrap()
    else {
        panic!("no per-topic outcomes");
    };
    assert_eq!(validated, CommandOutcome::Topics(outcomes.clone()));
    let errors: Vec<Option<ControllerError>> =
        outcomes.iter().map(|o| o.as_ref().err().cloned()).collect();
    assert!(errors[0].is_none() && errors[2].is_none() && errors[5].is_none());
    assert_eq!(
        errors[1],
        Some(ControllerError::TopicAlreadyExists("old".into()))
    );
    assert_eq!(
        errors[3],
        Some(ControllerError::TopicAlreadyExists("b".into()))
    );
    assert!(matches!(
        errors[4],
        Some(ControllerError::InvalidPartitions { .. })
    ));
    // Distinct ids, and single-partition topics of one batch led by different brokers.
    let created: Vec<&TopicImage> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    let ids: BTreeSet<Uuid> = created.iter().map(|t| t.topic_id).collect();
    assert_eq!(ids.len(), 3);
    let leaders: BTreeSet<i32> = created.iter().map(|t| t.partitions[0].leader).collect();
    assert_eq!(leaders.len(), 3, "{created:?}");
    for topic in created {
        assert_eq!(*cluster.image.topics[&topic.name], *topic);
    }
    cluster.check();
}

#[test]
fn create_partitions_honours_a_given_assignment_and_refuses_a_bad_one() {
    let mut cluster = Cluster::new(3);
    cluster.run(create("t", 1, 2)).unwrap();
    let grow = |total, assignments: Vec<Vec<i32>>| ControllerCommand::CreatePartitions {
        name: "t".into(),
        total,
        validate_only: false,
        assignments,
    };
    cluster.run(grow(3, vec![vec![3, 1], vec![2, 3]])).unwrap();
    let replicas: Vec<Vec<i32>> = cluster.image.topics["t"]
        .partitions
        .iter()
        .skip(1)
        .map(|p| p.replicas.clone())
        .collect();
    assert_eq!(replicas, vec![vec![3, 1], vec![2, 3]]);
    assert_eq!(cluster.image.topics["t"].partitions[1].leader, 3);
    for bad in [
        vec![vec![1, 2]],             // one assignment for two new partitions
        vec![vec![1, 2], vec![1]],    // wrong replication factor
        vec![vec![1, 2], vec![1, 9]], // unknown broker
        vec![vec![1, 2], vec![2, 2]], // a broker twice
    ] {
        assert!(
            matches!(
                cluster.run(grow(5, bad.clone())),
                Err(ControllerError::InvalidReplicaAssignment(_))
            ),
            "{bad:?}"
        );
    }
    assert_eq!(cluster.image.topics["t"].partition_count(), 3);
}
