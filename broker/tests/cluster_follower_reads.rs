//! Follower fetching (KIP-392) and AlterReplicaLogDirs at the protocol level, with real
//! processes on loopback: which replica a consumer is sent to (its rack, the leader's
//! rack, no rack, an unknown rack, the selector turned off), what a follower serves (up
//! to its high watermark, only from Fetch v11), and AlterReplicaLogDirs' error codes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::alter_replica_log_dirs_request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, ApiKey, BrokerId, FetchRequest,
    FetchResponse,
};
use kafka_protocol::protocol::StrBytes;
use oxbow_testkit::Cluster;
use oxbow_testkit::client::{batch, name};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Node 1 (a voter, rack r1, the leader) and broker-only nodes 2 and 3 in racks r2 and
/// r3, with `reads` on replicas 1,2,3 holding `records` records, all three in sync.
fn racked_cluster(records: usize, leader_extra: &[&str]) -> Cluster {
    let mut extra = vec!["broker.rack=r1"];
    extra.extend_from_slice(leader_extra);
    let mut cluster = Cluster::start(1, 0, &extra);
    cluster.add_observer(2, &["broker.rack=r2"]);
    cluster.add_observer(3, &["broker.rack=r3"]);
    cluster.wait_ready(&[1, 2, 3]);
    cluster.create_assigned(1, "reads", &[&[1, 2, 3]]);
    let values: Vec<String> = (0..records).map(|i| format!("value-{i}")).collect();
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    let response = cluster.client(1).produce("reads", 0, batch(&values, 100));
    assert_eq!(
        oxbow_testkit::client::partition_error(&response),
        0,
        "{response:?}"
    );
    cluster.wait_for("reads in sync on all three", TIMEOUT, || {
        cluster.partition_state(1, "reads", 0).2 == vec![1, 2, 3]
    });
    cluster
}

/// One Fetch of `reads-0` from `offset` by a consumer in `rack` at `version`.
fn fetch(cluster: &Cluster, node: i32, version: i16, rack: &str, offset: i64) -> PartitionData {
    // Fetch v13+ names topics by id.
    let topic_id = cluster.topic_metadata(1, "reads").topic_id;
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(1 << 20)
        .with_rack_id(StrBytes::from_string(rack.to_string()))
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(name("reads"))
                .with_topic_id(topic_id)
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ]);
    let response: FetchResponse = cluster
        .client(node)
        .request(ApiKey::Fetch, version, &request);
    response.responses[0].partitions[0].clone()
}

fn record_bytes(data: &PartitionData) -> usize {
    data.records.as_ref().map_or(0, |r| r.len())
}

#[test]
fn the_leader_sends_a_consumer_to_its_racks_in_sync_replica() {
    let cluster = racked_cluster(50, &[]);
    // Fetch v11+ with a rack: the leader names broker 3 and serves no records.
    for version in [11, 12, 13, 17] {
        let sent = fetch(&cluster, 1, version, "r3", 0);
        assert_eq!(sent.error_code, 0, "v{version}: {sent:?}");
        assert_eq!(sent.preferred_read_replica.0, 3, "v{version}");
        assert_eq!(
            record_bytes(&sent),
            0,
            "v{version}: no records with a redirect"
        );
        assert_eq!(sent.high_watermark, 50, "v{version}");
    }
    let to_two = fetch(&cluster, 1, 13, "r2", 0);
    assert_eq!(to_two.preferred_read_replica.0, 2);
    // The leader's own rack, no rack, a rack no replica is in: the leader serves.
    for rack in ["r1", "", "r9"] {
        let served = fetch(&cluster, 1, 13, rack, 0);
        assert_eq!(served.preferred_read_replica.0, -1, "rack {rack:?}");
        assert!(record_bytes(&served) > 0, "rack {rack:?}: {served:?}");
    }
    // The follower serves what the leader would, up to its high watermark.
    let from_leader = fetch(&cluster, 1, 13, "", 0);
    cluster.wait_for("broker 3 to learn the high watermark", TIMEOUT, || {
        fetch(&cluster, 3, 13, "r3", 0).high_watermark == 50
    });
    let from_follower = fetch(&cluster, 3, 13, "r3", 0);
    assert_eq!(from_follower.error_code, 0, "{from_follower:?}");
    assert_eq!(
        from_follower.preferred_read_replica.0, -1,
        "followers do not redirect"
    );
    assert_eq!(from_follower.records, from_leader.records, "the same bytes");
    // Past the follower's log end: out of range, as Kafka answers.
    let beyond = fetch(&cluster, 3, 13, "r3", 51);
    assert_eq!(beyond.error_code, ResponseError::OffsetOutOfRange.code());
    // Before KIP-392 (Fetch v10) consumers read from leaders only.
    let old = fetch(&cluster, 3, 10, "", 0);
    assert_eq!(
        old.error_code,
        ResponseError::NotLeaderOrFollower.code(),
        "{old:?}"
    );
}

#[test]
fn the_leader_selector_keeps_consumers_on_the_leader() {
    let cluster = racked_cluster(
        10,
        &["replica.selector.class=org.apache.kafka.common.replica.LeaderSelector"],
    );
    let served = fetch(&cluster, 1, 13, "r3", 0);
    assert_eq!(served.preferred_read_replica.0, -1);
    assert!(record_bytes(&served) > 0);
}

fn alter_dirs(cluster: &Cluster, node: i32, path: &str, topic: &str, partition: i32) -> i16 {
    let request = AlterReplicaLogDirsRequest::default().with_dirs(vec![
        AlterReplicaLogDir::default()
            .with_path(StrBytes::from_string(path.to_string()))
            .with_topics(vec![
                AlterReplicaLogDirTopic::default()
                    .with_name(name(topic))
                    .with_partitions(vec![partition]),
            ]),
    ]);
    let response: AlterReplicaLogDirsResponse =
        cluster
            .client(node)
            .request(ApiKey::AlterReplicaLogDirs, 2, &request);
    response.results[0].partitions[0].error_code
}

#[test]
fn alter_replica_log_dirs_moves_a_replica_and_answers_with_kafkas_error_codes() {
    let dirs = tempfile::tempdir().unwrap();
    let (d1, d2) = (dirs.path().join("d1"), dirs.path().join("d2"));
    let log_dirs = format!("log.dirs={},{}", d1.display(), d2.display());
    let mut cluster = Cluster::start(1, 0, &[&log_dirs]);
    cluster.add_observer(2, &[]);
    cluster.wait_ready(&[1, 2]);
    cluster.create_assigned(1, "placed", &[&[1]]);
    cluster.create_assigned(1, "elsewhere", &[&[2]]);
    let values: Vec<String> = (0..200).map(|i| format!("value-{i}")).collect();
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    let produced = cluster.client(1).produce("placed", 0, batch(&values, 1000));
    assert_eq!(oxbow_testkit::client::partition_error(&produced), 0);
    let (from, to) = if d1.join("placed-0").is_dir() {
        (&d1, &d2)
    } else {
        (&d2, &d1)
    };
    assert!(from.join("placed-0").is_dir());

    let path = |p: &std::path::Path| p.display().to_string();
    assert_eq!(
        alter_dirs(&cluster, 1, &path(to), "no-such-topic", 0),
        ResponseError::UnknownTopicOrPartition.code()
    );
    assert_eq!(
        alter_dirs(&cluster, 1, "/not/a/log/dir", "placed", 0),
        ResponseError::LogDirNotFound.code()
    );
    assert_eq!(
        alter_dirs(&cluster, 1, &path(to), "elsewhere", 0),
        ResponseError::NotLeaderOrFollower.code(),
        "a replica this broker does not hold"
    );
    assert!(from.join("placed-0").is_dir(), "nothing moved by refusals");

    assert_eq!(alter_dirs(&cluster, 1, &path(to), "placed", 0), 0);
    cluster.wait_for("the replica to move", TIMEOUT, || {
        to.join("placed-0").is_dir() && !from.join("placed-0").exists()
    });
    let read = cluster.client(1).fetch("placed", 0, 0);
    let data = &read.responses[0].partitions[0];
    assert_eq!(data.error_code, 0);
    assert_eq!(data.high_watermark, 200);
    assert!(record_bytes(data) > 200 * 1000, "every record still there");
    // Naming the directory it is in now changes nothing.
    assert_eq!(alter_dirs(&cluster, 1, &path(to), "placed", 0), 0);
    let again = cluster.client(1).produce("placed", 0, batch(&["after"], 0));
    assert_eq!(oxbow_testkit::client::partition_error(&again), 0);
    assert!(to.join("placed-0").is_dir());
}
