//! OffsetDelete: removes committed offsets of topics the group no longer subscribes to.

use bytes::Bytes;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{ApiKey, OffsetDeleteRequest, OffsetDeleteResponse};

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::model::TopicPartition;
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct OffsetDeleteApi;

impl Api for OffsetDeleteApi {
    fn key(&self) -> ApiKey {
        ApiKey::OffsetDelete
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: OffsetDeleteRequest = context.decode(body)?;
            // DELETE on the group; READ on each topic (refused topics keep their offsets).
            let access = context.access();
            if !access.allows(Operation::Delete, ResourceType::Group, &request.group_id) {
                return context.respond(
                    &OffsetDeleteResponse::default()
                        .with_error_code(errors::GROUP_AUTHORIZATION_FAILED),
                );
            }
            let denied: std::collections::HashSet<String> = request
                .topics
                .iter()
                .map(|t| t.name.0.to_string())
                .filter(|name| !access.allows(Operation::Read, ResourceType::Topic, name))
                .collect();
            let partitions: Vec<TopicPartition> = request
                .topics
                .iter()
                .filter(|t| !denied.contains(t.name.0.as_str()))
                .flat_map(|t| {
                    t.partitions
                        .iter()
                        .map(|p| TopicPartition::new(t.name.0.to_string(), p.partition_index))
                })
                .collect();
            let response = match context
                .broker
                .groups
                .delete_offsets(&request.group_id.0, partitions)
            {
                Err(error) => {
                    OffsetDeleteResponse::default().with_error_code(errors::group_error(&error))
                }
                Ok(results) => {
                    let topics = request
                        .topics
                        .into_iter()
                        .map(|topic| {
                            if denied.contains(topic.name.0.as_str()) {
                                let partitions = topic
                                    .partitions
                                    .iter()
                                    .map(|p| {
                                        OffsetDeleteResponsePartition::default()
                                            .with_partition_index(p.partition_index)
                                            .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED)
                                    })
                                    .collect();
                                return OffsetDeleteResponseTopic::default()
                                    .with_name(topic.name)
                                    .with_partitions(partitions);
                            }
                            let partitions = results
                                .iter()
                                .filter(|(tp, _)| tp.topic == topic.name.0.as_str())
                                .map(|(tp, result)| {
                                    OffsetDeleteResponsePartition::default()
                                        .with_partition_index(tp.partition)
                                        .with_error_code(errors::group_result(result))
                                })
                                .collect();
                            OffsetDeleteResponseTopic::default()
                                .with_name(topic.name)
                                .with_partitions(partitions)
                        })
                        .collect();
                    OffsetDeleteResponse::default().with_topics(topics)
                }
            };
            context.respond(&response)
        })
    }
}
