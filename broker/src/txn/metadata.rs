//! One transactional id's state and the transitions the coordinator's requests make
//! (Kafka's `TransactionMetadata` and `TransactionState`): plain data, the time passed
//! in, so every transition is checked by a unit test.
//!
//! ```text
//!   Empty ──AddPartitions──► Ongoing ──EndTxn(commit)──► PrepareCommit ──markers──► CompleteCommit
//!     ▲                        │  └──EndTxn(abort) / timeout / InitProducerId──► PrepareAbort ──► CompleteAbort
//!     └──InitProducerId (epoch + 1)◄──────────────────────────────────────────────────┘
//! ```

use std::collections::BTreeSet;

use crate::storage::TopicPartition;

/// Kafka's transaction states, with their numbers in `__transaction_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnState {
    Empty = 0,
    Ongoing = 1,
    PrepareCommit = 2,
    PrepareAbort = 3,
    CompleteCommit = 4,
    CompleteAbort = 5,
    Dead = 6,
    PrepareEpochFence = 7,
}

impl TxnState {
    pub fn from_i8(value: i8) -> Option<Self> {
        Some(match value {
            0 => Self::Empty,
            1 => Self::Ongoing,
            2 => Self::PrepareCommit,
            3 => Self::PrepareAbort,
            4 => Self::CompleteCommit,
            5 => Self::CompleteAbort,
            6 => Self::Dead,
            7 => Self::PrepareEpochFence,
            _ => return None,
        })
    }

    /// Kafka's name (DescribeTransactions, ListTransactions' state filter).
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::Ongoing => "Ongoing",
            Self::PrepareCommit => "PrepareCommit",
            Self::PrepareAbort => "PrepareAbort",
            Self::CompleteCommit => "CompleteCommit",
            Self::CompleteAbort => "CompleteAbort",
            Self::Dead => "Dead",
            Self::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// Markers are being written: the transaction is decided but not complete.
    pub fn is_preparing(self) -> bool {
        matches!(self, Self::PrepareCommit | Self::PrepareAbort)
    }
}

/// A transactional id's state, as written to `__transaction_state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    pub partitions: BTreeSet<TopicPartition>,
    /// When the ongoing transaction began (its first AddPartitions), -1 when none.
    pub start_ms: i64,
    pub last_update_ms: i64,
}

/// Why a transactional request is refused; `api::errors` maps each to Kafka's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TxnError {
    #[error("this broker is not the transaction coordinator of the id")]
    NotCoordinator,
    #[error("the coordinator is loading its state")]
    LoadInProgress,
    #[error("the coordinator is not available")]
    NotAvailable,
    #[error("the producer id does not match the transactional id's")]
    InvalidProducerIdMapping,
    #[error("there is a newer producer with the same transactional id")]
    ProducerFenced,
    #[error("the transaction is completing; retry")]
    ConcurrentTransactions,
    #[error("the request does not fit the transaction's state")]
    InvalidTxnState,
    #[error("transaction.timeout.ms is above transaction.max.timeout.ms")]
    InvalidTransactionTimeout,
    #[error("the producer epoch is not the current one")]
    InvalidProducerEpoch,
}

/// The largest epoch before a producer id is replaced (Kafka keeps `Short.MAX_VALUE` for
/// the fencing bump).
const MAX_EPOCH: i16 = i16::MAX - 1;

impl TxnMetadata {
    /// A new transactional id's state: epoch 0 of a fresh producer id.
    pub fn new(producer_id: i64, timeout_ms: i32, now: i64) -> Self {
        Self {
            producer_id,
            producer_epoch: 0,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now,
        }
    }

    /// InitProducerId on an existing id whose last transaction is complete: the next
    /// epoch (fencing every older producer), or `None` when the epoch is exhausted and
    /// the caller must give a new producer id. `expected` is the producer's id and epoch
    /// when it retries (KIP-360); a retry of the last bump returns the same epoch.
    pub fn init(
        &self,
        expected: Option<(i64, i16)>,
        timeout_ms: i32,
        now: i64,
    ) -> Result<Option<Self>, TxnError> {
        match self.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence => {
                return Err(TxnError::ConcurrentTransactions);
            }
            TxnState::Ongoing => return Err(TxnError::ConcurrentTransactions),
            TxnState::Empty
            | TxnState::CompleteCommit
            | TxnState::CompleteAbort
            | TxnState::Dead => {}
        }
        if let Some((id, epoch)) = expected
            && (id != self.producer_id || epoch != self.producer_epoch)
        {
            return Err(if id != self.producer_id {
                TxnError::InvalidProducerIdMapping
            } else {
                TxnError::ProducerFenced
            });
        }
        if self.producer_epoch >= MAX_EPOCH {
            return Ok(None);
        }
        Ok(Some(Self {
            producer_epoch: self.producer_epoch + 1,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now,
            ..self.clone()
        }))
    }

    /// The producer's id and epoch must be this id's current ones.
    pub fn check_producer(&self, producer_id: i64, epoch: i16) -> Result<(), TxnError> {
        if producer_id != self.producer_id {
            return Err(TxnError::InvalidProducerIdMapping);
        }
        if epoch != self.producer_epoch {
            return Err(TxnError::ProducerFenced);
        }
        Ok(())
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn: the transaction with `added` in it, or
    /// `None` when it already holds them all (nothing to write).
    pub fn add_partitions(
        &self,
        producer_id: i64,
        epoch: i16,
        added: &[TopicPartition],
        now: i64,
    ) -> Result<Option<Self>, TxnError> {
        self.check_producer(producer_id, epoch)?;
        match self.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence => {
                return Err(TxnError::ConcurrentTransactions);
            }
            TxnState::Dead => return Err(TxnError::InvalidTxnState),
            TxnState::Ongoing if added.iter().all(|tp| self.partitions.contains(tp)) => {
                return Ok(None);
            }
            TxnState::Ongoing
            | TxnState::Empty
            | TxnState::CompleteCommit
            | TxnState::CompleteAbort => {}
        }
        let ongoing = self.state == TxnState::Ongoing;
        let mut partitions = if ongoing {
            self.partitions.clone()
        } else {
            BTreeSet::new()
        };
        partitions.extend(added.iter().cloned());
        Ok(Some(Self {
            state: TxnState::Ongoing,
            partitions,
            start_ms: if ongoing { self.start_ms } else { now },
            last_update_ms: now,
            ..self.clone()
        }))
    }

    /// EndTxn: `Ok(Some(prepared))` to write markers for, `Ok(None)` for a retry of an
    /// end already complete (answered without error).
    pub fn end(
        &self,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        now: i64,
    ) -> Result<Option<Self>, TxnError> {
        if producer_id != self.producer_id {
            return Err(TxnError::InvalidProducerIdMapping);
        }
        // A producer retrying the end of a transaction the coordinator aborted with a
        // bumped epoch (timeout, fencing) is fenced; otherwise the epoch must match.
        if epoch != self.producer_epoch {
            return Err(TxnError::ProducerFenced);
        }
        match (self.state, commit) {
            (TxnState::Ongoing, _) => Ok(Some(self.prepare(commit, now))),
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => Ok(None),
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                Err(TxnError::ConcurrentTransactions)
            }
            _ => Err(TxnError::InvalidTxnState),
        }
    }

    /// The coordinator aborts the ongoing transaction itself (timeout, or a new producer
    /// with the same id): the epoch is bumped so the old producer is fenced.
    pub fn fence_and_abort(&self, now: i64) -> Option<Self> {
        if self.state != TxnState::Ongoing {
            return None;
        }
        let mut aborting = self.prepare(false, now);
        if aborting.producer_epoch < MAX_EPOCH {
            aborting.producer_epoch += 1;
        }
        Some(aborting)
    }

    fn prepare(&self, commit: bool, now: i64) -> Self {
        Self {
            state: if commit {
                TxnState::PrepareCommit
            } else {
                TxnState::PrepareAbort
            },
            last_update_ms: now,
            ..self.clone()
        }
    }

    /// The markers are written: the transaction is complete.
    pub fn complete(&self, now: i64) -> Self {
        Self {
            state: if self.state == TxnState::PrepareCommit {
                TxnState::CompleteCommit
            } else {
                TxnState::CompleteAbort
            },
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now,
            ..self.clone()
        }
    }

    /// Whether an ongoing transaction has run past its timeout.
    pub fn timed_out(&self, now: i64) -> bool {
        self.state == TxnState::Ongoing
            && self.start_ms >= 0
            && now.saturating_sub(self.start_ms) > i64::from(self.timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(partition: i32) -> TopicPartition {
        TopicPartition::new("t", partition)
    }

    #[test]
    fn a_transaction_goes_round_and_the_epoch_fences_zombies() {
        let empty = TxnMetadata::new(7, 60_000, 0);
        let ongoing = empty
            .add_partitions(7, 0, &[tp(0), tp(1)], 10)
            .unwrap()
            .unwrap();
        assert_eq!((ongoing.state, ongoing.start_ms), (TxnState::Ongoing, 10));
        assert_eq!(ongoing.add_partitions(7, 0, &[tp(1)], 11), Ok(None));
        let more = ongoing.add_partitions(7, 0, &[tp(2)], 12).unwrap().unwrap();
        assert_eq!((more.partitions.len(), more.start_ms), (3, 10));
        assert_eq!(
            more.add_partitions(8, 0, &[tp(3)], 13),
            Err(TxnError::InvalidProducerIdMapping)
        );
        assert_eq!(
            more.add_partitions(7, 1, &[tp(3)], 13),
            Err(TxnError::ProducerFenced)
        );
        let committing = more.end(7, 0, true, 20).unwrap().unwrap();
        assert_eq!(committing.state, TxnState::PrepareCommit);
        assert_eq!(
            committing.add_partitions(7, 0, &[tp(0)], 21),
            Err(TxnError::ConcurrentTransactions)
        );
        assert_eq!(
            committing.end(7, 0, true, 21),
            Err(TxnError::ConcurrentTransactions)
        );
        assert_eq!(
            committing.end(7, 0, false, 21),
            Err(TxnError::InvalidTxnState)
        );
        let done = committing.complete(30);
        assert_eq!(
            (done.state, done.partitions.len()),
            (TxnState::CompleteCommit, 0)
        );
        assert_eq!(done.end(7, 0, true, 31), Ok(None), "a retried commit");
        assert_eq!(done.end(7, 0, false, 31), Err(TxnError::InvalidTxnState));
        // A new producer instance: epoch 1; the old one is fenced.
        let next = done.init(None, 60_000, 40).unwrap().unwrap();
        assert_eq!((next.producer_id, next.producer_epoch), (7, 1));
        assert_eq!(
            next.add_partitions(7, 0, &[tp(0)], 41),
            Err(TxnError::ProducerFenced)
        );
        // EndTxn on a transaction with nothing in it.
        assert_eq!(next.end(7, 1, true, 42), Err(TxnError::InvalidTxnState));
    }

    #[test]
    fn timeouts_and_new_producers_abort_with_a_bumped_epoch() {
        let ongoing = TxnMetadata::new(7, 1_000, 0)
            .add_partitions(7, 0, &[tp(0)], 100)
            .unwrap()
            .unwrap();
        assert!(!ongoing.timed_out(1_100));
        assert!(ongoing.timed_out(1_101));
        assert_eq!(
            ongoing.init(None, 1_000, 1_200),
            Err(TxnError::ConcurrentTransactions)
        );
        let aborting = ongoing.fence_and_abort(1_200).unwrap();
        assert_eq!(
            (aborting.state, aborting.producer_epoch),
            (TxnState::PrepareAbort, 1)
        );
        // The old producer's commit is fenced.
        assert_eq!(
            aborting.end(7, 0, true, 1_300),
            Err(TxnError::ProducerFenced)
        );
        let aborted = aborting.complete(1_400);
        assert_eq!(aborted.state, TxnState::CompleteAbort);
        assert_eq!(
            aborted
                .init(None, 1_000, 1_500)
                .unwrap()
                .unwrap()
                .producer_epoch,
            2
        );
        // KIP-360: a retry naming an older epoch is fenced.
        assert_eq!(
            aborted.init(Some((7, 0)), 1_000, 1_500),
            Err(TxnError::ProducerFenced)
        );
        assert_eq!(TxnMetadata::new(7, 1, 0).fence_and_abort(5), None);
    }

    #[test]
    fn an_exhausted_epoch_asks_for_a_new_producer_id() {
        let mut old = TxnMetadata::new(7, 1_000, 0);
        old.producer_epoch = MAX_EPOCH;
        assert_eq!(old.init(None, 1_000, 1), Ok(None));
    }
}
