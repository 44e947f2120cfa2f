//! ConsumerGroupHeartbeat (KIP-848): join, heartbeat, reconcile and leave in one API;
//! the broker computes the assignment (server-side `uniform` or `range` assignor).

use std::collections::BTreeSet;

use bytes::Bytes;
use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::group::GroupError;
use crate::group::assignor;
use crate::group::consumer::{HeartbeatRequest, TopicsView};
use crate::metadata::features::GROUP_VERSION;
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct ConsumerGroupHeartbeatApi;

impl Api for ConsumerGroupHeartbeatApi {
    fn key(&self) -> ApiKey {
        ApiKey::ConsumerGroupHeartbeat
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: ConsumerGroupHeartbeatRequest = context.decode(body)?;
            let group_version = context
                .broker
                .controller
                .image()
                .features
                .level_or_bootstrap(GROUP_VERSION, context.broker.config.transactions.version);
            if group_version < 1 {
                // Kafka's answer while the consumer protocol is off (group.version 0).
                return context.respond(
                    &ConsumerGroupHeartbeatResponse::default()
                        .with_error_code(errors::UNSUPPORTED_VERSION)
                        .with_error_message(Some(StrBytes::from_static_str(
                            "The new group coordinator is not enabled: group.version is 0",
                        ))),
                );
            }
            if !context
                .access()
                .allows(Operation::Read, ResourceType::Group, &request.group_id)
            {
                return context.respond(
                    &ConsumerGroupHeartbeatResponse::default()
                        .with_error_code(errors::GROUP_AUTHORIZATION_FAILED)
                        .with_error_message(Some(StrBytes::from_string(format!(
                            "{} may not read group {}",
                            context.principal, request.group_id.0
                        )))),
                );
            }
            let topics: TopicsView = context
                .broker
                .controller
                .image()
                .topics
                .values()
                .map(|t| (t.name.clone(), (t.topic_id, t.partition_count())))
                .collect();
            let heartbeat = HeartbeatRequest {
                member_id: request.member_id.to_string(),
                member_epoch: request.member_epoch,
                instance_id: request.instance_id.map(|s| s.to_string()),
                rack_id: request.rack_id.map(|s| s.to_string()),
                rebalance_timeout_ms: request.rebalance_timeout_ms,
                subscribed_topic_names: request
                    .subscribed_topic_names
                    .map(|names| names.into_iter().map(|n| n.0.to_string()).collect()),
                subscribed_topic_regex: request.subscribed_topic_regex.map(|s| s.to_string()),
                server_assignor: request.server_assignor.map(|s| s.to_string()),
                owned: request.topic_partitions.map(|owned| {
                    owned
                        .into_iter()
                        .map(|t| {
                            (
                                t.topic_id,
                                t.partitions.into_iter().collect::<BTreeSet<i32>>(),
                            )
                        })
                        .collect::<assignor::Assignment>()
                }),
                client_id: super::client_id(context),
                client_host: super::client_host(context),
            };
            let result = if request.group_id.is_empty() {
                Err(GroupError::InvalidGroupId)
            } else {
                context.broker.groups.with_consumer_group(
                    &request.group_id.0,
                    request.member_epoch == 0,
                    |group, now| group.heartbeat(heartbeat, &topics, now),
                )
            };
            let response = match result {
                Ok(reply) => ConsumerGroupHeartbeatResponse::default()
                    .with_member_id(Some(StrBytes::from_string(reply.member_id)))
                    .with_member_epoch(reply.member_epoch)
                    .with_heartbeat_interval_ms(reply.heartbeat_interval_ms)
                    .with_assignment(reply.assignment.map(|assignment| {
                        Assignment::default().with_topic_partitions(
                            assignment
                                .into_iter()
                                .map(|(topic_id, partitions)| {
                                    TopicPartitions::default()
                                        .with_topic_id(topic_id)
                                        .with_partitions(partitions.into_iter().collect())
                                })
                                .collect(),
                        )
                    })),
                Err(error) => {
                    // A group that does not exist yet for a non-joining member: the
                    // member is unknown (it re-joins with epoch 0).
                    let error = match error {
                        GroupError::GroupIdNotFound => GroupError::UnknownMemberId,
                        other => other,
                    };
                    ConsumerGroupHeartbeatResponse::default()
                        .with_error_code(errors::group_error(&error))
                        .with_error_message(Some(StrBytes::from_string(error.to_string())))
                }
            };
            context.respond(&response)
        })
    }
}
