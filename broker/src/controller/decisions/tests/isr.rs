//! ISR changes, fencing and controlled shutdown.

use super::*;

#[test]
fn fencing_the_last_in_sync_leader_takes_the_partition_offline_until_it_returns() {
    let mut cluster = Cluster::new(3);
    cluster.create("t", 3, 3).unwrap();
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

#[test]
fn isr_changes_need_the_current_leader_and_partition_epochs() {
    let mut cluster = Cluster::new(3);
    cluster.create("t", 1, 3).unwrap();
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
    cluster.create("t", 3, 3).unwrap();
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
    cluster.create("t", 1, 3).unwrap();
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
fn a_live_broker_takes_back_a_partition_left_offline_while_its_session_looked_expired() {
    let mut cluster = Cluster::new(3);
    cluster.create("t", 1, 3).unwrap();
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
