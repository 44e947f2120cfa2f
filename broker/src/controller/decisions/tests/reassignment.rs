//! Partition reassignment: adding, catching up, cancelling, bad input.

use super::*;

#[test]
fn a_reassignment_adds_replicas_waits_for_their_catch_up_then_drops_the_old_ones() {
    let mut cluster = Cluster::new(5);
    cluster.create("t", 1, 3).unwrap();
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
    cluster.create("t", 1, 3).unwrap();
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
    cluster.create("t", 1, 3).unwrap();
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
    cluster.create("t", 1, 3).unwrap();
    place(&mut cluster, "t", 0, &[1, 2, 3], &[1, 2, 3], 1);
    cluster.run(reassign("t", 0, Some(&[2, 3]))).unwrap();
    let done = cluster.image.topics["t"].partitions[0].clone();
    assert!(!done.is_reassigning());
    assert_eq!(done.replicas, vec![2, 3]);
    assert_eq!(done.leader, 2);
    cluster.check();
}
