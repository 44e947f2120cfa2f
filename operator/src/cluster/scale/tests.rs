use super::*;
use crate::admin::{BrokerDescription, PartitionDescription, Reassigning};

fn observation(brokers: i32, partitions: &[(&str, i32, &[i32])]) -> Observation {
    Observation {
        cluster: Partitions {
            brokers: (0..brokers)
                .map(|id| BrokerDescription { id, rack: None })
                .collect(),
            partitions: partitions
                .iter()
                .map(|(topic, partition, replicas)| {
                    (
                        TopicPartition {
                            topic: topic.to_string(),
                            partition: *partition,
                        },
                        PartitionDescription {
                            leader: replicas[0],
                            replicas: replicas.to_vec(),
                            in_sync_replicas: replicas.to_vec(),
                        },
                    )
                })
                .collect(),
        },
        moving: BTreeSet::new(),
        reassigning: BTreeMap::new(),
        sizes: ReplicaSizes::new(),
    }
}

#[test]
fn a_drain_moves_every_replica_off_the_leaving_brokers_in_one_plan() {
    let seen = observation(
        5,
        &[
            ("a", 0, &[3, 0, 1]),
            ("a", 1, &[4, 1, 2]),
            ("a", 2, &[0, 3, 4]),
            ("b", 0, &[2, 4, 0]),
        ],
    );
    let Step::Reassign(plan) = drain_step(&seen, &ordinals(3)) else {
        panic!("{:?}", drain_step(&seen, &ordinals(3)));
    };
    assert_eq!(plan.assignments.len(), 4);
    for replicas in plan.assignments.values() {
        assert!(replicas.iter().all(|id| *id < 3), "{replicas:?}");
    }
}

#[test]
fn a_drain_waits_for_moves_then_is_done() {
    let mut seen = observation(5, &[("a", 0, &[3, 0, 1])]);
    seen.moving.insert(TopicPartition {
        topic: "a".into(),
        partition: 0,
    });
    assert_eq!(drain_step(&seen, &ordinals(3)), Step::Wait { moving: 1 });
    let drained = observation(5, &[("a", 0, &[2, 0, 1])]);
    assert_eq!(drain_step(&drained, &ordinals(3)), Step::Done);
}

#[test]
fn a_scale_in_below_a_replication_factor_is_refused_with_the_partition() {
    let seen = observation(3, &[("orders", 0, &[0, 1, 2])]);
    let Step::Refused(message) = drain_step(&seen, &ordinals(2)) else {
        panic!("{:?}", drain_step(&seen, &ordinals(2)));
    };
    assert!(
        message.contains("orders-0 has 3 replicas") && message.contains("to 2 broker"),
        "{message}"
    );
}

#[test]
fn a_scale_out_waits_for_the_new_brokers_then_balances_then_elects() {
    let three = observation(
        3,
        &[("a", 0, &[0, 1]), ("a", 1, &[1, 2]), ("a", 2, &[2, 0])],
    );
    assert_eq!(balance_step(&three, &ordinals(4)), Step::Wait { moving: 0 });
    let mut four = three.clone();
    four.cluster
        .brokers
        .push(BrokerDescription { id: 3, rack: None });
    // Three partitions of two replicas over four brokers: one broker gets one replica
    // fewer, which is balanced already (±1); a fourth partition makes a move worthwhile.
    four.cluster.partitions.insert(
        TopicPartition {
            topic: "a".into(),
            partition: 3,
        },
        PartitionDescription {
            leader: 0,
            replicas: vec![0, 1],
            in_sync_replicas: vec![0, 1],
        },
    );
    let Step::Reassign(plan) = balance_step(&four, &ordinals(4)) else {
        panic!("{:?}", balance_step(&four, &ordinals(4)));
    };
    assert!(
        plan.assignments.values().flatten().any(|id| *id == 3),
        "{plan:?}"
    );
    // Once moved, a partition whose preferred replica does not lead is elected.
    let mut moved = four.clone();
    for (partition, replicas) in &plan.assignments {
        let description = moved.cluster.partitions.get_mut(partition).unwrap();
        description.replicas.clone_from(replicas);
        description.in_sync_replicas.clone_from(replicas);
    }
    let stale_leader = moved
        .cluster
        .partitions
        .iter()
        .filter(|(_, p)| p.replicas[0] != p.leader)
        .count();
    match balance_step(&moved, &ordinals(4)) {
        Step::ElectLeaders(partitions) => assert_eq!(partitions.len(), stale_leader),
        Step::Done => assert_eq!(stale_leader, 0),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_drain_taken_back_or_changed_uncordons_the_brokers_it_no_longer_removes() {
    let draining = |from, to| ScalingStatus {
        from,
        to,
        phase: ScalingPhase::Draining,
        message: String::new(),
        progress: None,
    };
    // 5 -> 2 changed to 5 -> 3: broker 2 stays, 3 and 4 still leave.
    let changed = no_longer_leaving(Some(&draining(5, 2)), 3, 5);
    assert_eq!(changed, BTreeSet::from([2]));
    // Taken back (5 again), or beyond (7): every cordoned broker is uncordoned.
    assert_eq!(
        no_longer_leaving(Some(&draining(5, 2)), 5, 5),
        BTreeSet::from([2, 3, 4])
    );
    assert_eq!(
        no_longer_leaving(Some(&draining(5, 2)), 7, 5),
        BTreeSet::from([2, 3, 4])
    );
    // The same drain, or no drain at all: nothing.
    assert!(no_longer_leaving(Some(&draining(5, 2)), 2, 5).is_empty());
    assert!(no_longer_leaving(None, 2, 5).is_empty());
    let refused = ScalingStatus {
        phase: ScalingPhase::Refused,
        ..draining(5, 2)
    };
    assert!(no_longer_leaving(Some(&refused), 5, 5).is_empty());
}

#[test]
fn progress_counts_the_adding_replicas_bytes_against_their_leaders_and_gives_a_rate() {
    let mut seen = observation(3, &[("t", 0, &[0, 2]), ("t", 1, &[1, 2])]);
    let p0 = TopicPartition {
        topic: "t".into(),
        partition: 0,
    };
    let p1 = TopicPartition {
        topic: "t".into(),
        partition: 1,
    };
    let adding = |id| Reassigning {
        adding: vec![id],
        removing: Vec::new(),
    };
    seen.reassigning = BTreeMap::from([(p0.clone(), adding(2)), (p1.clone(), adding(2))]);
    seen.moving = seen.reassigning.keys().cloned().collect();
    seen.sizes = ReplicaSizes::from([
        (0, BTreeMap::from([(p0.clone(), 4000)])),
        (1, BTreeMap::from([(p1.clone(), 6000)])),
        (2, BTreeMap::from([(p0.clone(), 1000), (p1.clone(), 7000)])),
    ]);
    // p1's new replica is caught up (more than its leader: counted at the leader's size).
    assert_eq!(copy_totals(&seen), (10_000, 7_000));
    let first = progress(&seen, None, 1_000);
    assert_eq!((first.bytes_per_second, first.eta_seconds), (None, None));
    seen.sizes.get_mut(&2).unwrap().insert(p0, 2_000);
    let second = progress(&seen, Some(&first), 3_000);
    assert_eq!(second.bytes_copied, 8_000);
    assert_eq!(second.bytes_per_second, Some(500));
    assert_eq!(second.eta_seconds, Some(4));
    assert!(
        describe_progress(&second)
            .contains("7.8 KiB of 9.8 KiB copied, at 500 B/s, about 4 s left")
    );
    // Another set of moves: no rate against numbers of the last one.
    seen.reassigning.remove(&p1);
    assert_eq!(progress(&seen, Some(&second), 4_000).bytes_per_second, None);
}

#[test]
fn a_partition_mid_move_counts_at_the_replication_factor_it_keeps() {
    // 2 -> 1 broker, orders-0 moving from broker 1 to broker 0: [1, 0] for now.
    let mut seen = observation(2, &[("orders", 0, &[1, 0])]);
    let moving = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    seen.reassigning = BTreeMap::from([(
        moving.clone(),
        Reassigning {
            adding: vec![0],
            removing: vec![1],
        },
    )]);
    seen.moving = BTreeSet::from([moving]);
    assert_eq!(drain_step(&seen, &[0].into()), Step::Wait { moving: 1 });
    // Without the move, two replicas on one broker cannot be.
    seen.reassigning.clear();
    seen.moving.clear();
    assert!(matches!(drain_step(&seen, &[0].into()), Step::Refused(_)));
}
