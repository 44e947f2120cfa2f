//! The data moves of a scale, against real brokers: four `oxbow` processes on loopback
//! (three voters and a fourth broker), a topic spread over all four with records in every
//! partition. The operator's drain step empties broker 4 in one reassignment; a scale-in
//! below the replication factor is refused; the balance step then spreads replicas and
//! preferred leaders back onto broker 4. Every record written before is read back after,
//! from each partition's leader. The Kubernetes half (the StatefulSet kept until the
//! drain is done) is in `src/cluster/tests.rs` and the testbed suites.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use oxbow_operator::admin::AdminClient;
use oxbow_operator::cluster::scale::{self, Step};
use oxbow_testkit::Cluster;
use oxbow_testkit::client::batch;

const TOPIC: &str = "moves";
const PARTITIONS: i32 = 8;
const TIMEOUT: Duration = Duration::from_secs(120);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `step` until it is done, carrying out what it asks; returns how many
/// reassignments and elections it started.
fn run_until_done(port: u16, step: impl Fn(&scale::Observation) -> Step) -> (usize, usize) {
    let runtime = runtime();
    let deadline = Instant::now() + TIMEOUT;
    let (mut reassignments, mut elections) = (0, 0);
    runtime.block_on(async {
        loop {
            assert!(
                Instant::now() < deadline,
                "the moves did not finish in {TIMEOUT:?}"
            );
            let mut admin = AdminClient::connect(&format!("127.0.0.1:{port}"))
                .await
                .unwrap();
            let observation = scale::observe(&mut admin).await.unwrap();
            let next = step(&observation);
            eprintln!("step: {next:?}");
            match next {
                Step::Done => return,
                Step::Wait { .. } => {}
                Step::Reassign(plan) => {
                    reassignments += 1;
                    admin.reassign(&plan.assignments).await.unwrap();
                }
                Step::ElectLeaders(partitions) => {
                    elections += 1;
                    admin.elect_preferred_leaders(&partitions).await.unwrap();
                }
                Step::Refused(message) => panic!("refused: {message}"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    (reassignments, elections)
}

/// Replicas and preferred leaders per broker, from broker `via`'s Metadata.
fn spread(cluster: &Cluster, via: i32) -> (BTreeMap<i32, usize>, BTreeMap<i32, usize>) {
    let topic = cluster.topic_metadata(via, TOPIC);
    let (mut replicas, mut leaders) = (BTreeMap::new(), BTreeMap::new());
    for partition in &topic.partitions {
        for id in &partition.replica_nodes {
            *replicas.entry(id.0).or_insert(0) += 1;
        }
        *leaders.entry(partition.leader_id.0).or_insert(0) += 1;
    }
    (replicas, leaders)
}

fn even(counts: &BTreeMap<i32, usize>) -> bool {
    counts.values().max().unwrap_or(&0) - counts.values().min().unwrap_or(&0) <= 1
}

fn records_of(cluster: &Cluster, partition: i32) -> usize {
    let leader = cluster.partition_state(1, TOPIC, partition).0;
    let response = cluster.client(leader).fetch(TOPIC, partition, 0);
    let data = &response.responses[0].partitions[0];
    assert_eq!(data.error_code, 0, "partition {partition} via {leader}");
    let mut bytes = data.records.clone().unwrap_or_default();
    let batches = kafka_protocol::records::RecordBatchDecoder::decode_all(&mut bytes).unwrap();
    batches.iter().map(|set| set.records.len()).sum()
}

#[test]
fn a_drain_empties_the_leaving_broker_in_one_plan_and_a_balance_refills_it() {
    let cluster = Cluster::start(3, 1, &[]);
    cluster.wait_ready(&[1, 2, 3, 4]);
    assert_eq!(cluster.create_topic(1, TOPIC, PARTITIONS, 2), 0);
    cluster.wait_for("the topic on every broker", TIMEOUT, || {
        (1..=4).all(|id| {
            cluster
                .find_topic(id, TOPIC)
                .is_some_and(|t| t.partitions.len() == PARTITIONS as usize)
        })
    });
    let (before, _) = spread(&cluster, 1);
    assert!(before.get(&4).copied().unwrap_or(0) > 0, "{before:?}");
    for partition in 0..PARTITIONS {
        let values: Vec<String> = (0..50).map(|i| format!("p{partition}-{i}")).collect();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        cluster.produce_to_leader(1, TOPIC, partition, batch(&values, 200));
    }

    // Plans weigh bytes: every broker reports its own replicas' sizes (DescribeLogDirs), and
    // the drain copies exactly broker 4's partitions, each at its leader's size.
    let port = cluster.nodes[&1].port;
    let addresses: BTreeMap<i32, String> = (1..=4)
        .map(|id| (id, format!("127.0.0.1:{}", cluster.nodes[&id].port)))
        .collect();
    let (plan, on_4) = runtime().block_on(async {
        let mut admin = AdminClient::connect(&addresses[&1]).await.unwrap();
        let mut seen = scale::observe(&mut admin).await.unwrap();
        seen.sizes = scale::read_sizes(&addresses).await;
        assert_eq!(seen.sizes.len(), 4, "a broker did not report its sizes");
        let on_4: u64 = seen.sizes[&4].values().sum();
        let step = scale::drain_step(&seen, &[1, 2, 3].into());
        // What the plan's new replicas copy, each its leader's log size.
        let copies = match &step {
            Step::Reassign(plan) => plan
                .assignments
                .iter()
                .map(|(partition, target)| {
                    let now = &seen.cluster.partitions[partition].replicas;
                    let added = target.iter().filter(|id| !now.contains(id)).count();
                    added as u64 * seen.cluster.size_of(partition, &seen.sizes)
                })
                .sum(),
            _ => 0,
        };
        (step, (on_4, copies))
    });
    let (on_4, copies) = on_4;
    let Step::Reassign(plan) = plan else {
        panic!("{plan:?}");
    };
    assert!(on_4 > 0, "broker 4 reports no bytes");
    assert_eq!(
        plan.bytes_moved, copies,
        "the plan's bytes are not its copies' sizes"
    );
    assert!(
        plan.bytes_moved >= on_4,
        "the drain copies less than broker 4 holds"
    );

    // Scale-in to brokers 1-3: everything on 4 moves, in one reassignment.
    let (reassignments, _) =
        run_until_done(port, |seen| scale::drain_step(seen, &[1, 2, 3].into()));
    assert_eq!(reassignments, 1, "the drain took more than one plan");
    let (drained, _) = spread(&cluster, 2);
    assert_eq!(
        drained.get(&4),
        None,
        "broker 4 still holds replicas: {drained:?}"
    );
    assert!(even(&drained), "replicas after the drain: {drained:?}");
    for partition in 0..PARTITIONS {
        assert_eq!(
            records_of(&cluster, partition),
            50,
            "partition {partition} after the drain"
        );
    }

    // Below the replication factor nothing is asked of the brokers.
    let runtime = runtime();
    let refusal = runtime.block_on(async {
        let mut admin = AdminClient::connect(&format!("127.0.0.1:{port}"))
            .await
            .unwrap();
        scale::drain_step(&scale::observe(&mut admin).await.unwrap(), &[1].into())
    });
    let Step::Refused(message) = refusal else {
        panic!("{refusal:?}");
    };
    assert!(message.contains("has 2 replicas"), "{message}");

    // Scale-out back to four brokers: replicas and preferred leaders spread onto broker 4.
    let (reassignments, elections) =
        run_until_done(port, |seen| scale::balance_step(seen, &[1, 2, 3, 4].into()));
    assert_eq!(reassignments, 1, "the balance took more than one plan");
    assert!(elections <= 1, "{elections} elections");
    let (replicas, leaders) = spread(&cluster, 3);
    assert_eq!(replicas.len(), 4, "{replicas:?}");
    assert!(even(&replicas), "replicas after the balance: {replicas:?}");
    assert!(even(&leaders), "leaders after the balance: {leaders:?}");
    for partition in 0..PARTITIONS {
        assert_eq!(
            records_of(&cluster, partition),
            50,
            "partition {partition} after the balance"
        );
    }
}

/// Brokers holding a replica of any partition of `topic`, from broker `via`'s Metadata.
fn holders(cluster: &Cluster, via: i32, topic: &str) -> std::collections::BTreeSet<i32> {
    cluster
        .topic_metadata(via, topic)
        .partitions
        .iter()
        .flat_map(|p| p.replica_nodes.iter().map(|id| id.0))
        .collect()
}

#[test]
fn a_cordoned_broker_gets_no_new_partitions_until_uncordoned() {
    let cluster = Cluster::start(3, 1, &[]);
    cluster.wait_ready(&[1, 2, 3, 4]);
    let runtime = runtime();
    let set = |via: i32, cordoned: bool| {
        runtime.block_on(async {
            let address = format!("127.0.0.1:{}", cluster.nodes[&via].port);
            let mut admin = AdminClient::connect(&address).await.unwrap();
            admin.set_cordoned(4, cordoned).await
        })
    };
    // A broker's own config goes to that broker, as Kafka's admin client sends it.
    let elsewhere = set(1, true).unwrap_err().to_string();
    assert!(elsewhere.contains("unexpected broker id"), "{elsewhere}");
    set(4, true).unwrap();
    // Every broker sees the cordon through the metadata log before the next topic.
    assert_eq!(cluster.create_topic(2, "during", 12, 2), 0);
    let during = holders(&cluster, 3, "during");
    assert_eq!(during, [1, 2, 3].into(), "a cordoned broker got replicas");
    // Three brokers take replicas now: RF 4 is refused as on a three-broker cluster.
    assert_ne!(cluster.create_topic(1, "wide", 1, 4), 0);
    set(4, false).unwrap();
    assert_eq!(cluster.create_topic(1, "after", 12, 2), 0);
    assert!(holders(&cluster, 1, "after").contains(&4));
    assert_eq!(cluster.create_topic(1, "wide", 1, 4), 0);
}
