//! Moving partitions with real processes on loopback: preferred leaders after a restart
//! (the balance timer on and off, ElectLeaders), reassignment to other brokers and its
//! cancel while an added replica is SIGSTOPped, UnregisterBroker, and the bad input of
//! each API answered with Kafka's error codes and nothing changed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use kafka_protocol::ResponseError;
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ApiKey, BrokerId,
    ElectLeadersRequest, ElectLeadersResponse, ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse, UnregisterBrokerRequest, UnregisterBrokerResponse,
};
use oxbow_testkit::Cluster;
use oxbow_testkit::client::name;

const TIMEOUT: Duration = Duration::from_secs(60);

/// (leader, replicas, sorted ISR) of `topic`-`partition` as node `via` answers Metadata.
fn state(cluster: &Cluster, via: i32, topic: &str, partition: i32) -> (i32, Vec<i32>, Vec<i32>) {
    let topic = cluster.topic_metadata(via, topic);
    let p = topic
        .partitions
        .iter()
        .find(|p| p.partition_index == partition)
        .expect("partition in metadata");
    let mut isr: Vec<i32> = p.isr_nodes.iter().map(|b| b.0).collect();
    isr.sort();
    (
        p.leader_id.0,
        p.replica_nodes.iter().map(|b| b.0).collect(),
        isr,
    )
}

fn elect(
    cluster: &Cluster,
    via: i32,
    election_type: i8,
    partitions: Option<&[(&str, i32)]>,
) -> Vec<(String, i32, i16)> {
    let request = ElectLeadersRequest::default()
        .with_election_type(election_type)
        .with_timeout_ms(30_000)
        .with_topic_partitions(partitions.map(|asked| {
            asked
                .iter()
                .map(|(topic, p)| {
                    TopicPartitions::default()
                        .with_topic(name(topic))
                        .with_partitions(vec![*p])
                })
                .collect()
        }));
    let response: ElectLeadersResponse =
        cluster
            .client(via)
            .request(ApiKey::ElectLeaders, 2, &request);
    assert_eq!(response.error_code, 0, "{response:?}");
    response
        .replica_election_results
        .iter()
        .flat_map(|t| {
            t.partition_result
                .iter()
                .map(|p| (t.topic.0.to_string(), p.partition_id, p.error_code))
        })
        .collect()
}

fn reassign(cluster: &Cluster, via: i32, moves: &[(&str, i32, Option<&[i32]>)]) -> Vec<i16> {
    let request = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(30_000)
        .with_topics(
            moves
                .iter()
                .map(|(topic, p, target)| {
                    ReassignableTopic::default()
                        .with_name(name(topic))
                        .with_partitions(vec![
                            ReassignablePartition::default()
                                .with_partition_index(*p)
                                .with_replicas(
                                    target.map(|t| t.iter().map(|b| BrokerId(*b)).collect()),
                                ),
                        ])
                })
                .collect(),
        );
    let response: AlterPartitionReassignmentsResponse =
        cluster
            .client(via)
            .request(ApiKey::AlterPartitionReassignments, 0, &request);
    assert_eq!(response.error_code, 0, "{response:?}");
    response
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

/// One reassignment in progress: (topic, partition, replicas, adding, removing).
type Ongoing = (String, i32, Vec<i32>, Vec<i32>, Vec<i32>);

/// The reassignments in progress.
fn ongoing(cluster: &Cluster, via: i32) -> Vec<Ongoing> {
    let response: ListPartitionReassignmentsResponse = cluster.client(via).request(
        ApiKey::ListPartitionReassignments,
        0,
        &ListPartitionReassignmentsRequest::default().with_timeout_ms(30_000),
    );
    assert_eq!(response.error_code, 0);
    let ids = |b: &[BrokerId]| b.iter().map(|b| b.0).collect::<Vec<_>>();
    response
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.name.0.to_string(),
                    p.partition_index,
                    ids(&p.replicas),
                    ids(&p.adding_replicas),
                    ids(&p.removing_replicas),
                )
            })
        })
        .collect()
}

fn wait_full_isr(cluster: &Cluster, via: i32, topic: &str, partitions: i32) {
    cluster.wait_for("every replica in sync", TIMEOUT, || {
        (0..partitions).all(|p| {
            let (leader, mut replicas, isr) = state(cluster, via, topic, p);
            replicas.sort();
            leader >= 0 && isr == replicas
        })
    });
}

fn restart_node_1(cluster: &mut Cluster) {
    cluster.kill(1);
    cluster.wait_for("partition 0 led elsewhere", TIMEOUT, || {
        let (leader, _, _) = state(cluster, 2, "balanced", 0);
        leader >= 0 && leader != 1
    });
    cluster.launch(1);
    cluster.wait_ready(&[1]);
    cluster.wait_for("node 1 back in the ISR of partition 0", TIMEOUT, || {
        state(cluster, 2, "balanced", 0).2.contains(&1)
    });
}

#[test]
fn leadership_returns_to_the_preferred_replica_within_the_balance_interval() {
    let mut cluster = Cluster::start(3, 0, &["leader.imbalance.check.interval.seconds=1"]);
    cluster.wait_ready(&[1, 2, 3]);
    cluster.create_assigned(1, "balanced", &[&[1, 2, 3], &[2, 3, 1], &[3, 1, 2]]);
    wait_full_isr(&cluster, 1, "balanced", 3);
    restart_node_1(&mut cluster);
    let back_in_sync = Instant::now();
    // Bound: one check interval (1 s) plus the time for the election to commit and reach
    // node 2's image; 20 s is far above both and still fails a balance that never runs.
    cluster.wait_for(
        "leadership back at the preferred replica",
        Duration::from_secs(20),
        || state(&cluster, 2, "balanced", 0).0 == 1,
    );
    eprintln!(
        "preferred leader back {:?} after it rejoined the ISR",
        back_in_sync.elapsed()
    );
    // Nothing else moved off its preferred replica.
    for (p, preferred) in [(1, 2), (2, 3)] {
        assert_eq!(state(&cluster, 1, "balanced", p).0, preferred);
    }
}

#[test]
fn without_auto_balance_leadership_moves_back_only_by_elect_leaders() {
    let mut cluster = Cluster::start(
        3,
        0,
        &[
            "auto.leader.rebalance.enable=false",
            "leader.imbalance.check.interval.seconds=1",
        ],
    );
    cluster.wait_ready(&[1, 2, 3]);
    cluster.create_assigned(1, "balanced", &[&[1, 2, 3], &[2, 3, 1]]);
    wait_full_isr(&cluster, 1, "balanced", 2);
    restart_node_1(&mut cluster);
    // Three check intervals: with the timer off, leadership stays where failover put it.
    std::thread::sleep(Duration::from_secs(3));
    let (moved_to, _, _) = state(&cluster, 2, "balanced", 0);
    assert_ne!(
        moved_to, 1,
        "leadership moved back with auto.leader.rebalance.enable=false"
    );

    let preferred = ResponseError::PreferredLeaderNotAvailable.code();
    let not_needed = ResponseError::ElectionNotNeeded.code();
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    let results = elect(
        &cluster,
        3,
        0,
        Some(&[
            ("balanced", 0),
            ("balanced", 1),
            ("nope", 0),
            ("balanced", 9),
        ]),
    );
    let code_of = |topic: &str, p: i32| {
        results
            .iter()
            .find(|(t, q, _)| t == topic && *q == p)
            .map(|r| r.2)
            .unwrap_or_else(|| panic!("no result for {topic}-{p}: {results:?}"))
    };
    assert_eq!(code_of("balanced", 0), 0, "{results:?}");
    assert_eq!(code_of("balanced", 1), not_needed, "{results:?}");
    assert_eq!(code_of("nope", 0), unknown, "{results:?}");
    assert_eq!(code_of("balanced", 9), unknown, "{results:?}");
    cluster.wait_for("node 1 leads partition 0 again", TIMEOUT, || {
        state(&cluster, 2, "balanced", 0).0 == 1
    });

    // A preferred replica that is down cannot be elected; an unclean election of a
    // partition that has a leader is not needed. Nothing changes.
    cluster.kill(2);
    cluster.wait_for("partition 1 led elsewhere", TIMEOUT, || {
        let (leader, _, _) = state(&cluster, 1, "balanced", 1);
        leader >= 0 && leader != 2
    });
    let before = state(&cluster, 1, "balanced", 1);
    let results = elect(&cluster, 1, 0, Some(&[("balanced", 1)]));
    assert_eq!(results, vec![("balanced".to_string(), 1, preferred)]);
    let results = elect(&cluster, 1, 1, Some(&[("balanced", 1)]));
    assert_eq!(results, vec![("balanced".to_string(), 1, not_needed)]);
    assert_eq!(state(&cluster, 1, "balanced", 1), before);
}

#[test]
fn a_reassignment_moves_replicas_and_a_cancel_reverts_one_stuck_on_a_stopped_broker() {
    let cluster = Cluster::start(3, 2, &[]);
    cluster.wait_ready(&[1, 2, 3, 4, 5]);
    cluster.create_assigned(1, "moving", &[&[1, 2, 3], &[2, 3, 1]]);
    wait_full_isr(&cluster, 1, "moving", 2);
    let data = |node: i32, partition: i32| {
        cluster.nodes[&node]
            .data
            .join(format!("moving-{partition}"))
            .exists()
    };
    assert!(data(1, 0) && !data(4, 0));

    // Bad input first: Kafka's codes, nothing changes.
    let invalid = ResponseError::InvalidReplicaAssignment.code();
    let unknown = ResponseError::UnknownTopicOrPartition.code();
    let codes = reassign(
        &cluster,
        2,
        &[
            ("moving", 0, Some(&[1, 2, 9][..])),
            ("moving", 1, Some(&[4, 4, 5][..])),
            ("nope", 0, Some(&[1, 2, 3][..])),
        ],
    );
    assert_eq!(codes, vec![invalid, invalid, unknown]);
    let codes = reassign(&cluster, 2, &[("moving", 0, Some(&[][..]))]);
    assert_eq!(codes, vec![invalid]);
    let codes = reassign(&cluster, 2, &[("moving", 0, None)]);
    assert_eq!(codes, vec![ResponseError::NoReassignmentInProgress.code()]);
    assert!(ongoing(&cluster, 1).is_empty());
    assert_eq!(state(&cluster, 1, "moving", 0).1, vec![1, 2, 3]);

    // Partition 0 to {3, 4, 5}: the leader (1) is removed, so leadership moves to 3.
    assert_eq!(
        reassign(&cluster, 2, &[("moving", 0, Some(&[3, 4, 5][..]))]),
        vec![0]
    );
    cluster.wait_for("the reassignment of moving-0 to finish", TIMEOUT, || {
        let (leader, replicas, isr) = state(&cluster, 1, "moving", 0);
        replicas == vec![3, 4, 5] && isr == vec![3, 4, 5] && leader == 3
    });
    cluster.wait_for("node 5 to list no move", TIMEOUT, || {
        ongoing(&cluster, 5).is_empty()
    });
    cluster.wait_for("the old replicas' logs deleted", TIMEOUT, || {
        !data(1, 0) && !data(2, 0) && data(4, 0) && data(5, 0)
    });

    // Partition 1 to {2, 3, 4} with broker 4 stopped: stuck until cancelled.
    cluster.signal(4, "STOP");
    assert_eq!(
        reassign(&cluster, 3, &[("moving", 1, Some(&[2, 3, 4][..]))]),
        vec![0]
    );
    // Asked of another node than the one that took the request: it lists the move once it
    // has applied the metadata.
    let expected = vec![("moving".to_string(), 1, vec![2, 3, 4, 1], vec![4], vec![1])];
    cluster.wait_for("node 2 to list the stuck move", TIMEOUT, || {
        ongoing(&cluster, 2) == expected
    });
    assert_eq!(reassign(&cluster, 3, &[("moving", 1, None)]), vec![0]);
    cluster.wait_for("the cancel to apply", TIMEOUT, || {
        let (_, mut replicas, isr) = state(&cluster, 1, "moving", 1);
        replicas.sort();
        replicas == vec![1, 2, 3] && isr == vec![1, 2, 3]
    });
    assert!(ongoing(&cluster, 1).is_empty());
    cluster.signal(4, "CONT");
    cluster.wait_for(
        "broker 4 drops the cancelled replica's log",
        TIMEOUT,
        || !data(4, 1),
    );
}

#[test]
fn unregister_broker_removes_only_a_broker_without_replicas() {
    let mut cluster = Cluster::start(3, 1, &[]);
    cluster.wait_ready(&[1, 2, 3, 4]);
    cluster.create_assigned(1, "placed", &[&[1, 2, 3]]);
    let unregister = |cluster: &Cluster, node: i32| {
        let response: UnregisterBrokerResponse = cluster.client(2).request(
            ApiKey::UnregisterBroker,
            0,
            &UnregisterBrokerRequest::default().with_broker_id(BrokerId(node)),
        );
        response.error_code
    };
    assert_eq!(
        unregister(&cluster, 3),
        ResponseError::InvalidRequest.code(),
        "holds replicas"
    );
    assert_eq!(
        unregister(&cluster, 42),
        ResponseError::BrokerIdNotRegistered.code()
    );
    cluster.signal(4, "TERM");
    cluster.wait_exit(4, TIMEOUT);
    assert_eq!(unregister(&cluster, 4), 0);
    let listed = |cluster: &Cluster| -> Vec<i32> {
        cluster
            .metadata(1)
            .brokers
            .iter()
            .map(|b| b.node_id.0)
            .collect()
    };
    // Broker 1 applies the unregistration when its image catches up; until then it lists
    // broker 4 as just fenced (api/metadata/listed_brokers.rs), as Kafka lists a broker
    // until its session times out.
    cluster.wait_for("broker 1 no longer lists broker 4", TIMEOUT, || {
        !listed(&cluster).contains(&4)
    });
    assert!(listed(&cluster).contains(&3));
}

#[test]
fn create_partitions_places_new_partitions_on_the_replicas_it_is_given() {
    use kafka_protocol::messages::create_partitions_request::{
        CreatePartitionsAssignment, CreatePartitionsTopic,
    };
    use kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};
    let cluster = Cluster::start(3, 0, &[]);
    cluster.wait_ready(&[1, 2, 3]);
    cluster.create_assigned(1, "grown", &[&[1, 2]]);
    let assignment = |replicas: &[i32]| {
        CreatePartitionsAssignment::default()
            .with_broker_ids(replicas.iter().map(|b| BrokerId(*b)).collect())
    };
    // Through a broker that forwards to the active controller.
    let via = (1..=3)
        .find(|id| cluster.controller_of(*id) != Some(*id))
        .unwrap();
    let response: CreatePartitionsResponse = cluster.client(via).request(
        ApiKey::CreatePartitions,
        3,
        &CreatePartitionsRequest::default()
            .with_topics(vec![
                CreatePartitionsTopic::default()
                    .with_name(name("grown"))
                    .with_count(3)
                    .with_assignments(Some(vec![assignment(&[3, 1]), assignment(&[2, 3])])),
            ])
            .with_timeout_ms(30_000),
    );
    assert_eq!(response.results[0].error_code, 0, "{response:?}");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let topic = cluster.topic_metadata(via, "grown");
        if topic.partitions.len() == 3 {
            let mut replicas: Vec<(i32, Vec<i32>)> = topic
                .partitions
                .iter()
                .map(|p| {
                    (
                        p.partition_index,
                        p.replica_nodes.iter().map(|b| b.0).collect(),
                    )
                })
                .collect();
            replicas.sort();
            assert_eq!(
                replicas,
                vec![(0, vec![1, 2]), (1, vec![3, 1]), (2, vec![2, 3])]
            );
            break;
        }
        assert!(Instant::now() < deadline, "the partitions were not added");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_request_to_a_follower_names_the_current_leader_and_its_endpoint() {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{FetchRequest, FetchResponse, ProduceResponse};
    use oxbow_testkit::client::{batch, produce_request};
    let cluster = Cluster::start(3, 0, &[]);
    cluster.wait_ready(&[1, 2, 3]);
    // Node 3 holds no replica: a Fetch there cannot be served as a follower read.
    cluster.create_assigned(1, "hinted", &[&[2, 1]]);
    let deadline = Instant::now() + TIMEOUT;
    while state(&cluster, 1, "hinted", 0).0 != 2 {
        assert!(Instant::now() < deadline, "node 2 does not lead");
        std::thread::sleep(Duration::from_millis(50));
    }
    let leader_port = cluster.nodes[&2].port;
    // KIP-951: Produce v10+ and Fetch v16+ carry the leader and its endpoint.
    let produced: ProduceResponse = cluster.client(3).request(
        ApiKey::Produce,
        11,
        &produce_request("hinted", 0, batch(&["v"], 0)),
    );
    let partition = &produced.responses[0].partition_responses[0];
    assert_eq!(
        partition.error_code,
        ResponseError::NotLeaderOrFollower.code()
    );
    assert_eq!(partition.current_leader.leader_id.0, 2);
    assert!(partition.current_leader.leader_epoch >= 0);
    assert_eq!(produced.node_endpoints.len(), 1, "{produced:?}");
    assert_eq!(produced.node_endpoints[0].node_id.0, 2);
    assert_eq!(produced.node_endpoints[0].port, i32::from(leader_port));

    let fetched: FetchResponse = cluster.client(3).request(
        ApiKey::Fetch,
        16,
        &FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_bytes(1 << 20)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic_id(cluster.topic_metadata(3, "hinted").topic_id)
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(0)
                            .with_partition_max_bytes(1 << 20),
                    ]),
            ]),
    );
    let partition = &fetched.responses[0].partitions[0];
    assert_eq!(
        partition.error_code,
        ResponseError::NotLeaderOrFollower.code()
    );
    assert_eq!(partition.current_leader.leader_id.0, 2);
    assert_eq!(fetched.node_endpoints.len(), 1, "{fetched:?}");
    assert_eq!(fetched.node_endpoints[0].port, i32::from(leader_port));
}
