//! Produce: validate and append record batches at the leader (acks 0, 1 and -1),
//! idempotent producers included; `acks=all` answers once the in-sync replicas have the
//! records (the high watermark passed them). Records that break a topic's rules (a keyless
//! record on a compacted topic, a timestamp out of bounds) are named one by one in
//! `record_errors` (KIP-467); batches of another codec than the topic's `compression.type`
//! are re-encoded first, the rest are appended as produced. A partition led elsewhere
//! names its current leader (KIP-951, [`super::leader_hints`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
    TopicProduceResponse,
};
use kafka_protocol::messages::{ApiKey, BrokerId, ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::{StrBytes, VersionRange};
use tokio::time::Instant;

use super::leader_hints::LeaderHints;
use super::lookup::{leader_partition, topic_name};
use super::txn_verification as verification;
use super::{Api, ApiError, ApiResponse, HandlerFuture, RequestContext, errors, produce_legacy};
use crate::quota::QuotaKey;
use crate::replication::AppendError;
use crate::replication::{CommitWait, Partition};
use crate::security::acl::{Operation, ResourceType};
use crate::state::BrokerState;
use crate::storage::validator::{RecordError, ValidationError};
use crate::storage::{AppendInfo, BatchHeader, TopicPartition, Verification};

#[derive(Debug)]
pub struct ProduceApi;

impl Api for ProduceApi {
    fn key(&self) -> ApiKey {
        ApiKey::Produce
    }

    fn advertised_versions(&self) -> VersionRange {
        VersionRange {
            min: 0,
            max: self.versions().max,
        }
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            if context.version <= produce_legacy::LAST_LEGACY_VERSION {
                return refuse_legacy(context, body);
            }
            // producer_byte_rate counts the request's bytes, as Kafka counts them.
            let produced_bytes = body.len() as f64;
            let request: ProduceRequest = context.decode(body)?;
            let acks = request.acks;
            let deadline = Instant::now()
                + Duration::from_millis(u64::try_from(request.timeout_ms).unwrap_or(0));
            // Append everything first, then wait (acks=all) for all of it at once. The
            // appends (validation, writes, fsyncs under flush.messages/flush.ms) run on a
            // blocking-pool thread: a write the kernel holds up (dirty-page throttling,
            // a slow disk) stalls this connection, whose requests are answered in order
            // anyway, and never the reactor threads that serve every other client.
            let mut topics = Vec::with_capacity(request.topic_data.len());
            let mut work: Vec<Work> = Vec::new();
            let access = context.access();
            let transactional_id = request
                .transactional_id
                .as_ref()
                .map(|id| id.0.to_string())
                .filter(|id| !id.is_empty());
            let requester = verification::Requester::Produce(context.version);
            // A transaction version 2 producer's partitions are added by this check, so it
            // runs whether or not verification is enabled.
            let verifying = transactional_id.is_some()
                && (context.broker.config.transactions.partition_verification
                    || requester.adds_implicitly());
            // Until checked, a transactional batch may only continue a transaction open
            // here: whatever the check skips cannot open one the coordinator does not know.
            let unchecked = if verifying {
                Verification::OPEN
            } else {
                Verification::Unchecked
            };
            // Transactional records need WRITE on their transactional id, or the whole
            // request is refused (as Kafka refuses it).
            let transactional_refused = request.topic_data.iter().any(|topic| {
                topic
                    .partition_data
                    .iter()
                    .any(|p| first_batch(p.records.as_ref()).is_some_and(|h| h.is_transactional()))
            }) && !transactional_id.as_deref().is_some_and(|id| {
                access.allows(Operation::Write, ResourceType::TransactionalId, id)
            });
            for topic in request.topic_data {
                let name = topic_name(context.broker, &topic.name.0, &topic.topic_id);
                // WRITE on the topic, or every partition of it is refused.
                let target = match &name {
                    Some(name) if access.allows(Operation::Write, ResourceType::Topic, name) => {
                        Ok(name.clone())
                    }
                    Some(_) => Err(errors::TOPIC_AUTHORIZATION_FAILED),
                    None => Err(errors::UNKNOWN_TOPIC_ID),
                };
                let mut indexes = Vec::with_capacity(topic.partition_data.len());
                for partition in topic.partition_data {
                    indexes.push(partition.index);
                    let target = if transactional_refused {
                        Err(Refusal::code(errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
                    } else {
                        target.clone().map_err(Refusal::code)
                    };
                    work.push(Work {
                        target,
                        index: partition.index,
                        records: partition.records,
                        verification: unchecked,
                    });
                }
                topics.push((topic.name, topic.topic_id, name, indexes));
            }
            if let Some(id) = transactional_id.as_deref()
                && verifying
            {
                verify_transactions(context.broker, requester, id, &mut work).await;
            }
            let broker = Arc::clone(context.broker);
            let outcomes = tokio::task::spawn_blocking(move || {
                work.into_iter()
                    .map(|item| match item.target {
                        Ok(name) => append(
                            &broker,
                            &name,
                            item.index,
                            item.records,
                            acks,
                            item.verification,
                        ),
                        Err(refusal) => Err(refusal),
                    })
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap_or_else(|error| {
                // A bug, not the client's doing: every partition gets UNKNOWN_SERVER_ERROR.
                tracing::error!(%error, "Produce: the append task failed");
                Vec::new()
            });
            let mut outcomes = outcomes.into_iter();
            let mut appended = Vec::with_capacity(topics.len());
            for (name, topic_id, resolved, indexes) in topics {
                let partitions: Vec<_> = indexes
                    .into_iter()
                    .map(|index| {
                        let outcome = outcomes
                            .next()
                            .unwrap_or_else(|| Err(Refusal::code(errors::UNKNOWN_SERVER_ERROR)));
                        (index, outcome)
                    })
                    .collect();
                appended.push((name, topic_id, resolved, partitions));
            }
            let mut responses = Vec::with_capacity(appended.len());
            let mut hints = LeaderHints::new(context.broker, context.listener);
            for (name, topic_id, topic, partitions) in appended {
                let mut answers = Vec::with_capacity(partitions.len());
                for (index, outcome) in partitions {
                    let outcome = match outcome {
                        Ok(done) if acks == -1 => committed(context, &done, deadline)
                            .await
                            .map(|()| done.info),
                        Ok(done) => Ok(done.info),
                        Err(error) => Err(error),
                    };
                    let mut answer = answer(context, index, outcome);
                    if let Some((leader, epoch)) = topic
                        .as_deref()
                        .and_then(|topic| hints.leader_for(answer.error_code, topic, index))
                    {
                        answer = answer.with_current_leader(
                            LeaderIdAndEpoch::default()
                                .with_leader_id(BrokerId(leader))
                                .with_leader_epoch(epoch),
                        );
                    }
                    answers.push(answer);
                }
                responses.push(
                    TopicProduceResponse::default()
                        .with_name(name)
                        .with_topic_id(topic_id)
                        .with_partition_responses(answers),
                );
            }
            let throttle = context.quota_throttle(QuotaKey::ProducerByteRate, produced_bytes);
            if acks == 0 {
                return Ok(ApiResponse::None);
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
            context.respond(
                &ProduceResponse::default()
                    .with_responses(responses)
                    .with_node_endpoints(endpoints)
                    .with_throttle_time_ms(throttle),
            )
        })
    }
}

/// Produce v0–2 (listed, as Kafka lists them, but removed): every partition is answered
/// UNSUPPORTED_VERSION and nothing is appended; a body that does not parse closes the
/// connection as any malformed request does.
fn refuse_legacy(context: &RequestContext<'_>, body: Bytes) -> Result<ApiResponse, ApiError> {
    let request =
        produce_legacy::decode(context.version, body).map_err(|error| ApiError::Decode {
            api: ApiKey::Produce,
            version: context.version,
            reason: error.to_string(),
        })?;
    let partitions: usize = request.topics.iter().map(|(_, p)| p.len()).sum();
    tracing::info!(
        version = context.version,
        partitions,
        client_id = context.header.client_id.as_deref().unwrap_or(""),
        "Produce v0-2 refused with UNSUPPORTED_VERSION (removed in Kafka 4, KIP-896)"
    );
    context
        .broker
        .metrics
        .request_errors
        .with_label_values(&["Produce", errors::error_name(errors::UNSUPPORTED_VERSION)])
        .inc_by(partitions as u64);
    Ok(produce_legacy::refuse(context.version, &request)
        .map_or(ApiResponse::None, ApiResponse::Encoded))
}

/// Why a partition's records were not appended: the error code, a message for people,
/// and (KIP-467) the records that broke a rule.
struct Refusal {
    code: i16,
    message: Option<String>,
    record_errors: Vec<RecordError>,
}

impl Refusal {
    fn code(code: i16) -> Self {
        Self {
            code,
            message: None,
            record_errors: Vec::new(),
        }
    }

    fn with_message(code: i16, message: impl Into<String>) -> Self {
        Self {
            code,
            message: Some(message.into()),
            record_errors: Vec::new(),
        }
    }
}

type ProduceError = Refusal;

/// One partition of the request: where it goes (or why it does not) and what its
/// transactional batches were checked against.
struct Work {
    target: Result<String, Refusal>,
    index: i32,
    records: Option<Bytes>,
    verification: Verification,
}

/// The header of a partition's first batch, if its records have one.
fn first_batch(records: Option<&Bytes>) -> Option<BatchHeader> {
    BatchHeader::parse(records?).ok()
}

/// A partition whose first write must be verified: its place in the request's work, the
/// partition, the guard its append must carry.
type ToVerify = (usize, TopicPartition, u64);

/// KIP-890: each partition whose first batch would open the producer's transaction
/// there is checked with (version 2: added by) the transaction coordinator before the
/// append; a partition not in the ongoing transaction is refused, the others carry the
/// guard their append must match. An add the coordinator cannot take yet (it is writing
/// the previous transaction's markers) is retried for a moment, with a new guard.
async fn verify_transactions(
    broker: &BrokerState,
    requester: verification::Requester,
    transactional_id: &str,
    work: &mut [Work],
) {
    let started = tokio::time::Instant::now();
    let mut todo: Vec<usize> = (0..work.len()).collect();
    while !todo.is_empty() {
        let mut again = Vec::new();
        for ((producer_id, epoch), partitions) in to_verify(broker, work, &todo) {
            let tps: Vec<TopicPartition> = partitions.iter().map(|(_, tp, _)| tp.clone()).collect();
            let producer = verification::Producer {
                transactional_id,
                producer_id,
                epoch,
            };
            let verdicts = verification::verify(broker, requester, producer, &tps).await;
            for ((at, tp, guard), verdict) in partitions.into_iter().zip(verdicts) {
                let Some(item) = work.get_mut(at) else {
                    continue;
                };
                match verdict {
                    None if requester.adds_implicitly() => {
                        // The partition is in the transaction now; a marker of the previous
                        // one may have ended the guard meanwhile, and this producer's older
                        // epochs are fenced by the bumped one, so a guard taken now is sound.
                        item.verification = leader_partition(broker, &tp, -1)
                            .ok()
                            .and_then(|(replica, _)| replica.start_verification(producer_id, epoch))
                            .map_or(Verification::OPEN, Verification::Guard);
                    }
                    None => item.verification = Verification::Guard(guard),
                    Some(unverified) if verification::retry_later(&unverified, started) => {
                        again.push(at);
                    }
                    Some(unverified) => {
                        tracing::info!(topic_partition = %tp, transactional_id, producer_id, error = errors::error_name(unverified.code), reason = %unverified.message, "Transactional produce refused: not verified");
                        item.target =
                            Err(Refusal::with_message(unverified.code, unverified.message));
                    }
                }
            }
        }
        if !again.is_empty() {
            tokio::time::sleep(verification::ADD_RETRY_BACKOFF).await;
        }
        todo = again;
    }
}

/// The partitions among `todo` whose first batch would open a transaction here, by
/// producer, each with the guard its append must carry; the others are marked as
/// continuing an open transaction.
fn to_verify(
    broker: &BrokerState,
    work: &mut [Work],
    todo: &[usize],
) -> Vec<((i64, i16), Vec<ToVerify>)> {
    let mut pending: Vec<((i64, i16), Vec<ToVerify>)> = Vec::new();
    for &at in todo {
        let Some(item) = work.get_mut(at) else {
            continue;
        };
        let Ok(topic) = &item.target else {
            continue;
        };
        let Some(header) = first_batch(item.records.as_ref()) else {
            continue;
        };
        if !header.is_transactional() || header.is_control() || !header.has_producer_id() {
            continue;
        }
        let tp = TopicPartition::new(topic.clone(), item.index);
        // Refused here, not left to the append: this broker may become the leader between
        // this check and the append (the new leader's metadata reaches clients first), and
        // an unchecked batch would then open a transaction its coordinator does not know
        // of: its marker would never come.
        let replica = match leader_partition(broker, &tp, -1) {
            Ok((replica, _)) => replica,
            Err(code) => {
                item.target = Err(Refusal::code(code));
                continue;
            }
        };
        let Some(guard) = replica.start_verification(header.producer_id, header.producer_epoch)
        else {
            item.verification = Verification::OPEN;
            continue;
        };
        let producer = (header.producer_id, header.producer_epoch);
        match pending.iter_mut().find(|(p, _)| *p == producer) {
            Some((_, partitions)) => partitions.push((at, tp, guard)),
            None => pending.push((producer, vec![(at, tp, guard)])),
        }
    }
    pending
}

/// An append the leader made, and what `acks=all` must wait for.
struct Appended {
    info: AppendInfo,
    partition: Arc<Partition>,
    leader_epoch: i32,
}

fn answer(
    context: &RequestContext<'_>,
    index: i32,
    outcome: Result<AppendInfo, ProduceError>,
) -> PartitionProduceResponse {
    let response = PartitionProduceResponse::default().with_index(index);
    match outcome {
        Ok(info) => response
            .with_base_offset(info.base_offset as i64)
            .with_log_append_time_ms(info.log_append_time.unwrap_or(-1))
            .with_log_start_offset(info.log_start_offset as i64),
        Err(Refusal {
            code,
            message,
            record_errors,
        }) => {
            let record_errors = record_errors
                .into_iter()
                .map(|e| {
                    BatchIndexAndErrorMessage::default()
                        .with_batch_index(e.batch_index)
                        .with_batch_index_error_message(Some(StrBytes::from_string(e.message)))
                })
                .collect();
            context
                .broker
                .metrics
                .request_errors
                .with_label_values(&["Produce", errors::error_name(code)])
                .inc();
            response
                .with_error_code(code)
                .with_base_offset(-1)
                .with_log_append_time_ms(-1)
                .with_log_start_offset(-1)
                .with_error_message(message.map(StrBytes::from_string))
                .with_record_errors(record_errors)
        }
    }
}

/// `acks=all`: waits until the high watermark covers the append (every in-sync replica
/// has it). The leader losing the partition meanwhile is NOT_LEADER_OR_FOLLOWER; the
/// request timeout REQUEST_TIMED_OUT; an ISR that shrank below `min.insync.replicas`
/// by then NOT_ENOUGH_REPLICAS_AFTER_APPEND (the records are in the log, as in Kafka).
async fn committed(
    context: &RequestContext<'_>,
    done: &Appended,
    deadline: Instant,
) -> Result<(), ProduceError> {
    let waited = done
        .partition
        .wait_committed(
            done.info.last_offset + 1,
            done.leader_epoch,
            deadline,
            context.broker.shutting_down.clone(),
        )
        .await;
    waited.map_err(|wait| match wait {
        CommitWait::LeadershipLost => Refusal::with_message(
            errors::NOT_LEADER_OR_FOLLOWER,
            "leadership moved before the in-sync replicas had the records",
        ),
        CommitWait::TimedOut => Refusal::with_message(
            errors::REQUEST_TIMED_OUT,
            "the in-sync replicas did not confirm the records in time",
        ),
        CommitWait::NotEnoughReplicasAfterAppend => Refusal::with_message(
            errors::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            "the ISR shrank below min.insync.replicas",
        ),
    })
}

fn append(
    broker: &BrokerState,
    topic: &str,
    partition: i32,
    records: Option<Bytes>,
    acks: i16,
    verification: Verification,
) -> Result<Appended, ProduceError> {
    if !matches!(acks, -1..=1) {
        return Err(Refusal::code(errors::INVALID_REQUIRED_ACKS));
    }
    let tp = TopicPartition::new(topic, partition);
    let (replica, leader_epoch) = leader_partition(broker, &tp, -1).map_err(Refusal::code)?;
    let Some(records) = records else {
        return Err(Refusal::with_message(errors::INVALID_RECORD, "no records"));
    };
    let bytes = records.len();
    match replica.append_records_verified(&records, acks, verification) {
        Ok(info) => {
            if !info.duplicate {
                broker
                    .metrics
                    .bytes_in
                    .with_label_values(&[topic])
                    .inc_by(bytes as u64);
                broker
                    .metrics
                    .messages_in
                    .with_label_values(&[topic])
                    .inc_by(info.record_count);
            }
            Ok(Appended {
                info,
                partition: replica,
                leader_epoch,
            })
        }
        Err(AppendError::Invalid(error)) => {
            tracing::info!(topic_partition = %tp, %error, "Produce refused");
            let code = errors::validation_error(&error);
            let message = error.to_string();
            let record_errors = match error {
                ValidationError::RecordsRejected { errors, .. } => errors,
                _ => Vec::new(),
            };
            Err(Refusal {
                code,
                message: Some(message),
                record_errors,
            })
        }
        Err(error) => {
            tracing::info!(topic_partition = %tp, %error, "Produce refused");
            Err(Refusal::with_message(
                errors::append_error(&error),
                error.to_string(),
            ))
        }
    }
}
