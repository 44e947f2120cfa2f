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
    }
}

#[test]
fn topics_are_placed_on_live_brokers_and_refused_beyond_them() {
    let mut cluster = Cluster::new(3);
    let CommandOutcome::Topic(topic) = cluster.run(create("t", 6, 3)).unwrap() else {
        panic!("no topic");
    };
    assert_eq!(topic.partition_count(), 6);
    assert_eq!(cluster.image.topics["t"], topic);
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
            let command = match rng.random_range(0..6) {
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
                },
                3 => {
                    let node_id = rng.random_range(1..=brokers);
                    cluster.live.remove(&node_id);
                    ControllerCommand::FenceBroker { node_id }
                }
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
