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

use crate::model::TopicPartition;

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
    /// The producer id this one replaced when a transaction exhausted its epoch
    /// (transaction version 2), -1 when none: a retried EndTxn may still name it.
    pub previous_producer_id: i64,
    /// The producer id the transactional id moves to once the transaction being decided
    /// completes (transaction version 2, epoch exhausted), -1 when none.
    pub next_producer_id: i64,
    /// The transaction version of the client's last transition (KIP-890): 2 when every
    /// transaction end bumps the epoch, 0 before.
    pub client_version: i16,
}

/// The transaction version whose clients have the epoch bumped at every transaction end
/// and add partitions implicitly with their writes (KIP-890 part 2).
pub const TV2: i16 = 2;

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
            previous_producer_id: -1,
            next_producer_id: -1,
            client_version: 0,
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
        client_version: i16,
        now: i64,
    ) -> Result<Option<Self>, TxnError> {
        // While markers are in flight the producer may already hold the next epoch or, after
        // an exhausted epoch, the next producer id: it retries, as Kafka has it, before its
        // id and epoch are judged.
        if matches!(
            self.state,
            TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence
        ) {
            return Err(TxnError::ConcurrentTransactions);
        }
        self.check_producer(producer_id, epoch)?;
        let ongoing = match self.state {
            TxnState::Dead => return Err(TxnError::InvalidTxnState),
            TxnState::Ongoing if added.iter().all(|tp| self.partitions.contains(tp)) => {
                return Ok(None);
            }
            state => state == TxnState::Ongoing,
        };
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
            client_version,
            ..self.clone()
        }))
    }

    /// Whether EndTxn at `client_version` needs a new producer id first: version 2 bumps
    /// the epoch at every end, and an exhausted epoch moves to a new id.
    pub fn end_needs_new_producer_id(&self, client_version: i16) -> bool {
        client_version >= TV2 && self.producer_epoch >= MAX_EPOCH && !self.state.is_preparing()
    }

    /// EndTxn: `Ok(Some(prepared))` to write markers for, `Ok(None)` for a retry of an
    /// end already complete (answered without error). `client_version` is the request's
    /// transaction version; `next_producer_id` the id allocated when
    /// [`Self::end_needs_new_producer_id`] said so.
    ///
    /// Under version 2 every end bumps the epoch, so a producer retrying an end names the
    /// epoch before the bump (or, after an exhausted epoch, the previous producer id), and
    /// a producer with the current epoch is starting its next end: Kafka's table
    /// (TransactionCoordinator.endTransaction), for a state that is not preparing:
    ///
    /// ```text
    ///                  abort: retry / current     commit: retry / current
    ///   Empty          PRODUCER_FENCED / bump     INVALID_TXN_STATE / INVALID_TXN_STATE
    ///   CompleteAbort  NONE / bump                INVALID_TXN_STATE / INVALID_TXN_STATE
    ///   CompleteCommit INVALID_TXN_STATE / bump   NONE / INVALID_TXN_STATE
    /// ```
    ///
    /// where "bump" aborts an empty transaction to hand the producer its next epoch.
    pub fn end(
        &self,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        client_version: i16,
        next_producer_id: Option<i64>,
        now: i64,
    ) -> Result<Option<Self>, TxnError> {
        // The request's version picks the rules, as in Kafka 4.1: an old client's late
        // EndTxn after a version 2 transaction (or a coordinator's abort) is judged as
        // version 1 judges it, the epoch equal to the current one.
        let bumps_each_end = client_version >= TV2;
        // Kafka keeps a pending transition to Complete* for as long as the markers are in
        // flight. Under version 2 that check comes first (KAFKA-18464): a producer told the
        // bumped epoch may end its next, empty transaction before the markers of the
        // previous one are written, and must be asked to retry, not fenced for good.
        if bumps_each_end && self.state.is_preparing() {
            return Err(TxnError::ConcurrentTransactions);
        }
        let retry_on_bump =
            bumps_each_end && i32::from(self.producer_epoch) == i32::from(epoch) + 1;
        let retry_on_overflow = bumps_each_end
            && self.previous_producer_id == producer_id
            && self.producer_epoch == 0
            && epoch == MAX_EPOCH;
        if producer_id != self.producer_id && !retry_on_overflow {
            return Err(TxnError::InvalidProducerIdMapping);
        }
        let valid_epoch = if bumps_each_end {
            match self.state {
                TxnState::Ongoing
                | TxnState::Empty
                | TxnState::Dead
                | TxnState::PrepareEpochFence => epoch == self.producer_epoch,
                TxnState::PrepareCommit | TxnState::PrepareAbort => retry_on_bump,
                // The current epoch is the producer's next end (an empty abort bumps it).
                TxnState::CompleteCommit | TxnState::CompleteAbort => {
                    retry_on_bump || retry_on_overflow || epoch == self.producer_epoch
                }
            }
        } else {
            // A producer retrying the end of a transaction the coordinator aborted with a
            // bumped epoch (timeout, fencing) is fenced; otherwise the epoch must match.
            epoch == self.producer_epoch
        };
        if !valid_epoch {
            return Err(TxnError::ProducerFenced);
        }
        if self.state.is_preparing() {
            return Err(TxnError::ConcurrentTransactions);
        }
        // A complete transaction named again: before version 2 with its own epoch, under
        // it with the epoch before the bump.
        let is_retry = matches!(
            self.state,
            TxnState::CompleteCommit | TxnState::CompleteAbort
        ) && (!bumps_each_end || epoch != self.producer_epoch);
        let empty_abort = !commit && client_version >= TV2 && !is_retry;
        match (self.state, commit) {
            (TxnState::Ongoing, _) => Ok(Some(self.prepare(
                commit,
                client_version,
                next_producer_id,
                now,
            )?)),
            (TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort, false)
                if empty_abort =>
            {
                Ok(Some(self.prepare(
                    false,
                    client_version,
                    next_producer_id,
                    now,
                )?))
            }
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) if is_retry => {
                Ok(None)
            }
            _ => Err(TxnError::InvalidTxnState),
        }
    }

    /// What EndTxn v5 answers: the producer id and epoch the producer goes on with.
    pub fn next_producer(&self) -> (i64, i16) {
        if self.next_producer_id >= 0 {
            (self.next_producer_id, 0)
        } else {
            (self.producer_id, self.producer_epoch)
        }
    }

    /// The coordinator aborts the ongoing transaction itself (timeout, or a new producer
    /// with the same id): the epoch is bumped so the old producer is fenced (once, also
    /// under version 2). `server_version` is the cluster's transaction version, which
    /// decides how the producer's later EndTxn is read.
    pub fn fence_and_abort(&self, server_version: i16, now: i64) -> Option<Self> {
        if self.state != TxnState::Ongoing {
            return None;
        }
        let mut aborting = self.with_state(false, now);
        if aborting.producer_epoch < MAX_EPOCH {
            aborting.producer_epoch += 1;
        }
        aborting.client_version = server_version;
        Some(aborting)
    }

    /// PrepareCommit / PrepareAbort from the producer's EndTxn: version 2 bumps the epoch
    /// (to `i16::MAX` at most, with the next producer id set when it is exhausted).
    fn prepare(
        &self,
        commit: bool,
        client_version: i16,
        next_producer_id: Option<i64>,
        now: i64,
    ) -> Result<Self, TxnError> {
        let mut prepared = self.with_state(commit, now);
        prepared.client_version = client_version;
        if client_version >= TV2 {
            if self.producer_epoch >= MAX_EPOCH {
                // Raced with another end since the caller looked: it asks again.
                prepared.next_producer_id =
                    next_producer_id.ok_or(TxnError::ConcurrentTransactions)?;
            }
            prepared.producer_epoch = self.producer_epoch.saturating_add(1);
        }
        Ok(prepared)
    }

    fn with_state(&self, commit: bool, now: i64) -> Self {
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

    /// The markers are written: the transaction is complete, and an exhausted epoch's
    /// producer moves to its next id.
    pub fn complete(&self, now: i64) -> Self {
        let (producer_id, producer_epoch, previous_producer_id) = if self.next_producer_id >= 0 {
            (self.next_producer_id, 0, self.producer_id)
        } else {
            (
                self.producer_id,
                self.producer_epoch,
                self.previous_producer_id,
            )
        };
        Self {
            state: if self.state == TxnState::PrepareCommit {
                TxnState::CompleteCommit
            } else {
                TxnState::CompleteAbort
            },
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now,
            producer_id,
            producer_epoch,
            previous_producer_id,
            next_producer_id: -1,
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
            .add_partitions(7, 0, &[tp(0), tp(1)], 0, 10)
            .unwrap()
            .unwrap();
        assert_eq!((ongoing.state, ongoing.start_ms), (TxnState::Ongoing, 10));
        assert_eq!(ongoing.add_partitions(7, 0, &[tp(1)], 0, 11), Ok(None));
        let more = ongoing
            .add_partitions(7, 0, &[tp(2)], 0, 12)
            .unwrap()
            .unwrap();
        assert_eq!((more.partitions.len(), more.start_ms), (3, 10));
        assert_eq!(
            more.add_partitions(8, 0, &[tp(3)], 0, 13),
            Err(TxnError::InvalidProducerIdMapping)
        );
        assert_eq!(
            more.add_partitions(7, 1, &[tp(3)], 0, 13),
            Err(TxnError::ProducerFenced)
        );
        let committing = more.end(7, 0, true, 0, None, 20).unwrap().unwrap();
        assert_eq!(committing.state, TxnState::PrepareCommit);
        assert_eq!(
            committing.add_partitions(7, 0, &[tp(0)], 0, 21),
            Err(TxnError::ConcurrentTransactions)
        );
        assert_eq!(
            committing.end(7, 0, true, 0, None, 21),
            Err(TxnError::ConcurrentTransactions)
        );
        assert_eq!(
            committing.end(7, 0, false, 0, None, 21),
            Err(TxnError::ConcurrentTransactions),
            "Kafka's version 1 rules: the pending completion answers before the state"
        );
        let done = committing.complete(30);
        assert_eq!(
            (done.state, done.partitions.len()),
            (TxnState::CompleteCommit, 0)
        );
        assert_eq!(
            done.end(7, 0, true, 0, None, 31),
            Ok(None),
            "a retried commit"
        );
        assert_eq!(
            done.end(7, 0, false, 0, None, 31),
            Err(TxnError::InvalidTxnState)
        );
        // A new producer instance: epoch 1; the old one is fenced.
        let next = done.init(None, 60_000, 40).unwrap().unwrap();
        assert_eq!((next.producer_id, next.producer_epoch), (7, 1));
        assert_eq!(
            next.add_partitions(7, 0, &[tp(0)], 0, 41),
            Err(TxnError::ProducerFenced)
        );
        // EndTxn on a transaction with nothing in it.
        assert_eq!(
            next.end(7, 1, true, 0, None, 42),
            Err(TxnError::InvalidTxnState)
        );
    }

    #[test]
    fn timeouts_and_new_producers_abort_with_a_bumped_epoch() {
        let ongoing = TxnMetadata::new(7, 1_000, 0)
            .add_partitions(7, 0, &[tp(0)], 0, 100)
            .unwrap()
            .unwrap();
        assert!(!ongoing.timed_out(1_100));
        assert!(ongoing.timed_out(1_101));
        assert_eq!(
            ongoing.init(None, 1_000, 1_200),
            Err(TxnError::ConcurrentTransactions)
        );
        let aborting = ongoing.fence_and_abort(0, 1_200).unwrap();
        assert_eq!(
            (aborting.state, aborting.producer_epoch),
            (TxnState::PrepareAbort, 1)
        );
        // The old producer's commit is fenced.
        assert_eq!(
            aborting.end(7, 0, true, 0, None, 1_300),
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
        assert_eq!(TxnMetadata::new(7, 1, 0).fence_and_abort(0, 5), None);
    }

    #[test]
    fn an_exhausted_epoch_asks_for_a_new_producer_id() {
        let mut old = TxnMetadata::new(7, 1_000, 0);
        old.producer_epoch = MAX_EPOCH;
        assert_eq!(old.init(None, 1_000, 1), Ok(None));
    }

    #[test]
    fn version_2_bumps_the_epoch_at_every_end_and_reads_retries_by_it() {
        let mut empty = TxnMetadata::new(7, 60_000, 0);
        empty.producer_epoch = 3;
        let ongoing = empty
            .add_partitions(7, 3, &[tp(0)], TV2, 10)
            .unwrap()
            .unwrap();
        assert_eq!(ongoing.client_version, TV2);
        let committing = ongoing.end(7, 3, true, TV2, None, 20).unwrap().unwrap();
        assert_eq!(
            (committing.state, committing.producer_epoch),
            (TxnState::PrepareCommit, 4)
        );
        assert_eq!(committing.next_producer(), (7, 4));
        // While the markers are in flight every end is asked to retry, whatever its epoch:
        // the producer told epoch 4 may abort its next, empty transaction before the
        // commit completes (KAFKA-18464; franz-go's GroupTransactSession does), and a
        // stale epoch is judged once the commit is complete.
        for (epoch, commit) in [(3, true), (3, false), (4, true), (4, false), (2, false)] {
            assert_eq!(
                committing.end(7, epoch, commit, TV2, None, 21),
                Err(TxnError::ConcurrentTransactions),
                "epoch {epoch} commit {commit}"
            );
        }
        // An implicit add (Produce v12) at the bumped epoch retries too.
        assert_eq!(
            committing.add_partitions(7, 4, &[tp(1)], TV2, 21),
            Err(TxnError::ConcurrentTransactions)
        );
        let done = committing.complete(30);
        assert_eq!((done.producer_id, done.producer_epoch), (7, 4));
        assert_eq!(done.end(7, 3, true, TV2, None, 31), Ok(None));
        assert_eq!(
            done.end(7, 3, false, TV2, None, 31),
            Err(TxnError::InvalidTxnState)
        );
        assert_eq!(
            done.end(7, 4, true, TV2, None, 31),
            Err(TxnError::InvalidTxnState)
        );
        assert_eq!(
            done.end(7, 2, true, TV2, None, 31),
            Err(TxnError::ProducerFenced)
        );
        // Aborting with the current epoch and nothing added hands out the next epoch.
        let empty_abort = done.end(7, 4, false, TV2, None, 32).unwrap().unwrap();
        assert_eq!(
            (
                empty_abort.state,
                empty_abort.producer_epoch,
                empty_abort.partitions.len()
            ),
            (TxnState::PrepareAbort, 5, 0)
        );
        let aborted = empty_abort.complete(33);
        assert_eq!(aborted.end(7, 4, false, TV2, None, 34), Ok(None));
        // The next transaction starts with the bumped epoch; the old one is fenced.
        assert_eq!(
            aborted.add_partitions(7, 4, &[tp(0)], TV2, 35),
            Err(TxnError::ProducerFenced)
        );
        assert!(aborted.add_partitions(7, 5, &[tp(0)], TV2, 35).is_ok());
        // An Empty id (right after InitProducerId): abort bumps, commit is refused, an
        // older epoch is fenced.
        let fresh = TxnMetadata::new(9, 60_000, 0);
        assert_eq!(
            fresh.end(9, 0, true, TV2, None, 1),
            Err(TxnError::InvalidTxnState)
        );
        assert_eq!(
            fresh
                .end(9, 0, false, TV2, None, 1)
                .unwrap()
                .unwrap()
                .producer_epoch,
            1
        );
        // A version 1 request on the same state does not bump.
        let v1 = ongoing.end(7, 3, true, 0, None, 20).unwrap().unwrap();
        assert_eq!(v1.producer_epoch, 3);
        // Version 1 requests after a version 2 commit: the current epoch is a retry, the
        // one before the bump is fenced.
        assert_eq!(done.end(7, 4, true, 0, None, 31), Ok(None));
        assert_eq!(
            done.end(7, 3, true, 0, None, 31),
            Err(TxnError::ProducerFenced)
        );
    }

    #[test]
    fn version_2_moves_an_exhausted_epoch_to_a_new_producer_id() {
        let mut ongoing = TxnMetadata::new(7, 60_000, 0)
            .add_partitions(7, 0, &[tp(0)], TV2, 10)
            .unwrap()
            .unwrap();
        ongoing.producer_epoch = MAX_EPOCH;
        assert!(ongoing.end_needs_new_producer_id(TV2));
        assert!(!ongoing.end_needs_new_producer_id(0));
        assert_eq!(
            ongoing.end(7, MAX_EPOCH, true, TV2, None, 20),
            Err(TxnError::ConcurrentTransactions),
            "no id allocated"
        );
        let committing = ongoing
            .end(7, MAX_EPOCH, true, TV2, Some(8), 20)
            .unwrap()
            .unwrap();
        // The markers go out with the old id at the last epoch; the producer is told the new id.
        assert_eq!(
            (committing.producer_id, committing.producer_epoch),
            (7, i16::MAX)
        );
        assert_eq!(committing.next_producer(), (8, 0));
        // The producer already holds the new id while the markers are in flight: it is
        // asked to retry, not told its id is unknown.
        assert_eq!(
            committing.end(8, 0, false, TV2, None, 21),
            Err(TxnError::ConcurrentTransactions)
        );
        assert_eq!(
            committing.add_partitions(8, 0, &[tp(0)], TV2, 21),
            Err(TxnError::ConcurrentTransactions)
        );
        let done = committing.complete(30);
        assert_eq!(
            (
                done.producer_id,
                done.producer_epoch,
                done.previous_producer_id,
                done.next_producer_id
            ),
            (8, 0, 7, -1)
        );
        // A retry with the old id and its last epoch is answered with the new id.
        assert_eq!(done.end(7, MAX_EPOCH, true, TV2, None, 31), Ok(None));
        assert_eq!(done.next_producer(), (8, 0));
        assert_eq!(
            done.end(6, MAX_EPOCH, true, TV2, None, 31),
            Err(TxnError::InvalidProducerIdMapping)
        );
    }

    #[test]
    fn a_timeout_under_version_2_lets_the_producer_abort_and_go_on() {
        let mut empty = TxnMetadata::new(7, 1_000, 0);
        empty.producer_epoch = 2;
        let ongoing = empty
            .add_partitions(7, 2, &[tp(0)], TV2, 100)
            .unwrap()
            .unwrap();
        let aborting = ongoing.fence_and_abort(TV2, 1_200).unwrap();
        assert_eq!(aborting.producer_epoch, 3);
        let aborted = aborting.complete(1_300);
        assert_eq!(aborted.end(7, 2, false, TV2, None, 1_400), Ok(None));
        assert_eq!(aborted.next_producer(), (7, 3));
        assert_eq!(
            aborted.end(7, 2, true, TV2, None, 1_400),
            Err(TxnError::InvalidTxnState)
        );
        // A version 1 client's late end is fenced, whatever the coordinator's version.
        for commit in [true, false] {
            assert_eq!(
                aborted.end(7, 2, commit, 0, None, 1_400),
                Err(TxnError::ProducerFenced)
            );
        }
    }
}
