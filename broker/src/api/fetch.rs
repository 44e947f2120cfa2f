//! Fetch: record bytes from the logs, long-polled.
//!
//! ```text
//!   subscribe to the partitions' append signals
//!   read every partition (file regions, no copy)
//!   enough bytes (min_bytes), an error, or max_wait_ms passed? ── yes ──► respond
//!                        └── no: park until an append, the deadline or shutdown, retry
//! ```
//!
//! The record fields of the encoded response hold 16-byte placeholders; the server puts
//! the file regions there, with `sendfile` on plaintext connections.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint,
    PartitionData,
};
use kafka_protocol::messages::{ApiKey, BrokerId, FetchRequest, FetchResponse, ProducerId};
use kafka_protocol::protocol::StrBytes;
use tokio::sync::watch;
use tokio::time::Instant;

use super::fetch_session::{FetchPlan, FetchSessions, Outcome, SessionKey};
use super::leader_hints::LeaderHints;
use super::lookup::{serving_partition, topic_name};
use super::{Api, ApiResponse, HandlerFuture, RecordsPlaceholder, RequestContext, errors};
use crate::quota::QuotaKey;
use crate::replication::{FetchParams, Serving, preferred_read_replica};
use crate::security::acl::{Operation, ResourceType};
use crate::storage::{ReadResult, TopicPartition};

/// Fetch, with the broker's incremental fetch sessions (KIP-227), which only it uses.
#[derive(Debug)]
pub struct FetchApi {
    sessions: FetchSessions,
}

impl FetchApi {
    pub fn new(session_slots: usize) -> Self {
        Self {
            sessions: FetchSessions::new(session_slots),
        }
    }
}

/// Fetch versions whose records field is a compact (varint-length) field.
const FIRST_FLEXIBLE_VERSION: i16 = 12;

struct PartitionRead {
    topic_index: usize,
    partition: i32,
    outcome: Result<ReadResult, i16>,
    /// The fetcher's log diverges from this leader's: the epoch and offset to truncate
    /// to (KIP-320/595), and no records.
    diverging: Option<(i32, i64)>,
    /// A follower out of range: the leader's high watermark and log start offset.
    realign: Option<(i64, i64)>,
    /// The replica this consumer should read from instead (KIP-392), and no records.
    preferred_read_replica: Option<i32>,
    /// A `read_committed` consumer's aborted transactions in the range read (`None`,
    /// sent as null as Kafka sends it, for other reads and for errors).
    aborted_transactions: Option<Vec<crate::storage::AbortedTransaction>>,
}

/// Who fetches: a follower (its broker id) or a consumer (-1, with the rack it names).
struct Fetcher<'a> {
    replica_id: i32,
    rack: &'a str,
    /// `isolation_level` 1: read up to the last stable offset (Fetch v4+).
    read_committed: bool,
}

impl Api for FetchApi {
    fn key(&self) -> ApiKey {
        ApiKey::Fetch
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: FetchRequest = context.decode(body)?;
            let broker = context.broker;
            // Sessionless and full fetches read the request's own partition list (no copy
            // on librdkafka's path); an incremental one, every partition of its session.
            let session_topics;
            let (session_id, topics, incremental): (i32, &[FetchTopic], bool) =
                match self.sessions.plan(&request, context.version) {
                    FetchPlan::Full { session_id } => (session_id, &request.topics, false),
                    FetchPlan::Incremental { session_id, topics } => {
                        session_topics = topics;
                        (session_id, &session_topics, true)
                    }
                    FetchPlan::Refused(code) => {
                        tracing::debug!(
                            session_id = request.session_id,
                            epoch = request.session_epoch,
                            code,
                            "Fetch session refused"
                        );
                        return context.respond(&FetchResponse::default().with_error_code(code));
                    }
                };
            let names: Vec<Option<String>> = topics
                .iter()
                .map(|t| topic_name(broker, &t.topic.0, &t.topic_id))
                .collect();
            let deadline =
                Instant::now() + Duration::from_millis(request.max_wait_ms.max(0) as u64);
            let min_bytes = request.min_bytes.max(0) as u64;
            let max_bytes = if request.max_bytes <= 0 {
                i32::MAX as u64
            } else {
                request.max_bytes as u64
            };
            let mut shutdown = broker.shutting_down.clone();
            let replica_id = if context.version >= 15 {
                request.replica_state.replica_id.0
            } else {
                request.replica_id.0
            };
            let fetcher = Fetcher {
                replica_id,
                rack: request.rack_id.as_str(),
                read_committed: request.isolation_level == 1,
            };
            // A follower needs CLUSTER_ACTION on the cluster; a consumer READ on each topic.
            // What is refused is answered TOPIC_AUTHORIZATION_FAILED and never read.
            let access = context.access();
            let refused: Vec<Option<i16>> = if replica_id >= 0 {
                let denied = !access.allows_cluster(Operation::ClusterAction);
                vec![denied.then_some(errors::TOPIC_AUTHORIZATION_FAILED); names.len()]
            } else {
                names
                    .iter()
                    .map(|name| {
                        name.as_deref()
                            .filter(|n| !access.allows(Operation::Read, ResourceType::Topic, n))
                            .map(|_| errors::TOPIC_AUTHORIZATION_FAILED)
                    })
                    .collect()
            };
            let reads = loop {
                let mut signals: Vec<watch::Receiver<u64>> = Vec::new();
                let reads = read_all(
                    context,
                    topics,
                    &names,
                    &refused,
                    max_bytes,
                    &fetcher,
                    &mut signals,
                );
                let bytes: u64 = reads
                    .iter()
                    .filter_map(|r| r.outcome.as_ref().ok())
                    .map(ReadResult::bytes)
                    .sum();
                // A consumer sent to another replica is told at once, as Kafka does.
                let any_error = reads.iter().any(|r| {
                    r.outcome.is_err()
                        || r.diverging.is_some()
                        || r.preferred_read_replica.is_some()
                });
                if bytes >= min_bytes
                    || any_error
                    || Instant::now() >= deadline
                    || *shutdown.borrow()
                {
                    break reads;
                }
                let any_append = async {
                    let waits = signals.iter_mut().map(|s| Box::pin(s.changed()));
                    let _ = futures_select_all(waits).await;
                };
                let parked_at = Instant::now();
                tokio::select! {
                    () = any_append => {}
                    () = tokio::time::sleep_until(deadline) => {}
                    _ = shutdown.changed() => {}
                }
                context.add_parked(parked_at.elapsed());
            };
            let outcomes: Vec<(SessionKey, Outcome)> = if session_id == 0 {
                Vec::new()
            } else {
                reads.iter().map(|r| session_outcome(topics, r)).collect()
            };
            let answered = if incremental {
                Some(self.sessions.select_changed(session_id, &outcomes))
            } else {
                self.sessions.record_full(session_id, &outcomes);
                None
            };
            if session_id != 0 {
                broker
                    .metrics
                    .fetch_sessions
                    .set(self.sessions.len() as i64);
            }
            respond(
                context, topics, session_id, replica_id, &names, reads, answered,
            )
        })
    }
}

/// Waits for the first of several futures (no extra crate for one select_all).
async fn futures_select_all<F: std::future::Future + Unpin>(futures: impl Iterator<Item = F>) {
    let mut futures: Vec<F> = futures.collect();
    if futures.is_empty() {
        return std::future::pending().await;
    }
    std::future::poll_fn(|cx| {
        for future in futures.iter_mut() {
            if std::pin::Pin::new(future).poll(cx).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        std::task::Poll::Pending
    })
    .await;
}

/// What a session remembers of one partition's read.
fn session_outcome(topics: &[FetchTopic], read: &PartitionRead) -> (SessionKey, Outcome) {
    let key = topics
        .get(read.topic_index)
        .map(|t| SessionKey::of(t, read.partition))
        .unwrap_or_else(|| SessionKey::of(&FetchTopic::default(), read.partition));
    let outcome = match &read.outcome {
        Ok(result) => Outcome {
            has_records: result.bytes() > 0,
            high_watermark: result.high_watermark as i64,
            log_start_offset: result.log_start_offset as i64,
            last_stable_offset: result.last_stable_offset as i64,
            must_answer: read.diverging.is_some() || read.preferred_read_replica.is_some(),
        },
        Err(_) => Outcome {
            has_records: false,
            high_watermark: -1,
            log_start_offset: -1,
            last_stable_offset: -1,
            must_answer: true,
        },
    };
    (key, outcome)
}

fn read_all(
    context: &RequestContext<'_>,
    topics: &[FetchTopic],
    names: &[Option<String>],
    refused: &[Option<i16>],
    max_bytes: u64,
    fetcher: &Fetcher<'_>,
    signals: &mut Vec<watch::Receiver<u64>>,
) -> Vec<PartitionRead> {
    let mut remaining = max_bytes;
    let mut reads = Vec::new();
    for (topic_index, (topic, name)) in topics.iter().zip(names).enumerate() {
        for fetched in &topic.partitions {
            let mut read = PartitionRead {
                topic_index,
                partition: fetched.partition,
                outcome: Err(errors::UNKNOWN_TOPIC_ID),
                diverging: None,
                realign: None,
                preferred_read_replica: None,
                aborted_transactions: None,
            };
            if let Some(code) = refused.get(topic_index).copied().flatten() {
                read.outcome = Err(code);
            } else if let Some(name) = name {
                let tp = TopicPartition::new(name.clone(), fetched.partition);
                read_one(
                    context, &tp, fetched, fetcher, remaining, signals, &mut read,
                );
            }
            if let Ok(result) = &read.outcome {
                remaining = remaining.saturating_sub(result.bytes());
            }
            reads.push(read);
        }
    }
    reads
}

/// Reads one partition for a consumer (up to the high watermark) or a follower (up to
/// the log end, recording its progress), and subscribes to what a parked fetch of it
/// waits for. Consumers of Fetch v11+ may read from a follower replica, and a leader
/// sends a consumer in another rack to an in-sync replica in its own (KIP-392).
fn read_one(
    context: &RequestContext<'_>,
    tp: &TopicPartition,
    fetched: &FetchPartition,
    fetcher: &Fetcher<'_>,
    remaining: u64,
    signals: &mut Vec<watch::Receiver<u64>>,
    read: &mut PartitionRead,
) {
    let broker = context.broker;
    let replica_id = fetcher.replica_id;
    let any_replica = replica_id < 0 && context.version >= 11;
    let who = if any_replica {
        Serving::AnyReplica
    } else {
        Serving::Leader
    };
    let partition = match serving_partition(broker, tp, fetched.current_leader_epoch, who) {
        Ok((partition, _)) => partition,
        Err(code) => {
            read.outcome = Err(code);
            return;
        }
    };
    let follower = replica_id >= 0;
    signals.push(if follower {
        partition.subscribe_log_end()
    } else {
        partition.subscribe_high_watermark()
    });
    let params = FetchParams {
        replica_id,
        fetch_offset: fetched.fetch_offset,
        last_fetched_epoch: fetched.last_fetched_epoch,
        partition_max_bytes: fetched.partition_max_bytes,
        remaining,
        read_committed: fetcher.read_committed,
    };
    let answer = broker
        .replicas
        .fetch_records(&partition, &params, |fetch_offset| {
            (any_replica && broker.config.rack_aware_reads)
                .then(|| {
                    preferred_read_replica(
                        &partition,
                        &broker.controller.image(),
                        fetcher.rack,
                        broker.config.rack.as_deref(),
                        fetch_offset,
                    )
                })
                .flatten()
        });
    read.outcome = answer.outcome.map_err(|refusal| errors::refusal(&refusal));
    read.diverging = answer.diverging;
    read.realign = answer.realign;
    read.preferred_read_replica = answer.preferred_read_replica;
    read.aborted_transactions =
        (fetcher.read_committed && fetcher.replica_id < 0 && read.outcome.is_ok())
            .then_some(answer.aborted_transactions);
}

/// The response: every read partition, or (an incremental session's answer) those
/// `answered` names, and only the topics that have one.
fn respond(
    context: &RequestContext<'_>,
    fetched: &[FetchTopic],
    session_id: i32,
    replica_id: i32,
    names: &[Option<String>],
    reads: Vec<PartitionRead>,
    answered: Option<Vec<bool>>,
) -> Result<ApiResponse, super::ApiError> {
    // consumer_byte_rate counts what a consumer is sent (followers have replication
    // quotas instead). Kafka answers a throttled fetch empty; Oxbow sends the data
    // and mutes the connection for the throttle, which holds the rate the same way.
    let throttle_ms = if replica_id < 0 {
        let bytes: u64 = reads
            .iter()
            .filter_map(|r| r.outcome.as_ref().ok())
            .map(ReadResult::bytes)
            .sum();
        context.quota_throttle(QuotaKey::ConsumerByteRate, bytes as f64)
    } else {
        0
    };
    let broker = context.broker;
    let zero_copy = broker.config.fetch_sendfile;
    let nonce: u64 = rand::random();
    let mut placeholders = Vec::new();
    let mut hints = LeaderHints::new(broker, context.listener);
    let incremental = answered.is_some();
    let mut topics: Vec<FetchableTopicResponse> = fetched
        .iter()
        .map(|t| {
            FetchableTopicResponse::default()
                .with_topic(t.topic.clone())
                .with_topic_id(t.topic_id)
        })
        .collect();
    for (i, read) in reads.into_iter().enumerate() {
        if answered
            .as_ref()
            .is_some_and(|a| !a.get(i).copied().unwrap_or(true))
        {
            continue;
        }
        let mut data = PartitionData::default()
            .with_partition_index(read.partition)
            .with_preferred_read_replica(BrokerId(read.preferred_read_replica.unwrap_or(-1)))
            .with_aborted_transactions(read.aborted_transactions.as_ref().map(|aborted| {
                aborted
                    .iter()
                    .map(|aborted| {
                        AbortedTransaction::default()
                            .with_producer_id(ProducerId(aborted.producer_id))
                            .with_first_offset(aborted.first_offset as i64)
                    })
                    .collect()
            }));
        match read.outcome {
            Ok(result) => {
                if let Some((epoch, end_offset)) = read.diverging {
                    data = data.with_diverging_epoch(
                        EpochEndOffset::default()
                            .with_epoch(epoch)
                            .with_end_offset(end_offset),
                    );
                }
                data = data
                    .with_high_watermark(result.high_watermark as i64)
                    .with_last_stable_offset(result.last_stable_offset as i64)
                    .with_log_start_offset(result.log_start_offset as i64);
                let bytes = result.bytes();
                if replica_id >= 0 {
                    broker.replicas.metrics.bytes_out.inc_by(bytes);
                } else if let Some(Some(name)) = names.get(read.topic_index) {
                    broker
                        .metrics
                        .bytes_out
                        .with_label_values(&[name])
                        .inc_by(bytes);
                }
                if bytes == 0 {
                    data = data.with_records(Some(Bytes::new()));
                } else if zero_copy {
                    let mut marker = [0u8; 16];
                    marker[..8].copy_from_slice(&nonce.to_be_bytes());
                    marker[8..].copy_from_slice(&(placeholders.len() as u64).to_be_bytes());
                    data = data.with_records(Some(Bytes::copy_from_slice(&marker)));
                    placeholders.push(RecordsPlaceholder {
                        marker,
                        regions: result.regions,
                        compact: context.version >= FIRST_FLEXIBLE_VERSION,
                    });
                } else {
                    match result.read_to_vec() {
                        Ok(copied) => data = data.with_records(Some(Bytes::from(copied))),
                        Err(error) => {
                            tracing::error!(%error, "Reading fetched records failed");
                            data = data.with_error_code(errors::KAFKA_STORAGE_ERROR);
                        }
                    }
                }
            }
            Err(code) => {
                broker
                    .metrics
                    .request_errors
                    .with_label_values(&["Fetch", errors::error_name(code)])
                    .inc();
                let (high_watermark, log_start) = read.realign.unwrap_or((-1, -1));
                if let Some(Some(name)) = names.get(read.topic_index)
                    && let Some((leader, epoch)) = hints.leader_for(code, name, read.partition)
                {
                    data = data.with_current_leader(
                        LeaderIdAndEpoch::default()
                            .with_leader_id(BrokerId(leader))
                            .with_leader_epoch(epoch),
                    );
                }
                data = data
                    .with_error_code(code)
                    .with_high_watermark(high_watermark)
                    .with_last_stable_offset(high_watermark)
                    .with_log_start_offset(log_start)
                    .with_records(Some(Bytes::new()));
            }
        }
        if let Some(topic) = topics.get_mut(read.topic_index) {
            topic.partitions.push(data);
        }
    }
    if incremental {
        topics.retain(|t| !t.partitions.is_empty());
    }
    let endpoints = hints
        .endpoints()
        .into_iter()
        .map(|e| {
            NodeEndpoint::default()
                .with_node_id(BrokerId(e.node_id))
                .with_host(StrBytes::from_string(e.host))
                .with_port(e.port)
                .with_rack(e.rack.map(StrBytes::from_string))
        })
        .collect();
    let response = FetchResponse::default()
        .with_throttle_time_ms(throttle_ms)
        .with_session_id(session_id)
        .with_responses(topics)
        .with_node_endpoints(endpoints);
    let encoded = context.encode(&response)?;
    if placeholders.is_empty() {
        Ok(ApiResponse::Encoded(encoded))
    } else {
        Ok(ApiResponse::WithRecords {
            encoded,
            records: placeholders,
        })
    }
}
