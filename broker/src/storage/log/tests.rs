use proptest::prelude::*;

use super::*;
use crate::storage::batch::BatchHeader;
use crate::storage::log_config::CleanupPolicy;
use crate::storage::test_support::*;

#[test]
fn appends_assign_offsets_and_read_back_byte_identical() {
    let t = test_log(LogConfig::default());
    let first = batch(3, 10, START_MS);
    let second = batch(2, 10, START_MS + 5);
    let info = t.log.append(&first, 4).unwrap();
    assert_eq!(
        (info.base_offset, info.last_offset, info.record_count),
        (0, 2, 3)
    );
    let info = t.log.append(&second, 4).unwrap();
    assert_eq!((info.base_offset, info.last_offset), (3, 4));
    assert_eq!(t.log.log_end_offset(), 5);
    assert_eq!(t.log.high_watermark(), 5);

    let read = t.log.read(0, 1 << 20).unwrap();
    let bytes = read.read_to_vec().unwrap();
    assert_eq!(bytes.len(), first.len() + second.len());
    // Everything but base offset and leader epoch is what the producer sent.
    assert_eq!(bytes[16..first.len()], first[16..]);
    assert_eq!(bytes[first.len() + 16..], second[16..]);
    let header = BatchHeader::parse(&bytes[first.len()..]).unwrap();
    assert_eq!((header.base_offset, header.partition_leader_epoch), (3, 4));

    // A read from the middle of a batch starts at that batch; at the end it is empty.
    let read = t.log.read(4, 1 << 20).unwrap();
    assert_eq!(read.read_to_vec().unwrap()[16..], second[16..]);
    assert!(t.log.read(5, 1 << 20).unwrap().regions.is_empty());
    assert!(matches!(
        t.log.read(6, 100),
        Err(LogError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn rejected_batches_leave_the_log_untouched() {
    let t = test_log(LogConfig {
        max_message_bytes: 200,
        ..LogConfig::default()
    });
    t.log.append(&batch(1, 10, START_MS), 0).unwrap();
    let before = t.log.read(0, 1 << 20).unwrap().read_to_vec().unwrap();
    let mut set = batch(1, 10, START_MS);
    let mut corrupt = batch(1, 10, START_MS);
    let last = corrupt.len() - 1;
    corrupt[last] ^= 1;
    set.extend_from_slice(&corrupt);
    assert!(matches!(
        t.log.append(&set, 0),
        Err(LogError::InvalidBatch {
            source: BatchError::CrcMismatch { .. },
            ..
        })
    ));
    assert!(matches!(
        t.log.append(&batch(1, 500, START_MS), 0),
        Err(LogError::InvalidBatch {
            source: BatchError::TooLarge { .. },
            ..
        })
    ));
    assert_eq!(t.log.log_end_offset(), 1);
    assert_eq!(
        t.log.read(0, 1 << 20).unwrap().read_to_vec().unwrap(),
        before
    );
}

#[test]
fn log_append_time_is_stamped() {
    let t = test_log(LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    });
    let info = t.log.append(&batch(2, 10, 5), 0).unwrap();
    assert_eq!(info.log_append_time, Some(START_MS));
    let bytes = t.log.read(0, 1 << 20).unwrap().read_to_vec().unwrap();
    let header = crate::storage::batch::validate_batch(
        &bytes,
        usize::MAX,
        crate::storage::batch::BatchOrigin::Producer,
    )
    .unwrap();
    assert!(header.is_log_append_time());
    assert_eq!(header.max_timestamp, START_MS);
}

#[test]
fn segments_roll_on_size_and_age_and_reads_span_them() {
    let t = test_log(LogConfig {
        segment_ms: 1000,
        ..small_config()
    });
    for i in 0..20 {
        t.log.append(&batch(2, 300, START_MS + i), 0).unwrap();
    }
    let by_size = t.log.segment_count();
    assert!(by_size > 3, "expected several segments, got {by_size}");
    t.clock.advance(1001);
    t.log.append(&batch(1, 10, START_MS + 100), 0).unwrap();
    assert_eq!(t.log.segment_count(), by_size + 1, "segment.ms should roll");
    let all = all_records(&t.log, 0);
    assert_eq!(all.len(), 41);
    assert!(
        all.iter()
            .enumerate()
            .all(|(i, (offset, _, _))| *offset == i as u64)
    );
    // A read with a large budget crosses segment boundaries.
    assert!(t.log.read(0, 1 << 20).unwrap().regions.len() > 1);
}

#[test]
fn a_batch_that_does_not_fit_ends_the_read_instead_of_being_skipped() {
    let t = test_log(LogConfig::default());
    t.log.append(&batch(1, 100, START_MS), 0).unwrap();
    t.log.append(&batch(1, 5000, START_MS), 0).unwrap();
    t.log.roll().unwrap();
    t.log.append(&batch(1, 100, START_MS), 0).unwrap();
    // Room for the first batch, not the second: the read stops before the second (a
    // reader must not jump to the next segment and miss offset 1).
    let read = t.log.read(0, 1000).unwrap();
    assert_eq!(read.next_offset, 1);
    assert_eq!(read.regions.len(), 1);
    let next = t.log.read(read.next_offset, 1000).unwrap();
    assert_eq!(next.next_offset, 2, "offset 1 comes next, whole");
    assert_eq!(t.log.read(2, 1000).unwrap().next_offset, 3);
}

#[test]
fn first_batch_is_returned_whole_even_above_max_bytes() {
    let t = test_log(LogConfig::default());
    t.log.append(&batch(1, 1000, START_MS), 0).unwrap();
    t.log.append(&batch(1, 1000, START_MS), 0).unwrap();
    let read = t.log.read(0, 10).unwrap();
    assert_eq!(read.regions.len(), 1);
    assert_eq!(read.next_offset, 1);
    assert!(read.bytes() > 1000);
}

#[test]
fn offsets_by_timestamp_and_max_timestamp() {
    let t = test_log(small_config());
    // Timestamps go up, with one batch out of order.
    let stamps = [100, 200, 150, 400, 300, 500];
    for (i, ts) in stamps.iter().enumerate() {
        t.log.append(&batch(3, 200, START_MS + ts), 0).unwrap();
        if i == 2 {
            t.log.roll().unwrap();
        }
    }
    // Records of batch i have offsets 3i..3i+2 and timestamps ts, ts+1, ts+2.
    assert_eq!(
        t.log.offset_for_timestamp(START_MS).unwrap(),
        Some((0, START_MS + 100))
    );
    assert_eq!(
        t.log.offset_for_timestamp(START_MS + 101).unwrap(),
        Some((1, START_MS + 101))
    );
    assert_eq!(
        t.log.offset_for_timestamp(START_MS + 250).unwrap(),
        Some((9, START_MS + 400))
    );
    assert_eq!(
        t.log.offset_for_timestamp(START_MS + 502).unwrap(),
        Some((17, START_MS + 502))
    );
    assert_eq!(t.log.offset_for_timestamp(START_MS + 503).unwrap(), None);
    assert_eq!(
        t.log.max_timestamp_offset().unwrap(),
        Some((17, START_MS + 502))
    );
}

#[test]
fn retention_deletes_old_sealed_segments_only() {
    let t = test_log(LogConfig {
        retention_ms: 10_000,
        ..small_config()
    });
    for i in 0..30 {
        t.log.append(&batch(1, 500, START_MS + i), 0).unwrap();
    }
    let segments = t.log.segment_count();
    assert!(segments > 2);
    assert_eq!(t.log.apply_retention().unwrap().deleted_segments, 0);
    t.clock.advance(1_000_000);
    let report = t.log.apply_retention().unwrap();
    assert_eq!(
        report.deleted_segments,
        segments - 1,
        "all but the active segment"
    );
    assert_eq!(t.log.segment_count(), 1);
    assert_eq!(t.log.log_start_offset(), t.log.segments()[0].base_offset());
    assert_eq!(t.log.log_end_offset(), 30);
    assert!(matches!(
        t.log.read(0, 100),
        Err(LogError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn an_empty_cleanup_policy_keeps_everything_but_delete_records_still_deletes() {
    let t = test_log(LogConfig {
        retention_ms: 10_000,
        retention_bytes: 1000,
        cleanup_policy: CleanupPolicy::parse("").unwrap(),
        ..small_config()
    });
    for i in 0..30 {
        t.log.append(&batch(1, 500, START_MS + i), 0).unwrap();
    }
    let segments = t.log.segment_count();
    t.clock.advance(1_000_000);
    assert_eq!(t.log.apply_retention().unwrap().deleted_segments, 0);
    assert_eq!(t.log.segment_count(), segments);
    assert_eq!(t.log.log_start_offset(), 0);
    // DeleteRecords' own refusal is for compact-only policies (replication/partition).
    assert_eq!(t.log.advance_log_start_offset(10).unwrap(), 10);
}

#[test]
fn retention_by_bytes_keeps_the_newest_within_the_limit() {
    let t = test_log(LogConfig {
        retention_bytes: 5000,
        retention_ms: -1,
        ..small_config()
    });
    for i in 0..40 {
        t.log.append(&batch(1, 500, START_MS + i), 0).unwrap();
    }
    t.log.apply_retention().unwrap();
    let size = t.log.size_bytes();
    let oldest = t.log.segments()[0].size();
    assert!(
        size - oldest < 5000,
        "could still delete: size {size}, oldest {oldest}"
    );
    // Retention deleted something, and never more than it had to: what is left still
    // holds at least retention.bytes (a deletion happens only while the rest would).
    assert!(t.log.log_start_offset() > 0, "nothing was deleted");
    assert!(size >= 5000, "deleted too much: {size} bytes left of 5000");
}

#[test]
fn delete_records_moves_log_start_and_drops_whole_segments() {
    let t = test_log(small_config());
    for i in 0..20 {
        t.log.append(&batch(1, 500, START_MS + i), 0).unwrap();
    }
    let before = t.log.segment_count();
    assert_eq!(t.log.advance_log_start_offset(12).unwrap(), 12);
    assert_eq!(t.log.log_start_offset(), 12);
    assert!(t.log.segment_count() < before);
    assert!(matches!(
        t.log.read(11, 100),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    assert_eq!(all_records(&t.log, 12).first().map(|r| r.0), Some(12));
    assert!(
        matches!(
            t.log.advance_log_start_offset(21),
            Err(LogError::OffsetOutOfRange { .. })
        ),
        "beyond the high watermark"
    );
    let (t, _) = t.reopen(true);
    assert_eq!(
        t.log.log_start_offset(),
        12,
        "log start offset survives restart"
    );
}

#[test]
fn a_new_log_start_trims_the_leader_epochs_below_it() {
    use crate::storage::leader_epochs::EpochEntry;
    let t = test_log(small_config());
    for (epoch, count) in [(1, 10), (2, 10), (3, 5)] {
        t.log.assign_leader_epoch(epoch).unwrap();
        for i in 0..count {
            t.log.append(&batch(1, 500, START_MS + i), epoch).unwrap();
        }
    }
    let entries = |t: &TestLog| t.log.epochs.lock().entries().to_vec();
    let entry = |epoch, start_offset| EpochEntry {
        epoch,
        start_offset,
    };
    assert_eq!(entries(&t), [entry(1, 0), entry(2, 10), entry(3, 20)]);
    t.log.advance_log_start_offset(12).unwrap();
    assert_eq!(entries(&t), [entry(2, 12), entry(3, 20)]);
    // Epoch 1 ended below the log: a follower asking for it is told no epoch this log has.
    assert_eq!(t.log.end_offset_for_epoch(1), None);
    assert_eq!(t.log.end_offset_for_epoch(2), Some((2, 20)));
    // The checkpoint holds the trimmed cache, and a restart rebuilds the same.
    let (t, _) = t.reopen(true);
    assert_eq!(entries(&t), [entry(2, 12), entry(3, 20)]);
}

#[test]
fn truncate_to_removes_the_tail_across_segments() {
    let t = test_log(small_config());
    for i in 0..20 {
        t.log.append(&batch(2, 400, START_MS + i), 0).unwrap();
    }
    assert_eq!(
        t.log.truncate_to(15).unwrap(),
        14,
        "the batch holding 15 goes too"
    );
    assert_eq!(t.log.log_end_offset(), 14);
    assert_eq!(t.log.high_watermark(), 14);
    t.log.append(&batch(2, 400, START_MS), 0).unwrap();
    let all = all_records(&t.log, 0);
    assert_eq!(all.len(), 16);
    assert!(all.iter().enumerate().all(|(i, r)| r.0 == i as u64));
    assert_eq!(t.log.truncate_to(0).unwrap(), 0);
    assert!(all_records(&t.log, 0).is_empty());
}

#[test]
fn compaction_keeps_the_newest_value_per_key_and_expires_tombstones() {
    let t = test_log(LogConfig {
        cleanup_policy: CleanupPolicy::COMPACT,
        delete_retention_ms: 1000,
        ..small_config()
    });
    let ts = START_MS;
    t.log
        .append(
            &keyed_batch(&[("a", Some("1")), ("b", Some("1")), ("c", Some("1"))], ts),
            0,
        )
        .unwrap();
    t.log
        .append(&keyed_batch(&[("a", Some("2")), ("b", None)], ts), 0)
        .unwrap();
    t.log.roll().unwrap();
    t.log
        .append(&keyed_batch(&[("a", Some("3"))], ts), 0)
        .unwrap();
    t.log.roll().unwrap();
    t.log
        .append(&keyed_batch(&[("c", Some("active"))], ts), 0)
        .unwrap();

    let report = t.log.compact().unwrap();
    assert_eq!(report.records_removed, 3, "a=1, b=1, a=2 are superseded");
    let values: Vec<_> = all_records(&t.log, 0)
        .into_iter()
        .map(|(o, k, v)| {
            (
                o,
                String::from_utf8(k.unwrap().to_vec()).unwrap(),
                v.map(|v| String::from_utf8(v.to_vec()).unwrap()),
            )
        })
        .collect();
    assert_eq!(
        values,
        vec![
            (2, "c".into(), Some("1".into())),
            (4, "b".into(), None),
            (5, "a".into(), Some("3".into())),
            (6, "c".into(), Some("active".into())),
        ]
    );
    // After delete.retention.ms the tombstone goes too; offsets never change.
    t.clock.advance(2000);
    assert_eq!(t.log.compact().unwrap().records_removed, 1);
    let offsets: Vec<u64> = all_records(&t.log, 0).into_iter().map(|r| r.0).collect();
    assert_eq!(offsets, vec![2, 5, 6]);
    // The compacted log survives an unclean reopen intact.
    let (t, _) = t.reopen(false);
    let offsets: Vec<u64> = all_records(&t.log, 0).into_iter().map(|r| r.0).collect();
    assert_eq!(offsets, vec![2, 5, 6]);
    assert_eq!(t.log.log_end_offset(), 7);
}

#[test]
fn clean_reopen_trusts_segments_and_unclean_reopen_scans_only_the_active_one() {
    let t = test_log(small_config());
    for i in 0..30 {
        t.log.append(&batch(1, 500, START_MS + i), 0).unwrap();
    }
    t.log.flush_sealed().unwrap();
    let segments = t.log.segment_count();
    let (t, report) = t.reopen(false);
    assert_eq!(
        report.recovered_segments, 1,
        "only the active segment is scanned"
    );
    assert_eq!(report.segments, segments);
    assert_eq!(t.log.log_end_offset(), 30);
    t.log.close().unwrap();
    let (t, report) = t.reopen(true);
    assert_eq!(report.recovered_segments, 0);
    assert_eq!(all_records(&t.log, 0).len(), 30);
    t.log.append(&batch(1, 10, START_MS), 0).unwrap();
    assert_eq!(t.log.log_end_offset(), 31);
}

#[test]
fn flush_messages_moves_the_recovery_point() {
    let t = test_log(LogConfig {
        flush_messages: 3,
        ..LogConfig::default()
    });
    t.log.append(&batch(2, 10, START_MS), 0).unwrap();
    assert_eq!(t.log.recovery_point(), 0);
    t.log.append(&batch(1, 10, START_MS), 0).unwrap();
    assert_eq!(t.log.recovery_point(), 3);
}

fn arbitrary_batch() -> impl Strategy<Value = Vec<u8>> {
    (1usize..6, 0usize..700, 0i64..10_000)
        .prop_map(|(count, size, ts)| batch(count, size, START_MS + ts))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_batches_round_trip_byte_identically(batches in prop::collection::vec(arbitrary_batch(), 1..40)) {
        let t = test_log(small_config());
        let mut expected_offset = 0u64;
        for produced in &batches {
            let info = t.log.append(produced, 1).unwrap();
            prop_assert_eq!(info.base_offset, expected_offset);
            expected_offset = info.last_offset + 1;
        }
        // Read batch by batch from every batch's first offset and compare bytes.
        let mut offset = 0u64;
        for produced in &batches {
            let read = t.log.read(offset, 1).unwrap();
            let bytes = read.read_to_vec().unwrap();
            prop_assert_eq!(&bytes[16..], &produced[16..]);
            let header = BatchHeader::parse(&bytes).unwrap();
            prop_assert_eq!(header.base_offset as u64, offset);
            offset = read.next_offset;
        }
        prop_assert_eq!(offset, t.log.log_end_offset());
    }

    #[test]
    fn index_lookups_agree_with_a_linear_scan(batches in prop::collection::vec(arbitrary_batch(), 1..60), probes in prop::collection::vec(0u64..400, 1..20)) {
        let t = test_log(LogConfig { segment_bytes: 1 << 20, index_interval_bytes: 300, ..LogConfig::default() });
        let mut spans = Vec::new();
        for produced in &batches {
            let info = t.log.append(produced, 0).unwrap();
            let header = BatchHeader::parse(produced).unwrap();
            spans.push((info.base_offset, info.last_offset, header.max_timestamp));
        }
        let segment = t.log.segments().pop().unwrap();
        for probe in probes {
            let expected = spans.iter().find(|(_, last, _)| *last >= probe).map(|(base, _, _)| *base as i64);
            let found = segment.find_batch(probe).unwrap().map(|(_, h)| h.base_offset);
            prop_assert_eq!(found, expected, "offset probe {}", probe);
            let timestamp = START_MS + probe as i64 * 25;
            let expected = spans.iter().find(|(_, _, max)| *max >= timestamp).map(|(base, _, _)| *base as i64);
            let found = segment.find_by_timestamp(timestamp).unwrap().map(|(_, h)| h.base_offset);
            prop_assert_eq!(found, expected, "timestamp probe {}", timestamp);
        }
    }

    #[test]
    fn roll_retention_and_compaction_keep_offsets_dense_and_ordered(
        keys in prop::collection::vec(0u8..6, 1..80),
        retention_after in 0usize..80,
    ) {
        let t = test_log(LogConfig { cleanup_policy: CleanupPolicy { delete: true, compact: true }, retention_bytes: -1, segment_bytes: 600, ..small_config() });
        let mut newest = std::collections::BTreeMap::new();
        for (i, key) in keys.iter().enumerate() {
            let name = format!("k{key}");
            t.log.append(&keyed_batch(&[(name.as_str(), Some("v"))], START_MS), 0).unwrap();
            newest.insert(name, i as u64);
            if i == retention_after {
                t.log.compact().unwrap();
            }
        }
        t.log.compact().unwrap();
        let active_base = t.log.segments().last().unwrap().base_offset();
        let records = all_records(&t.log, t.log.log_start_offset());
        let offsets: Vec<u64> = records.iter().map(|r| r.0).collect();
        prop_assert!(offsets.windows(2).all(|w| w[0] < w[1]), "offsets not increasing: {:?}", offsets);
        // Every key's newest record survives, and below the active segment no key appears twice.
        for (key, offset) in &newest {
            prop_assert!(offsets.contains(offset), "newest record of {} at {} is gone", key, offset);
        }
        let mut seen = std::collections::BTreeSet::new();
        for (offset, key, _) in records.iter().filter(|r| r.0 < active_base) {
            prop_assert!(seen.insert(key.clone()), "key {:?} twice in sealed segments (offset {})", key, offset);
        }
        prop_assert_eq!(t.log.log_end_offset(), keys.len() as u64);
    }
}

#[test]
fn preallocate_reserves_the_segment_on_disk_and_the_roll_gives_it_back() {
    use std::os::unix::fs::MetadataExt;
    let allocated = |t: &crate::storage::test_support::TestLog, base: u64| {
        let path = t.log.dir().join(format!("{base:020}.log"));
        let meta = std::fs::metadata(path).unwrap();
        (meta.len(), meta.blocks() * 512)
    };
    let segment_bytes = 1 << 20;
    let t = test_log(LogConfig {
        preallocate: true,
        segment_bytes,
        ..LogConfig::default()
    });
    let (length, reserved) = allocated(&t, 0);
    assert_eq!(length, 0, "the data ends where the file ends");
    assert!(reserved >= segment_bytes, "reserved {reserved}");
    t.log.append(&batch(1, 10, START_MS), 0).unwrap();
    t.log.roll().unwrap();
    let (length, reserved) = allocated(&t, 0);
    assert!(reserved < segment_bytes / 2, "sealed, still {reserved}");
    assert!(length > 0);

    let plain = test_log(LogConfig {
        segment_bytes,
        ..LogConfig::default()
    });
    assert_eq!(allocated(&plain, 0).1, 0);
}

#[test]
fn segment_jitter_rolls_segments_before_segment_ms_by_their_own_share() {
    let config = LogConfig {
        segment_ms: 100_000,
        segment_jitter_ms: 50_000,
        ..LogConfig::default()
    };
    let rolls: Vec<i64> = (0..64).map(|base| config.roll_ms(base * 1000)).collect();
    assert!(rolls.iter().all(|ms| (50_001..=100_000).contains(ms)));
    let distinct: std::collections::BTreeSet<_> = rolls.iter().collect();
    assert!(distinct.len() > 32, "jitter barely varies: {distinct:?}");
    assert_eq!(
        LogConfig::default().roll_ms(7),
        LogConfig::default().segment_ms
    );

    let t = test_log(config.clone());
    t.log.append(&batch(1, 10, START_MS), 0).unwrap();
    let due = config.roll_ms(0);
    t.clock.advance(due);
    t.log.append(&batch(1, 10, START_MS), 0).unwrap();
    assert_eq!(t.log.segment_count(), 1);
    t.clock.advance(1);
    t.log.append(&batch(1, 10, START_MS), 0).unwrap();
    assert_eq!(
        t.log.segment_count(),
        2,
        "rolled after {due} ms, not 100000"
    );
}
