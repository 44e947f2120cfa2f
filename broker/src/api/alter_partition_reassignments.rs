//! AlterPartitionReassignments (KIP-455): moves partitions' replicas to new brokers (or
//! cancels a move with a null target). The active controller records the move; added
//! replicas catch up from the leader, join the ISR, and then the removed ones leave.

use bytes::Bytes;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, ApiKey,
};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::controller::Reassignment;
use crate::security::acl::Operation;

#[derive(Debug)]
pub struct AlterPartitionReassignmentsApi;

impl Api for AlterPartitionReassignmentsApi {
    fn key(&self) -> ApiKey {
        ApiKey::AlterPartitionReassignments
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: AlterPartitionReassignmentsRequest = context.decode(body)?;
            let access = context.access();
            if !access.allows_cluster(Operation::Alter) {
                return context.respond(
                    &AlterPartitionReassignmentsResponse::default()
                        .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED)
                        .with_error_message(access.cluster_denied(Operation::Alter)),
                );
            }
            let image = context.broker.controller.image();
            // Refused here, before the controller: a replication factor change the client
            // did not allow (KIP-860).
            let mut refused: Vec<(usize, usize, i16, String)> = Vec::new();
            let mut asked = Vec::new();
            for (t, topic) in request.topics.iter().enumerate() {
                for (p, partition) in topic.partitions.iter().enumerate() {
                    let target: Option<Vec<i32>> = partition
                        .replicas
                        .as_ref()
                        .map(|r| r.iter().map(|b| b.0).collect());
                    if !request.allow_replication_factor_change
                        && let (Some(target), Some(state)) = (
                            &target,
                            image.partition(&topic.name.0, partition.partition_index),
                        )
                        && target.len() != state.original_replicas().len()
                    {
                        refused.push((
                            t,
                            p,
                            errors::INVALID_REPLICATION_FACTOR,
                            format!(
                                "the reassignment changes the replication factor from {} to {}, which the request does not allow",
                                state.original_replicas().len(),
                                target.len()
                            ),
                        ));
                        continue;
                    }
                    asked.push((
                        (t, p),
                        Reassignment {
                            topic: topic.name.0.to_string(),
                            partition: partition.partition_index,
                            target,
                        },
                    ));
                }
            }
            let mut responses: Vec<ReassignableTopicResponse> = request
                .topics
                .iter()
                .map(|topic| {
                    ReassignableTopicResponse::default()
                        .with_name(topic.name.clone())
                        .with_partitions(
                            topic
                                .partitions
                                .iter()
                                .map(|p| {
                                    ReassignablePartitionResponse::default()
                                        .with_partition_index(p.partition_index)
                                })
                                .collect(),
                        )
                })
                .collect();
            let mut set = |t: usize, p: usize, code: i16, message: Option<String>| {
                if let Some(slot) = responses.get_mut(t).and_then(|r| r.partitions.get_mut(p)) {
                    slot.error_code = code;
                    slot.error_message = message.map(StrBytes::from_string);
                }
            };
            for (t, p, code, message) in refused {
                tracing::info!(%message, "AlterPartitionReassignments refused");
                set(t, p, code, Some(message));
            }
            let places: Vec<(usize, usize)> = asked.iter().map(|(at, _)| *at).collect();
            let reassignments: Vec<Reassignment> = asked.into_iter().map(|(_, r)| r).collect();
            let mut top_error = (errors::NONE, None);
            if !reassignments.is_empty() {
                match context
                    .broker
                    .controller
                    .reassign_partitions(reassignments.clone())
                    .await
                {
                    Ok(outcomes) => {
                        for ((t, p), outcome) in places.into_iter().zip(outcomes) {
                            match &outcome.error {
                                None => {
                                    tracing::info!(topic = %outcome.topic, partition = outcome.partition, "Partition reassignment accepted");
                                    set(t, p, errors::NONE, None)
                                }
                                Some(error) => {
                                    tracing::info!(topic = %outcome.topic, partition = outcome.partition, %error, "Partition reassignment refused");
                                    set(
                                        t,
                                        p,
                                        errors::controller_error(error),
                                        Some(error.to_string()),
                                    )
                                }
                            }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "AlterPartitionReassignments failed");
                        let code = errors::controller_error(&error);
                        for (t, p) in places {
                            set(t, p, code, Some(error.to_string()));
                        }
                        top_error = (code, Some(StrBytes::from_string(error.to_string())));
                    }
                }
            }
            context.respond(
                &AlterPartitionReassignmentsResponse::default()
                    .with_allow_replication_factor_change(request.allow_replication_factor_change)
                    .with_error_code(top_error.0)
                    .with_error_message(top_error.1)
                    .with_responses(responses),
            )
        })
    }
}
