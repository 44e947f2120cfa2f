//! Compaction against a model: random keys, values, tombstones, batch sizes, codecs,
//! producer fields, segment rolls and passes. After every pass each key's newest record is
//! read back at its original offset, every record read is one that was written there, and
//! a final full pass leaves exactly the model's log; an unclean reopen changes nothing.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::records::Compression;
use proptest::prelude::*;

use super::*;
use crate::storage::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use crate::storage::log_config::CleanupPolicy;
use crate::storage::log_config::DirtyRatio;

const DELETE_RETENTION_MS: i64 = 5_000;

#[derive(Debug, Clone)]
enum Step {
    /// Records as (key index or none, value length or tombstone), one batch.
    Append {
        records: Vec<(Option<u8>, Option<usize>)>,
        codec: u8,
        idempotent: bool,
    },
    Roll,
    Compact,
    Advance(i64),
}

fn step() -> impl Strategy<Value = Step> {
    let record = (
        prop_oneof![9 => (0u8..12).prop_map(Some), 1 => Just(None)],
        prop_oneof![5 => (0usize..400).prop_map(Some), 1 => Just(None)],
    );
    prop_oneof![
        8 => (prop::collection::vec(record, 1..60), 0u8..5, any::<bool>()).prop_map(
            |(records, codec, idempotent)| Step::Append { records, codec, idempotent }
        ),
        2 => Just(Step::Roll),
        3 => Just(Step::Compact),
        1 => (0i64..8_000).prop_map(Step::Advance),
    ]
}

fn compression(codec: u8) -> Compression {
    match codec {
        1 => Compression::Gzip,
        2 => Compression::Snappy,
        3 => Compression::Lz4,
        4 => Compression::Zstd,
        _ => Compression::None,
    }
}

/// What was written at each offset: key, value and the batch's timestamp.
type Written = BTreeMap<u64, (Option<Bytes>, Option<Bytes>, i64)>;

fn check_pass(log: &Log, written: &Written, now: i64) -> Result<(), TestCaseError> {
    let read = all_records(log, 0);
    let mut present = BTreeMap::new();
    for (offset, key, value) in &read {
        let expected = written.get(offset);
        prop_assert!(expected.is_some(), "offset {} was never written", offset);
        let (k, v, _) = expected.unwrap();
        prop_assert_eq!(k, key, "key at offset {}", offset);
        prop_assert_eq!(v, value, "value at offset {}", offset);
        present.insert(*offset, ());
    }
    let mut newest: BTreeMap<&Bytes, u64> = BTreeMap::new();
    for (offset, (key, _, _)) in written {
        match key {
            Some(key) => {
                newest.insert(key, *offset);
            }
            None => prop_assert!(
                present.contains_key(offset),
                "keyless record {} lost",
                offset
            ),
        }
    }
    for offset in newest.values() {
        let (_, value, timestamp) = &written[offset];
        let tombstone_may_go = value.is_none() && *timestamp < now - DELETE_RETENTION_MS;
        prop_assert!(
            present.contains_key(offset) || tombstone_may_go,
            "the newest record of its key at offset {} is gone",
            offset
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn compaction_keeps_every_keys_newest_record_at_its_offset(
        steps in prop::collection::vec(step(), 1..40),
        ratio in prop_oneof![Just(0.0), Just(0.5)],
    ) {
        let t = test_log(LogConfig {
            cleanup_policy: CleanupPolicy::COMPACT,
            segment_bytes: 8 * 1024,
            delete_retention_ms: DELETE_RETENTION_MS,
            min_cleanable_dirty_ratio: DirtyRatio(ratio),
            ..small_config()
        });
        let mut written = Written::new();
        let (mut sequence, mut serial) = (0i32, 0u64);
        for step in steps {
            match step {
                Step::Append { records, codec, idempotent } => {
                    let now = t.log.now_ms();
                    let simple: Vec<SimpleRecord> = records
                        .iter()
                        .map(|(key, value)| {
                            serial += 1;
                            SimpleRecord {
                                key: key.map(|k| Bytes::from(format!("key-{k}"))),
                                value: value.map(|len| {
                                    let mut v = format!("value-{serial}-").into_bytes();
                                    v.resize(v.len() + len, b'x');
                                    Bytes::from(v)
                                }),
                                timestamp: now,
                                headers: vec![("h".to_string(), Some(Bytes::from_static(b"1")))],
                            }
                        })
                        .collect();
                    let producer = if idempotent {
                        ProducerFields { producer_id: 9, producer_epoch: 0, base_sequence: sequence }
                    } else {
                        ProducerFields::default()
                    };
                    if idempotent {
                        sequence += simple.len() as i32;
                    }
                    let batch = build_batch(&simple, compression(codec), producer).unwrap();
                    let info = t.log.append(&batch, 0).unwrap();
                    for (i, record) in simple.into_iter().enumerate() {
                        written.insert(info.base_offset + i as u64, (record.key, record.value, now));
                    }
                }
                Step::Roll => {
                    t.log.roll().unwrap();
                }
                Step::Compact => {
                    t.log.compact().unwrap();
                    check_pass(&t.log, &written, t.log.now_ms())?;
                }
                Step::Advance(ms) => t.clock.advance(ms),
            }
        }
        // Everything sealed, every tombstone past its retention, any dirty share: the log
        // is exactly the newest value of each key, and the keyless records.
        t.log.roll().unwrap();
        t.clock.advance(DELETE_RETENTION_MS + 1);
        t.log.update_config(LogConfig {
            min_cleanable_dirty_ratio: DirtyRatio(0.0),
            ..(*t.log.config()).clone()
        });
        t.log.compact().unwrap();
        t.clock.advance(DELETE_RETENTION_MS + 1);
        t.log.compact().unwrap();
        let mut newest: BTreeMap<Bytes, u64> = BTreeMap::new();
        let mut expected: Vec<u64> = Vec::new();
        for (offset, (key, _, _)) in &written {
            match key {
                Some(key) => {
                    newest.insert(key.clone(), *offset);
                }
                None => expected.push(*offset),
            }
        }
        expected.extend(newest.values().filter(|offset| written[*offset].1.is_some()));
        expected.sort_unstable();
        let end = t.log.log_end_offset();
        let offsets: Vec<u64> = all_records(&t.log, 0).into_iter().map(|r| r.0).collect();
        prop_assert_eq!(&offsets, &expected);
        let (t, _) = t.reopen(false);
        let reopened: Vec<u64> = all_records(&t.log, 0).into_iter().map(|r| r.0).collect();
        prop_assert_eq!(&reopened, &expected);
        prop_assert_eq!(t.log.log_end_offset(), end);
        // The idempotent producer's state was rebuilt from the headers the cleaner kept:
        // its next sequence is taken, and a retry of its last batch is a duplicate.
        if sequence > 0 {
            let record = SimpleRecord {
                key: Some(Bytes::from_static(b"after")),
                value: Some(Bytes::from_static(b"restart")),
                timestamp: t.log.now_ms(),
                headers: vec![],
            };
            let next = build_batch(
                std::slice::from_ref(&record),
                Compression::None,
                ProducerFields { producer_id: 9, producer_epoch: 0, base_sequence: sequence },
            )
            .unwrap();
            let appended = t.log.append(&next, 0);
            prop_assert!(appended.is_ok(), "sequence {} after cleaning and a restart: {:?}", sequence, appended.err());
        }
    }
}
