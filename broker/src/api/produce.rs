//! Produce: validate and append record batches at the leader (acks 0, 1 and -1),
//! idempotent producers included; `acks=all` answers once the in-sync replicas have the
//! records (the high watermark passed them).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;
use tokio::time::Instant;

use super::lookup::{leader_partition, topic_name};
use super::{Api, ApiResponse, HandlerFuture, RequestContext, errors};
use crate::replication::{CommitWait, Partition};
use crate::storage::{AppendInfo, TopicPartition};

#[derive(Debug)]
pub struct ProduceApi;

impl Api for ProduceApi {
    fn key(&self) -> ApiKey {
        ApiKey::Produce
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: ProduceRequest = context.decode(body)?;
            let acks = request.acks;
            let deadline = Instant::now()
                + Duration::from_millis(u64::try_from(request.timeout_ms).unwrap_or(0));
            // Append everything first, then wait (acks=all) for all of it at once.
            let mut appended = Vec::with_capacity(request.topic_data.len());
            for topic in request.topic_data {
                let name = topic_name(context.broker, &topic.name.0, &topic.topic_id);
                let mut partitions = Vec::with_capacity(topic.partition_data.len());
                for partition in topic.partition_data {
                    let outcome = match &name {
                        Some(name) => {
                            append(context, name, partition.index, partition.records, acks)
                        }
                        None => Err((errors::UNKNOWN_TOPIC_ID, None)),
                    };
                    partitions.push((partition.index, outcome));
                }
                appended.push((topic.name, topic.topic_id, partitions));
            }
            let mut responses = Vec::with_capacity(appended.len());
            for (name, topic_id, partitions) in appended {
                let mut answers = Vec::with_capacity(partitions.len());
                for (index, outcome) in partitions {
                    let outcome = match outcome {
                        Ok(done) if acks == -1 => committed(context, &done, deadline)
                            .await
                            .map(|()| done.info),
                        Ok(done) => Ok(done.info),
                        Err(error) => Err(error),
                    };
                    answers.push(answer(context, index, outcome));
                }
                responses.push(
                    TopicProduceResponse::default()
                        .with_name(name)
                        .with_topic_id(topic_id)
                        .with_partition_responses(answers),
                );
            }
            if acks == 0 {
                return Ok(ApiResponse::None);
            }
            context.respond(&ProduceResponse::default().with_responses(responses))
        })
    }
}

type ProduceError = (i16, Option<String>);

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
        Err((code, message)) => {
            context
                .broker
                .metrics
                .request_errors
                .with_label_values(&["Produce", &code.to_string()])
                .inc();
            response
                .with_error_code(code)
                .with_base_offset(-1)
                .with_log_append_time_ms(-1)
                .with_log_start_offset(-1)
                .with_error_message(message.map(StrBytes::from_string))
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
        CommitWait::LeadershipLost => (
            errors::NOT_LEADER_OR_FOLLOWER,
            Some("leadership moved before the in-sync replicas had the records".into()),
        ),
        CommitWait::TimedOut => (
            errors::REQUEST_TIMED_OUT,
            Some("the in-sync replicas did not confirm the records in time".into()),
        ),
        CommitWait::NotEnoughReplicasAfterAppend => (
            errors::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            Some("the ISR shrank below min.insync.replicas".into()),
        ),
    })
}

fn append(
    context: &RequestContext<'_>,
    topic: &str,
    partition: i32,
    records: Option<Bytes>,
    acks: i16,
) -> Result<Appended, ProduceError> {
    let broker = context.broker;
    if !matches!(acks, -1..=1) {
        return Err((errors::INVALID_REQUIRED_ACKS, None));
    }
    let tp = TopicPartition::new(topic, partition);
    let (replica, leader_epoch) = leader_partition(broker, &tp, -1).map_err(|code| (code, None))?;
    let Some(records) = records else {
        return Err((errors::INVALID_RECORD, Some("no records".into())));
    };
    let bytes = records.len();
    let mut owned = records.to_vec();
    match replica.append_as_leader(&mut owned, acks) {
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
        Err(error) => {
            tracing::info!(topic_partition = %tp, %error, "Produce refused");
            Err((errors::append_error(&error), Some(error.to_string())))
        }
    }
}
