//! Crash recovery with real files: logs are cut or corrupted at random byte positions,
//! then reopened as after an unclean stop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use kafka_protocol::records::Compression;
use oxbow_broker::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use oxbow_broker::{BatchHeader, Log, LogConfig, LogDirHealth, ManualClock, TopicPartition};
use proptest::prelude::*;

const NOW: i64 = 1_700_000_000_000;

fn batch(seed: usize, count: usize, value_bytes: usize) -> Vec<u8> {
    let records: Vec<SimpleRecord> = (0..count)
        .map(|i| SimpleRecord {
            key: Some(format!("{seed}-{i}").into_bytes().into()),
            value: Some(vec![(seed % 256) as u8; value_bytes].into()),
            timestamp: NOW + seed as i64,
            headers: vec![],
        })
        .collect();
    build_batch(&records, Compression::None, ProducerFields::default())
        .unwrap()
        .to_vec()
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 8192,
        index_interval_bytes: 512,
        ..LogConfig::default()
    }
}

fn open(dir: &std::path::Path, clean: bool) -> Log {
    let health = Arc::new(LogDirHealth::new(dir.to_path_buf()));
    let clock = Arc::new(ManualClock::new(NOW));
    let partition_dir = dir.join("t-0");
    if partition_dir.exists() {
        Log::open(
            &partition_dir,
            TopicPartition::new("t", 0),
            config(),
            clock,
            health,
            clean,
        )
        .unwrap()
        .0
    } else {
        Log::create(dir, TopicPartition::new("t", 0), config(), clock, health).unwrap()
    }
}

/// Every batch in the log, as (base offset, bytes from the magic byte on).
fn batches(log: &Log) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    loop {
        let read = log.read(offset, 1).unwrap();
        if read.regions.is_empty() {
            return out;
        }
        let bytes = read.read_to_vec().unwrap();
        // The batch's own base offset: past an offset gap the read answers with the next batch.
        let base = u64::from_be_bytes(bytes[..8].try_into().unwrap());
        out.push((base, bytes[16..].to_vec()));
        offset = read.next_offset;
    }
}

/// Where each batch landed: (segment file, position, length).
fn layout(log: &Log) -> Vec<(std::path::PathBuf, u64, u64)> {
    let mut out = Vec::new();
    for segment in log.segments() {
        let mut position = 0;
        while let Some(header) = segment.header_at(position).unwrap() {
            out.push((
                segment.log_path().to_path_buf(),
                position,
                header.total_size() as u64,
            ));
            position += header.total_size() as u64;
        }
    }
    out
}

fn check_consistent(log: &Log) {
    for segment in log.segments() {
        // Every index entry points at a batch whose last offset it names.
        for i in 0..segment.offset_index().len() {
            let entry = segment.offset_index().entry(i).unwrap();
            let header = segment
                .header_at(u64::from(entry.position))
                .unwrap()
                .unwrap();
            assert_eq!(header.last_offset() as u64, entry.offset);
        }
    }
}

#[derive(Debug, Clone)]
enum Damage {
    Cut { batch: usize, within: u64 },
    Flip { batch: usize, within: u64 },
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn damaged_logs_recover_to_the_intact_prefix(
        sizes in prop::collection::vec((1usize..5, 10usize..900), 3..40),
        pick in 0usize..1000,
        within_seed in 0u64..10_000,
        flip in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let log = open(dir.path(), false);
        let mut originals = Vec::new();
        for (seed, (count, value)) in sizes.iter().enumerate() {
            let produced = batch(seed, *count, *value);
            log.append(&produced.clone(), 0).unwrap();
            originals.push(produced);
        }
        log.flush().unwrap();
        let places = layout(&log);
        let before = batches(&log);
        let end_before = log.log_end_offset();
        drop(log);

        let target = pick % places.len();
        let (path, position, length) = places[target].clone();
        // Damage inside the CRC-covered bytes or the length field (the base offset and the
        // leader epoch are outside the CRC in Kafka's format, as they are here).
        let damage = if flip {
            let covered = [8u64, 9, 10, 11].into_iter().chain(17..length).collect::<Vec<_>>();
            Damage::Flip { batch: target, within: covered[(within_seed as usize) % covered.len()] }
        } else {
            Damage::Cut { batch: target, within: within_seed % length }
        };
        let file = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        match damage {
            Damage::Cut { within, .. } => file.set_len(position + within).unwrap(),
            Damage::Flip { within, .. } => {
                let mut byte = [0u8];
                file.read_exact_at(&mut byte, position + within).unwrap();
                file.write_all_at(&[byte[0] ^ 0x5a], position + within).unwrap();
            }
        }
        // Make the damage "unflushed": recovery must look past the recovery point.
        std::fs::remove_file(dir.path().join("t-0/partition.checkpoint")).unwrap();

        let log = open(dir.path(), false);
        let after = batches(&log);
        let intact = match damage { Damage::Cut { batch, .. } | Damage::Flip { batch, .. } => batch };
        // A cut exactly at a batch boundary leaves a shorter segment that is whole on its own:
        // as in Kafka's log recovery, nothing is truncated there, so the later segments stay
        // (an offset gap, like one compaction leaves). Any other damage truncates the damaged
        // segment and deletes every later one.
        let later_segments: Vec<(u64, Vec<u8>)> = match damage {
            Damage::Cut { within: 0, .. } => places[intact..]
                .iter()
                .zip(&before[intact..])
                .filter(|((file, _, _), _)| *file != path)
                .map(|(_, batch)| batch.clone())
                .collect(),
            _ => Vec::new(),
        };
        let expected = [&before[..intact], &later_segments[..]].concat();
        prop_assert_eq!(after.len(), expected.len(), "{:?}: batches before the damage survive, and after it only whole later segments", damage);
        prop_assert_eq!(&after[..], &expected[..]);
        let expected_end = if later_segments.is_empty() {
            before.get(intact).map_or(log.log_end_offset(), |b| b.0)
        } else {
            end_before
        };
        prop_assert_eq!(log.log_end_offset(), expected_end);
        check_consistent(&log);
        // The log takes appends again where it ended.
        let info = log.append(&batch(999, 1, 10), 0).unwrap();
        prop_assert_eq!(info.base_offset, expected_end);
        let _ = originals;
    }
}

#[test]
fn missing_and_garbage_indexes_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(dir.path(), false);
    for seed in 0..40 {
        log.append(&batch(seed, 2, 400), 0).unwrap();
    }
    log.close().unwrap();
    let before = batches(&log);
    drop(log);
    let segments: Vec<_> = std::fs::read_dir(dir.path().join("t-0"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "index"))
        .collect();
    assert!(segments.len() > 2);
    std::fs::remove_file(&segments[0]).unwrap();
    // An index whose entries point past the end of its log.
    std::fs::write(&segments[1], [0u8, 0, 0, 1, 0xff, 0xff, 0xff, 0]).unwrap();
    let log = open(dir.path(), true);
    assert_eq!(batches(&log), before);
    check_consistent(&log);
    let header = BatchHeader::parse(&log.read(0, 1).unwrap().read_to_vec().unwrap()).unwrap();
    assert_eq!(header.base_offset, 0);
}
