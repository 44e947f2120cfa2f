//! Leader elections: preferred, unclean, and leader balance.

use super::*;

#[test]
fn preferred_election_moves_leadership_back_only_to_a_live_in_sync_preferred_replica() {
    let mut cluster = Cluster::new(3);
    cluster.create("t", 2, 3).unwrap();
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
    cluster.create("t", 1, 3).unwrap();
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
    cluster.create("t", 10, 2).unwrap();
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
