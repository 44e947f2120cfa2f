//! DeleteRecords: moves partitions' log start offsets forward (offset -1 means the high
//! watermark); whole segments below the new start are deleted at once. Topics whose
//! cleanup policy is compaction only refuse it, as in Kafka.

use bytes::Bytes;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{ApiKey, DeleteRecordsRequest, DeleteRecordsResponse};

use super::admin::AdminError;
use super::lookup::leader_partition;
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::model::TopicPartition;
use crate::replication::DeleteRecordsError;
use crate::security::acl::{Operation, ResourceType};
use crate::state::BrokerState;

#[derive(Debug)]
pub struct DeleteRecordsApi;

impl Api for DeleteRecordsApi {
    fn key(&self) -> ApiKey {
        ApiKey::DeleteRecords
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DeleteRecordsRequest = context.decode(body)?;
            let access = context.access();
            let topics = request
                .topics
                .into_iter()
                .map(|topic| {
                    let allowed = access.allows(Operation::Delete, ResourceType::Topic, &topic.name);
                    let partitions = topic
                        .partitions
                        .iter()
                        .map(|partition| {
                            let tp = TopicPartition::new(topic.name.0.to_string(), partition.partition_index);
                            let result = DeleteRecordsPartitionResult::default()
                                .with_partition_index(partition.partition_index);
                            let deleted = if allowed {
                                delete_below(context.broker, &tp, partition.offset)
                            } else {
                                Err(AdminError::TopicAuthorization {
                                    topic: tp.topic.clone(),
                                    operation: Operation::Delete,
                                })
                            };
                            match deleted {
                                Ok(low_watermark) => result.with_low_watermark(low_watermark),
                                Err(error) => {
                                    tracing::info!(topic_partition = %tp, offset = partition.offset, %error, "DeleteRecords refused");
                                    result
                                        .with_low_watermark(-1)
                                        .with_error_code(errors::admin_error(&error))
                                }
                            }
                        })
                        .collect();
                    DeleteRecordsTopicResult::default()
                        .with_name(topic.name)
                        .with_partitions(partitions)
                })
                .collect();
            context.respond(&DeleteRecordsResponse::default().with_topics(topics))
        })
    }
}

/// Deletes the records below `offset`; returns the new log start offset.
fn delete_below(broker: &BrokerState, tp: &TopicPartition, offset: i64) -> Result<i64, AdminError> {
    let (partition, _) = leader_partition(broker, tp, -1).map_err(|code| {
        if code == errors::UNKNOWN_TOPIC_OR_PARTITION {
            AdminError::UnknownPartition {
                topic: tp.topic.clone(),
                partition: tp.partition,
            }
        } else {
            AdminError::NotLeader {
                topic: tp.topic.clone(),
                partition: tp.partition,
            }
        }
    })?;
    partition
        .delete_records(offset)
        .map(|start| i64::try_from(start).unwrap_or(i64::MAX))
        .map_err(|error| match error {
            DeleteRecordsError::Compacted => AdminError::CompactedTopic {
                topic: tp.topic.clone(),
                partition: tp.partition,
            },
            DeleteRecordsError::OutOfRange(reason) => AdminError::OffsetOutOfRange {
                topic: tp.topic.clone(),
                partition: tp.partition,
                offset,
                reason,
            },
            DeleteRecordsError::Log(error) => error.into(),
        })
}
