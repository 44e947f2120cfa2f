//! ConsumerGroupDescribe (KIP-848): epochs, assignor, members with their current and
//! target assignments.

use bytes::Bytes;
use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::group::assignor;
use crate::group::coordinator::GroupKind;
use crate::metadata::image::ClusterImage;
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct ConsumerGroupDescribeApi;

impl Api for ConsumerGroupDescribeApi {
    fn key(&self) -> ApiKey {
        ApiKey::ConsumerGroupDescribe
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: ConsumerGroupDescribeRequest = context.decode(body)?;
            let image = context.broker.controller.image();
            let access = context.access();
            let groups =
                request
                    .group_ids
                    .iter()
                    .map(|group_id| {
                        if !access.allows(Operation::Describe, ResourceType::Group, group_id) {
                            return DescribedGroup::default()
                                .with_group_id(group_id.clone())
                                .with_error_code(errors::GROUP_AUTHORIZATION_FAILED)
                                .with_authorized_operations(i32::MIN);
                        }
                        let described = context.broker.groups.with_group(&group_id.0, |group| {
                            match &group.kind {
                                GroupKind::Consumer(g) => Some(
                                    DescribedGroup::default()
                                        .with_group_state(StrBytes::from_static_str(g.state_name()))
                                        .with_group_epoch(g.group_epoch)
                                        .with_assignment_epoch(g.assignment_epoch)
                                        .with_assignor_name(StrBytes::from_static_str(
                                            g.assignor_name(),
                                        ))
                                        .with_members(
                                            g.members
                                                .values()
                                                .map(|m| {
                                                    let target = g
                                                        .target
                                                        .get(&m.member_id)
                                                        .cloned()
                                                        .unwrap_or_default();
                                                    Member::default()
                                                        .with_member_id(StrBytes::from_string(
                                                            m.member_id.clone(),
                                                        ))
                                                        .with_instance_id(
                                                            m.instance_id
                                                                .clone()
                                                                .map(StrBytes::from_string),
                                                        )
                                                        .with_rack_id(
                                                            m.rack_id
                                                                .clone()
                                                                .map(StrBytes::from_string),
                                                        )
                                                        .with_member_epoch(m.member_epoch)
                                                        .with_client_id(StrBytes::from_string(
                                                            m.client_id.clone(),
                                                        ))
                                                        .with_client_host(StrBytes::from_string(
                                                            m.client_host.clone(),
                                                        ))
                                                        .with_subscribed_topic_names(
                                                            m.subscribed_topics
                                                                .iter()
                                                                .map(|t| {
                                                                    TopicName(
                                                                        StrBytes::from_string(
                                                                            t.clone(),
                                                                        ),
                                                                    )
                                                                })
                                                                .collect(),
                                                        )
                                                        .with_subscribed_topic_regex(
                                                            m.subscribed_topic_regex
                                                                .clone()
                                                                .map(StrBytes::from_string),
                                                        )
                                                        .with_assignment(assignment(
                                                            &image,
                                                            &m.assigned,
                                                        ))
                                                        .with_target_assignment(assignment(
                                                            &image, &target,
                                                        ))
                                                        .with_member_type(1)
                                                })
                                                .collect(),
                                        ),
                                ),
                                GroupKind::Classic(_) => None,
                            }
                        });
                        match described.flatten() {
                            Some(group) => group.with_group_id(group_id.clone()),
                            None => DescribedGroup::default()
                                .with_group_id(group_id.clone())
                                .with_error_code(errors::GROUP_ID_NOT_FOUND)
                                .with_error_message(Some(StrBytes::from_static_str(
                                    "no consumer (KIP-848) group by that id",
                                ))),
                        }
                        .with_authorized_operations(
                            if request.include_authorized_operations {
                                access.operations(ResourceType::Group, group_id)
                            } else {
                                i32::MIN
                            },
                        )
                    })
                    .collect();
            context.respond(&ConsumerGroupDescribeResponse::default().with_groups(groups))
        })
    }
}

fn assignment(image: &ClusterImage, assignment: &assignor::Assignment) -> Assignment {
    Assignment::default().with_topic_partitions(
        assignment
            .iter()
            .map(|(id, partitions)| {
                let name = image
                    .topics
                    .values()
                    .find(|t| t.topic_id == *id)
                    .map(|t| t.name.clone())
                    .unwrap_or_default();
                TopicPartitions::default()
                    .with_topic_id(*id)
                    .with_topic_name(TopicName(StrBytes::from_string(name)))
                    .with_partitions(partitions.iter().copied().collect())
            })
            .collect(),
    )
}
