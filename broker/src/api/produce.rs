//! Produce: validate and append record batches (acks 0, 1 and -1), idempotent
//! producers included; wakes fetches parked on the partition.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;

use super::lookup::{leader_log, topic_name};
use super::{Api, ApiResponse, HandlerFuture, RequestContext, errors};
use crate::storage::TopicPartition;

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
            let mut responses = Vec::with_capacity(request.topic_data.len());
            for topic in request.topic_data {
                let name = topic_name(context.broker, &topic.name.0, &topic.topic_id);
                let mut partitions = Vec::with_capacity(topic.partition_data.len());
                for partition in topic.partition_data {
                    let outcome = match &name {
                        Some(name) => {
                            append(context, name, partition.index, partition.records, acks)
                        }
                        None => Err((ResponseError::UnknownTopicId.code(), None)),
                    };
                    let response = PartitionProduceResponse::default().with_index(partition.index);
                    partitions.push(match outcome {
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
                    });
                }
                responses.push(
                    TopicProduceResponse::default()
                        .with_name(topic.name)
                        .with_topic_id(topic.topic_id)
                        .with_partition_responses(partitions),
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

fn append(
    context: &RequestContext<'_>,
    topic: &str,
    partition: i32,
    records: Option<Bytes>,
    acks: i16,
) -> Result<crate::storage::AppendInfo, ProduceError> {
    let broker = context.broker;
    if !matches!(acks, -1..=1) {
        return Err((ResponseError::InvalidRequiredAcks.code(), None));
    }
    let tp = TopicPartition::new(topic, partition);
    let (log, _) = leader_log(broker, &tp, -1).map_err(|code| (code, None))?;
    if acks == -1 && log.config().min_insync_replicas > 1 {
        // One broker is the whole in-sync replica set.
        return Err((
            ResponseError::NotEnoughReplicas.code(),
            Some("min.insync.replicas exceeds the in-sync replicas (1)".into()),
        ));
    }
    let Some(records) = records else {
        return Err((
            ResponseError::InvalidRecord.code(),
            Some("no records".into()),
        ));
    };
    let bytes = records.len();
    let mut owned = records.to_vec();
    match log.append(&mut owned, 0) {
        Ok(info) => {
            if !info.duplicate {
                broker.appends.appended(&tp, log.log_end_offset());
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
            Ok(info)
        }
        Err(error) => {
            tracing::info!(topic_partition = %tp, %error, "Produce refused");
            Err((errors::log_error(&error), Some(error.to_string())))
        }
    }
}
