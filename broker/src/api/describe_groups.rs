//! DescribeGroups of classic groups; an unknown group is reported as Kafka does, in
//! state `Dead` with no members; a KIP-848 group answers GROUP_ID_NOT_FOUND here (it is
//! described by ConsumerGroupDescribe).

use bytes::Bytes;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::{ApiKey, DescribeGroupsRequest, DescribeGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::group::coordinator::GroupKind;
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct DescribeGroupsApi;

impl Api for DescribeGroupsApi {
    fn key(&self) -> ApiKey {
        ApiKey::DescribeGroups
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DescribeGroupsRequest = context.decode(body)?;
            let access = context.access();
            let groups =
                request
                    .groups
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
                                GroupKind::Classic(g) => {
                                    let protocol = g.protocol_name.clone().unwrap_or_default();
                                    DescribedGroup::default()
                                        .with_group_state(StrBytes::from_static_str(g.state.name()))
                                        .with_protocol_type(StrBytes::from_string(
                                            g.protocol_type.clone(),
                                        ))
                                        .with_protocol_data(StrBytes::from_string(protocol.clone()))
                                        .with_members(
                                            g.members
                                                .values()
                                                .map(|m| {
                                                    let metadata = m
                                                        .protocols
                                                        .iter()
                                                        .find(|(n, _)| *n == protocol)
                                                        .map(|(_, b)| b.clone())
                                                        .unwrap_or_default();
                                                    DescribedGroupMember::default()
                                                        .with_member_id(StrBytes::from_string(
                                                            m.member_id.clone(),
                                                        ))
                                                        .with_group_instance_id(
                                                            m.group_instance_id
                                                                .clone()
                                                                .map(StrBytes::from_string),
                                                        )
                                                        .with_client_id(StrBytes::from_string(
                                                            m.client_id.clone(),
                                                        ))
                                                        .with_client_host(StrBytes::from_string(
                                                            m.client_host.clone(),
                                                        ))
                                                        .with_member_metadata(metadata)
                                                        .with_member_assignment(
                                                            m.assignment.clone(),
                                                        )
                                                })
                                                .collect(),
                                        )
                                }
                                GroupKind::Consumer(g) => DescribedGroup::default()
                                    .with_error_code(errors::GROUP_ID_NOT_FOUND)
                                    .with_error_message(Some(StrBytes::from_static_str(
                                        "a consumer (KIP-848) group: use ConsumerGroupDescribe",
                                    )))
                                    .with_group_state(StrBytes::from_static_str(g.state_name()))
                                    .with_protocol_type(StrBytes::from_static_str("consumer")),
                            }
                        });
                        described
                            .unwrap_or_else(|| {
                                DescribedGroup::default()
                                    .with_group_state(StrBytes::from_static_str("Dead"))
                            })
                            .with_group_id(group_id.clone())
                            .with_authorized_operations(if request.include_authorized_operations {
                                access.operations(ResourceType::Group, group_id)
                            } else {
                                i32::MIN
                            })
                    })
                    .collect();
            context.respond(&DescribeGroupsResponse::default().with_groups(groups))
        })
    }
}
