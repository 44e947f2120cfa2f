//! `__transaction_state` records in Kafka's layout (`TransactionLogKey` v0 and
//! `TransactionLogValue` v0): the key is the transactional id; the value is its state, or
//! a tombstone once the id expired.
//!
//! ```text
//! key   = version i16 | transactional_id string
//! value = version i16 | producer_id i64 | producer_epoch i16 | timeout_ms i32 | status i8
//!         | partitions [topic string | [partition i32]] | last_update_ms i64 | start_ms i64
//! ```
// Bytes come from the log: no indexing that can panic.
#![deny(clippy::indexing_slicing)]

use std::collections::BTreeSet;

use super::metadata::{TxnMetadata, TxnState};
use crate::storage::TopicPartition;

pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    out.extend_from_slice(&0i16.to_be_bytes());
    put_string(&mut out, transactional_id);
    out
}

pub fn encode_value(metadata: &TxnMetadata) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&0i16.to_be_bytes());
    out.extend_from_slice(&metadata.producer_id.to_be_bytes());
    out.extend_from_slice(&metadata.producer_epoch.to_be_bytes());
    out.extend_from_slice(&metadata.timeout_ms.to_be_bytes());
    out.push(metadata.state as u8);
    let mut topics: Vec<(&str, Vec<i32>)> = Vec::new();
    for tp in &metadata.partitions {
        match topics.last_mut() {
            Some((topic, partitions)) if *topic == tp.topic => partitions.push(tp.partition),
            _ => topics.push((&tp.topic, vec![tp.partition])),
        }
    }
    out.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for (topic, partitions) in topics {
        put_string(&mut out, topic);
        out.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
        for partition in partitions {
            out.extend_from_slice(&partition.to_be_bytes());
        }
    }
    out.extend_from_slice(&metadata.last_update_ms.to_be_bytes());
    out.extend_from_slice(&metadata.start_ms.to_be_bytes());
    out
}

fn put_string(out: &mut Vec<u8>, value: &str) {
    let bytes = value.as_bytes();
    out.extend_from_slice(&(bytes.len().min(i16::MAX as usize) as i16).to_be_bytes());
    out.extend_from_slice(
        bytes
            .get(..bytes.len().min(i16::MAX as usize))
            .unwrap_or_default(),
    );
}

/// Why a record could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("undecodable __transaction_state record: {0}")]
pub struct DecodeError(&'static str);

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or(DecodeError("truncated"))?;
        self.0 = rest;
        Ok(*head)
    }
    fn i8(&mut self) -> Result<i8, DecodeError> {
        Ok(i8::from_be_bytes(self.take()?))
    }
    fn i16(&mut self) -> Result<i16, DecodeError> {
        Ok(i16::from_be_bytes(self.take()?))
    }
    fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.take()?))
    }
    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(self.take()?))
    }
    fn string(&mut self) -> Result<String, DecodeError> {
        let length = usize::try_from(self.i16()?).map_err(|_| DecodeError("null string"))?;
        let bytes = self
            .0
            .get(..length)
            .ok_or(DecodeError("truncated string"))?;
        self.0 = self.0.get(length..).unwrap_or_default();
        String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError("string is not UTF-8"))
    }
}

pub fn decode_key(bytes: &[u8]) -> Result<String, DecodeError> {
    let mut reader = Reader(bytes);
    if !(0..=1).contains(&reader.i16()?) {
        return Err(DecodeError("unknown key version"));
    }
    reader.string()
}

pub fn decode_value(bytes: &[u8]) -> Result<TxnMetadata, DecodeError> {
    let mut reader = Reader(bytes);
    if reader.i16()? != 0 {
        return Err(DecodeError("unknown value version"));
    }
    let producer_id = reader.i64()?;
    let producer_epoch = reader.i16()?;
    let timeout_ms = reader.i32()?;
    let state = TxnState::from_i8(reader.i8()?).ok_or(DecodeError("unknown state"))?;
    let topics = reader.i32()?;
    let mut partitions = BTreeSet::new();
    for _ in 0..topics.max(0) {
        let topic = reader.string()?;
        let count = reader.i32()?;
        for _ in 0..count.max(0) {
            partitions.insert(TopicPartition::new(topic.clone(), reader.i32()?));
        }
    }
    Ok(TxnMetadata {
        producer_id,
        producer_epoch,
        timeout_ms,
        state,
        partitions,
        last_update_ms: reader.i64()?,
        start_ms: reader.i64()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_garbage_is_an_error() {
        let mut metadata = TxnMetadata::new(42, 60_000, 1_000);
        metadata.state = TxnState::Ongoing;
        metadata.start_ms = 900;
        metadata.partitions.extend([
            TopicPartition::new("a", 0),
            TopicPartition::new("a", 3),
            TopicPartition::new("b", 1),
        ]);
        let value = encode_value(&metadata);
        assert_eq!(decode_value(&value), Ok(metadata));
        assert_eq!(decode_key(&encode_key("app-1")), Ok("app-1".to_string()));
        for cut in 0..value.len() {
            assert!(decode_value(value.get(..cut).unwrap_or_default()).is_err());
        }
        assert!(decode_key(&[0, 0, 0, 9, b'x']).is_err());
    }
}
