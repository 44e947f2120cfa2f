//! Heartbeat of a classic group member.

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, HeartbeatRequest, HeartbeatResponse};

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct HeartbeatApi;

impl Api for HeartbeatApi {
    fn key(&self) -> ApiKey {
        ApiKey::Heartbeat
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: HeartbeatRequest = context.decode(body)?;
            if !context
                .access()
                .allows(Operation::Read, ResourceType::Group, &request.group_id)
            {
                return context.respond(
                    &HeartbeatResponse::default()
                        .with_error_code(errors::GROUP_AUTHORIZATION_FAILED),
                );
            }
            let result = context.broker.groups.heartbeat(
                &request.group_id.0,
                &request.member_id,
                request.group_instance_id.as_deref(),
                request.generation_id,
            );
            context.respond(
                &HeartbeatResponse::default().with_error_code(errors::group_result(&result)),
            )
        })
    }
}
