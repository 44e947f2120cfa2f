// The tests index bytes and arrays they built themselves.
#![allow(clippy::indexing_slicing)]

use bytes::Bytes;
use kafka_protocol::records::Compression;
use proptest::prelude::*;

use super::*;
use crate::storage::batch::BatchHeader;
use crate::storage::batch_builder::{
    ProducerFields, SimpleRecord, build_marker, build_transactional_batch,
};
use crate::storage::test_support::*;
use crate::storage::{LogConfig, ReadLimit};

fn records(count: usize, size: usize) -> Vec<SimpleRecord> {
    (0..count)
        .map(|i| SimpleRecord {
            key: Some(Bytes::from(format!("k{i}"))),
            value: Some(Bytes::from(vec![b'v'; size])),
            timestamp: START_MS,
            headers: Vec::new(),
        })
        .collect()
}

fn data(producer_id: i64, sequence: i32, count: usize, codec: Compression) -> Vec<u8> {
    data_at(producer_id, 0, sequence, count, codec)
}

fn data_at(
    producer_id: i64,
    epoch: i16,
    sequence: i32,
    count: usize,
    codec: Compression,
) -> Vec<u8> {
    build_transactional_batch(
        &records(count, 40),
        codec,
        ProducerFields {
            producer_id,
            producer_epoch: epoch,
            base_sequence: sequence,
        },
    )
    .unwrap()
    .to_vec()
}

fn marker(producer_id: i64, epoch: i16, commit: bool) -> Vec<u8> {
    build_marker(producer_id, epoch, commit, 3, START_MS)
        .unwrap()
        .to_vec()
}

#[test]
fn markers_are_read_from_their_first_record() {
    for (commit, expected) in [(true, Marker::Commit), (false, Marker::Abort)] {
        let bytes = marker(9, 1, commit);
        let header = BatchHeader::parse(&bytes).unwrap();
        assert!(header.is_control() && header.is_transactional());
        assert_eq!(marker_of(&header, &bytes), Some(expected));
    }
    // A control batch cut short names no marker, and nothing panics.
    let bytes = marker(9, 1, true);
    let header = BatchHeader::parse(&bytes).unwrap();
    assert_eq!(marker_of(&header, &bytes[..BATCH_HEADER_SIZE + 3]), None);
}

#[test]
fn the_last_stable_offset_waits_for_the_oldest_open_transaction() {
    let t = test_log(LogConfig::default());
    t.log.append(&batch(2, 10, START_MS), 0).unwrap(); // 0-1 plain
    t.log.append(&data(7, 0, 3, Compression::None), 0).unwrap(); // 2-4 of 7
    t.log.append(&data(8, 0, 2, Compression::None), 0).unwrap(); // 5-6 of 8
    assert_eq!(t.log.last_stable_offset(), 2);
    assert_eq!(t.log.open_transactions(), 2);
    t.log.append(&marker(8, 0, false), 0).unwrap(); // 7: 8 aborted
    assert_eq!(t.log.last_stable_offset(), 2, "7 still open");
    t.log.append(&marker(7, 0, true), 0).unwrap(); // 8: 7 committed
    assert_eq!(t.log.last_stable_offset(), 9);
    assert_eq!(t.log.open_transactions(), 0);
    assert_eq!(
        t.log.aborted_transactions(0, 9),
        vec![AbortedTransaction {
            producer_id: 8,
            first_offset: 5,
            last_offset: 7,
            last_stable_offset: 2,
        }]
    );
    // A read that ends before the aborted transaction began is told nothing.
    assert!(t.log.aborted_transactions(0, 5).is_empty());
    assert!(t.log.aborted_transactions(8, 9).is_empty());
    // read_committed stops at the last stable offset.
    t.log.append(&data(7, 3, 1, Compression::None), 0).unwrap(); // 9 of 7, open
    let read = t
        .log
        .read_with_limit(0, 1 << 20, ReadLimit::LastStable)
        .unwrap();
    assert_eq!((read.next_offset, read.last_stable_offset), (9, 9));
    // After a crash the transactions are rebuilt from the log.
    let (t, _) = t.reopen(false);
    assert_eq!(t.log.last_stable_offset(), 9);
    assert_eq!(t.log.open_transaction(7), Some(9));
    assert_eq!(t.log.aborted_transactions(0, 10).len(), 1);
}

#[test]
fn a_marker_holds_the_last_stable_offset_until_it_is_replicated() {
    let t = test_log(LogConfig::default());
    t.log.append(&data(7, 0, 2, Compression::None), 0).unwrap(); // 0-1
    t.log.set_high_watermark(2);
    t.log.append(&marker(7, 0, true), 0).unwrap(); // 2
    assert_eq!(
        t.log.last_stable_offset(),
        0,
        "marker above the high watermark"
    );
    t.log.set_high_watermark(3);
    assert_eq!(t.log.last_stable_offset(), 3);
}

#[test]
fn a_marker_of_an_older_epoch_is_fenced_and_a_newer_one_fences() {
    let t = test_log(LogConfig::default());
    t.log.append(&data(7, 0, 1, Compression::None), 0).unwrap();
    t.log.append(&marker(7, 2, false), 0).unwrap();
    assert!(matches!(
        t.log.append(&marker(7, 1, false), 0),
        Err(crate::storage::LogError::ProducerFenced { .. })
    ));
    // The producer's epoch-0 data is fenced by the epoch-2 marker.
    assert!(matches!(
        t.log.append(&data(7, 1, 1, Compression::None), 0),
        Err(crate::storage::LogError::ProducerFenced { .. })
    ));
}

#[test]
fn a_marker_of_a_deposed_coordinator_is_fenced_also_after_a_restart() {
    let coordinated = |producer_id, epoch, commit, coordinator_epoch| {
        build_marker(producer_id, epoch, commit, coordinator_epoch, START_MS)
            .unwrap()
            .to_vec()
    };
    let bytes = coordinated(7, 0, true, 5);
    let header = BatchHeader::parse(&bytes).unwrap();
    assert_eq!(marker_coordinator_epoch(&header, &bytes), Some(5));
    assert_eq!(
        marker_coordinator_epoch(&header, &bytes[..BATCH_HEADER_SIZE + 8]),
        None,
        "a marker cut short names no epoch"
    );
    let t = test_log(LogConfig::default());
    t.log.append(&data(7, 0, 1, Compression::None), 0).unwrap(); // 0
    t.log.append(&coordinated(7, 0, true, 5), 0).unwrap(); // 1, coordinator epoch 5
    t.log.append(&data(7, 1, 1, Compression::None), 0).unwrap(); // 2, the next transaction
    // The deposed coordinator (epoch 4) repeats its marker late: refused, the producer's
    // next transaction stays open.
    assert!(matches!(
        t.log.append(&coordinated(7, 0, false, 4), 0),
        Err(crate::storage::LogError::CoordinatorFenced { .. })
    ));
    assert_eq!(t.log.open_transaction(7), Some(2));
    let (t, _) = t.reopen(false);
    assert!(matches!(
        t.log.append(&coordinated(7, 0, false, 4), 0),
        Err(crate::storage::LogError::CoordinatorFenced { .. })
    ));
    let producer = t
        .log
        .producers()
        .into_iter()
        .find(|(p, _)| p.producer_id == 7);
    assert_eq!(producer.map(|(p, _)| p.coordinator_epoch), Some(5));
    // The same or a newer coordinator ends it.
    t.log.append(&coordinated(7, 0, true, 5), 0).unwrap();
    assert_eq!(t.log.open_transaction(7), None);
}

#[test]
fn a_verified_write_opens_a_transaction_only_while_its_guard_stands() {
    let t = test_log(LogConfig::default());
    let refused = |result: Result<crate::storage::AppendInfo, crate::storage::LogError>| {
        matches!(
            result,
            Err(crate::storage::LogError::TransactionNotVerified { .. })
        )
    };
    // Pipelined first writes share one guard; the first opens, the second continues.
    let guard = t.log.start_verification(7, 0).unwrap();
    assert_eq!(t.log.start_verification(7, 0), Some(guard));
    let verified = Verification::Guard(guard);
    t.log
        .append_verified(&data(7, 0, 1, Compression::None), 0, verified)
        .unwrap();
    t.log
        .append_verified(&data(7, 1, 1, Compression::Lz4), 0, verified)
        .unwrap();
    assert_eq!(
        t.log.start_verification(7, 0),
        None,
        "open: nothing to verify"
    );
    // A check made while the transaction was open does not outlive it: after the marker,
    // the same request's write is refused and opens nothing.
    t.log.append(&marker(7, 0, true), 0).unwrap(); // 2
    assert!(refused(t.log.append_verified(
        &data(7, 2, 1, Compression::None),
        0,
        Verification::OPEN
    )));
    // Nor does a guard handed out before the marker.
    let early = t.log.start_verification(7, 0).unwrap();
    t.log.append(&marker(7, 0, false), 0).unwrap(); // a repeated marker voids it
    assert!(refused(t.log.append_verified(
        &data(7, 2, 1, Compression::None),
        0,
        Verification::Guard(early)
    )));
    assert_eq!(t.log.open_transaction(7), None);
    assert_eq!(t.log.last_stable_offset(), t.log.log_end_offset());
    // A new verification opens the next transaction; unchecked writes (verification off)
    // always may.
    let next = t.log.start_verification(7, 0).unwrap();
    assert_ne!(next, early);
    t.log
        .append_verified(
            &data(7, 2, 1, Compression::None),
            0,
            Verification::Guard(next),
        )
        .unwrap();
    t.log.append(&data(8, 0, 1, Compression::None), 0).unwrap();
    assert_eq!(t.log.open_transactions(), 2);
}

#[test]
fn a_newer_epoch_never_joins_the_open_transaction_of_an_older_one() {
    // Transaction version 2: the producer's next transaction (epoch 1) may reach a
    // partition before the previous one's marker (epoch 1, bumped by EndTxn) does.
    for codec in [Compression::None, Compression::Zstd] {
        let t = test_log(LogConfig::default());
        let guard = t.log.start_verification(7, 0).unwrap();
        let first = t
            .log
            .append_verified(&data_at(7, 0, 0, 2, codec), 0, Verification::Guard(guard))
            .unwrap();
        assert_eq!(t.log.start_verification(7, 0), None, "open at its epoch");
        let early = t
            .log
            .start_verification(7, 1)
            .expect("a newer epoch must be verified, not taken as open");
        for verification in [Verification::OPEN, Verification::Guard(early)] {
            assert!(matches!(
                t.log
                    .append_verified(&data_at(7, 1, 0, 1, codec), 0, verification),
                Err(crate::storage::LogError::TransactionNotVerified { .. })
            ));
        }
        assert_eq!(t.log.open_transaction(7), Some(first.base_offset));
        // The marker, with the bumped epoch, ends the old transaction; a new check opens
        // the next one, sequences starting again under epoch 1.
        t.log.append(&marker(7, 1, true), 0).unwrap();
        let next = t.log.start_verification(7, 1).unwrap();
        let opened = t
            .log
            .append_verified(&data_at(7, 1, 0, 1, codec), 0, Verification::Guard(next))
            .unwrap();
        assert_eq!(t.log.open_transaction(7), Some(opened.base_offset));
        t.log.append(&marker(7, 2, false), 0).unwrap();
        assert_eq!(t.log.open_transaction(7), None);
        assert_eq!(t.log.last_stable_offset(), t.log.log_end_offset());
    }
}

#[test]
fn retention_and_truncation_forget_what_they_remove() {
    let t = test_log(small_config());
    t.log.append(&data(7, 0, 2, Compression::None), 0).unwrap(); // 0-1
    t.log.append(&marker(7, 0, false), 0).unwrap(); // 2
    t.log.append(&data(8, 0, 2, Compression::None), 0).unwrap(); // 3-4
    t.log.append(&marker(8, 0, false), 0).unwrap(); // 5
    t.log.append(&data(9, 0, 1, Compression::None), 0).unwrap(); // 6, open
    assert_eq!(t.log.aborted_transactions(0, 7).len(), 2);
    t.log.advance_log_start_offset(3).unwrap();
    assert_eq!(t.log.aborted_transactions(0, 7).len(), 1);
    // Truncating below the second marker reopens its transaction.
    t.log.truncate_to(5).unwrap();
    assert!(t.log.aborted_transactions(0, 7).is_empty());
    assert_eq!(t.log.open_transaction(8), Some(3));
    assert_eq!(t.log.open_transaction(9), None);
    assert_eq!(t.log.last_stable_offset(), 3);
}

fn keyed_data(producer_id: i64, sequence: i32, key: &str, value: &str) -> Vec<u8> {
    build_transactional_batch(
        &[SimpleRecord {
            key: Some(Bytes::from(key.to_string())),
            value: Some(Bytes::from(value.to_string())),
            timestamp: START_MS,
            headers: Vec::new(),
        }],
        Compression::None,
        ProducerFields {
            producer_id,
            producer_epoch: 0,
            base_sequence: sequence,
        },
    )
    .unwrap()
    .to_vec()
}

#[test]
fn compaction_removes_aborted_records_and_keeps_the_committed_value() {
    let t = test_log(LogConfig {
        cleanup_policy: crate::storage::log_config::CleanupPolicy::COMPACT,
        ..small_config()
    });
    t.log
        .append(&keyed_data(7, 0, "k", "committed"), 0)
        .unwrap(); // 0
    t.log.append(&marker(7, 0, true), 0).unwrap(); // 1
    t.log.append(&keyed_data(8, 0, "k", "aborted"), 0).unwrap(); // 2
    t.log.append(&marker(8, 0, false), 0).unwrap(); // 3
    t.log.roll().unwrap();
    t.log.append(&keyed_data(9, 0, "k", "open"), 0).unwrap(); // 4: undecided
    t.log.append(&keyed_data(10, 0, "k", "newer"), 0).unwrap(); // 5: undecided
    t.log.roll().unwrap();
    assert_eq!(t.log.compact().unwrap().records_removed, 1);
    let values: Vec<(u64, Option<Bytes>)> = all_records(&t.log, 0)
        .into_iter()
        .filter(|(_, key, _)| key.as_deref() == Some(b"k".as_slice()))
        .map(|(offset, _, value)| (offset, value))
        .collect();
    // The segment of the open transactions is not cleanable: the committed value stays
    // (the aborted one after it does not hide it, and goes), the undecided ones are
    // untouched.
    assert_eq!(
        values,
        vec![
            (0, Some(Bytes::from("committed"))),
            (4, Some(Bytes::from("open"))),
            (5, Some(Bytes::from("newer")))
        ]
    );
}

#[test]
fn compaction_removes_markers_once_their_transactions_data_is_gone() {
    let t = test_log(LogConfig {
        cleanup_policy: crate::storage::log_config::CleanupPolicy::COMPACT,
        delete_retention_ms: 1000,
        min_cleanable_dirty_ratio: crate::storage::log_config::DirtyRatio(0.0),
        ..small_config()
    });
    t.log.append(&keyed_data(7, 0, "k", "v1"), 0).unwrap(); // 0
    t.log.append(&marker(7, 0, true), 0).unwrap(); // 1
    t.log.append(&keyed_data(7, 1, "k", "v2"), 0).unwrap(); // 2: hides v1
    t.log.append(&marker(7, 0, true), 0).unwrap(); // 3
    t.log.append(&keyed_data(8, 0, "a", "x"), 0).unwrap(); // 4
    t.log.append(&marker(8, 0, false), 0).unwrap(); // 5: aborted
    t.log.append(&keyed_data(8, 1, "b", "y"), 0).unwrap(); // 6
    t.log.append(&marker(8, 0, true), 0).unwrap(); // 7
    t.log.roll().unwrap();
    t.clock.advance(2000);
    let offsets = |log: &crate::storage::Log| -> Vec<u64> {
        let mut found = Vec::new();
        for segment in log.segments() {
            let mut position = 0;
            while let Some(header) = segment.header_at(position).unwrap() {
                found.push(header.base_offset as u64);
                position += header.total_size() as u64;
            }
        }
        found
    };
    // The first pass removes the superseded and the aborted data; the markers of those
    // transactions stay (their batches were seen by this pass).
    t.log.compact().unwrap();
    assert_eq!(offsets(&t.log), vec![1, 2, 3, 5, 6, 7]);
    assert_eq!(t.log.aborted_transactions(0, 8).len(), 1);
    // A later pass, past delete.retention.ms, finds no data of them left: they go. The
    // markers of transactions with data left stay.
    t.log.append(&batch(1, 10, START_MS), 0).unwrap(); // 8, dirty
    t.log.roll().unwrap();
    t.log.compact().unwrap();
    assert_eq!(offsets(&t.log), vec![2, 3, 6, 7, 8]);
    assert!(t.log.aborted_transactions(0, 9).is_empty());
    assert_eq!(t.log.last_stable_offset(), 9);
    let (t, _) = t.reopen(false);
    assert_eq!(t.log.open_transactions(), 0);
    assert_eq!(t.log.last_stable_offset(), 9);
    assert!(t.log.aborted_transactions(0, 9).is_empty());
}

/// One step of a partition's history in the model test.
#[derive(Debug, Clone)]
enum Step {
    /// A transactional batch of producer `0..3` with `1..5` records.
    Data(usize, usize, usize),
    /// Plain (non-transactional) records.
    Plain(usize),
    /// A marker for producer `0..3`: commit or abort.
    Marker(usize, bool),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..3usize, 1..5usize, 0..4usize).prop_map(|(p, n, c)| Step::Data(p, n, c)),
        1 => (1..4usize).prop_map(Step::Plain),
        2 => (0..3usize, any::<bool>()).prop_map(|(p, c)| Step::Marker(p, c)),
    ]
}

fn codec(choice: usize) -> Compression {
    match choice {
        0 => Compression::None,
        1 => Compression::Gzip,
        2 => Compression::Lz4,
        _ => Compression::Zstd,
    }
}

/// What a Kafka `read_committed` consumer keeps of `bytes` given `aborted` (the
/// client's algorithm: a producer's records are dropped from its aborted transaction's
/// first offset to its ABORT marker; control batches are never returned).
fn consume_committed(bytes: &[u8], aborted: &[AbortedTransaction]) -> Vec<u64> {
    let mut pending: Vec<AbortedTransaction> = aborted.to_vec();
    pending.sort_by_key(|a| a.first_offset);
    let mut dropping = std::collections::HashSet::new();
    let mut kept = Vec::new();
    let mut position = 0;
    while let Ok(header) = BatchHeader::parse(&bytes[position..]) {
        let size = header.total_size();
        let batch = &bytes[position..position + size];
        while let Some(first) = pending.first() {
            if first.first_offset as i64 > header.last_offset() {
                break;
            }
            dropping.insert(first.producer_id);
            pending.remove(0);
        }
        if header.is_control() {
            if marker_of(&header, batch) == Some(Marker::Abort) {
                dropping.remove(&header.producer_id);
            }
        } else if !(header.is_transactional() && dropping.contains(&header.producer_id)) {
            kept.extend(header.base_offset as u64..=header.last_offset() as u64);
        }
        position += size;
        if position >= bytes.len() {
            break;
        }
    }
    kept
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any interleaving of producers' transactions, plain records and markers, in
    /// segments of a few batches, with any codec: a read_committed read up to the last
    /// stable offset with the aborted transactions it is told yields exactly the
    /// committed and plain records below it, before and after a crash recovery.
    #[test]
    fn read_committed_matches_the_model(steps in proptest::collection::vec(step(), 1..40)) {
        let t = test_log(small_config());
        let mut sequences = [0i32; 3];
        let mut open: [Vec<u64>; 3] = Default::default();
        let mut committed = Vec::new();
        for step in &steps {
            match *step {
                Step::Data(p, n, c) => {
                    let info = t.log.append(&data(p as i64 + 1, sequences[p], n, codec(c)), 0).unwrap();
                    sequences[p] += n as i32;
                    open[p].extend(info.base_offset..=info.last_offset);
                }
                Step::Plain(n) => {
                    let info = t.log.append(&batch(n, 20, START_MS), 0).unwrap();
                    committed.extend(info.base_offset..=info.last_offset);
                }
                Step::Marker(p, commit) => {
                    t.log.append(&marker(p as i64 + 1, 0, commit), 0).unwrap();
                    let records = std::mem::take(&mut open[p]);
                    if commit {
                        committed.extend(records);
                    }
                }
            }
        }
        committed.sort_unstable();
        let first_open = open.iter().filter_map(|o| o.first().copied()).min();
        let expected_lso = first_open.unwrap_or_else(|| t.log.log_end_offset());
        let mut log = t;
        for round in 0..2 {
            prop_assert_eq!(log.log.last_stable_offset(), expected_lso, "round {}", round);
            let read = log.log.read_with_limit(0, u64::MAX >> 1, ReadLimit::LastStable).unwrap();
            let bytes = read.read_to_vec().unwrap();
            let aborted = log.log.aborted_transactions(0, read.next_offset.max(1));
            let seen = consume_committed(&bytes, &aborted);
            let visible: Vec<u64> = committed.iter().copied().filter(|o| *o < expected_lso).collect();
            prop_assert_eq!(seen, visible, "round {}", round);
            log = log.reopen(false).0;
        }
    }
}

#[test]
fn verifications_that_never_write_expire() {
    let mut state = TransactionState::default();
    for producer_id in 0..VERIFICATIONS_BEFORE_EXPIRY as i64 {
        assert!(state.start_verification(producer_id, false, 0).is_some());
    }
    let young = state
        .start_verification(-7, false, VERIFICATION_EXPIRY_MS - 1)
        .unwrap();
    assert_eq!(
        state.verifications(),
        VERIFICATIONS_BEFORE_EXPIRY + 1,
        "none expired yet"
    );
    // Past the expiry the old ones go; the young one keeps its guard.
    state.start_verification(-8, false, VERIFICATION_EXPIRY_MS);
    assert_eq!(state.verifications(), 2);
    assert_eq!(
        state.start_verification(-7, false, VERIFICATION_EXPIRY_MS),
        Some(young)
    );
}
