//! The cleaner's rules: when a compacted log is cleaned, and which part of it.

use super::*;
use crate::storage::log_config::CleanupPolicy;
use crate::storage::log_config::DirtyRatio;
use crate::storage::test_support::*;

fn compacted(extra: impl FnOnce(&mut LogConfig)) -> TestLog {
    let mut config = LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        ..small_config()
    };
    extra(&mut config);
    test_log(config)
}

/// One sealed segment holding `count` updates of the same key.
fn sealed_updates(t: &TestLog, count: usize, timestamp: i64) {
    for i in 0..count {
        let value = format!("v{i}");
        t.log
            .append(&keyed_batch(&[("k", Some(value.as_str()))], timestamp), 0)
            .unwrap();
    }
    t.log.roll().unwrap();
}

#[test]
fn a_log_is_cleaned_only_once_its_dirty_share_reaches_the_ratio() {
    let t = compacted(|c| c.min_cleanable_dirty_ratio = DirtyRatio(0.75));
    sealed_updates(&t, 4, START_MS);
    // Everything is dirty at first: 100% ≥ 75%.
    assert_eq!(t.log.compact().unwrap().records_removed, 3);
    let clean_size = t.log.size_bytes();
    // A second segment of the same size as the cleaned one: about half dirty, too little.
    t.log
        .append(&keyed_batch(&[("k", Some("v9"))], START_MS), 0)
        .unwrap();
    t.log.roll().unwrap();
    assert!(t.log.size_bytes() < clean_size * 3);
    assert_eq!(t.log.compact().unwrap(), CompactionReport::default());
    // Enough new dirty bytes tip it over.
    sealed_updates(&t, 6, START_MS);
    assert_eq!(t.log.compact().unwrap().records_removed, 7);
    // Nothing new: nothing to do, however low the ratio.
    t.log.update_config(LogConfig {
        min_cleanable_dirty_ratio: DirtyRatio(0.0),
        ..(*t.log.config()).clone()
    });
    assert_eq!(t.log.compact().unwrap(), CompactionReport::default());
}

#[test]
fn records_younger_than_the_min_lag_stay_uncompacted() {
    let t = compacted(|c| c.min_compaction_lag_ms = 10_000);
    sealed_updates(&t, 3, START_MS);
    sealed_updates(&t, 3, START_MS + 8_000);
    // Neither segment is 10 s old yet.
    assert_eq!(t.log.compact().unwrap().records_removed, 0);
    // The first is; only its own duplicates go (the newer segment's keys do not count).
    t.clock.advance(10_000);
    assert_eq!(t.log.compact().unwrap().records_removed, 2);
    assert_eq!(all_records(&t.log, 0).len(), 4);
    // Both are: the first segment's survivor is superseded too.
    t.clock.advance(8_000);
    assert_eq!(t.log.compact().unwrap().records_removed, 3);
    assert_eq!(all_records(&t.log, 0).len(), 1);
}

#[test]
fn the_max_lag_forces_a_clean_below_the_ratio_and_rolls_the_active_segment() {
    let t = compacted(|c| {
        c.min_cleanable_dirty_ratio = DirtyRatio(1.0);
        c.max_compaction_lag_ms = 5_000;
    });
    sealed_updates(&t, 4, START_MS);
    assert_eq!(t.log.compact().unwrap().records_removed, 3);
    sealed_updates(&t, 1, t.log.now_ms());
    // Half dirty, ratio 1.0: not yet.
    assert_eq!(t.log.compact().unwrap().records_removed, 0);
    t.clock.advance(5_001);
    assert_eq!(t.log.compact().unwrap().records_removed, 1);

    // The active segment rolls once it is older than the max lag, though segment.ms is
    // a week, so its records can be cleaned.
    t.log
        .append(&keyed_batch(&[("k", Some("a"))], t.log.now_ms()), 0)
        .unwrap();
    let segments = t.log.segment_count();
    t.clock.advance(5_001);
    t.log
        .append(&keyed_batch(&[("k", Some("b"))], t.log.now_ms()), 0)
        .unwrap();
    assert_eq!(t.log.segment_count(), segments + 1);
}

#[test]
fn a_kept_tombstone_is_removed_after_delete_retention_with_nothing_dirty() {
    let t = compacted(|c| c.delete_retention_ms = 1_000);
    t.log
        .append(&keyed_batch(&[("k", Some("v")), ("k", None)], START_MS), 0)
        .unwrap();
    t.log.roll().unwrap();
    assert_eq!(t.log.compact().unwrap().records_removed, 1);
    assert_eq!(t.log.compact().unwrap().records_removed, 0);
    t.clock.advance(999);
    assert_eq!(t.log.compact().unwrap().records_removed, 0);
    t.clock.advance(2);
    assert_eq!(t.log.compact().unwrap().records_removed, 1);
    assert!(all_records(&t.log, 0).is_empty());
}

/// The issue-30 case: one batch of small records between big single-record batches, some of
/// them superseded inside the batch. The survivors keep their offsets and their batch's
/// header, and survive an unclean reopen (which re-validates the rewritten segment).
#[test]
fn a_batch_with_superseded_records_keeps_its_survivors_at_their_offsets() {
    let t = compacted(|c| c.segment_bytes = 1 << 20);
    for i in 0..3 {
        let value = format!("fill{i}");
        t.log
            .append(
                &keyed_batch(&[("fillA", Some(value.as_str()))], START_MS),
                0,
            )
            .unwrap();
    }
    let mixed: Vec<(String, Option<String>)> = (0..12)
        .map(|i| {
            if i % 3 == 0 && i < 10 {
                ("k1".to_string(), Some(format!("k1-{i}")))
            } else {
                (format!("u{i}"), Some(format!("u-{i}")))
            }
        })
        .collect();
    let keys: Vec<(&str, Option<&str>)> = mixed
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_deref()))
        .collect();
    let producer = crate::storage::batch_builder::ProducerFields {
        producer_id: 42,
        producer_epoch: 3,
        base_sequence: 100,
    };
    t.log
        .append(&producer_batch(&keys, START_MS, producer), 0)
        .unwrap();
    t.log
        .append(&keyed_batch(&[("fillB", Some("last"))], START_MS), 0)
        .unwrap();
    t.log.roll().unwrap();
    let report = t.log.compact().unwrap();
    assert_eq!(report.records_removed, 2 + 3, "fillA twice, k1 three times");
    let (t, _) = t.reopen(false);
    let (t, _) = t.reopen(false);
    let offsets: Vec<u64> = all_records(&t.log, 0).into_iter().map(|r| r.0).collect();
    assert_eq!(offsets, vec![2, 4, 5, 7, 8, 10, 11, 12, 13, 14, 15]);
    // The rewritten batch keeps the base offset, span, producer fields and sequence.
    let read = t.log.read(4, 1).unwrap().read_to_vec().unwrap();
    let header = BatchHeader::parse(&read).unwrap();
    assert_eq!(header.base_offset, 3);
    assert_eq!(header.last_offset_delta, 11);
    assert_eq!(header.record_count, 9);
    assert_eq!(
        (
            header.producer_id,
            header.producer_epoch,
            header.base_sequence
        ),
        (42, 3, 100)
    );
    assert_eq!(t.log.log_end_offset(), 16);
    // A new follower copies the compacted log batch by batch, gaps and all.
    let follower = compacted(|_| {});
    let mut next = 0;
    while next < t.log.log_end_offset() {
        let read = t.log.read(next, 1).unwrap();
        follower
            .log
            .append_replicated(&read.read_to_vec().unwrap())
            .unwrap();
        next = read.next_offset;
    }
    follower
        .log
        .set_high_watermark(follower.log.log_end_offset());
    assert_eq!(follower.log.log_end_offset(), 16);
    assert_eq!(all_records(&follower.log, 0), all_records(&t.log, 0));
}

fn producer_batch(
    keys: &[(&str, Option<&str>)],
    timestamp: i64,
    producer: crate::storage::batch_builder::ProducerFields,
) -> Vec<u8> {
    let records: Vec<crate::storage::batch_builder::SimpleRecord> = keys
        .iter()
        .map(|(k, v)| crate::storage::batch_builder::SimpleRecord {
            key: Some(Bytes::from(k.to_string())),
            value: v.map(|v| Bytes::from(v.to_string())),
            timestamp,
            headers: vec![],
        })
        .collect();
    crate::storage::batch_builder::build_batch(
        &records,
        kafka_protocol::records::Compression::None,
        producer,
    )
    .unwrap()
    .to_vec()
}

#[path = "model_tests.rs"]
mod model_tests;
