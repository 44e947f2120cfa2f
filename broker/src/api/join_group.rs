//! JoinGroup: parks until the join phase of the rebalance completes (this blocks only
//! the member's connection, as in Kafka).

use bytes::Bytes;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::{ApiKey, JoinGroupRequest, JoinGroupResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::group::classic::JoinRequest;
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct JoinGroupApi;

impl Api for JoinGroupApi {
    fn key(&self) -> ApiKey {
        ApiKey::JoinGroup
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: JoinGroupRequest = context.decode(body)?;
            let join = JoinRequest {
                member_id: request.member_id.to_string(),
                group_instance_id: request.group_instance_id.map(|s| s.to_string()),
                client_id: super::client_id(context),
                client_host: super::client_host(context),
                session_timeout_ms: request.session_timeout_ms,
                // v0 has no rebalance timeout: Kafka uses the session timeout.
                rebalance_timeout_ms: if context.version == 0 {
                    request.session_timeout_ms
                } else {
                    request.rebalance_timeout_ms
                },
                protocol_type: request.protocol_type.to_string(),
                protocols: request
                    .protocols
                    .into_iter()
                    .map(|p| (p.name.to_string(), p.metadata))
                    .collect(),
                require_known_member_id: context.version >= 4,
            };
            let mut shutdown = context.broker.shutting_down.clone();
            let groups = &context.broker.groups;
            let allowed =
                context
                    .access()
                    .allows(Operation::Read, ResourceType::Group, &request.group_id);
            let result = if allowed {
                tokio::select! {
                    result = groups.join(&request.group_id.0, join) => result,
                    _ = shutdown.wait_for(|down| *down) => crate::group::classic::JoinResponseData::failed(
                        crate::group::GroupError::CoordinatorNotAvailable,
                        &request.member_id,
                    ),
                }
            } else {
                crate::group::classic::JoinResponseData::failed(
                    crate::group::GroupError::GroupAuthorizationFailed,
                    "",
                )
            };
            let error_code = result
                .error
                .as_ref()
                .map_or(errors::NONE, errors::group_error);
            let response = JoinGroupResponse::default()
                .with_error_code(error_code)
                .with_generation_id(result.generation_id)
                .with_protocol_type(result.protocol_type.map(StrBytes::from_string))
                .with_protocol_name(Some(StrBytes::from_string(
                    result.protocol_name.unwrap_or_default(),
                )))
                .with_leader(StrBytes::from_string(result.leader))
                .with_member_id(StrBytes::from_string(result.member_id))
                .with_members(
                    result
                        .members
                        .into_iter()
                        .map(|(id, instance, metadata)| {
                            JoinGroupResponseMember::default()
                                .with_member_id(StrBytes::from_string(id))
                                .with_group_instance_id(instance.map(StrBytes::from_string))
                                .with_metadata(metadata)
                        })
                        .collect(),
                );
            context.respond(&response)
        })
    }
}
