//! The coordinator over real `__consumer_offsets` logs in a temporary directory, through
//! their replicas, with a manual clock: offset expiry (`offsets.retention.minutes`) and its persistence.

use std::sync::Arc;

use bytes::Bytes;
use prometheus::Registry;

use super::classic::JoinRequest;
use super::metrics::GroupMetrics;
use super::{GroupCoordinator, OFFSETS_TOPIC};
use crate::config::GroupConfig;
use crate::coordinator::{CoordinatorShard, loader};
use crate::model::TopicPartition;
use crate::replication::testing::leading_all;
use crate::storage::ManualClock;

const START_MS: i64 = 1_700_000_000_000;
const RETENTION_MS: i64 = 60_000;

fn config() -> GroupConfig {
    config_with_delay(0)
}

fn config_with_delay(initial_rebalance_delay_ms: i64) -> GroupConfig {
    GroupConfig {
        offsets_partitions: 3,
        initial_rebalance_delay_ms,
        offsets_retention_ms: RETENTION_MS,
        retention_check_interval_ms: 1_000,
        ..GroupConfig::default()
    }
}

/// A coordinator loaded from the offsets logs in `dir` (created on first use), this
/// broker (node 1) the only replica and leader of every offsets partition, loaded as the
/// coordinator runtime loads them.
fn open(dir: &std::path::Path, clock: &Arc<ManualClock>) -> GroupCoordinator {
    open_with(dir, clock, config())
}

fn open_with(
    dir: &std::path::Path,
    clock: &Arc<ManualClock>,
    config: GroupConfig,
) -> GroupCoordinator {
    let (replicas, changes) =
        leading_all(dir, clock.clone(), OFFSETS_TOPIC, config.offsets_partitions);
    let coordinator = GroupCoordinator::new(
        config,
        Arc::clone(&replicas),
        clock.clone(),
        GroupMetrics::new(&Registry::new()).unwrap(),
    );
    for change in changes {
        assert!(change.leading, "{change:?}");
        let replica = replicas.partition(&change.topic_partition).unwrap();
        coordinator.load(change.topic_partition.partition, 0, loader::read(&replica));
    }
    coordinator
}

fn committed(coordinator: &GroupCoordinator, group: &str) -> Option<i64> {
    coordinator
        .fetch_offsets(group, Some(vec![TopicPartition::new("t", 0)]))
        .first()
        .and_then(|f| f.offset.as_ref())
        .map(|o| o.offset)
}

fn commit(coordinator: &GroupCoordinator, group: &str, member: &str, generation: i32, offset: i64) {
    let results = coordinator.commit_offsets(
        group,
        member,
        None,
        generation,
        vec![(TopicPartition::new("t", 0), offset, -1, None)],
    );
    assert!(
        results.len() == 1 && results.iter().all(|(_, r)| r.is_ok()),
        "one partition committed: {results:?}"
    );
}

fn join_request(member_id: &str) -> JoinRequest {
    JoinRequest {
        member_id: member_id.to_string(),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 600_000,
        rebalance_timeout_ms: 600_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from_static(b"meta"))],
        require_known_member_id: true,
        ..JoinRequest::default()
    }
}

/// One classic member joins and syncs `group` (no initial delay: both complete at once).
fn join_one(coordinator: &GroupCoordinator, group: &str) -> (String, i32) {
    let request = join_request;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let first = runtime.block_on(coordinator.join(group, request("")));
    let joined = runtime.block_on(coordinator.join(group, request(&first.member_id)));
    assert_eq!(joined.error, None);
    let member = joined.member_id;
    let assignment = vec![(member.clone(), Bytes::new())];
    let synced = runtime.block_on(coordinator.sync(
        group,
        &member,
        None,
        joined.generation_id,
        None,
        None,
        assignment,
    ));
    assert!(synced.is_ok(), "{synced:?}");
    (member, joined.generation_id)
}

#[test]
fn offsets_of_an_empty_group_expire_after_the_retention_and_stay_expired() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_MS));
    let coordinator = open(dir.path(), &clock);
    commit(&coordinator, "standalone", "", -1, 42);
    let (member, generation) = join_one(&coordinator, "active");
    commit(&coordinator, "active", &member, generation, 7);

    clock.advance(RETENTION_MS - 1);
    coordinator.tick();
    assert_eq!(committed(&coordinator, "standalone"), Some(42), "not yet");

    clock.advance(1_000);
    coordinator.tick();
    assert_eq!(committed(&coordinator, "standalone"), None);
    assert_eq!(
        committed(&coordinator, "active"),
        Some(7),
        "a group with members keeps its offsets"
    );

    // The tombstones are in __consumer_offsets: a restarted coordinator agrees.
    drop(coordinator);
    let reloaded = open(dir.path(), &clock);
    assert_eq!(committed(&reloaded, "standalone"), None);
    assert_eq!(committed(&reloaded, "active"), Some(7));
}

#[test]
fn a_new_commit_restarts_the_retention_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_MS));
    let coordinator = open(dir.path(), &clock);
    commit(&coordinator, "g", "", -1, 1);
    clock.advance(RETENTION_MS / 2);
    commit(&coordinator, "g", "", -1, 2);
    clock.advance(RETENTION_MS / 2 + 1_000);
    coordinator.tick();
    assert_eq!(committed(&coordinator, "g"), Some(2));
    clock.advance(RETENTION_MS / 2);
    coordinator.tick();
    assert_eq!(committed(&coordinator, "g"), None);
}

/// A JoinGroup parked in the initial rebalance delay when the group's offsets partition
/// changes hands is answered NOT_COORDINATOR at once; before, it was never answered and
/// librdkafka waited out max.poll.interval.ms (CI: a group that read nothing for minutes).
#[test]
fn a_parked_join_is_answered_not_coordinator_when_the_partition_changes_hands() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_MS));
    let coordinator = open_with(dir.path(), &clock, config_with_delay(3_000));
    let group = "readers";
    let partition = super::records::partition_for(group, config().offsets_partitions);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let first = coordinator.join(group, join_request("")).await;
        assert_eq!(first.error, Some(super::GroupError::MemberIdRequired));
        let mut parked = std::pin::pin!(coordinator.join(group, join_request(&first.member_id)));
        let pending = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(parked.as_mut().poll(cx).is_pending())
        })
        .await;
        assert!(pending, "the join waits out the initial rebalance delay");
        coordinator.unload(partition);
        // A guard against hanging, not a timing claim: the answer is sent by the call above.
        let answer = tokio::time::timeout(std::time::Duration::from_secs(30), parked)
            .await
            .expect("the parked join was never answered");
        assert_eq!(answer.error, Some(super::GroupError::NotCoordinator));
        assert_eq!(answer.member_id, first.member_id);
    });
}
