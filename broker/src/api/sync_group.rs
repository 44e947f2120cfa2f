//! SyncGroup: the leader hands in the assignment; every member parks until it does.

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, SyncGroupRequest, SyncGroupResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::group::GroupError;
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct SyncGroupApi;

impl Api for SyncGroupApi {
    fn key(&self) -> ApiKey {
        ApiKey::SyncGroup
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: SyncGroupRequest = context.decode(body)?;
            let assignments = request
                .assignments
                .into_iter()
                .map(|a| (a.member_id.to_string(), a.assignment))
                .collect();
            let mut shutdown = context.broker.shutting_down.clone();
            let sync = context.broker.groups.sync(
                &request.group_id.0,
                &request.member_id,
                request.group_instance_id.as_deref(),
                request.generation_id,
                request.protocol_type.as_deref(),
                request.protocol_name.as_deref(),
                assignments,
            );
            let allowed =
                context
                    .access()
                    .allows(Operation::Read, ResourceType::Group, &request.group_id);
            let result = if allowed {
                tokio::select! {
                    result = sync => result,
                    _ = shutdown.wait_for(|down| *down) => Err(GroupError::CoordinatorNotAvailable),
                }
            } else {
                Err(GroupError::GroupAuthorizationFailed)
            };
            let (protocol_type, protocol_name) = context
                .broker
                .groups
                .with_group(&request.group_id.0, |g| match &g.kind {
                    crate::group::coordinator::GroupKind::Classic(c) => {
                        (Some(c.protocol_type.clone()), c.protocol_name.clone())
                    }
                    crate::group::coordinator::GroupKind::Consumer(_) => (None, None),
                })
                .unwrap_or_default();
            let response = match result {
                Ok(assignment) => SyncGroupResponse::default()
                    .with_assignment(assignment)
                    .with_protocol_type(protocol_type.map(StrBytes::from_string))
                    .with_protocol_name(protocol_name.map(StrBytes::from_string)),
                Err(error) => {
                    SyncGroupResponse::default().with_error_code(errors::group_error(&error))
                }
            };
            context.respond(&response)
        })
    }
}
