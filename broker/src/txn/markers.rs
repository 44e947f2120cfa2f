//! Writing a decided transaction's markers: every partition of the transaction gets a
//! COMMIT or ABORT control batch from its leader. Partitions led here are written through
//! the replica manager; the others are sent to their leaders as WriteTxnMarkers. A marker
//! on a `__consumer_offsets` partition also tells the group coordinator to make the
//! transaction's offsets visible or drop them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersRequest};
use kafka_protocol::protocol::StrBytes;
use tokio::time::Instant;

use tokio::sync::watch;

use kafka_protocol::ResponseError;

use crate::controller::Controller;
use crate::group::{GroupCoordinator, OFFSETS_TOPIC};
use crate::model::TopicPartition;
use crate::peers::PeerClient;
use crate::replication::{AppendError, CommitWait, Partition, ReplicaManager, Serving};
use crate::storage::LogError;

/// What writing markers takes: the replicas (partitions led here), the other brokers (the
/// other leaders), the cluster image (who leads what), and the group coordinator (a marker
/// on `__consumer_offsets` settles the transaction's offsets there).
#[derive(Debug, Clone)]
pub struct MarkerWriter {
    pub replicas: Arc<ReplicaManager>,
    pub peers: Arc<PeerClient>,
    pub controller: Arc<Controller>,
    pub groups: Arc<GroupCoordinator>,
    pub shutdown: watch::Receiver<bool>,
}

/// What one transaction's markers say.
#[derive(Debug, Clone, Copy)]
pub struct MarkerSpec {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub coordinator_epoch: i32,
}

/// How long one marker waits for its partition's in-sync replicas.
pub const MARKER_TIMEOUT: Duration = Duration::from_secs(30);
/// The pause before markers that failed (no leader yet, a leader moving) are retried.
const RETRY_BACKOFF: Duration = Duration::from_millis(200);
const REMOTE_TIMEOUT: Duration = Duration::from_secs(35);

/// A marker appended here, waiting for its partition's in-sync replicas.
#[derive(Debug)]
pub struct Appended {
    tp: TopicPartition,
    partition: Arc<Partition>,
    leader_epoch: i32,
    next_offset: u64,
    spec: MarkerSpec,
}

/// Why a marker was not written here (WriteTxnMarkers answers each with Kafka's code).
#[derive(Debug, thiserror::Error)]
pub enum MarkerFailure {
    /// This broker may not write the partition (not its leader, not a replica): the
    /// replica manager's code.
    #[error("not served here (error code {0})")]
    NotServed(i16),
    #[error(transparent)]
    Refused(AppendError),
    #[error("appended but not replicated: {0:?}")]
    NotReplicated(CommitWait),
}

/// What one partition's marker attempt means for the transaction's completion.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Written,
    /// A newer epoch of the producer is in the partition: this marker belongs to a
    /// transaction already superseded there.
    Stale,
    /// A newer coordinator of the transactional id already wrote a marker there: this
    /// broker was deposed and its successor owns the transaction.
    Superseded,
    Retry(String),
}

impl Verdict {
    fn of_local(result: &Result<(), MarkerFailure>) -> Self {
        match result {
            Ok(()) => Verdict::Written,
            Err(MarkerFailure::Refused(AppendError::Log(LogError::ProducerFenced { .. }))) => {
                Verdict::Stale
            }
            Err(MarkerFailure::Refused(AppendError::Log(LogError::CoordinatorFenced {
                ..
            }))) => Verdict::Superseded,
            Err(failure) => Verdict::Retry(failure.to_string()),
        }
    }

    fn of_remote(code: i16) -> Self {
        match ResponseError::try_from_code(code) {
            None if code == 0 => Verdict::Written,
            Some(ResponseError::InvalidProducerEpoch) => Verdict::Stale,
            Some(ResponseError::TransactionCoordinatorFenced) => Verdict::Superseded,
            _ => Verdict::Retry(oxbow_kafka_client::error_name(code).to_string()),
        }
    }
}

impl MarkerWriter {
    /// Writes the markers of `partitions`, all led here, and then waits for them (so their
    /// replication overlaps); each partition's outcome.
    pub async fn write_local_all(
        &self,
        partitions: Vec<TopicPartition>,
        spec: MarkerSpec,
        deadline: Instant,
    ) -> Vec<(TopicPartition, Result<(), MarkerFailure>)> {
        let appended: Vec<(TopicPartition, Result<Appended, MarkerFailure>)> = partitions
            .into_iter()
            .map(|tp| {
                let appended = self.append_local(&tp, spec);
                (tp, appended)
            })
            .collect();
        let mut outcomes = Vec::with_capacity(appended.len());
        for (tp, appended) in appended {
            let outcome = match appended {
                Ok(appended) => self.replicated(appended, deadline).await,
                Err(failure) => Err(failure),
            };
            outcomes.push((tp, outcome));
        }
        outcomes
    }

    /// Appends `spec`'s marker to `tp` as its leader.
    fn append_local(
        &self,
        tp: &TopicPartition,
        spec: MarkerSpec,
    ) -> Result<Appended, MarkerFailure> {
        let (partition, leader_epoch) = self
            .replicas
            .serving(tp, -1, Serving::Leader)
            .map_err(MarkerFailure::NotServed)?;
        let info = partition
        .append_marker(
            spec.producer_id,
            spec.producer_epoch,
            spec.commit,
            spec.coordinator_epoch,
        )
        .map_err(|error| {
            tracing::info!(topic_partition = %tp, producer_id = spec.producer_id, %error, "Transaction marker refused");
            MarkerFailure::Refused(error)
        })?;
        tracing::debug!(topic_partition = %tp, producer_id = spec.producer_id, producer_epoch = spec.producer_epoch, commit = spec.commit, offset = info.last_offset, "Transaction marker appended");
        Ok(Appended {
            tp: tp.clone(),
            partition,
            leader_epoch,
            next_offset: info.last_offset + 1,
            spec,
        })
    }

    /// Waits for an appended marker's in-sync replicas; Kafka's error code (0 when they have
    /// it). A marker on a `__consumer_offsets` partition then settles the transaction's
    /// offsets there.
    async fn replicated(&self, appended: Appended, deadline: Instant) -> Result<(), MarkerFailure> {
        let Appended {
            tp,
            partition,
            leader_epoch,
            next_offset,
            spec,
        } = appended;
        let waited = partition
            .wait_committed(next_offset, leader_epoch, deadline, self.shutdown.clone())
            .await;
        waited.map_err(MarkerFailure::NotReplicated)?;
        if tp.topic == OFFSETS_TOPIC {
            self.groups
                .complete_transaction(tp.partition, spec.producer_id, spec.commit);
        }
        Ok(())
    }

    /// Writes `spec`'s markers to every partition of `partitions`, retrying what fails,
    /// until all are written, their topics are gone, or `still_coordinator` says this broker
    /// no longer coordinates the transaction (the next coordinator writes them). Whether
    /// every marker was written.
    pub async fn write_all(
        &self,
        spec: MarkerSpec,
        partitions: &BTreeSet<TopicPartition>,
        still_coordinator: impl Fn() -> bool,
    ) -> bool {
        let mut remaining: BTreeSet<TopicPartition> = partitions.clone();
        let mut attempt = 0u32;
        while !remaining.is_empty() {
            if !still_coordinator() || *self.shutdown.borrow() {
                return false;
            }
            if attempt > 0 {
                tokio::time::sleep(RETRY_BACKOFF).await;
            }
            attempt += 1;
            let image = self.controller.image();
            let mut by_leader: BTreeMap<i32, Vec<TopicPartition>> = BTreeMap::new();
            remaining.retain(|tp| {
            let Some(topic) = image.topics.get(&tp.topic) else {
                tracing::info!(topic_partition = %tp, "A transaction's partition is gone; no marker for it");
                return false;
            };
            if topic.partition(tp.partition).is_none() {
                return false;
            }
            true
        });
            for tp in &remaining {
                let leader = image
                    .topics
                    .get(&tp.topic)
                    .and_then(|t| t.partition(tp.partition))
                    .map_or(-1, |p| p.leader);
                if leader >= 0 {
                    by_leader.entry(leader).or_default().push(tp.clone());
                }
            }
            let deadline = Instant::now() + MARKER_TIMEOUT;
            for (leader, tps) in by_leader {
                let verdicts: Vec<(TopicPartition, Verdict)> = if leader == self.replicas.node_id()
                {
                    self.write_local_all(tps, spec, deadline)
                        .await
                        .into_iter()
                        .map(|(tp, outcome)| (tp, Verdict::of_local(&outcome)))
                        .collect()
                } else {
                    let Some(endpoint) = image.brokers.get(&leader).map(|b| b.endpoint.clone())
                    else {
                        continue;
                    };
                    match self.send_remote(&endpoint, spec, &tps).await {
                        Ok(codes) => codes
                            .into_iter()
                            .map(|(tp, code)| (tp, Verdict::of_remote(code)))
                            .collect(),
                        Err(error) => {
                            tracing::info!(leader, %error, "Sending transaction markers failed; retrying");
                            continue;
                        }
                    }
                };
                for (tp, verdict) in verdicts {
                    match verdict {
                        Verdict::Written => {
                            remaining.remove(&tp);
                        }
                        Verdict::Stale => {
                            tracing::warn!(topic_partition = %tp, producer_id = spec.producer_id, "A marker was refused as stale; not retrying it");
                            remaining.remove(&tp);
                        }
                        Verdict::Superseded => {
                            tracing::warn!(topic_partition = %tp, producer_id = spec.producer_id, coordinator_epoch = spec.coordinator_epoch, "A marker was refused: a newer coordinator wrote there; not retrying it");
                            remaining.remove(&tp);
                        }
                        Verdict::Retry(reason) => {
                            tracing::debug!(topic_partition = %tp, %reason, "A transaction marker will be retried");
                        }
                    }
                }
            }
        }
        true
    }

    async fn send_remote(
        &self,
        endpoint: &crate::metadata::records::Endpoint,
        spec: MarkerSpec,
        tps: &[TopicPartition],
    ) -> Result<Vec<(TopicPartition, i16)>, oxbow_kafka_client::WireError> {
        let client_id = format!("oxbow-txn-markers-{}", self.replicas.node_id());
        let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for tp in tps {
            topics.entry(&tp.topic).or_default().push(tp.partition);
        }
        let request = WriteTxnMarkersRequest::default().with_markers(vec![
            WritableTxnMarker::default()
                .with_producer_id(ProducerId(spec.producer_id))
                .with_producer_epoch(spec.producer_epoch)
                .with_transaction_result(spec.commit)
                .with_coordinator_epoch(spec.coordinator_epoch)
                .with_topics(
                    topics
                        .into_iter()
                        .map(|(topic, partitions)| {
                            WritableTxnMarkerTopic::default()
                                .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                                .with_partition_indexes(partitions)
                        })
                        .collect(),
                ),
        ]);
        let response = self
            .peers
            .call(endpoint, &client_id, &request, 1, REMOTE_TIMEOUT)
            .await?;
        let mut codes = Vec::new();
        for marker in response.markers {
            for topic in marker.topics {
                for partition in topic.partitions {
                    codes.push((
                        TopicPartition::new(topic.name.0.to_string(), partition.partition_index),
                        partition.error_code,
                    ));
                }
            }
        }
        Ok(codes)
    }
}
