//! CreatePartitions: grows a topic to a new partition count (partitions never shrink),
//! optionally with a manual replica assignment; `validate_only` checks without growing.

use bytes::Bytes;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{ApiKey, CreatePartitionsRequest, CreatePartitionsResponse};
use kafka_protocol::protocol::StrBytes;

use super::admin::{AdminError, duplicates};
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::controller::ControllerError;
use crate::security::acl::{Operation, ResourceType};
use crate::state::BrokerState;

#[derive(Debug)]
pub struct CreatePartitionsApi;

impl Api for CreatePartitionsApi {
    fn key(&self) -> ApiKey {
        ApiKey::CreatePartitions
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: CreatePartitionsRequest = context.decode(body)?;
            let twice = duplicates(request.topics.iter().map(|t| &*t.name.0));
            let mut results = Vec::with_capacity(request.topics.len());
            let access = context.access();
            for topic in &request.topics {
                {
                    let name = topic.name.0.to_string();
                    let outcome = if twice.contains(&name) {
                        Err(AdminError::DuplicateTopic(name.clone()))
                    } else if !access.allows(Operation::Alter, ResourceType::Topic, &name) {
                        Err(AdminError::TopicAuthorization {
                            topic: name.clone(),
                            operation: Operation::Alter,
                        })
                    } else {
                        grow(context.broker, topic, request.validate_only).await
                    };
                    let result =
                        CreatePartitionsTopicResult::default().with_name(topic.name.clone());
                    results.push(match outcome {
                        Ok(()) => result,
                        Err(error) => {
                            tracing::info!(topic = %name, count = topic.count, %error, "CreatePartitions refused");
                            result
                                .with_error_code(errors::admin_error(&error))
                                .with_error_message(Some(StrBytes::from_string(error.to_string())))
                        }
                    });
                }
            }
            context.respond(&CreatePartitionsResponse::default().with_results(results))
        })
    }
}

async fn grow(
    broker: &BrokerState,
    request: &CreatePartitionsTopic,
    validate_only: bool,
) -> Result<(), AdminError> {
    let name = request.name.0.as_str();
    // Kafka answers an invalid name here as an unknown topic (not INVALID_TOPIC_EXCEPTION).
    let topic = broker
        .controller
        .image()
        .topics
        .get(name)
        .cloned()
        .ok_or_else(|| ControllerError::UnknownTopic(name.to_string()))?;
    if let Some(assignments) = &request.assignments {
        let new_partitions = i64::from(request.count) - i64::from(topic.partition_count());
        if new_partitions > 0 && assignments.len() as i64 != new_partitions {
            return Err(AdminError::InvalidReplicaAssignment(format!(
                "{} assignment(s) given for {new_partitions} new partition(s)",
                assignments.len()
            )));
        }
        let image = broker.controller.image();
        for assignment in assignments {
            if let Some(unknown) = assignment
                .broker_ids
                .iter()
                .find(|id| !image.brokers.contains_key(&id.0))
            {
                return Err(AdminError::InvalidReplicaAssignment(format!(
                    "the manual partition assignment includes broker {}, but no such broker is registered",
                    unknown.0
                )));
            }
            if assignment.broker_ids.len() != usize::try_from(topic.replication_factor).unwrap_or(0)
            {
                return Err(AdminError::InvalidReplicaAssignment(format!(
                    "a partition with {} replica(s) is not consistent with the topic's replication factor {}",
                    assignment.broker_ids.len(),
                    topic.replication_factor
                )));
            }
        }
    }
    let assignments = request
        .assignments
        .iter()
        .flatten()
        .map(|assignment| assignment.broker_ids.iter().map(|id| id.0).collect())
        .collect();
    broker
        .controller
        .create_partitions(name, request.count, assignments, validate_only)
        .await?;
    Ok(())
}
