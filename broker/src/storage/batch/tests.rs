#![allow(clippy::indexing_slicing)]

use super::*;
use crate::storage::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use kafka_protocol::records::Compression;

fn sample(count: usize) -> Vec<u8> {
    let records: Vec<SimpleRecord> = (0..count)
        .map(|i| SimpleRecord {
            key: Some(format!("k{i}").into_bytes().into()),
            value: Some(vec![b'v'; 10].into()),
            timestamp: 1_000 + i as i64,
            headers: vec![],
        })
        .collect();
    build_batch(&records, Compression::None, ProducerFields::default())
        .unwrap()
        .to_vec()
}

#[test]
fn valid_batch_passes_and_decodes() {
    let bytes = sample(3);
    let header = validate_batch(&bytes, 1 << 20, BatchOrigin::Producer).unwrap();
    assert_eq!(header.record_count, 3);
    assert_eq!(header.last_offset_delta, 2);
    assert_eq!(header.max_timestamp, 1_002);
    assert_eq!(header.total_size(), bytes.len());
}

#[test]
fn every_kind_of_damage_is_refused() {
    let good = sample(2);
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0xff;
    assert!(matches!(
        validate_batch(&flipped, 1 << 20, BatchOrigin::Producer),
        Err(BatchError::CrcMismatch { .. })
    ));

    let mut magic = good.clone();
    magic[16] = 1;
    assert_eq!(
        validate_batch(&magic, 1 << 20, BatchOrigin::Producer),
        Err(BatchError::UnsupportedMagic { magic: 1 })
    );

    assert!(matches!(
        validate_batch(&good[..40], 1 << 20, BatchOrigin::Producer),
        Err(BatchError::TooShort { .. })
    ));
    assert!(matches!(
        validate_batch(&good[..good.len() - 1], 1 << 20, BatchOrigin::Producer),
        Err(BatchError::LengthMismatch { .. })
    ));
    assert!(matches!(
        validate_batch(&good, 20, BatchOrigin::Producer),
        Err(BatchError::TooLarge { .. })
    ));

    // A record count that disagrees with the last offset delta, with a correct CRC.
    let mut counted = good.clone();
    counted[57..61].copy_from_slice(&5i32.to_be_bytes());
    let crc = crc32c::crc32c(&counted[21..]);
    counted[17..21].copy_from_slice(&crc.to_be_bytes());
    assert!(matches!(
        validate_batch(&counted, 1 << 20, BatchOrigin::Producer),
        Err(BatchError::RecordCountMismatch {
            record_count: 5,
            last_offset_delta: 1
        })
    ));
    assert!(matches!(
        validate_batch(&counted, 1 << 20, BatchOrigin::Log),
        Err(BatchError::RecordCountMismatch { .. })
    ));
    // Fewer records than offsets: what compaction leaves. A log may hold it; a producer
    // may not send it.
    let mut compacted = good.clone();
    compacted[57..61].copy_from_slice(&1i32.to_be_bytes());
    let crc = crc32c::crc32c(&compacted[21..]);
    compacted[17..21].copy_from_slice(&crc.to_be_bytes());
    assert!(validate_batch(&compacted, 1 << 20, BatchOrigin::Log).is_ok());
    assert!(matches!(
        validate_batch(&compacted, 1 << 20, BatchOrigin::Producer),
        Err(BatchError::RecordCountMismatch { .. })
    ));
    assert!(
        BatchError::CrcMismatch {
            expected: 0,
            actual: 1
        }
        .is_corrupt()
    );
    assert!(!BatchError::TooLarge { size: 2, max: 1 }.is_corrupt());
}

#[test]
fn record_sets_split_into_batches_and_fail_as_a_whole() {
    let mut set = sample(2);
    set.extend(sample(3));
    let batches = validate_record_set(&set, 1 << 20, BatchOrigin::Producer).unwrap();
    assert_eq!(batches.len(), 2);
    assert_eq!(batches[1].1, set.len());
    set.push(0);
    assert_eq!(
        validate_record_set(&set, 1 << 20, BatchOrigin::Producer),
        Err(BatchError::TooShort { available: 1 }),
        "one stray byte after the batches"
    );
    assert_eq!(
        validate_record_set(&[], 1 << 20, BatchOrigin::Producer),
        Err(BatchError::Empty)
    );
    // A huge declared length never panics or allocates.
    let mut huge = sample(1);
    huge[8..12].copy_from_slice(&i32::MAX.to_be_bytes());
    assert!(matches!(
        validate_record_set(&huge, 1 << 20, BatchOrigin::Producer),
        Err(BatchError::LengthMismatch { .. })
    ));
    huge[8..12].copy_from_slice(&(-7i32).to_be_bytes());
    assert!(matches!(
        validate_record_set(&huge, 1 << 20, BatchOrigin::Producer),
        Err(BatchError::LengthMismatch { .. })
    ));
}

#[test]
fn stamping_keeps_the_crc_valid() {
    let produced = sample(2);
    let restamped = |header: [u8; BATCH_HEADER_SIZE]| {
        let mut bytes = header.to_vec();
        bytes.extend_from_slice(&produced[BATCH_HEADER_SIZE..]);
        bytes
    };
    let bytes = restamped(stamped_header(&produced, 42, 7, None));
    let header = validate_batch(&bytes, 1 << 20, BatchOrigin::Producer).unwrap();
    assert_eq!((header.base_offset, header.partition_leader_epoch), (42, 7));
    let bytes = restamped(stamped_header(&bytes, 43, 7, Some(99_000)));
    let header = validate_batch(&bytes, 1 << 20, BatchOrigin::Producer).unwrap();
    assert!(header.is_log_append_time());
    assert_eq!(header.max_timestamp, 99_000);
    assert_eq!(header.base_offset, 43);
    assert_eq!(
        produced,
        sample(2),
        "the produced bytes are left as they came"
    );
}
