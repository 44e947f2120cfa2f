//! Replication with real processes on loopback: replicas byte-identical, `acks=all`
//! and `min.insync.replicas`, a divergent old leader truncated by leader epochs, and
//! follower-side requests that must be refused. Faults by SIGKILL and SIGSTOP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, CreateTopicsResponse, FetchRequest, FetchResponse,
    ProduceRequest, ProduceResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use oxbow_broker::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use oxbow_testkit::Cluster;
use oxbow_testkit::client::name;

const TIMEOUT: Duration = Duration::from_secs(30);

fn records(from: usize, count: usize) -> Bytes {
    let records: Vec<SimpleRecord> = (from..from + count)
        .map(|i| SimpleRecord {
            key: None,
            value: Some(Bytes::from(format!("record-{i}"))),
            timestamp: 1_700_000_000_000,
            headers: Vec::new(),
        })
        .collect();
    build_batch(&records, Compression::None, ProducerFields::default())
        .unwrap()
        .freeze()
}

fn create(cluster: &Cluster, via: i32, topic: &str, rf: i16, configs: &[(&str, &str)]) {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(name(topic))
                .with_num_partitions(1)
                .with_replication_factor(rf)
                .with_configs(
                    configs
                        .iter()
                        .map(|(k, v)| {
                            CreatableTopicConfig::default()
                                .with_name(StrBytes::from_string(k.to_string()))
                                .with_value(Some(StrBytes::from_string(v.to_string())))
                        })
                        .collect(),
                ),
        ])
        .with_timeout_ms(30_000);
    let response: CreateTopicsResponse =
        cluster
            .client(via)
            .request(ApiKey::CreateTopics, 7, &request);
    assert_eq!(response.topics[0].error_code, 0, "{response:?}");
}

fn produce(
    cluster: &Cluster,
    via: i32,
    topic: &str,
    acks: i16,
    batch: Bytes,
    timeout_ms: i32,
) -> (i16, i64) {
    let request = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(timeout_ms)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(name(topic))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(batch)),
                ]),
        ]);
    let response: ProduceResponse = cluster.client(via).request(ApiKey::Produce, 9, &request);
    let partition = &response.responses[0].partition_responses[0];
    (partition.error_code, partition.base_offset)
}

/// Produce once the leader has taken up its role (its metadata can say it leads a moment
/// before its replica does; clients retry NOT_LEADER_OR_FOLLOWER the same way).
fn produce_to_leader(
    cluster: &Cluster,
    leader: i32,
    topic: &str,
    acks: i16,
    batch: Bytes,
) -> (i16, i64) {
    let mut outcome = (0, 0);
    cluster.wait_for("the leader accepts writes", TIMEOUT, || {
        outcome = produce(cluster, leader, topic, acks, batch.clone(), 10_000);
        outcome.0 != ResponseError::NotLeaderOrFollower.code()
    });
    outcome
}

struct Fetched {
    error: i16,
    high_watermark: i64,
    diverging: (i32, i64),
    bytes: usize,
}

fn fetch(
    cluster: &Cluster,
    via: i32,
    topic: &str,
    replica_id: i32,
    offset: i64,
    current_epoch: i32,
    last_fetched_epoch: i32,
) -> Fetched {
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(replica_id))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(name(topic))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(offset)
                        .with_current_leader_epoch(current_epoch)
                        .with_last_fetched_epoch(last_fetched_epoch)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ]);
    let response: FetchResponse = cluster.client(via).request(ApiKey::Fetch, 12, &request);
    let data = &response.responses[0].partitions[0];
    Fetched {
        error: data.error_code,
        high_watermark: data.high_watermark,
        diverging: (data.diverging_epoch.epoch, data.diverging_epoch.end_offset),
        bytes: data.records.as_ref().map_or(0, |r| r.len()),
    }
}

/// Every byte of partition 0's segments on node `id`.
fn segment_bytes(cluster: &Cluster, id: i32, topic: &str) -> Vec<u8> {
    let dir = cluster.nodes[&id].data.join(format!("{topic}-0"));
    let mut logs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    logs.iter()
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect()
}

#[test]
fn acks_all_waits_for_the_isr_and_min_insync_replicas_refuses() {
    let mut cluster = Cluster::start(3, 0, &["replica.lag.time.max.ms=60000"]);
    cluster.wait_ready(&[1, 2, 3]);
    create(&cluster, 1, "m", 3, &[("min.insync.replicas", "3")]);
    cluster.wait_same_image(&[1, 2, 3]);
    let (leader, _, isr) = cluster.partition_state(1, "m", 0);
    assert_eq!(isr, vec![1, 2, 3], "a new partition is all in sync");
    assert_eq!(
        produce_to_leader(&cluster, leader, "m", -1, records(0, 5)),
        (0, 0)
    );
    // Every replica has the records once acks=all answered.
    cluster.wait_for("every replica has the batch", TIMEOUT, || {
        (1..=3).all(|id| segment_bytes(&cluster, id, "m") == segment_bytes(&cluster, leader, "m"))
    });
    let follower = (1..=3).find(|id| *id != leader).unwrap();
    assert_eq!(
        produce(&cluster, follower, "m", -1, records(5, 1), 5_000).0,
        ResponseError::NotLeaderOrFollower.code(),
        "a follower refuses produce"
    );

    // A stopped follower holds acks=all back: the request times out (records stay in the
    // leader's log, as in Kafka).
    cluster.signal(follower, "STOP");
    assert_eq!(
        produce(&cluster, leader, "m", -1, records(5, 1), 1_000).0,
        ResponseError::RequestTimedOut.code()
    );
    // Its session expires, it leaves the ISR, and acks=all is refused up front.
    cluster.wait_for("the stopped follower leaves the ISR", TIMEOUT, || {
        cluster.partition_state(leader, "m", 0).2.len() == 2
    });
    assert_eq!(
        produce(&cluster, leader, "m", -1, records(6, 1), 5_000).0,
        ResponseError::NotEnoughReplicas.code()
    );
    assert_eq!(
        produce(&cluster, leader, "m", 1, records(6, 1), 5_000),
        (0, 6),
        "acks=1 still works"
    );
    cluster.signal(follower, "CONT");
    cluster.wait_for("the follower rejoins the ISR", TIMEOUT, || {
        cluster.partition_state(leader, "m", 0).2.len() == 3
    });
    assert_eq!(
        produce(&cluster, leader, "m", -1, records(7, 1), 10_000),
        (0, 7)
    );
    cluster.wait_for("replicas converge", TIMEOUT, || {
        (1..=3).all(|id| segment_bytes(&cluster, id, "m") == segment_bytes(&cluster, leader, "m"))
    });
    cluster.kill(leader);
}

#[test]
fn a_divergent_old_leader_is_truncated_to_the_new_leaders_log() {
    let mut cluster = Cluster::start(3, 0, &[]);
    cluster.wait_ready(&[1, 2, 3]);
    create(&cluster, 1, "d", 3, &[]);
    cluster.wait_same_image(&[1, 2, 3]);
    let (old_leader, epoch, _) = cluster.partition_state(1, "d", 0);
    assert_eq!(
        produce_to_leader(&cluster, old_leader, "d", -1, records(0, 10)),
        (0, 0)
    );
    let followers: Vec<i32> = (1..=3).filter(|id| *id != old_leader).collect();
    // The followers stop fetching; the leader takes acks=1 writes only it has.
    for id in &followers {
        cluster.signal(*id, "STOP");
    }
    // Their fetches in flight at the leader run out (replica.fetch.wait.max.ms) before
    // the writes, so no response carries them.
    std::thread::sleep(Duration::from_millis(800));
    for i in 0..5 {
        assert_eq!(
            produce(&cluster, old_leader, "d", 1, records(10 + i, 1), 5_000).0,
            0
        );
    }
    cluster.kill(old_leader);
    for id in &followers {
        cluster.signal(*id, "CONT");
    }
    cluster.wait_for("a follower takes over", TIMEOUT, || {
        let (leader, new_epoch, _) = cluster.partition_state(followers[0], "d", 0);
        followers.contains(&leader) && new_epoch > epoch
    });
    let (new_leader, new_epoch, _) = cluster.partition_state(followers[0], "d", 0);
    // The new leader's log ends where the committed records end.
    assert_eq!(
        produce_to_leader(&cluster, new_leader, "d", 1, records(100, 3)),
        (0, 10)
    );

    cluster.launch(old_leader);
    cluster.wait_ready(&[old_leader]);
    cluster.wait_for("the old leader truncates and catches up", TIMEOUT, || {
        segment_bytes(&cluster, old_leader, "d") == segment_bytes(&cluster, new_leader, "d")
    });
    let at_new_leader = fetch(&cluster, new_leader, "d", -1, 0, new_epoch, -1);
    assert_eq!(at_new_leader.error, 0);
    assert_eq!(at_new_leader.high_watermark, 13);
    let logs = cluster.logs(old_leader);
    assert!(logs.contains("Truncating a divergent suffix"), "{logs}");
}

#[test]
fn follower_requests_from_strangers_and_stale_epochs_are_refused() {
    let mut cluster = Cluster::start(3, 0, &[]);
    cluster.wait_ready(&[1, 2, 3]);
    create(&cluster, 1, "b", 2, &[]);
    cluster.wait_same_image(&[1, 2, 3]);
    // A leader change first, so that there is a stale epoch to send.
    let (first, _, replicas) = cluster.partition_state(1, "b", 0);
    let other = *replicas.iter().find(|id| **id != first).unwrap();
    cluster.kill(first);
    cluster.wait_for("the other replica leads", TIMEOUT, || {
        cluster.partition_state(other, "b", 0).0 == other
    });
    cluster.launch(first);
    cluster.wait_ready(&[first]);
    cluster.wait_for("both replicas in sync", TIMEOUT, || {
        cluster.partition_state(other, "b", 0).2.len() == 2
    });
    let (leader, epoch, isr) = cluster.partition_state(other, "b", 0);
    assert!(epoch >= 1);
    let outsider = (1..=3).find(|id| !isr.contains(id)).unwrap();
    let follower = *isr.iter().find(|id| **id != leader).unwrap();
    assert_eq!(
        produce_to_leader(&cluster, leader, "b", -1, records(0, 4)),
        (0, 0)
    );
    let before = segment_bytes(&cluster, leader, "b");

    let stranger = fetch(&cluster, leader, "b", outsider, 0, epoch, -1);
    assert_eq!(
        stranger.error,
        ResponseError::NotLeaderOrFollower.code(),
        "not a replica"
    );
    assert_eq!(stranger.bytes, 0);
    let unknown = fetch(&cluster, leader, "b", 77, 0, epoch, -1);
    assert_eq!(unknown.error, ResponseError::NotLeaderOrFollower.code());
    let stale = fetch(&cluster, leader, "b", follower, 0, epoch - 1, -1);
    assert_eq!(stale.error, ResponseError::FencedLeaderEpoch.code());
    let future = fetch(&cluster, leader, "b", follower, 0, epoch + 1, -1);
    assert_eq!(future.error, ResponseError::UnknownLeaderEpoch.code());
    // A consumer may read from a follower (KIP-392, Fetch v11+; v10 readers are refused
    // there: cluster_follower_reads.rs), but not with a stale epoch.
    let at_follower = fetch(&cluster, follower, "b", -1, 0, epoch, -1);
    assert_eq!(at_follower.error, 0);
    let stale_at_follower = fetch(&cluster, follower, "b", -1, 0, epoch - 1, -1);
    assert_eq!(
        stale_at_follower.error,
        ResponseError::FencedLeaderEpoch.code()
    );
    // A follower claiming an epoch the leader never had is told where to truncate.
    let diverged = fetch(&cluster, leader, "b", follower, 4, epoch, epoch + 5);
    assert_eq!(diverged.error, 0);
    assert_eq!(diverged.diverging, (epoch, 4));
    assert_eq!(diverged.bytes, 0);
    let beyond = fetch(&cluster, leader, "b", follower, 99, epoch, -1);
    assert_eq!(beyond.error, ResponseError::OffsetOutOfRange.code());
    assert_eq!(
        segment_bytes(&cluster, leader, "b"),
        before,
        "nothing touched"
    );
    let (leader_after, epoch_after, isr_after) = cluster.partition_state(leader, "b", 0);
    assert_eq!((leader_after, epoch_after, isr_after), (leader, epoch, isr));
}
