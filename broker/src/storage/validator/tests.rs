#![allow(clippy::indexing_slicing)]

use bytes::Bytes;
use kafka_protocol::records::{Compression, RecordBatchDecoder};

use super::*;
use crate::storage::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use crate::storage::log_config::CompressionType;

const NOW: i64 = 1_700_000_000_000;
const HOUR: i64 = 3_600_000;

fn record(key: Option<&str>, value: &str, timestamp: i64) -> SimpleRecord {
    SimpleRecord {
        key: key.map(|k| Bytes::from(k.to_string())),
        value: Some(Bytes::from(value.to_string())),
        timestamp,
        headers: vec![("h".into(), Some(Bytes::from_static(b"x")))],
    }
}

fn batch(records: &[SimpleRecord], compression: Compression) -> Vec<u8> {
    let producer = ProducerFields {
        producer_id: 7,
        producer_epoch: 1,
        base_sequence: 40,
    };
    build_batch(records, compression, producer)
        .unwrap()
        .to_vec()
}

fn tp() -> TopicPartition {
    TopicPartition::new("t", 0)
}

fn rules<'a>(config: &LogConfig, tp: &'a TopicPartition) -> RecordRules<'a> {
    RecordRules::new(config, tp, NOW)
}

fn decoded(bytes: &[u8]) -> Vec<(Option<Bytes>, Option<Bytes>, i64)> {
    let mut buf = Bytes::copy_from_slice(bytes);
    RecordBatchDecoder::decode_all(&mut buf)
        .unwrap()
        .into_iter()
        .flat_map(|set| set.records)
        .map(|r| (r.key, r.value, r.timestamp))
        .collect()
}

#[test]
fn batches_within_the_rules_are_appended_as_produced() {
    let tp = tp();
    let config = LogConfig::default();
    for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let bytes = batch(
            &[
                record(Some("a"), "1", NOW - 10 * HOUR),
                record(None, "2", NOW),
            ],
            compression,
        );
        assert_eq!(
            validate_records(&bytes, &rules(&config, &tp)).unwrap(),
            Validated::AsProduced
        );
    }
}

#[test]
fn a_compacted_topic_refuses_keyless_records_by_index() {
    let tp = tp();
    let config = LogConfig::default()
        .with_topic_configs([("cleanup.policy", "compact")])
        .unwrap();
    for compression in [Compression::None, Compression::Gzip, Compression::Snappy] {
        let bytes = batch(
            &[
                record(Some("a"), "1", NOW),
                record(None, "2", NOW),
                record(Some("b"), "3", NOW),
                record(None, "4", NOW),
            ],
            compression,
        );
        let Err(ValidationError::RecordsRejected {
            invalid_timestamp,
            errors,
            message,
        }) = validate_records(&bytes, &rules(&config, &tp))
        else {
            panic!("keyless records accepted");
        };
        assert!(!invalid_timestamp);
        let indexes: Vec<i32> = errors.iter().map(|e| e.batch_index).collect();
        assert_eq!(indexes, [1, 3]);
        assert_eq!(
            errors[0].message,
            "Compacted topic cannot accept message without key in topic partition t-0"
        );
        assert!(
            message.starts_with("One or more records have been rejected due to 2 record errors"),
            "{message}"
        );
        assert!(message.contains("RecordError(batchIndex=3, message='Compacted topic"));
    }
}

#[test]
fn timestamps_outside_the_bounds_are_refused_and_keys_are_judged_first() {
    let tp = tp();
    let config = LogConfig::default()
        .with_topic_configs([
            ("cleanup.policy", "compact"),
            ("message.timestamp.before.max.ms", "60000"),
        ])
        .unwrap();
    for compression in [Compression::None, Compression::Zstd] {
        let bytes = batch(
            &[
                record(Some("a"), "1", NOW),
                record(Some("b"), "2", NOW + 2 * HOUR),
                record(Some("c"), "3", NOW - HOUR),
                record(None, "4", NOW - HOUR),
                record(Some("d"), "5", -1),
            ],
            compression,
        );
        let Err(ValidationError::RecordsRejected {
            invalid_timestamp,
            errors,
            message,
        }) = validate_records(&bytes, &rules(&config, &tp))
        else {
            panic!("out-of-range timestamps accepted");
        };
        assert!(invalid_timestamp);
        assert_eq!(
            message,
            "One or more records have been rejected due to invalid timestamp"
        );
        let indexes: Vec<i32> = errors.iter().map(|e| e.batch_index).collect();
        assert_eq!(indexes, [1, 2, 3]);
        assert_eq!(
            errors[1].message,
            format!(
                "Timestamp {} of message with offset 2 is out of range. The timestamp should be within [{}, {}]",
                NOW - HOUR,
                NOW - 60_000,
                NOW + HOUR
            )
        );
        assert!(errors[2].message.starts_with("Compacted topic"));
    }
    // LogAppendTime topics do not judge producer timestamps.
    let log_append = LogConfig::default()
        .with_topic_configs([("message.timestamp.type", "LogAppendTime")])
        .unwrap();
    let future = batch(&[record(None, "x", NOW + 99 * HOUR)], Compression::None);
    assert_eq!(
        validate_records(&future, &rules(&log_append, &tp)).unwrap(),
        Validated::AsProduced
    );
}

#[test]
fn a_batch_of_another_codec_is_re_encoded_with_the_same_records_and_producer_fields() {
    let tp = tp();
    let records = [
        record(Some("a"), &"value-a ".repeat(50), NOW - 5),
        record(None, "b", NOW - 3),
        record(Some("c"), &"value-c ".repeat(50), NOW),
    ];
    for (target, source) in [
        ("zstd", Compression::Lz4),
        ("zstd", Compression::None),
        ("uncompressed", Compression::Gzip),
        ("gzip", Compression::Snappy),
        ("lz4", Compression::Zstd),
        ("snappy", Compression::None),
    ] {
        let config = LogConfig::default()
            .with_topic_configs([("compression.type", target)])
            .unwrap();
        let original = batch(&records, source);
        let Validated::ReEncoded(out) = validate_records(&original, &rules(&config, &tp)).unwrap()
        else {
            panic!("{source:?} batch kept under compression.type={target}");
        };
        let header = validate_batch(&out, usize::MAX, BatchOrigin::Producer).unwrap();
        let wanted = CompressionType::parse(target).unwrap().codec_id().unwrap();
        assert_eq!(header.compression_codec(), wanted, "{target}");
        let before = BatchHeader::parse(&original).unwrap();
        assert_eq!(
            (
                header.producer_id,
                header.producer_epoch,
                header.base_sequence,
                header.record_count,
                header.base_timestamp,
                header.max_timestamp,
                header.is_transactional()
            ),
            (
                before.producer_id,
                before.producer_epoch,
                before.base_sequence,
                before.record_count,
                before.base_timestamp,
                before.max_timestamp,
                before.is_transactional()
            )
        );
        assert_eq!(decoded(&out), decoded(&original), "{source:?} -> {target}");
        // A batch already in the topic's codec is kept as produced.
        assert_eq!(
            validate_records(&out, &rules(&config, &tp)).unwrap(),
            Validated::AsProduced
        );
    }
}

#[test]
fn only_the_batches_of_another_codec_are_rewritten() {
    let tp = tp();
    let config = LogConfig::default()
        .with_topic_configs([("compression.type", "zstd")])
        .unwrap();
    let kept = batch(&[record(Some("a"), "1", NOW)], Compression::Zstd);
    let changed = batch(&[record(Some("b"), "2", NOW)], Compression::Gzip);
    let both = [kept.clone(), changed, kept.clone()].concat();
    let Validated::ReEncoded(out) = validate_records(&both, &rules(&config, &tp)).unwrap() else {
        panic!("gzip batch kept");
    };
    assert_eq!(&out[..kept.len()], &kept[..]);
    assert_eq!(&out[out.len() - kept.len()..], &kept[..]);
    assert_eq!(decoded(&out), decoded(&both));
}

#[test]
fn damage_is_reported_as_damage_not_as_record_errors() {
    let tp = tp();
    let compacted = LogConfig::default()
        .with_topic_configs([("cleanup.policy", "compact")])
        .unwrap();
    let mut bytes = batch(&[record(None, "1", NOW)], Compression::None);
    let last = bytes.len() - 1;
    bytes[last] ^= 0x55;
    assert!(matches!(
        validate_records(&bytes, &rules(&compacted, &tp)),
        Err(ValidationError::InvalidBatch {
            source: BatchError::CrcMismatch { .. }
        })
    ));
    // A compressed section that does not inflate, behind a correct CRC.
    let mut garbage = batch(&[record(Some("a"), "1", NOW)], Compression::Lz4);
    for byte in garbage.iter_mut().skip(BATCH_HEADER_SIZE) {
        *byte = 0xAB;
    }
    let crc = crc32c::crc32c(&garbage[21..]);
    garbage[17..21].copy_from_slice(&crc.to_be_bytes());
    assert!(matches!(
        validate_records(&garbage, &rules(&compacted, &tp)),
        Err(ValidationError::Codec { .. })
    ));
    // Truncated framing is left for Log::append to refuse.
    assert_eq!(
        validate_records(&bytes[..30], &rules(&compacted, &tp)).unwrap(),
        Validated::AsProduced
    );
}

/// `bytes` (one uncompressed batch) with the LogAppendTime bit set and the CRC redone.
fn claiming_log_append_time(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes[22] |= 0x08;
    let crc = crc32c::crc32c(&bytes[21..]);
    bytes[17..21].copy_from_slice(&crc.to_be_bytes());
    bytes
}

#[test]
fn a_log_append_time_topic_refuses_batches_claiming_log_append_time() {
    let tp = tp();
    let claimed = claiming_log_append_time(batch(
        &[record(Some("ab"), "xyz", NOW), record(None, "v", NOW + 1)],
        Compression::None,
    ));
    let log_append = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    };
    match validate_records(&claimed, &rules(&log_append, &tp)) {
        Err(ValidationError::RecordsRejected {
            invalid_timestamp: true,
            errors,
            message,
        }) => {
            assert_eq!(
                message,
                "One or more records have been rejected due to invalid timestamp"
            );
            let messages: Vec<_> = errors.iter().map(|e| e.message.as_str()).collect();
            assert_eq!(
                messages,
                vec![
                    format!(
                        "Invalid timestamp type in message DefaultRecord(offset=0, timestamp={NOW}, key=2 bytes, value=3 bytes). Producer should not set timestamp type to LogAppendTime."
                    ),
                    format!(
                        "Invalid timestamp type in message DefaultRecord(offset=1, timestamp={}, key=0 bytes, value=1 bytes). Producer should not set timestamp type to LogAppendTime.",
                        NOW + 1
                    ),
                ]
            );
        }
        other => panic!("expected INVALID_TIMESTAMP, got {other:?}"),
    }
    // A CreateTime topic takes the batch as produced, as Kafka 4.1 does; so does a
    // LogAppendTime topic a batch that does not claim it.
    assert!(matches!(
        validate_records(&claimed, &rules(&LogConfig::default(), &tp)),
        Ok(Validated::AsProduced)
    ));
    let plain = batch(&[record(Some("a"), "1", NOW)], Compression::None);
    assert!(matches!(
        validate_records(&plain, &rules(&log_append, &tp)),
        Ok(Validated::AsProduced)
    ));
}
