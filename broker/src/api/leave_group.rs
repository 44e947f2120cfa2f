//! LeaveGroup: one member (v0-v2) or a batch of members by id or instance id (v3+).

use bytes::Bytes;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{ApiKey, LeaveGroupRequest, LeaveGroupResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct LeaveGroupApi;

impl Api for LeaveGroupApi {
    fn key(&self) -> ApiKey {
        ApiKey::LeaveGroup
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: LeaveGroupRequest = context.decode(body)?;
            if !context
                .access()
                .allows(Operation::Read, ResourceType::Group, &request.group_id)
            {
                return context.respond(
                    &LeaveGroupResponse::default()
                        .with_error_code(errors::GROUP_AUTHORIZATION_FAILED),
                );
            }
            let members: Vec<(String, Option<String>)> = if context.version >= 3 {
                request
                    .members
                    .iter()
                    .map(|m| {
                        (
                            m.member_id.to_string(),
                            m.group_instance_id.as_ref().map(|s| s.to_string()),
                        )
                    })
                    .collect()
            } else {
                vec![(request.member_id.to_string(), None)]
            };
            let response = match context.broker.groups.leave(&request.group_id.0, &members) {
                Err(error) => {
                    LeaveGroupResponse::default().with_error_code(errors::group_error(&error))
                }
                Ok(results) if context.version < 3 => LeaveGroupResponse::default()
                    .with_error_code(results.first().map_or(errors::NONE, errors::group_result)),
                Ok(results) => LeaveGroupResponse::default().with_members(
                    members
                        .into_iter()
                        .zip(results)
                        .map(|((member_id, instance), result)| {
                            MemberResponse::default()
                                .with_member_id(StrBytes::from_string(member_id))
                                .with_group_instance_id(instance.map(StrBytes::from_string))
                                .with_error_code(errors::group_result(&result))
                        })
                        .collect(),
                ),
            };
            context.respond(&response)
        })
    }
}
