//! Reading a coordinator partition back: every record from the log start offset to the
//! log end, decoded batch by batch. A batch that cannot be decoded is skipped with a
//! warning and a read error ends the load with an error line (never a panic): what was
//! read until then is loaded, as Kafka's loader does with a corrupt tail.

use bytes::Bytes;
use kafka_protocol::records::RecordBatchDecoder;

use crate::replication::Partition;

/// One record of a coordinator partition, in log order.
#[derive(Debug, Clone, PartialEq)]
pub struct CoordinatorRecord {
    pub offset: i64,
    /// The producer of a transactional record (-1 otherwise).
    pub producer_id: i64,
    pub transactional: bool,
    pub kind: RecordKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RecordKind {
    /// A record the coordinator wrote (or a producer's transaction, when `transactional`).
    Data {
        key: Option<Bytes>,
        value: Option<Bytes>,
    },
    /// A transaction marker of `producer_id`: COMMIT or ABORT.
    Marker { commit: bool },
}

/// How much one read takes from the log.
const READ_BYTES: u32 = 1 << 20;

/// Every record of `partition` from its log start to its log end.
pub fn read(partition: &Partition) -> Vec<CoordinatorRecord> {
    let tp = partition.topic_partition().clone();
    let mut out = Vec::new();
    let mut offset = partition.log_start_offset();
    loop {
        let read = match partition.read_to_log_end(offset, READ_BYTES) {
            Ok(read) if !read.regions.is_empty() && read.next_offset > offset => read,
            Ok(_) => break,
            Err(error) => {
                tracing::error!(topic_partition = %tp, offset, %error, "Cannot read a coordinator partition; the rest of it is not loaded");
                break;
            }
        };
        offset = read.next_offset;
        let bytes = match read.read_to_vec() {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::error!(topic_partition = %tp, offset, %error, "Cannot read a coordinator partition; the rest of it is not loaded");
                break;
            }
        };
        let mut buffer = Bytes::from(bytes);
        let sets = match RecordBatchDecoder::decode_all(&mut buffer) {
            Ok(sets) => sets,
            Err(error) => {
                tracing::warn!(topic_partition = %tp, %error, "Skipping undecodable coordinator batches");
                continue;
            }
        };
        for record in sets.into_iter().flat_map(|set| set.records) {
            let kind = if record.control {
                // An end-transaction marker's key: version i16, type i16 (0 ABORT, 1 COMMIT).
                match record.key.as_deref() {
                    Some([_, _, high, low, ..]) if record.transactional => {
                        match i16::from_be_bytes([*high, *low]) {
                            0 => RecordKind::Marker { commit: false },
                            1 => RecordKind::Marker { commit: true },
                            _ => continue,
                        }
                    }
                    _ => continue,
                }
            } else {
                RecordKind::Data {
                    key: record.key,
                    value: record.value,
                }
            };
            out.push(CoordinatorRecord {
                offset: record.offset,
                producer_id: record.producer_id,
                transactional: record.transactional,
                kind,
            });
        }
    }
    out
}
