//! The transaction coordinator of the transactional ids whose `__transaction_state`
//! partitions this broker leads (Kafka's `TransactionCoordinator` and
//! `TransactionStateManager`).
//!
//! ```text
//!   InitProducerId / AddPartitionsToTxn / AddOffsetsToTxn / EndTxn
//!     │  the id's partition led and loaded here? (NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS)
//!     │  a transition of its TxnMetadata (metadata.rs), the id marked busy
//!     ▼
//!   the new state appended to __transaction_state, acks=all, waited for
//!     │  then applied in memory (a failed write changes nothing)
//!     ▼
//!   EndTxn, a timeout or a fencing InitProducerId: PrepareCommit / PrepareAbort
//!     └─► markers to every partition of the transaction (markers.rs), then Complete*
//! ```
//!
//! A new leader of a `__transaction_state` partition reads it from its start (the last
//! record of an id wins, a tombstone forgets it) and writes the markers of transactions
//! it finds decided but not complete. Its coordinator epoch is the partition's leader
//! epoch.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::records::Compression;
use parking_lot::Mutex;
use tokio::sync::watch;

use super::TRANSACTION_STATE_TOPIC;
use super::markers::{MarkerSpec, MarkerWriter};
use super::metadata::{TxnError, TxnMetadata, TxnState};
use super::records;
use crate::config::TransactionConfig;
use crate::coordinator::{CoordinatorRecord, CoordinatorShard, RecordKind};
use crate::replication::{AppendError, CommitWait};
use crate::storage::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use crate::storage::{Clock, TopicPartition};

/// How long a state write waits for the in-sync replicas of its partition.
const WRITE_TIMEOUT: Duration = Duration::from_secs(15);
/// How often the coordinator's timer looks for work (markers to resume, timeouts).
const TICK: Duration = Duration::from_millis(200);

#[derive(Debug)]
struct Entry {
    metadata: TxnMetadata,
    /// A write of this id's state is in flight: other requests get CONCURRENT_TRANSACTIONS.
    busy: bool,
}

#[derive(Debug, Default)]
struct Inner {
    txns: HashMap<String, Entry>,
    /// `__transaction_state` partitions loaded here, with their coordinator epoch.
    loaded: HashMap<i32, i32>,
    /// Ids found decided but not complete when their partition was loaded.
    resume: Vec<String>,
    last_timeout_check: i64,
}

/// The transaction coordinator of this broker.
#[derive(Debug)]
pub struct TransactionCoordinator {
    pub config: TransactionConfig,
    clock: Arc<dyn Clock>,
    inner: Mutex<Inner>,
    /// The replicas, the controller (producer ids come from the quorum), the shutdown
    /// signal, and how markers are written.
    markers: MarkerWriter,
    pub metrics: Option<super::TransactionMetrics>,
}

impl TransactionCoordinator {
    pub fn new(config: TransactionConfig, markers: MarkerWriter, clock: Arc<dyn Clock>) -> Self {
        Self {
            config,
            markers,
            clock,
            inner: Mutex::new(Inner::default()),
            metrics: None,
        }
    }

    /// The coordinator with its metrics.
    pub fn with_metrics(mut self, metrics: super::TransactionMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Refreshes the gauges (at scrape time).
    pub fn refresh_metrics(&self) {
        if let Some(metrics) = &self.metrics {
            let (open, oldest) = self.open_transactions();
            metrics.open.set(i64::try_from(open).unwrap_or(i64::MAX));
            metrics.oldest_open_age_ms.set(oldest);
        }
    }

    /// How this coordinator writes markers (WriteTxnMarkers writes them the same way).
    pub fn markers(&self) -> &MarkerWriter {
        &self.markers
    }

    /// The `__transaction_state` partition of `transactional_id`.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        crate::group::records::partition_for(transactional_id, self.config.state_partitions)
    }

    fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The cluster's finalized `transaction.version`, which the coordinator's own
    /// transitions (timeouts, fencing) are made at.
    pub fn version(&self) -> i16 {
        self.markers.controller.image().features.level_or_bootstrap(
            crate::metadata::features::TRANSACTION_VERSION,
            self.config.version,
        )
    }

    /// `TransactionLogValue` v1 from transaction version 1 on, as Kafka writes it.
    fn log_value_version(&self) -> i16 {
        if self.version() >= 1 { 1 } else { 0 }
    }

    /// This broker started leading `__transaction_state` partition `partition` in
    /// `epoch` (`loaded`: its ids as the log says), or stopped (`None`): its ids are
    /// loaded, or dropped.
    fn changed_hands(
        &self,
        partition: i32,
        epoch: i32,
        loaded: Option<HashMap<String, TxnMetadata>>,
    ) {
        let state_partitions = self.config.state_partitions;
        let mut inner = self.inner.lock();
        inner.txns.retain(|id, _| {
            crate::group::records::partition_for(id, state_partitions) != partition
        });
        inner.loaded.remove(&partition);
        let Some(loaded) = loaded else {
            tracing::info!(
                partition,
                "No longer the transaction coordinator of a __transaction_state partition"
            );
            return;
        };
        let count = loaded.len();
        for (id, metadata) in loaded {
            if metadata.state.is_preparing() {
                inner.resume.push(id.clone());
            }
            inner.txns.insert(
                id,
                Entry {
                    metadata,
                    busy: false,
                },
            );
        }
        inner.loaded.insert(partition, epoch);
        tracing::info!(
            partition,
            transactional_ids = count,
            coordinator_epoch = epoch,
            "Loaded a __transaction_state partition"
        );
    }

    /// The id's partition, if this broker coordinates it now.
    fn coordinates(&self, inner: &Inner, transactional_id: &str) -> Result<i32, TxnError> {
        let partition = self.partition_for(transactional_id);
        if inner.loaded.contains_key(&partition) {
            return Ok(partition);
        }
        let leads = self
            .markers
            .replicas
            .partition(&TopicPartition::new(TRANSACTION_STATE_TOPIC, partition))
            .is_some_and(|p| p.is_leader());
        Err(if leads {
            TxnError::LoadInProgress
        } else {
            TxnError::NotCoordinator
        })
    }

    fn still_coordinates(&self, partition: i32, epoch: i32) -> bool {
        self.inner.lock().loaded.get(&partition) == Some(&epoch)
    }

    /// NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS unless this broker coordinates the id.
    pub fn check(&self, transactional_id: &str) -> Result<(), TxnError> {
        self.coordinates(&self.inner.lock(), transactional_id)
            .map(|_| ())
    }

    /// Appends the id's new state (or a tombstone) to its partition and waits for the
    /// in-sync replicas.
    async fn persist(
        &self,
        transactional_id: &str,
        partition: i32,
        metadata: Option<&TxnMetadata>,
    ) -> Result<(), TxnError> {
        let tp = TopicPartition::new(TRANSACTION_STATE_TOPIC, partition);
        let replica = self
            .markers
            .replicas
            .partition(&tp)
            .filter(|p| p.is_leader())
            .ok_or(TxnError::NotCoordinator)?;
        let leader_epoch = replica.role().leader_epoch;
        let record = SimpleRecord {
            key: Some(Bytes::from(records::encode_key(transactional_id))),
            value: metadata
                .map(|m| Bytes::from(records::encode_value(m, self.log_value_version()))),
            timestamp: self.now(),
            headers: Vec::new(),
        };
        let batch = build_batch(&[record], Compression::None, ProducerFields::default()).map_err(
            |error| {
                tracing::error!(%error, "Cannot encode a __transaction_state record");
                TxnError::NotAvailable
            },
        )?;
        let info = replica.append_as_leader(&batch, -1).map_err(|error| {
            tracing::warn!(topic_partition = %tp, %error, "Writing transaction state failed");
            match error {
                AppendError::NotLeader(_) => TxnError::NotCoordinator,
                _ => TxnError::NotAvailable,
            }
        })?;
        let deadline = tokio::time::Instant::now() + WRITE_TIMEOUT;
        replica
            .wait_committed(
                info.last_offset + 1,
                leader_epoch,
                deadline,
                self.markers.shutdown.clone(),
            )
            .await
            .map_err(|wait| match wait {
                CommitWait::LeadershipLost => TxnError::NotCoordinator,
                CommitWait::TimedOut | CommitWait::NotEnoughReplicasAfterAppend => {
                    TxnError::NotAvailable
                }
            })
    }

    /// Applies `compute` to the id's state: `Ok(None)` leaves it as it is (nothing is
    /// written); `Ok(Some(next))` writes `next` and then makes it the state. The state
    /// after, and whether it changed.
    async fn transition(
        &self,
        transactional_id: &str,
        compute: impl FnOnce(Option<&TxnMetadata>) -> Result<Option<TxnMetadata>, TxnError>,
    ) -> Result<(TxnMetadata, bool), TxnError> {
        let (partition, next) = {
            let mut inner = self.inner.lock();
            let partition = self.coordinates(&inner, transactional_id)?;
            let entry = inner.txns.get(transactional_id);
            if entry.is_some_and(|e| e.busy) {
                return Err(TxnError::ConcurrentTransactions);
            }
            let current = entry.map(|e| &e.metadata);
            let Some(next) = compute(current)? else {
                return current
                    .cloned()
                    .map(|m| (m, false))
                    .ok_or(TxnError::InvalidProducerIdMapping);
            };
            match inner.txns.get_mut(transactional_id) {
                Some(entry) => entry.busy = true,
                None => {
                    inner.txns.insert(
                        transactional_id.to_string(),
                        Entry {
                            metadata: next.clone(),
                            busy: true,
                        },
                    );
                }
            }
            (partition, next)
        };
        let written = self.persist(transactional_id, partition, Some(&next)).await;
        let mut inner = self.inner.lock();
        let loaded = inner.loaded.contains_key(&partition);
        match (&written, inner.txns.get_mut(transactional_id)) {
            (Ok(()), Some(entry)) if loaded => {
                entry.metadata = next.clone();
                entry.busy = false;
            }
            (Err(_), Some(entry)) => {
                if entry.metadata == next {
                    // A new id whose first write failed is not known.
                    inner.txns.remove(transactional_id);
                } else {
                    entry.busy = false;
                }
            }
            _ => {}
        }
        written.map(|()| (next, true))
    }

    /// InitProducerId with a transactional id: the producer id and epoch of the new
    /// producer session. An ongoing transaction of an older session is aborted first
    /// (its epoch bumped) and the caller is told to retry (CONCURRENT_TRANSACTIONS).
    pub async fn init_producer_id(
        self: &Arc<Self>,
        transactional_id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> Result<(i64, i16), TxnError> {
        if timeout_ms <= 0 || i64::from(timeout_ms) > self.config.max_timeout_ms {
            return Err(TxnError::InvalidTransactionTimeout);
        }
        let current = {
            let inner = self.inner.lock();
            self.coordinates(&inner, transactional_id)?;
            inner
                .txns
                .get(transactional_id)
                .map(|e| (e.metadata.clone(), e.busy))
        };
        let now = self.now();
        let next = match current {
            Some((_, true)) => return Err(TxnError::ConcurrentTransactions),
            Some((metadata, false)) if metadata.state == TxnState::Ongoing => {
                self.transition(transactional_id, |m| match m {
                    Some(m) if *m == metadata => Ok(m.fence_and_abort(self.version(), now)),
                    _ => Err(TxnError::ConcurrentTransactions),
                })
                .await?;
                if let Some(metrics) = &self.metrics {
                    metrics.fenced.inc();
                }
                self.spawn_completion(transactional_id.to_string());
                return Err(TxnError::ConcurrentTransactions);
            }
            Some((ref metadata, false)) => match metadata.init(expected, timeout_ms, now)? {
                Some(next) => next,
                None => TxnMetadata::new(self.allocate().await?, timeout_ms, now),
            },
            None => TxnMetadata::new(self.allocate().await?, timeout_ms, now),
        };
        let expected_before = current.map(|(m, _)| m);
        let (written, _) = self
            .transition(transactional_id, |m| {
                if m == expected_before.as_ref() {
                    Ok(Some(next))
                } else {
                    Err(TxnError::ConcurrentTransactions)
                }
            })
            .await?;
        Ok((written.producer_id, written.producer_epoch))
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn, and a leader's implicit add of a version 2
    /// producer's partition (`client_version` 2).
    pub async fn add_partitions(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[TopicPartition],
        client_version: i16,
    ) -> Result<(), TxnError> {
        let now = self.now();
        self.transition(transactional_id, |m| {
            m.ok_or(TxnError::InvalidProducerIdMapping)?.add_partitions(
                producer_id,
                epoch,
                partitions,
                client_version,
                now,
            )
        })
        .await
        .inspect(|(metadata, changed)| tracing::debug!(transactional_id, producer_id, epoch, changed, partitions = ?metadata.partitions, "Partitions added to a transaction"))
        .inspect_err(|error| tracing::debug!(transactional_id, producer_id, epoch, %error, "Partitions not added to a transaction"))
        .map(|_| ())
    }

    /// Whether each of `partitions` is in the id's ongoing transaction (AddPartitionsToTxn
    /// v4+ `verify_only`, what a partition leader asks before a transaction's first write
    /// there); CONCURRENT_TRANSACTIONS while the transaction is being decided.
    pub fn verify(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[TopicPartition],
    ) -> Result<Vec<bool>, TxnError> {
        let inner = self.inner.lock();
        self.coordinates(&inner, transactional_id)?;
        let entry = inner
            .txns
            .get(transactional_id)
            .ok_or(TxnError::InvalidProducerIdMapping)?;
        // Markers in flight first, as in `TxnMetadata::add_partitions`: the producer may
        // already hold the bumped epoch or the next producer id.
        if matches!(
            entry.metadata.state,
            TxnState::PrepareCommit | TxnState::PrepareAbort
        ) {
            return Err(TxnError::ConcurrentTransactions);
        }
        entry.metadata.check_producer(producer_id, epoch)?;
        let ongoing = entry.metadata.state == TxnState::Ongoing;
        Ok(partitions
            .iter()
            .map(|tp| ongoing && entry.metadata.partitions.contains(tp))
            .collect())
    }

    /// EndTxn: the transaction is decided once its PrepareCommit / PrepareAbort is
    /// written; the markers follow in the background. The producer id and epoch the
    /// producer goes on with (transaction version 2 bumps the epoch at every end, and moves
    /// an exhausted epoch to a new producer id).
    pub async fn end_transaction(
        self: &Arc<Self>,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        client_version: i16,
    ) -> Result<(i64, i16), TxnError> {
        let needs_id = {
            let inner = self.inner.lock();
            self.coordinates(&inner, transactional_id)?;
            inner
                .txns
                .get(transactional_id)
                .is_some_and(|e| e.metadata.end_needs_new_producer_id(client_version))
        };
        let next_producer_id = if needs_id {
            Some(self.allocate().await?)
        } else {
            None
        };
        let now = self.now();
        let (metadata, changed) = self
            .transition(transactional_id, |m| {
                m.ok_or(TxnError::InvalidProducerIdMapping)?.end(
                    producer_id,
                    epoch,
                    commit,
                    client_version,
                    next_producer_id,
                    now,
                )
            })
            .await?;
        if changed {
            self.spawn_completion(transactional_id.to_string());
        }
        Ok(metadata.next_producer())
    }

    fn spawn_completion(self: &Arc<Self>, transactional_id: String) {
        let coordinator = Arc::clone(self);
        tokio::spawn(async move { coordinator.complete(&transactional_id).await });
    }

    /// Writes a decided transaction's markers, then its Complete state.
    async fn complete(&self, transactional_id: &str) {
        let (prepared, partition, coordinator_epoch) = {
            let inner = self.inner.lock();
            let Ok(partition) = self.coordinates(&inner, transactional_id) else {
                return;
            };
            let Some(entry) = inner.txns.get(transactional_id) else {
                return;
            };
            if !entry.metadata.state.is_preparing() {
                return;
            }
            let epoch = inner.loaded.get(&partition).copied().unwrap_or(0);
            (entry.metadata.clone(), partition, epoch)
        };
        let spec = MarkerSpec {
            producer_id: prepared.producer_id,
            producer_epoch: prepared.producer_epoch,
            commit: prepared.state == TxnState::PrepareCommit,
            coordinator_epoch,
        };
        tracing::debug!(transactional_id, producer_epoch = prepared.producer_epoch, commit = spec.commit, partitions = ?prepared.partitions, "Writing a transaction's markers");
        let written = self
            .markers
            .write_all(spec, &prepared.partitions, || {
                self.still_coordinates(partition, coordinator_epoch)
            })
            .await;
        if !written {
            return;
        }
        let now = self.now();
        let completed = self
            .transition(transactional_id, |m| {
                Ok((m == Some(&prepared)).then(|| prepared.complete(now)))
            })
            .await;
        match completed {
            Ok((metadata, changed)) => {
                if changed && let Some(metrics) = &self.metrics {
                    let result = if metadata.state == TxnState::CompleteCommit {
                        "commit"
                    } else {
                        "abort"
                    };
                    metrics.completed.with_label_values(&[result]).inc();
                }
                tracing::debug!(
                    transactional_id,
                    state = metadata.state.name(),
                    "Transaction completed"
                );
            }
            Err(error) => {
                tracing::warn!(transactional_id, %error, "Cannot record a transaction's completion; retrying");
                self.inner.lock().resume.push(transactional_id.to_string());
            }
        }
    }

    async fn allocate(&self) -> Result<i64, TxnError> {
        self.markers
            .controller
            .allocate_producer_id()
            .await
            .map_err(|error| {
                tracing::warn!(%error, "Cannot allocate a producer id");
                TxnError::NotAvailable
            })
    }

    /// The id's state, if this broker coordinates it (DescribeTransactions).
    pub fn describe(&self, transactional_id: &str) -> Result<Option<TxnMetadata>, TxnError> {
        let inner = self.inner.lock();
        self.coordinates(&inner, transactional_id)?;
        Ok(inner.txns.get(transactional_id).map(|e| e.metadata.clone()))
    }

    /// Every id coordinated here with its producer id, state and transaction start
    /// (ListTransactions).
    pub fn list(&self) -> Vec<(String, i64, TxnState, i64)> {
        let inner = self.inner.lock();
        let mut all: Vec<_> = inner
            .txns
            .iter()
            .map(|(id, e)| {
                (
                    id.clone(),
                    e.metadata.producer_id,
                    e.metadata.state,
                    e.metadata.start_ms,
                )
            })
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Open transactions here and the age of the oldest, ms (metrics).
    pub fn open_transactions(&self) -> (usize, i64) {
        let now = self.now();
        let inner = self.inner.lock();
        let open: Vec<i64> = inner
            .txns
            .values()
            .filter(|e| e.metadata.state == TxnState::Ongoing && e.metadata.start_ms >= 0)
            .map(|e| now.saturating_sub(e.metadata.start_ms))
            .collect();
        (open.len(), open.into_iter().max().unwrap_or(0))
    }

    /// The coordinator's timer: resumes markers of loaded decided transactions, aborts
    /// transactions past their timeout, forgets ids idle past
    /// `transactional.id.expiration.ms`.
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                () = tokio::time::sleep(TICK) => {}
                _ = shutdown.changed() => return,
            }
            let resume = std::mem::take(&mut self.inner.lock().resume);
            for id in resume {
                self.spawn_completion(id);
            }
            let now = self.now();
            let (timed_out, expired) = {
                let mut inner = self.inner.lock();
                if now.saturating_sub(inner.last_timeout_check)
                    < self.config.abort_check_interval_ms
                {
                    continue;
                }
                inner.last_timeout_check = now;
                let timed_out: Vec<(String, TxnMetadata)> = inner
                    .txns
                    .iter()
                    .filter(|(_, e)| !e.busy && e.metadata.timed_out(now))
                    .map(|(id, e)| (id.clone(), e.metadata.clone()))
                    .collect();
                let expired: Vec<(String, TxnMetadata)> = inner
                    .txns
                    .iter()
                    .filter(|(_, e)| {
                        !e.busy
                            && matches!(
                                e.metadata.state,
                                TxnState::Empty
                                    | TxnState::CompleteCommit
                                    | TxnState::CompleteAbort
                            )
                            && now.saturating_sub(e.metadata.last_update_ms)
                                > self.config.id_expiration_ms
                    })
                    .map(|(id, e)| (id.clone(), e.metadata.clone()))
                    .collect();
                (timed_out, expired)
            };
            for (id, metadata) in timed_out {
                tracing::info!(transactional_id = %id, producer_id = metadata.producer_id, timeout_ms = metadata.timeout_ms, "Aborting a transaction past its timeout");
                let aborted = self
                    .transition(&id, |m| match m {
                        Some(m) if *m == metadata => Ok(m.fence_and_abort(self.version(), now)),
                        _ => Ok(None),
                    })
                    .await;
                if matches!(aborted, Ok((_, true))) {
                    if let Some(metrics) = &self.metrics {
                        metrics.timed_out.inc();
                    }
                    self.spawn_completion(id);
                }
            }
            for (id, metadata) in expired {
                self.expire(&id, &metadata).await;
            }
        }
    }

    /// Writes the id's tombstone and forgets it, unless it changed meanwhile.
    async fn expire(&self, transactional_id: &str, metadata: &TxnMetadata) {
        let partition = {
            let mut inner = self.inner.lock();
            let Ok(partition) = self.coordinates(&inner, transactional_id) else {
                return;
            };
            match inner.txns.get_mut(transactional_id) {
                Some(entry) if !entry.busy && entry.metadata == *metadata => entry.busy = true,
                _ => return,
            }
            partition
        };
        let written = self.persist(transactional_id, partition, None).await;
        let mut inner = self.inner.lock();
        if written.is_ok() {
            inner.txns.remove(transactional_id);
            tracing::info!(transactional_id, "Expired a transactional id");
        } else if let Some(entry) = inner.txns.get_mut(transactional_id) {
            entry.busy = false;
        }
    }

    /// The partitions of the id's ongoing transaction (tests and DescribeTransactions).
    pub fn partitions_of(&self, transactional_id: &str) -> BTreeSet<TopicPartition> {
        self.inner
            .lock()
            .txns
            .get(transactional_id)
            .map(|e| e.metadata.partitions.clone())
            .unwrap_or_default()
    }
}

impl CoordinatorShard for TransactionCoordinator {
    fn topic(&self) -> &'static str {
        TRANSACTION_STATE_TOPIC
    }

    fn load(&self, partition: i32, leader_epoch: i32, records: Vec<CoordinatorRecord>) {
        let tp = TopicPartition::new(TRANSACTION_STATE_TOPIC, partition);
        self.changed_hands(partition, leader_epoch, Some(decode(&tp, records)));
    }

    fn unload(&self, partition: i32) {
        self.changed_hands(partition, 0, None);
    }
}

/// Every id of a partition as its last record says (tombstones remove); a record that
/// cannot be decoded is skipped with a warning.
fn decode(tp: &TopicPartition, read: Vec<CoordinatorRecord>) -> HashMap<String, TxnMetadata> {
    let mut found = HashMap::new();
    for record in read {
        let RecordKind::Data {
            key: Some(key),
            value,
        } = record.kind
        else {
            continue;
        };
        let id = match records::decode_key(&key) {
            Ok(id) => id,
            Err(error) => {
                tracing::warn!(topic_partition = %tp, offset = record.offset, %error, "Skipping a record");
                continue;
            }
        };
        match value.as_deref().map(records::decode_value) {
            None => {
                found.remove(&id);
            }
            Some(Ok(metadata)) => {
                found.insert(id, metadata);
            }
            Some(Err(error)) => {
                tracing::warn!(topic_partition = %tp, offset = record.offset, %error, "Skipping a record");
            }
        }
    }
    found
}
