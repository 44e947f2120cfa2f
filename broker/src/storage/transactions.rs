//! Transactions as one partition's log sees them (Kafka's `ProducerStateManager` for
//! transactions and its `.txnindex`): which producers have a transaction open here and
//! from which offset, where the last stable offset stands, and which transactions were
//! aborted, so that a `read_committed` fetch can stop at the last stable offset and tell
//! the consumer which producers' records in its range to drop.
//!
//! ```text
//!   transactional batch of P, P not open ─► P open from the batch's base offset
//!   COMMIT marker of P                    ─► P closed
//!   ABORT marker of P                     ─► P closed; (P, first, marker offset, LSO) aborted
//!   last stable offset = min(high watermark, first offset of the oldest transaction that
//!                            is open or whose marker is not below the high watermark yet)
//! ```
//!
//! A decided transaction holds the last stable offset back until its marker is
//! replicated (Kafka's unreplicated transactions): a marker a failover could still
//! truncate does not let consumers read past an undecided transaction.
//!
//! Rebuilt from the batch headers (and the markers' first records) when the log is
//! opened or truncated, in the same pass that rebuilds the idempotent-producer state,
//! rather than read from per-segment `.txnindex` files: that pass already reads every
//! header, so a separate file would be a second copy of what the log holds. Retention
//! forgets the aborted transactions whose markers it removed.
// Marker bytes come from producers' and leaders' logs: no indexing that can panic.
#![deny(clippy::indexing_slicing)]

use std::collections::HashMap;

use super::batch::{BATCH_HEADER_SIZE, BatchHeader};
use super::record_section;

/// Kafka's control record types (the key's second field).
const ABORT: i16 = 0;
const COMMIT: i16 = 1;

/// What a transaction marker says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Commit,
    Abort,
}

/// One aborted transaction of a partition, as Fetch reports it (`aborted_transactions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTransaction {
    pub producer_id: i64,
    /// The transaction's first offset in this partition.
    pub first_offset: u64,
    /// The offset of its ABORT marker.
    pub last_offset: u64,
    /// The last stable offset once the marker was written: no later aborted
    /// transaction began before it (what lets a lookup stop early).
    pub last_stable_offset: u64,
}

/// The transactions of one partition.
#[derive(Debug, Clone, Default)]
pub struct TransactionState {
    /// Producers with a transaction open here, and its first offset.
    open: HashMap<i64, u64>,
    /// Aborted transactions by marker offset (markers are appended in offset order).
    aborted: Vec<AbortedTransaction>,
    /// Decided transactions whose markers may still be above the high watermark:
    /// `(first offset, marker offset)`.
    unreplicated: Vec<(u64, u64)>,
    /// Producers whose next transaction is being verified with its coordinator (KIP-890
    /// part 1), each with the guard of its latest verification: only a write carrying
    /// that guard may open the transaction here. A marker or the opening write ends it.
    /// Each entry keeps when it was handed out: a producer that was verified and never
    /// wrote (refused, gone) is forgotten after [`VERIFICATION_EXPIRY_MS`].
    verifying: HashMap<i64, (u64, i64)>,
    /// The last guard handed out (guards start at 1; 0 is "the transaction was open").
    last_guard: u64,
}

/// How long a verification waits for its write. The write follows the check within the
/// same request, so this only bounds what producers that never write leave behind
/// (Kafka expires them with the producer's state).
pub const VERIFICATION_EXPIRY_MS: i64 = 10 * 60 * 1000;
/// Expired verifications are looked for once this many are pending.
const VERIFICATIONS_BEFORE_EXPIRY: usize = 1024;

/// What a leader's append of transactional data has checked with the coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verification {
    /// Nothing: the batch may open a transaction (verification off, or a broker's own write).
    Unchecked,
    /// The guard [`TransactionState::start_verification`] gave, once the coordinator said
    /// the partition is in the transaction; [`Verification::OPEN`] when it was open then.
    Guard(u64),
}

impl Verification {
    /// The producer's transaction was already open here when the request was checked.
    pub const OPEN: Self = Self::Guard(0);
}

impl TransactionState {
    /// Takes an appended batch into account: `batch` is its whole bytes, header first
    /// (only a control batch's first record is read).
    pub fn record(&mut self, header: &BatchHeader, batch: &[u8]) {
        if !header.is_transactional() || !header.has_producer_id() {
            return;
        }
        let producer_id = header.producer_id;
        let offset = header.base_offset.max(0) as u64;
        self.verifying.remove(&producer_id);
        if !header.is_control() {
            self.open.entry(producer_id).or_insert(offset);
            return;
        }
        let Some(marker) = marker_of(header, batch) else {
            return;
        };
        let Some(first_offset) = self.open.remove(&producer_id) else {
            // A marker for a transaction with no data here (or a repeated marker).
            return;
        };
        self.unreplicated.push((first_offset, offset));
        if marker == Marker::Abort {
            let last_stable_offset = self.open.values().min().copied().unwrap_or(offset + 1);
            self.aborted.push(AbortedTransaction {
                producer_id,
                first_offset,
                last_offset: offset,
                last_stable_offset,
            });
        }
    }

    /// The first offset of the oldest transaction that is open or whose marker is not
    /// below `high_watermark` yet, if there is one.
    pub fn first_unstable_offset(&mut self, high_watermark: u64) -> Option<u64> {
        self.unreplicated
            .retain(|(_, marker)| *marker >= high_watermark);
        let undecided = self.open.values().copied();
        let unreplicated = self.unreplicated.iter().map(|(first, _)| *first);
        undecided.chain(unreplicated).min()
    }

    /// Starts verifying `producer_id`'s transaction: `None` when it is open here already
    /// (nothing to verify), else the guard its opening write must carry. Requests racing
    /// to open the same transaction share one guard (a producer pipelines its first
    /// batches); only a marker or the opening write ends it, so a write checked before
    /// the transaction ended never opens the next one.
    ///
    /// `open_is_older`: the open transaction is of an older epoch than the write's (a
    /// transaction version 2 producer's next transaction, its previous one's marker not
    /// here yet). It does not count as open: the write must wait for that marker.
    pub fn start_verification(
        &mut self,
        producer_id: i64,
        open_is_older: bool,
        now_ms: i64,
    ) -> Option<u64> {
        if self.open.contains_key(&producer_id) && !open_is_older {
            return None;
        }
        if let Some((guard, _)) = self.verifying.get(&producer_id) {
            return Some(*guard);
        }
        if self.verifying.len() >= VERIFICATIONS_BEFORE_EXPIRY {
            self.verifying
                .retain(|_, (_, since)| now_ms.saturating_sub(*since) < VERIFICATION_EXPIRY_MS);
        }
        self.last_guard += 1;
        self.verifying
            .insert(producer_id, (self.last_guard, now_ms));
        Some(self.last_guard)
    }

    /// Producers whose verification is pending here.
    #[cfg(test)]
    pub fn verifications(&self) -> usize {
        self.verifying.len()
    }

    /// Whether a transactional data batch of `producer_id` may be appended: it continues
    /// the producer's open transaction, or it opens one with the current guard. A batch of
    /// a newer epoch than the open transaction's (`open_is_older`) never joins it: it
    /// belongs to the producer's next transaction, which that one's marker must precede.
    pub fn admits(
        &self,
        producer_id: i64,
        verification: Verification,
        open_is_older: bool,
    ) -> bool {
        match verification {
            Verification::Unchecked => true,
            Verification::Guard(_) if open_is_older && self.open.contains_key(&producer_id) => {
                false
            }
            Verification::Guard(guard) => {
                self.open.contains_key(&producer_id)
                    || (guard != 0
                        && self.verifying.get(&producer_id).map(|(g, _)| *g) == Some(guard))
            }
        }
    }

    /// The first offset of `producer_id`'s open transaction.
    pub fn open_transaction(&self, producer_id: i64) -> Option<u64> {
        self.open.get(&producer_id).copied()
    }

    /// How many transactions are open here.
    pub fn open_count(&self) -> usize {
        self.open.len()
    }

    /// The aborted transactions a read of `[from, upper)` must report: every one whose
    /// marker is at or after `from` and that began before `upper` (Kafka's
    /// `collectAbortedTxns`).
    pub fn aborted_between(&self, from: u64, upper: u64) -> Vec<AbortedTransaction> {
        let start = self.aborted.partition_point(|t| t.last_offset < from);
        let mut found = Vec::new();
        for transaction in self.aborted.iter().skip(start) {
            if transaction.first_offset < upper {
                found.push(*transaction);
            }
            if transaction.last_stable_offset >= upper {
                break;
            }
        }
        found
    }

    /// Each producer's aborted transactions, `(first offset, marker offset)` (what the
    /// cleaner removes).
    pub fn aborted_by_producer(&self) -> HashMap<i64, Vec<(u64, u64)>> {
        let mut by_producer: HashMap<i64, Vec<(u64, u64)>> = HashMap::new();
        for transaction in &self.aborted {
            by_producer
                .entry(transaction.producer_id)
                .or_default()
                .push((transaction.first_offset, transaction.last_offset));
        }
        by_producer
    }

    /// Forgets the aborted transactions whose markers the cleaner removed (their data
    /// went before them).
    pub fn forget_markers(&mut self, markers: &std::collections::HashSet<u64>) {
        self.aborted.retain(|t| !markers.contains(&t.last_offset));
    }

    /// Forgets the aborted transactions whose markers lie below `log_start` (retention
    /// or DeleteRecords removed them).
    pub fn forget_before(&mut self, log_start: u64) {
        let keep_from = self.aborted.partition_point(|t| t.last_offset < log_start);
        self.aborted.drain(..keep_from);
    }
}

/// The marker a control batch holds: its first record's key is `version: i16, type: i16`
/// (control batches are never compressed). `None` for other control records.
pub fn marker_of(header: &BatchHeader, batch: &[u8]) -> Option<Marker> {
    let section = batch.get(BATCH_HEADER_SIZE..)?;
    let record = record_section::records(section, header.record_count.min(1))
        .next()?
        .ok()?;
    let key = record.key?;
    let kind = i16::from_be_bytes([*key.get(2)?, *key.get(3)?]);
    match kind {
        ABORT => Some(Marker::Abort),
        COMMIT => Some(Marker::Commit),
        _ => None,
    }
}

/// The coordinator epoch a transaction marker was written under: its first record's
/// value is `version: i16, coordinator_epoch: i32` (Kafka's `EndTransactionMarker`).
/// `None` for other control records and for batches that are not control batches.
pub fn marker_coordinator_epoch(header: &BatchHeader, batch: &[u8]) -> Option<i32> {
    if !header.is_control() {
        return None;
    }
    marker_of(header, batch)?;
    let section = batch.get(BATCH_HEADER_SIZE..)?;
    let record = record_section::records(section, header.record_count.min(1))
        .next()?
        .ok()?;
    let value = record.value?;
    Some(i32::from_be_bytes([
        *value.get(2)?,
        *value.get(3)?,
        *value.get(4)?,
        *value.get(5)?,
    ]))
}

#[cfg(test)]
mod tests;
