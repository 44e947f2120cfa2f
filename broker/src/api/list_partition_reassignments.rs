//! ListPartitionReassignments: the reassignments in progress, from this broker's image
//! (every broker follows the metadata log, so any of them can answer).

use bytes::Bytes;
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::metadata::image::TopicImage;
use crate::security::acl::Operation;

#[derive(Debug)]
pub struct ListPartitionReassignmentsApi;

impl Api for ListPartitionReassignmentsApi {
    fn key(&self) -> ApiKey {
        ApiKey::ListPartitionReassignments
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: ListPartitionReassignmentsRequest = context.decode(body)?;
            let access = context.access();
            if !access.allows_cluster(Operation::Describe) {
                return context.respond(
                    &ListPartitionReassignmentsResponse::default()
                        .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED)
                        .with_error_message(access.cluster_denied(Operation::Describe)),
                );
            }
            let image = context.broker.controller.image();
            // Unknown topics and partitions are left out of the answer, as in Kafka.
            let topics: Vec<OngoingTopicReassignment> = match &request.topics {
                None => image
                    .topics
                    .values()
                    .filter_map(|topic| ongoing(topic, None))
                    .collect(),
                Some(asked) => asked
                    .iter()
                    .filter_map(|t| {
                        image
                            .topics
                            .get(t.name.0.as_str())
                            .and_then(|topic| ongoing(topic, Some(&t.partition_indexes)))
                    })
                    .collect(),
            };
            context.respond(&ListPartitionReassignmentsResponse::default().with_topics(topics))
        })
    }
}

fn ongoing(topic: &TopicImage, partitions: Option<&[i32]>) -> Option<OngoingTopicReassignment> {
    let ids = |r: &[i32]| r.iter().map(|b| BrokerId(*b)).collect::<Vec<_>>();
    let found: Vec<OngoingPartitionReassignment> = topic
        .partitions
        .iter()
        .enumerate()
        .filter(|(index, state)| {
            state.is_reassigning()
                && partitions.is_none_or(|asked| asked.contains(&(*index as i32)))
        })
        .map(|(index, state)| {
            OngoingPartitionReassignment::default()
                .with_partition_index(index as i32)
                .with_replicas(ids(&state.replicas))
                .with_adding_replicas(ids(&state.adding_replicas))
                .with_removing_replicas(ids(&state.removing_replicas))
        })
        .collect();
    (!found.is_empty()).then(|| {
        OngoingTopicReassignment::default()
            .with_name(TopicName(StrBytes::from_string(topic.name.clone())))
            .with_partitions(found)
    })
}
