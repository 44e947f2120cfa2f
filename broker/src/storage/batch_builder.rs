//! Builds RecordBatch v2 bytes the way producers do, with the `kafka-protocol` encoder.
//! The broker uses it for its own internal records (e.g. `__consumer_offsets`); tests
//! and benchmarks use it to make realistic batches.

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, Record,
    RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// One record to put in a batch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SimpleRecord {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub timestamp: i64,
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// Producer fields of a batch (idempotent producers set all three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerFields {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
}

impl Default for ProducerFields {
    fn default() -> Self {
        Self {
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
        }
    }
}

/// Encoding failed (the encoder's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot encode record batch: {0}")]
pub struct BuildError(String);

/// Encodes `records` as one batch with base offset 0 (the broker assigns the real one).
pub fn build_batch(
    records: &[SimpleRecord],
    compression: Compression,
    producer: ProducerFields,
) -> Result<BytesMut, BuildError> {
    encode(records, compression, producer, false)
}

fn encode(
    records: &[SimpleRecord],
    compression: Compression,
    producer: ProducerFields,
    transactional: bool,
) -> Result<BytesMut, BuildError> {
    let encoded: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, record)| Record {
            transactional,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id: producer.producer_id,
            producer_epoch: producer.producer_epoch,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: if producer.base_sequence < 0 {
                i as i32 - 1
            } else {
                producer.base_sequence.wrapping_add(i as i32)
            },
            timestamp: record.timestamp,
            key: record.key.clone(),
            value: record.value.clone(),
            headers: record
                .headers
                .iter()
                .map(|(k, v)| (k.clone().into(), v.clone()))
                .collect(),
        })
        .collect();
    let mut buffer = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buffer,
        &encoded,
        &RecordEncodeOptions {
            version: 2,
            compression,
        },
    )
    .map_err(|error| BuildError(error.to_string()))?;
    Ok(buffer)
}

/// A transaction marker (Kafka's `EndTransactionMarker`): a control batch of
/// `producer`'s transaction holding one record whose key is `version 0, type` (0 ABORT,
/// 1 COMMIT) and whose value is `version 0, coordinator epoch`.
pub fn build_marker(
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    coordinator_epoch: i32,
    timestamp: i64,
) -> Result<BytesMut, BuildError> {
    let mut key = [0u8; 4];
    key[3] = u8::from(commit);
    let mut value = [0u8; 6];
    value[2..].copy_from_slice(&coordinator_epoch.to_be_bytes());
    let marker = Record {
        transactional: true,
        control: true,
        delete_horizon: false,
        partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
        producer_id,
        producer_epoch,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: NO_SEQUENCE,
        timestamp,
        key: Some(Bytes::copy_from_slice(&key)),
        value: Some(Bytes::copy_from_slice(&value)),
        headers: Default::default(),
    };
    let mut buffer = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buffer,
        std::slice::from_ref(&marker),
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .map_err(|error| BuildError(error.to_string()))?;
    Ok(buffer)
}

/// A transactional batch of `records` (the `transactional` attribute set), as a
/// transactional producer writes it.
pub fn build_transactional_batch(
    records: &[SimpleRecord],
    compression: Compression,
    producer: ProducerFields,
) -> Result<BytesMut, BuildError> {
    encode(records, compression, producer, true)
}
