//! A Topic's replication factor change against real brokers: three voters and a fourth
//! broker on loopback, a topic of RF 1 with records in every partition. The Topic
//! reconciler's move step grows it to 3 (one throttled reassignment: the throttle lists are
//! on the topic while it copies and gone after), then shrinks it to 2; each partition keeps
//! its preferred leader, every replica ends in sync, and every record written before is
//! read back after. The Kubernetes half (status, Events) is in the testbed suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use oxbow_operator::admin::{AdminClient, THROTTLED_REPLICAS_KEYS};
use oxbow_operator::crd::Cluster as ClusterResource;
use oxbow_operator::topic::replication::{self, Progress};
use oxbow_testkit::Cluster;
use oxbow_testkit::client::batch;

const TOPIC: &str = "resized";
const PARTITIONS: i32 = 6;
const TIMEOUT: Duration = Duration::from_secs(120);

fn resource() -> ClusterResource {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "oxbow.dev/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "local", "namespace": "test"},
        "spec": {"replicas": 4},
    }))
    .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs the move step towards `rf` until it settles; returns the steps it took and the
/// throttle configs the topic had right after the reassignment started.
fn resize(
    port: u16,
    brokers: &BTreeMap<i32, String>,
    rf: i32,
) -> (Vec<Progress>, BTreeMap<String, String>) {
    let cluster = resource();
    let deadline = Instant::now() + TIMEOUT;
    let mut steps = Vec::new();
    let mut throttles = BTreeMap::new();
    runtime().block_on(async {
        loop {
            assert!(
                Instant::now() < deadline,
                "the move did not settle: {steps:?}"
            );
            let mut admin = AdminClient::connect(&format!("127.0.0.1:{port}"))
                .await
                .unwrap();
            let view = admin.describe(TOPIC).await.unwrap();
            let topic = view.topic.unwrap();
            let wanted = topic
                .partitions
                .values()
                .any(|p| p.replicas.len() != rf as usize)
                .then_some(rf);
            let configs = admin.topic_configs(TOPIC).await.unwrap();
            let has_throttles = configs
                .keys()
                .any(|k| THROTTLED_REPLICAS_KEYS.contains(&k.as_str()));
            let step =
                replication::step(&mut admin, &cluster, brokers, TOPIC, wanted, has_throttles)
                    .await
                    .unwrap();
            eprintln!("step: {step:?}");
            // The broker answering DescribeConfigs learns the change from the metadata
            // log a moment after the controller committed it; nothing clears it meanwhile.
            while matches!(step, Progress::Started { .. }) && throttles.is_empty() {
                assert!(Instant::now() < deadline, "the throttles never showed");
                throttles = admin
                    .topic_configs(TOPIC)
                    .await
                    .unwrap()
                    .into_iter()
                    .filter(|(k, _)| THROTTLED_REPLICAS_KEYS.contains(&k.as_str()))
                    .collect();
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let settled = step == Progress::Settled;
            steps.push(step);
            if settled {
                let left = admin.topic_configs(TOPIC).await.unwrap();
                assert!(
                    left.keys()
                        .all(|k| !THROTTLED_REPLICAS_KEYS.contains(&k.as_str())),
                    "throttles left after the move: {left:?}"
                );
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    (steps, throttles)
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

/// Each partition's replicas, as broker `via` reports them, once every replica is in sync.
fn settled_replicas(cluster: &Cluster, via: i32, rf: usize) -> Vec<Vec<i32>> {
    let mut lists = Vec::new();
    cluster.wait_for("every replica in sync", TIMEOUT, || {
        let topic = cluster.topic_metadata(via, TOPIC);
        lists = topic
            .partitions
            .iter()
            .map(|p| p.replica_nodes.iter().map(|b| b.0).collect())
            .collect();
        topic.partitions.iter().all(|p| {
            p.replica_nodes.len() == rf
                && p.isr_nodes.iter().collect::<BTreeSet<_>>()
                    == p.replica_nodes.iter().collect::<BTreeSet<_>>()
        })
    });
    lists
}

#[test]
fn a_replication_factor_grows_and_shrinks_by_throttled_moves() {
    let cluster = Cluster::start(3, 1, &[]);
    cluster.wait_ready(&[1, 2, 3, 4]);
    assert_eq!(cluster.create_topic(1, TOPIC, PARTITIONS, 1), 0);
    cluster.wait_for("the topic on every broker", TIMEOUT, || {
        (1..=4).all(|id| {
            cluster
                .find_topic(id, TOPIC)
                .is_some_and(|t| t.partitions.len() == PARTITIONS as usize)
        })
    });
    let first: Vec<i32> = settled_replicas(&cluster, 1, 1)
        .iter()
        .map(|l| l[0])
        .collect();
    for partition in 0..PARTITIONS {
        let values: Vec<String> = (0..40).map(|i| format!("p{partition}-{i}")).collect();
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        cluster.produce_to_leader(1, TOPIC, partition, batch(&values, 2000));
    }
    let port = cluster.nodes[&1].port;
    let brokers: BTreeMap<i32, String> = (1..=4)
        .map(|id| (id, format!("127.0.0.1:{}", cluster.nodes[&id].port)))
        .collect();
    // Each of the 6 partitions (one replica each) gets two new replicas, each copying it.
    let sizes = runtime().block_on(oxbow_operator::cluster::scale::read_sizes(&brokers));
    let to_copy: u64 = 2 * sizes.values().flat_map(|s| s.values()).sum::<u64>();
    assert!(to_copy > 0, "no broker reported a size: {sizes:?}");

    let (steps, throttles) = resize(port, &brokers, 3);
    let started = steps
        .iter()
        .filter(|s| matches!(s, Progress::Started { .. }))
        .count();
    assert_eq!(started, 1, "the growth took more than one plan: {steps:?}");
    assert_eq!(
        steps[0],
        Progress::Started {
            replicas: 12,
            partitions: 6,
            bytes: to_copy
        }
    );
    // Every partition's one replica serves the copy; two new ones per partition fetch it.
    let leaders = throttles
        .get("leader.replication.throttled.replicas")
        .unwrap();
    assert_eq!(leaders.split(',').count(), 6, "{throttles:?}");
    let followers = throttles
        .get("follower.replication.throttled.replicas")
        .unwrap();
    assert_eq!(followers.split(',').count(), 12, "{throttles:?}");
    let grown = settled_replicas(&cluster, 2, 3);
    let mut per_broker: BTreeMap<i32, usize> = BTreeMap::new();
    for (list, leader) in grown.iter().zip(&first) {
        assert_eq!(list[0], *leader, "the preferred leader changed: {grown:?}");
        for id in list {
            *per_broker.entry(*id).or_default() += 1;
        }
    }
    // 18 replicas on 4 brokers: 4 or 5 each.
    assert!(
        per_broker.values().all(|n| (4..=5).contains(n)) && per_broker.len() == 4,
        "{per_broker:?}"
    );
    for partition in 0..PARTITIONS {
        assert_eq!(records_of(&cluster, partition), 40, "partition {partition}");
    }

    let (steps, _) = resize(port, &brokers, 2);
    assert!(
        matches!(
            steps[0],
            Progress::Started {
                replicas: 0,
                partitions: 6,
                bytes: 0
            }
        ),
        "{steps:?}"
    );
    let shrunk = settled_replicas(&cluster, 3, 2);
    for ((list, before), leader) in shrunk.iter().zip(&grown).zip(&first) {
        assert_eq!(list[0], *leader, "the preferred leader changed: {shrunk:?}");
        assert!(
            list.iter().all(|id| before.contains(id)),
            "{before:?} -> {list:?}"
        );
    }
    for partition in 0..PARTITIONS {
        assert_eq!(records_of(&cluster, partition), 40, "partition {partition}");
    }
}
