//! The records section of a RecordBatch v2 (after the 61-byte header, once inflated): a
//! sequence of length-prefixed records, read in place, and the rebuilding of a batch around
//! a new records section.
//!
//! ```text
//! record = length varint | attributes i8 | timestampDelta varlong | offsetDelta varint
//!          | keyLength varint | key | valueLength varint | value | headers …
//! ```
//!
//! Deltas are relative to the batch header's `base_offset` and `base_timestamp`, so a
//! record's bytes stay valid in any batch that keeps those two fields: the cleaner keeps
//! a batch's header and drops records from its section, never re-encoding a record (as
//! Kafka's cleaner keeps the base offset, last offset delta and producer fields).
// Every read here is on bytes from the network or from disk: no indexing that can panic.
#![deny(clippy::indexing_slicing)]

use super::batch::{BATCH_HEADER_SIZE, LOG_OVERHEAD};
use super::compression::{self, CompressionError};

const LENGTH_AT: usize = 8;
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const RECORD_COUNT_AT: usize = 57;
const COMPRESSION_MASK: i16 = 0x07;

/// One record of a section, read in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// The whole record, its length prefix included.
    pub raw: &'a [u8],
    pub timestamp_delta: i64,
    pub offset_delta: i32,
    /// `None` for a record without a key.
    pub key: Option<&'a [u8]>,
    /// `None` for a null value (a tombstone when the record has a key).
    pub value: Option<&'a [u8]>,
}

impl RecordView<'_> {
    pub fn key_bytes(&self) -> usize {
        self.key.map_or(0, <[u8]>::len)
    }

    pub fn value_bytes(&self) -> Option<usize> {
        self.value.map(<[u8]>::len)
    }
}

/// Why a record of a section could not be read; `index` is its place in the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("record {index} of a batch is malformed: {reason}")]
pub struct MalformedRecord {
    pub index: i32,
    pub reason: &'static str,
}

/// The first `count` records of `section`, in order; stops at the first malformed one.
pub fn records(
    section: &[u8],
    count: i32,
) -> impl Iterator<Item = Result<RecordView<'_>, MalformedRecord>> {
    let mut rest = section;
    let mut failed = false;
    (0..count).map_while(move |index| {
        if failed {
            return None;
        }
        let record = next_record(rest, index);
        match record {
            Ok((view, after)) => {
                rest = after;
                Some(Ok(view))
            }
            Err(error) => {
                failed = true;
                Some(Err(error))
            }
        }
    })
}

fn next_record(bytes: &[u8], index: i32) -> Result<(RecordView<'_>, &[u8]), MalformedRecord> {
    let malformed = |reason| MalformedRecord { index, reason };
    let (length, after_length) =
        read_varint(bytes).ok_or_else(|| malformed("truncated record length"))?;
    let length = usize::try_from(length).map_err(|_| malformed("negative record length"))?;
    let prefix = bytes.len() - after_length.len();
    let raw = bytes
        .get(..prefix + length)
        .ok_or_else(|| malformed("record longer than its batch"))?;
    let body = after_length.get(..length).unwrap_or_default();
    let fields = read_fields(raw, body).ok_or_else(|| malformed("truncated record fields"))?;
    Ok((fields, after_length.get(length..).unwrap_or_default()))
}

fn read_fields<'a>(raw: &'a [u8], body: &'a [u8]) -> Option<RecordView<'a>> {
    let rest = body.get(1..)?; // attributes
    let (timestamp_delta, rest) = read_varint(rest)?;
    let (offset_delta, rest) = read_varint(rest)?;
    let (key_length, rest) = read_varint(rest)?;
    let (key, rest) = match usize::try_from(key_length) {
        Ok(length) => (Some(rest.get(..length)?), rest.get(length..)?),
        Err(_) => (None, rest),
    };
    let (value_length, rest) = read_varint(rest)?;
    let value = match usize::try_from(value_length) {
        Ok(length) => Some(rest.get(..length)?),
        Err(_) => None,
    };
    Some(RecordView {
        raw,
        timestamp_delta,
        offset_delta: i32::try_from(offset_delta).ok()?,
        key,
        value,
    })
}

/// A zigzag varint (up to 64 bits) and the bytes after it.
fn read_varint(bytes: &[u8]) -> Option<(i64, &[u8])> {
    let mut value: u64 = 0;
    for (i, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            let decoded = ((value >> 1) as i64) ^ -((value & 1) as i64);
            return Some((decoded, bytes.get(i + 1..)?));
        }
    }
    None
}

/// Appends to `out` the batch whose header is `batch`'s first 61 bytes and whose records
/// are `section` (uncompressed, `record_count` records) encoded with `codec` at `level`:
/// every header field is kept but the codec bits, length, record count and CRC.
pub fn rebuild_batch(
    batch: &[u8],
    section: &[u8],
    record_count: i32,
    codec: i16,
    level: i32,
    out: &mut Vec<u8>,
) -> Result<(), CompressionError> {
    let body = compression::compress(codec, level, section)?;
    let start = out.len();
    out.extend_from_slice(batch.get(..BATCH_HEADER_SIZE).unwrap_or_default());
    out.extend_from_slice(&body);
    let header = out.get_mut(start..).unwrap_or_default();
    let length = (header.len() - LOG_OVERHEAD) as i32;
    let attributes = i16::from_be_bytes([
        header.get(ATTRIBUTES_AT).copied().unwrap_or_default(),
        header.get(ATTRIBUTES_AT + 1).copied().unwrap_or_default(),
    ]);
    let attributes = (attributes & !COMPRESSION_MASK) | codec;
    write(header, LENGTH_AT, &length.to_be_bytes());
    write(header, ATTRIBUTES_AT, &attributes.to_be_bytes());
    write(header, RECORD_COUNT_AT, &record_count.to_be_bytes());
    let crc = crc32c::crc32c(header.get(ATTRIBUTES_AT..).unwrap_or_default());
    write(header, CRC_AT, &crc.to_be_bytes());
    Ok(())
}

fn write(bytes: &mut [u8], at: usize, value: &[u8]) {
    if let Some(slot) = bytes.get_mut(at..at + value.len()) {
        slot.copy_from_slice(value);
    }
}
