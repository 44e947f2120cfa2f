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
    let encoded: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, record)| Record {
            transactional: false,
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
