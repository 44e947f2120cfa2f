//! Kafka RecordBatch v2: header parsing, validation and the few fields the broker writes.
//!
//! On disk and on the wire a batch is:
//!
//! ```text
//! offset  size  field                   written by
//!      0     8  base_offset             broker (outside the CRC)
//!      8     4  batch_length            producer (bytes after this field)
//!     12     4  partition_leader_epoch  broker (outside the CRC)
//!     16     1  magic (= 2)             producer
//!     17     4  crc (CRC32C of 21..end) producer; broker only with LogAppendTime
//!     21     2  attributes              producer; broker sets bit 3 for LogAppendTime
//!     23     4  last_offset_delta       producer
//!     27     8  base_timestamp          producer
//!     35     8  max_timestamp           producer; broker with LogAppendTime
//!     43     8  producer_id             producer
//!     51     2  producer_epoch          producer
//!     53     4  base_sequence           producer
//!     57     4  record_count            producer
//!     61     …  records (possibly compressed)
//! ```
//!
//! The broker never re-encodes records: it validates the header and CRC, then stamps the
//! base offset and leader epoch (neither is covered by the CRC), exactly as Kafka does.
// Every read here is on bytes from the network or from disk: no indexing that can panic.
#![deny(clippy::indexing_slicing)]

/// Bytes before `batch_length`'s coverage starts: base offset (8) + length (4).
pub const LOG_OVERHEAD: usize = 12;
/// Size of the fixed RecordBatch v2 header.
pub const BATCH_HEADER_SIZE: usize = 61;
/// The only record batch format Oxbow stores.
pub const MAGIC_V2: i8 = 2;

const PARTITION_LEADER_EPOCH_AT: usize = 12;
const MAGIC_AT: usize = 16;
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const LAST_OFFSET_DELTA_AT: usize = 23;
const BASE_TIMESTAMP_AT: usize = 27;
const MAX_TIMESTAMP_AT: usize = 35;
const PRODUCER_ID_AT: usize = 43;
const PRODUCER_EPOCH_AT: usize = 51;
const BASE_SEQUENCE_AT: usize = 53;
const RECORD_COUNT_AT: usize = 57;

const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_LOG_APPEND: i16 = 0x08;
const TRANSACTIONAL_FLAG: i16 = 0x10;
const CONTROL_FLAG: i16 = 0x20;

/// Why a batch was refused. The API layer maps these to Kafka error codes
/// (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, INVALID_RECORD) in `api/errors.rs`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error(
        "record batch of {available} bytes is shorter than the {BATCH_HEADER_SIZE}-byte header"
    )]
    TooShort { available: usize },
    #[error("record batch length field says {declared} bytes, but {available} bytes follow it")]
    LengthMismatch { declared: i64, available: usize },
    #[error("record batch magic {magic} is not supported; only magic 2 is")]
    UnsupportedMagic { magic: i8 },
    #[error(
        "record batch CRC32C mismatch: header says {expected:#010x}, content gives {actual:#010x}"
    )]
    CrcMismatch { expected: u32, actual: u32 },
    #[error(
        "record batch declares {record_count} records but its last offset delta is {last_offset_delta}"
    )]
    RecordCountMismatch {
        record_count: i32,
        last_offset_delta: i32,
    },
    #[error("record batch of {size} bytes exceeds max.message.bytes = {max}")]
    TooLarge { size: usize, max: usize },
    #[error("the record set is empty")]
    Empty,
}

impl BatchError {
    /// True when the bytes are damaged or not a batch (as opposed to a well-formed batch
    /// that breaks a rule): Kafka answers those with CORRUPT_MESSAGE.
    pub fn is_corrupt(&self) -> bool {
        matches!(
            self,
            Self::TooShort { .. }
                | Self::LengthMismatch { .. }
                | Self::UnsupportedMagic { .. }
                | Self::CrcMismatch { .. }
        )
    }
}

/// The fixed header of one RecordBatch v2, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

impl BatchHeader {
    /// Decodes the header at the start of `bytes` (at least [`BATCH_HEADER_SIZE`] bytes).
    /// Checks only that the bytes are there and that the magic is 2.
    pub fn parse(bytes: &[u8]) -> Result<Self, BatchError> {
        if bytes.len() < BATCH_HEADER_SIZE {
            return Err(BatchError::TooShort {
                available: bytes.len(),
            });
        }
        let magic = read_i8(bytes, MAGIC_AT);
        if magic != MAGIC_V2 {
            return Err(BatchError::UnsupportedMagic { magic });
        }
        Ok(Self {
            base_offset: read_i64(bytes, 0),
            batch_length: read_i32(bytes, 8),
            partition_leader_epoch: read_i32(bytes, PARTITION_LEADER_EPOCH_AT),
            magic,
            crc: read_i32(bytes, CRC_AT) as u32,
            attributes: read_i16(bytes, ATTRIBUTES_AT),
            last_offset_delta: read_i32(bytes, LAST_OFFSET_DELTA_AT),
            base_timestamp: read_i64(bytes, BASE_TIMESTAMP_AT),
            max_timestamp: read_i64(bytes, MAX_TIMESTAMP_AT),
            producer_id: read_i64(bytes, PRODUCER_ID_AT),
            producer_epoch: read_i16(bytes, PRODUCER_EPOCH_AT),
            base_sequence: read_i32(bytes, BASE_SEQUENCE_AT),
            record_count: read_i32(bytes, RECORD_COUNT_AT),
        })
    }

    /// Total size of the batch including base offset and length fields.
    pub fn total_size(&self) -> usize {
        LOG_OVERHEAD + self.batch_length.max(0) as usize
    }

    /// Offset of the batch's last record.
    pub fn last_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta)
    }

    /// Offset after the batch's last record.
    pub fn next_offset(&self) -> i64 {
        self.last_offset() + 1
    }

    /// Compression codec id (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
    pub fn compression_codec(&self) -> i16 {
        self.attributes & COMPRESSION_MASK
    }

    pub fn is_log_append_time(&self) -> bool {
        self.attributes & TIMESTAMP_TYPE_LOG_APPEND != 0
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_FLAG != 0
    }

    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_FLAG != 0
    }

    /// True when the producer asked for idempotence (a producer id and a sequence).
    pub fn has_producer_id(&self) -> bool {
        self.producer_id >= 0
    }
}

/// Where a batch comes from, which decides how its record count must match its offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOrigin {
    /// As a producer wrote it: one record per offset, `record_count = last_offset_delta + 1`.
    Producer,
    /// From a log (a segment, or a leader's log fetched by a follower): compaction keeps a
    /// batch's base offset and last offset delta and drops records from between them, so
    /// `record_count <= last_offset_delta + 1`; an empty batch (no records) keeps a
    /// producer's last sequence after its records were all superseded, as in Kafka.
    Log,
}

/// Validates one complete batch (exactly `bytes`): length, magic, size limit, CRC32C and
/// record count for its origin. Returns the decoded header.
pub fn validate_batch(
    bytes: &[u8],
    max_message_bytes: usize,
    origin: BatchOrigin,
) -> Result<BatchHeader, BatchError> {
    let header = BatchHeader::parse(bytes)?;
    let declared = i64::from(header.batch_length);
    let available = bytes.len() - LOG_OVERHEAD;
    if declared < (BATCH_HEADER_SIZE - LOG_OVERHEAD) as i64 || declared != available as i64 {
        return Err(BatchError::LengthMismatch {
            declared,
            available,
        });
    }
    if bytes.len() > max_message_bytes {
        return Err(BatchError::TooLarge {
            size: bytes.len(),
            max: max_message_bytes,
        });
    }
    let actual = crc32c::crc32c(bytes.get(ATTRIBUTES_AT..).unwrap_or_default());
    if actual != header.crc {
        return Err(BatchError::CrcMismatch {
            expected: header.crc,
            actual,
        });
    }
    let span = i64::from(header.last_offset_delta) + 1;
    let count = i64::from(header.record_count);
    let count_fits = match origin {
        BatchOrigin::Producer => count == span,
        BatchOrigin::Log => (0..=span).contains(&count),
    };
    if header.last_offset_delta < 0 || !count_fits {
        return Err(BatchError::RecordCountMismatch {
            record_count: header.record_count,
            last_offset_delta: header.last_offset_delta,
        });
    }
    Ok(header)
}

/// Splits a produce request's record set into batches and validates each one.
/// Returns `(start, end, header)` for every batch, or the first error: the caller
/// appends nothing unless every batch passed.
pub fn validate_record_set(
    records: &[u8],
    max_message_bytes: usize,
    origin: BatchOrigin,
) -> Result<Vec<(usize, usize, BatchHeader)>, BatchError> {
    if records.is_empty() {
        return Err(BatchError::Empty);
    }
    let mut batches = Vec::with_capacity(1);
    let mut position = 0;
    while position < records.len() {
        let rest = records.get(position..).unwrap_or_default();
        if rest.len() < LOG_OVERHEAD {
            return Err(BatchError::TooShort {
                available: rest.len(),
            });
        }
        let declared = i64::from(read_i32(rest, 8));
        let total = LOG_OVERHEAD as i64 + declared;
        if declared < 0 || total > rest.len() as i64 {
            return Err(BatchError::LengthMismatch {
                declared,
                available: rest.len() - LOG_OVERHEAD,
            });
        }
        let end = position + total as usize;
        let bytes = records.get(position..end).unwrap_or_default();
        let header = validate_batch(bytes, max_message_bytes, origin)?;
        batches.push((position, end, header));
        position = end;
    }
    Ok(batches)
}

/// The broker's copy of a validated batch's header with the fields it owns written in:
/// base offset and leader epoch, and with LogAppendTime the timestamp type, max timestamp
/// and a fresh CRC (over the patched header and the untouched `body`). The produced bytes
/// are never written to: the segment gets this header and the body in one vectored write.
pub fn stamped_header(
    batch: &[u8],
    base_offset: i64,
    partition_leader_epoch: i32,
    log_append_time: Option<i64>,
) -> [u8; BATCH_HEADER_SIZE] {
    let mut header = [0u8; BATCH_HEADER_SIZE];
    if let Some(produced) = batch.get(..BATCH_HEADER_SIZE) {
        header.copy_from_slice(produced);
    }
    write_bytes(&mut header, 0, &base_offset.to_be_bytes());
    write_bytes(
        &mut header,
        PARTITION_LEADER_EPOCH_AT,
        &partition_leader_epoch.to_be_bytes(),
    );
    if let Some(now) = log_append_time {
        let attributes = read_i16(&header, ATTRIBUTES_AT) | TIMESTAMP_TYPE_LOG_APPEND;
        write_bytes(&mut header, ATTRIBUTES_AT, &attributes.to_be_bytes());
        write_bytes(&mut header, MAX_TIMESTAMP_AT, &now.to_be_bytes());
        let body = batch.get(BATCH_HEADER_SIZE..).unwrap_or_default();
        let crc = crc32c::crc32c_append(
            crc32c::crc32c(header.get(ATTRIBUTES_AT..).unwrap_or_default()),
            body,
        );
        write_bytes(&mut header, CRC_AT, &crc.to_be_bytes());
    }
    header
}

fn write_bytes(bytes: &mut [u8], at: usize, value: &[u8]) {
    if let Some(slot) = bytes.get_mut(at..at + value.len()) {
        slot.copy_from_slice(value);
    }
}

fn read_array<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(slice) = bytes.get(at..at + N) {
        out.copy_from_slice(slice);
    }
    out
}

fn read_i8(bytes: &[u8], at: usize) -> i8 {
    i8::from_be_bytes(read_array(bytes, at))
}

fn read_i16(bytes: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(read_array(bytes, at))
}

pub(crate) fn read_i32(bytes: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(read_array(bytes, at))
}

pub(crate) fn read_i64(bytes: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(read_array(bytes, at))
}

#[cfg(test)]
mod tests;
