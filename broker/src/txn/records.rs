//! `__transaction_state` records in Kafka's layout (`TransactionLogKey` v0 and
//! `TransactionLogValue` v0 and v1): the key is the transactional id; the value is its
//! state, or a tombstone once the id expired.
//!
//! ```text
//! key   = version i16 | transactional_id string
//! value v0 = version i16 | producer_id i64 | producer_epoch i16 | timeout_ms i32 | status i8
//!            | partitions [topic string | [partition i32]] | last_update_ms i64 | start_ms i64
//! value v1 = the same fields, flexible (compact strings and arrays, each partition entry
//!            with its tagged fields), then tagged fields: 0 previous producer id,
//!            1 next producer id, 2 client transaction version (written when not default)
//! ```
//!
//! Version 1 is written from transaction version 1 on, as Kafka does: only it keeps
//! what transaction version 2 needs across a coordinator failover.
// Bytes come from the log: no indexing that can panic.
#![deny(clippy::indexing_slicing)]

use std::collections::BTreeSet;

use super::metadata::{TxnMetadata, TxnState};
use crate::model::TopicPartition;

pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + transactional_id.len());
    out.extend_from_slice(&0i16.to_be_bytes());
    put_string(&mut out, transactional_id);
    out
}

/// The value for `metadata` in layout `version` (0 or 1).
pub fn encode_value(metadata: &TxnMetadata, version: i16) -> Vec<u8> {
    let flexible = version >= 1;
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&version.to_be_bytes());
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
    put_length(&mut out, topics.len(), flexible);
    for (topic, partitions) in topics {
        if flexible {
            put_compact_string(&mut out, topic);
        } else {
            put_string(&mut out, topic);
        }
        put_length(&mut out, partitions.len(), flexible);
        for partition in partitions {
            out.extend_from_slice(&partition.to_be_bytes());
        }
        if flexible {
            put_varint(&mut out, 0);
        }
    }
    out.extend_from_slice(&metadata.last_update_ms.to_be_bytes());
    out.extend_from_slice(&metadata.start_ms.to_be_bytes());
    if flexible {
        let mut tagged: Vec<(u32, Vec<u8>)> = Vec::new();
        if metadata.previous_producer_id != -1 {
            tagged.push((0, metadata.previous_producer_id.to_be_bytes().to_vec()));
        }
        if metadata.next_producer_id != -1 {
            tagged.push((1, metadata.next_producer_id.to_be_bytes().to_vec()));
        }
        if metadata.client_version != 0 {
            tagged.push((2, metadata.client_version.to_be_bytes().to_vec()));
        }
        put_varint(&mut out, tagged.len() as u32);
        for (tag, data) in tagged {
            put_varint(&mut out, tag);
            put_varint(&mut out, data.len() as u32);
            out.extend_from_slice(&data);
        }
    }
    out
}

fn put_length(out: &mut Vec<u8>, length: usize, flexible: bool) {
    let length = u32::try_from(length).unwrap_or(u32::MAX >> 1);
    if flexible {
        put_varint(out, length.saturating_add(1));
    } else {
        out.extend_from_slice(&(length as i32).to_be_bytes());
    }
}

fn put_varint(out: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_compact_string(out: &mut Vec<u8>, value: &str) {
    put_length(out, value.len(), true);
    out.extend_from_slice(value.as_bytes());
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
    fn varint(&mut self) -> Result<u32, DecodeError> {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let [byte] = self.take::<1>()?;
            value |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DecodeError("varint too long"))
    }
    /// An array's or string's length: i32/i16 before flexible versions, a compact length
    /// (plus one, 0 for null) in them; null reads as empty.
    fn length(&mut self, flexible: bool) -> Result<usize, DecodeError> {
        let length = if flexible {
            i64::from(self.varint()?) - 1
        } else {
            i64::from(self.i32()?)
        };
        Ok(usize::try_from(length).unwrap_or(0))
    }
    fn bytes(&mut self, length: usize) -> Result<&[u8], DecodeError> {
        let (head, rest) = (
            self.0.get(..length).ok_or(DecodeError("truncated"))?,
            self.0.get(length..).unwrap_or_default(),
        );
        self.0 = rest;
        Ok(head)
    }
    fn compact_string(&mut self) -> Result<String, DecodeError> {
        let length = usize::try_from(i64::from(self.varint()?) - 1)
            .map_err(|_| DecodeError("null string"))?;
        String::from_utf8(self.bytes(length)?.to_vec())
            .map_err(|_| DecodeError("string is not UTF-8"))
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
    let flexible = match reader.i16()? {
        0 => false,
        1 => true,
        _ => return Err(DecodeError("unknown value version")),
    };
    let producer_id = reader.i64()?;
    let producer_epoch = reader.i16()?;
    let timeout_ms = reader.i32()?;
    let state = TxnState::from_i8(reader.i8()?).ok_or(DecodeError("unknown state"))?;
    let topics = reader.length(flexible)?;
    let mut partitions = BTreeSet::new();
    for _ in 0..topics {
        let topic = if flexible {
            reader.compact_string()?
        } else {
            reader.string()?
        };
        let count = reader.length(flexible)?;
        for _ in 0..count {
            partitions.insert(TopicPartition::new(topic.clone(), reader.i32()?));
        }
        if flexible {
            skip_tagged(&mut reader)?;
        }
    }
    let mut metadata = TxnMetadata {
        producer_id,
        producer_epoch,
        timeout_ms,
        state,
        partitions,
        last_update_ms: reader.i64()?,
        start_ms: reader.i64()?,
        previous_producer_id: -1,
        next_producer_id: -1,
        client_version: 0,
    };
    if flexible {
        for _ in 0..reader.varint()? {
            let tag = reader.varint()?;
            let size = usize::try_from(reader.varint()?).unwrap_or(usize::MAX);
            let mut field = Reader(reader.bytes(size)?);
            match tag {
                0 => metadata.previous_producer_id = field.i64()?,
                1 => metadata.next_producer_id = field.i64()?,
                2 => metadata.client_version = field.i16()?,
                // A field a newer Kafka added: skipped, as tagged fields are meant to be.
                _ => {}
            }
        }
    }
    Ok(metadata)
}

fn skip_tagged(reader: &mut Reader<'_>) -> Result<(), DecodeError> {
    for _ in 0..reader.varint()? {
        reader.varint()?;
        let size = usize::try_from(reader.varint()?).unwrap_or(usize::MAX);
        reader.bytes(size)?;
    }
    Ok(())
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
        let value = encode_value(&metadata, 0);
        assert_eq!(decode_value(&value), Ok(metadata.clone()));
        metadata.previous_producer_id = 41;
        metadata.next_producer_id = 43;
        metadata.client_version = 2;
        let flexible = encode_value(&metadata, 1);
        assert_eq!(decode_value(&flexible), Ok(metadata.clone()));
        for cut in 0..flexible.len() {
            assert!(decode_value(flexible.get(..cut).unwrap_or_default()).is_err());
        }
        assert_eq!(decode_key(&encode_key("app-1")), Ok("app-1".to_string()));
        for cut in 0..value.len() {
            assert!(decode_value(value.get(..cut).unwrap_or_default()).is_err());
        }
        assert!(decode_key(&[0, 0, 0, 9, b'x']).is_err());
    }
}
