//! Creating topics and partitions: placement, batches, given assignments.

use super::*;

#[test]
fn topics_are_placed_on_live_brokers_and_refused_beyond_them() {
    let mut cluster = Cluster::new(3);
    let topic = cluster.create("t", 6, 3).unwrap();
    assert_eq!(topic.partition_count(), 6);
    assert_eq!(*cluster.image.topics["t"], topic);
    let leaders: BTreeSet<i32> = topic.partitions.iter().map(|p| p.leader).collect();
    assert_eq!(leaders, BTreeSet::from([1, 2, 3]));
    assert_eq!(
        cluster.create("t", 1, 1),
        Err(ControllerError::TopicAlreadyExists("t".into()))
    );
    assert_eq!(
        cluster.create("u", 1, 4),
        Err(ControllerError::InvalidReplicationFactor {
            requested: 4,
            brokers: 3
        })
    );
    // A broker without a live session takes no new replicas.
    cluster.live.remove(&3);
    assert_eq!(
        cluster.create("u", 1, 3),
        Err(ControllerError::InvalidReplicationFactor {
            requested: 3,
            brokers: 2
        })
    );
    cluster.check();
}

#[test]
fn a_batch_of_topics_is_one_decision_each_topic_on_its_own() {
    let mut cluster = Cluster::new(3);
    cluster.create("old", 1, 1).unwrap();
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
    cluster.create("t", 1, 2).unwrap();
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
