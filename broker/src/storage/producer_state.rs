//! Idempotent-producer state of one partition: for each producer id, its epoch and the
//! sequence numbers of its last few batches, so that a retried batch is acknowledged
//! without a second append and a gap is refused.
//!
//! Kept in memory, updated under the log's writer lock, and rebuilt from the batch
//! headers in the log when the partition is opened (headers carry producer id, epoch
//! and base sequence), so it survives restarts without a snapshot file.

use std::collections::{HashMap, VecDeque};

use super::batch::BatchHeader;
use super::transactions::marker_coordinator_epoch;

/// How many recent batches per producer are remembered for duplicate detection; Kafka
/// allows at most five in-flight requests per idempotent connection.
const REMEMBERED_BATCHES: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BatchSequences {
    first_sequence: i32,
    last_sequence: i32,
    base_offset: u64,
    last_offset: u64,
}

#[derive(Debug, Clone)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchSequences>,
    /// The largest timestamp of the producer's last batch or marker.
    last_timestamp: i64,
    /// The transaction coordinator epoch of the producer's last marker here (-1 before
    /// one): a marker from an older coordinator is refused (a deposed coordinator's
    /// delayed marker must not end the transaction its successor is running).
    coordinator_epoch: i32,
}

/// One producer as DescribeProducers reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerSummary {
    pub producer_id: i64,
    pub epoch: i16,
    /// The sequence of its last record here, -1 when none (only markers).
    pub last_sequence: i32,
    pub last_timestamp: i64,
    /// The coordinator epoch of its last marker here, -1 when none.
    pub coordinator_epoch: i32,
}

/// The outcome of checking a batch's sequence numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// New data: append it.
    Append,
    /// A retry of a batch already in the log at these offsets.
    Duplicate { base_offset: u64, last_offset: u64 },
}

/// A batch the producer state refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SequenceError {
    #[error("producer {producer_id}: expected sequence {expected}, got {received}")]
    OutOfOrder {
        producer_id: i64,
        expected: i32,
        received: i32,
    },
    #[error("producer {producer_id}: epoch {received} is older than the current epoch {current}")]
    Fenced {
        producer_id: i64,
        current: i16,
        received: i16,
    },
    #[error(
        "producer {producer_id}: a marker of coordinator epoch {received}, older than the last marker's {current}"
    )]
    CoordinatorFenced {
        producer_id: i64,
        current: i32,
        received: i32,
    },
}

/// Producer states of one partition.
#[derive(Debug, Clone, Default)]
pub struct ProducerStateTable {
    producers: HashMap<i64, ProducerEntry>,
}

impl ProducerStateTable {
    /// The producer's current epoch here, if it is known.
    pub fn epoch(&self, producer_id: i64) -> Option<i16> {
        self.producers.get(&producer_id).map(|entry| entry.epoch)
    }

    /// Checks a batch (`batch`: its bytes, header first; only a marker's are read)
    /// against the producer's state; non-idempotent batches always append.
    pub fn check(
        &self,
        header: &BatchHeader,
        batch: &[u8],
    ) -> Result<SequenceCheck, SequenceError> {
        // A transaction marker (or a coordinator's transactional write, TxnOffsetCommit)
        // carries no sequence; an older epoch than the producer's is a zombie's (Kafka's
        // InvalidProducerEpoch), a marker of an older coordinator than the last marker's
        // a deposed coordinator's (TransactionCoordinatorFenced).
        if header.has_producer_id() && (header.is_control() || header.base_sequence < 0) {
            let Some(entry) = self.producers.get(&header.producer_id) else {
                return Ok(SequenceCheck::Append);
            };
            if header.producer_epoch < entry.epoch {
                return Err(SequenceError::Fenced {
                    producer_id: header.producer_id,
                    current: entry.epoch,
                    received: header.producer_epoch,
                });
            }
            return match marker_coordinator_epoch(header, batch) {
                Some(received) if received < entry.coordinator_epoch => {
                    Err(SequenceError::CoordinatorFenced {
                        producer_id: header.producer_id,
                        current: entry.coordinator_epoch,
                        received,
                    })
                }
                _ => Ok(SequenceCheck::Append),
            };
        }
        if !header.has_producer_id() || header.base_sequence < 0 {
            return Ok(SequenceCheck::Append);
        }
        let first = header.base_sequence;
        let last = first.wrapping_add(header.last_offset_delta);
        let Some(entry) = self.producers.get(&header.producer_id) else {
            // Unknown producer (new, or its batches are gone by retention): accept.
            return Ok(SequenceCheck::Append);
        };
        if header.producer_epoch < entry.epoch {
            return Err(SequenceError::Fenced {
                producer_id: header.producer_id,
                current: entry.epoch,
                received: header.producer_epoch,
            });
        }
        if header.producer_epoch > entry.epoch {
            return if first == 0 {
                Ok(SequenceCheck::Append)
            } else {
                Err(SequenceError::OutOfOrder {
                    producer_id: header.producer_id,
                    expected: 0,
                    received: first,
                })
            };
        }
        if let Some(seen) = entry
            .batches
            .iter()
            .find(|b| b.first_sequence == first && b.last_sequence == last)
        {
            return Ok(SequenceCheck::Duplicate {
                base_offset: seen.base_offset,
                last_offset: seen.last_offset,
            });
        }
        let expected = entry
            .batches
            .back()
            .map_or(0, |b| next_sequence(b.last_sequence));
        if first != expected {
            return Err(SequenceError::OutOfOrder {
                producer_id: header.producer_id,
                expected,
                received: first,
            });
        }
        Ok(SequenceCheck::Append)
    }

    /// Records an appended batch (its header with the assigned base offset; `batch`: its
    /// bytes, read only for a marker's coordinator epoch).
    pub fn record(&mut self, header: &BatchHeader, batch: &[u8]) {
        let marker = header.is_control();
        if !header.has_producer_id() || (!marker && header.base_sequence < 0) {
            return;
        }
        let entry = self
            .producers
            .entry(header.producer_id)
            .or_insert_with(|| ProducerEntry {
                epoch: header.producer_epoch,
                batches: VecDeque::new(),
                last_timestamp: header.max_timestamp,
                coordinator_epoch: -1,
            });
        entry.last_timestamp = header.max_timestamp;
        // A new epoch starts the sequences again. A marker carries no sequence: one of a
        // newer epoch (the coordinator bumped it to abort) fences the older epoch from here
        // on, one of an older epoch changes nothing.
        let new_epoch = if marker {
            header.producer_epoch > entry.epoch
        } else {
            header.producer_epoch != entry.epoch
        };
        if new_epoch {
            entry.epoch = header.producer_epoch;
            entry.batches.clear();
        }
        if marker {
            if let Some(epoch) = marker_coordinator_epoch(header, batch) {
                entry.coordinator_epoch = epoch;
            }
            return;
        }
        entry.batches.push_back(BatchSequences {
            first_sequence: header.base_sequence,
            last_sequence: header.base_sequence.wrapping_add(header.last_offset_delta),
            base_offset: header.base_offset as u64,
            last_offset: header.last_offset() as u64,
        });
        while entry.batches.len() > REMEMBERED_BATCHES {
            entry.batches.pop_front();
        }
    }

    /// Every producer known here, by id.
    pub fn summaries(&self) -> Vec<ProducerSummary> {
        let mut all: Vec<ProducerSummary> = self
            .producers
            .iter()
            .map(|(id, entry)| ProducerSummary {
                producer_id: *id,
                epoch: entry.epoch,
                last_sequence: entry.batches.back().map_or(-1, |b| b.last_sequence),
                last_timestamp: entry.last_timestamp,
                coordinator_epoch: entry.coordinator_epoch,
            })
            .collect();
        all.sort_by_key(|p| p.producer_id);
        all
    }

    /// Each producer's last offset in the log: the cleaner keeps that batch (emptied if
    /// need be), so the producer's sequence survives a restart.
    pub fn last_offsets(&self) -> HashMap<i64, u64> {
        self.producers
            .iter()
            .filter_map(|(id, entry)| Some((*id, entry.batches.back()?.last_offset)))
            .collect()
    }
}

/// Sequences wrap from i32::MAX to 0, as Kafka's do.
fn next_sequence(sequence: i32) -> i32 {
    if sequence == i32::MAX {
        0
    } else {
        sequence + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(
        producer_id: i64,
        epoch: i16,
        base_sequence: i32,
        count: i32,
        base_offset: i64,
    ) -> BatchHeader {
        BatchHeader {
            base_offset,
            batch_length: 0,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: count - 1,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id,
            producer_epoch: epoch,
            base_sequence,
            record_count: count,
        }
    }

    #[test]
    fn duplicates_gaps_and_fencing() {
        let mut table = ProducerStateTable::default();
        let first = header(7, 0, 0, 3, 0);
        assert_eq!(table.check(&first, &[]), Ok(SequenceCheck::Append));
        table.record(&first, &[]);
        assert_eq!(
            table.check(&header(7, 0, 0, 3, 99), &[]),
            Ok(SequenceCheck::Duplicate {
                base_offset: 0,
                last_offset: 2
            })
        );
        assert!(matches!(
            table.check(&header(7, 0, 5, 1, 3), &[]),
            Err(SequenceError::OutOfOrder {
                expected: 3,
                received: 5,
                ..
            })
        ));
        assert_eq!(
            table.check(&header(7, 0, 3, 1, 3), &[]),
            Ok(SequenceCheck::Append)
        );
        table.record(&header(7, 1, 0, 1, 3), &[]);
        assert!(matches!(
            table.check(&header(7, 0, 1, 1, 4), &[]),
            Err(SequenceError::Fenced { current: 1, .. })
        ));
        assert!(matches!(
            table.check(&header(7, 2, 4, 1, 4), &[]),
            Err(SequenceError::OutOfOrder { .. })
        ));
        assert_eq!(
            table.check(&header(-1, -1, -1, 1, 4), &[]),
            Ok(SequenceCheck::Append)
        );
    }
}
