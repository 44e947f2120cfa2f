use std::sync::Arc;

use super::*;
use kafka_protocol::records::Compression;

use crate::storage::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use crate::storage::{LogConfig, LogDirHealth, SystemClock};

fn log(dir: &std::path::Path, min_isr: i32) -> Arc<Log> {
    let config = LogConfig {
        min_insync_replicas: min_isr,
        ..LogConfig::default()
    };
    Arc::new(
        Log::create(
            dir,
            TopicPartition::new("t", 0),
            config,
            Arc::new(SystemClock),
            Arc::new(LogDirHealth::new(dir.to_path_buf())),
        )
        .unwrap(),
    )
}

fn batch(count: usize) -> Vec<u8> {
    let records: Vec<SimpleRecord> = (0..count)
        .map(|i| SimpleRecord {
            key: None,
            value: Some(bytes::Bytes::from(format!("v{i}"))),
            timestamp: 1,
            headers: Vec::new(),
        })
        .collect();
    build_batch(&records, Compression::None, ProducerFields::default())
        .unwrap()
        .to_vec()
}

fn state(leader: i32, epoch: i32, partition_epoch: i32, isr: &[i32]) -> PartitionState {
    PartitionState {
        replicas: vec![1, 2, 3],
        in_sync_replicas: isr.to_vec(),
        leader,
        leader_epoch: epoch,
        partition_epoch,
        ..Default::default()
    }
}

#[test]
fn high_watermark_is_the_smallest_end_across_the_isr() {
    let dir = tempfile::tempdir().unwrap();
    let leader = Partition::new(TopicPartition::new("t", 0), 1, log(dir.path(), 2));
    assert_eq!(
        leader.apply(&state(1, 0, 0, &[1, 2, 3]), 0).unwrap(),
        Transition::BecameLeader {
            epoch: 0,
            was_leader: false
        }
    );
    leader.append_as_leader(&batch(5), -1).unwrap();
    assert_eq!(leader.log().log_end_offset(), 5);
    assert_eq!(leader.log().high_watermark(), 0, "no follower has it yet");
    assert_eq!(leader.record_follower_fetch(2, 5, 10).unwrap(), None);
    assert_eq!(
        leader.log().high_watermark(),
        0,
        "replica 3 is in the ISR too"
    );
    leader.record_follower_fetch(3, 3, 10).unwrap();
    assert_eq!(leader.log().high_watermark(), 3);
    leader.record_follower_fetch(3, 5, 10).unwrap();
    assert_eq!(leader.log().high_watermark(), 5);
    assert!(
        leader.record_follower_fetch(4, 5, 10).is_err(),
        "a broker that is not a replica cannot fetch as one"
    );
}

#[test]
fn laggards_leave_and_caught_up_followers_rejoin_through_proposals() {
    let dir = tempfile::tempdir().unwrap();
    let leader = Partition::new(TopicPartition::new("t", 0), 1, log(dir.path(), 1));
    leader.apply(&state(1, 0, 0, &[1, 2, 3]), 0).unwrap();
    leader.append_as_leader(&batch(2), 1).unwrap();
    leader.record_follower_fetch(2, 2, 100).unwrap();
    assert_eq!(leader.check_lagging(20_000, 30_000), None);
    let shrink = leader
        .check_lagging(30_001, 30_000)
        .expect("replica 3 lags");
    assert_eq!(shrink.in_sync_replicas, vec![1, 2]);
    assert_eq!((shrink.leader_epoch, shrink.partition_epoch), (0, 0));
    assert_eq!(
        leader.check_lagging(40_000, 30_000),
        None,
        "one proposal at a time"
    );
    // The controller applied it.
    leader.apply(&state(1, 0, 1, &[1, 2]), 40_000).unwrap();
    assert_eq!(
        leader.log().high_watermark(),
        2,
        "replica 3 no longer holds it back"
    );
    let grow = leader
        .record_follower_fetch(3, 2, 41_000)
        .unwrap()
        .expect("caught up: back into the ISR");
    assert_eq!(grow.in_sync_replicas, vec![1, 2, 3]);
    assert_eq!(grow.partition_epoch, 1);
    // Joining: the high watermark already waits for replica 3 (so it is never throttled).
    assert!(leader.holds_high_watermark(3));
    assert!(leader.holds_high_watermark(2));
}

#[test]
fn only_replicas_in_or_joining_the_isr_hold_the_high_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let leader = Partition::new(TopicPartition::new("t", 0), 1, log(dir.path(), 1));
    leader.apply(&state(1, 0, 0, &[1, 2]), 0).unwrap();
    assert!(leader.holds_high_watermark(2));
    assert!(!leader.holds_high_watermark(3), "out of sync, not joining");
}

#[test]
fn acks_all_is_refused_below_min_insync_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let leader = Partition::new(TopicPartition::new("t", 0), 1, log(dir.path(), 2));
    leader.apply(&state(1, 0, 0, &[1]), 0).unwrap();
    assert!(matches!(
        leader.append_as_leader(&batch(1), -1),
        Err(AppendError::NotEnoughReplicas {
            in_sync: 1,
            required: 2,
            ..
        })
    ));
    assert_eq!(leader.log().log_end_offset(), 0, "nothing appended");
    leader.append_as_leader(&batch(1), 1).unwrap();
    assert_eq!(
        leader.log().log_end_offset(),
        1,
        "acks=1 does not need the ISR"
    );
}

#[test]
fn followers_keep_the_leaders_offsets_and_epochs_and_truncate_divergence() {
    let leader_dir = tempfile::tempdir().unwrap();
    let follower_dir = tempfile::tempdir().unwrap();
    let leader = Partition::new(TopicPartition::new("t", 0), 1, log(leader_dir.path(), 1));
    let follower = Partition::new(TopicPartition::new("t", 0), 2, log(follower_dir.path(), 1));
    leader.apply(&state(1, 3, 0, &[1, 2]), 0).unwrap();
    assert_eq!(
        follower.apply(&state(1, 3, 0, &[1, 2]), 0).unwrap(),
        Transition::BecameFollower {
            leader: 1,
            epoch: 3
        }
    );
    leader.append_as_leader(&batch(4), 1).unwrap();
    let read = leader
        .log()
        .read_with_limit(0, 1 << 20, crate::storage::ReadLimit::LogEnd)
        .unwrap();
    let bytes = read.read_to_vec().unwrap();
    follower.append_as_follower(3, &bytes, 2, 0).unwrap();
    assert_eq!(follower.log().log_end_offset(), 4);
    assert_eq!(follower.log().high_watermark(), 2);
    assert_eq!(follower.log().latest_epoch(), Some(3));
    let copy = follower
        .log()
        .read_with_limit(0, 1 << 20, crate::storage::ReadLimit::LogEnd)
        .unwrap()
        .read_to_vec()
        .unwrap();
    assert_eq!(copy, bytes, "byte-identical replica");
    // The follower takes over in epoch 4 and writes; the old leader's epoch-3 suffix
    // beyond what the new leader has must go when it follows again.
    leader.append_as_leader(&batch(2), 1).unwrap();
    follower.apply(&state(2, 4, 1, &[2]), 0).unwrap();
    follower.append_as_leader(&batch(1), 1).unwrap();
    assert_eq!(follower.log().end_offset_for_epoch(3), Some((3, 4)));
    leader.apply(&state(2, 4, 1, &[2]), 0).unwrap();
    let truncated = leader.truncate_to(4).unwrap();
    assert_eq!(truncated, 4);
    assert_eq!(leader.log().latest_epoch(), Some(3));
}

#[test]
fn a_fetch_answer_arriving_after_the_role_changed_is_not_appended() {
    let dir = tempfile::tempdir().unwrap();
    let replica = Partition::new(TopicPartition::new("t", 0), 2, log(dir.path(), 1));
    replica.apply(&state(1, 3, 0, &[1, 2]), 0).unwrap();
    // This replica leads from epoch 4 on; an answer fetched in epoch 3 arrives late.
    replica.apply(&state(2, 4, 1, &[2]), 0).unwrap();
    let late = batch(2);
    assert!(matches!(
        replica.append_as_follower(3, &late, 2, 0),
        Err(FollowerError::RoleChanged)
    ));
    assert!(matches!(
        replica.truncate_as_follower(3, 0),
        Err(FollowerError::RoleChanged)
    ));
    assert_eq!(replica.log().log_end_offset(), 0, "nothing appended");
    assert_eq!(replica.log().latest_epoch(), Some(4));
}
