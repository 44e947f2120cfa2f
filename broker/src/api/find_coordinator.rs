//! FindCoordinator: the coordinator of a group is the leader of its
//! `__consumer_offsets` partition — this broker, while there is one broker.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{ApiKey, BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};

const KEY_TYPE_GROUP: i8 = 0;

#[derive(Debug)]
pub struct FindCoordinatorApi;

impl Api for FindCoordinatorApi {
    fn key(&self) -> ApiKey {
        ApiKey::FindCoordinator
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: FindCoordinatorRequest = context.decode(body)?;
            let config = &context.broker.config;
            let answer = |key: &StrBytes| -> Coordinator {
                let error = if request.key_type != KEY_TYPE_GROUP {
                    // Transactions have no coordinator yet.
                    Some(ResponseError::CoordinatorNotAvailable.code())
                } else if key.is_empty() {
                    Some(ResponseError::InvalidRequest.code())
                } else {
                    None
                };
                match error {
                    Some(code) => Coordinator::default()
                        .with_key(key.clone())
                        .with_node_id(BrokerId(-1))
                        .with_host(StrBytes::from_static_str(""))
                        .with_port(-1)
                        .with_error_code(code),
                    None => Coordinator::default()
                        .with_key(key.clone())
                        .with_node_id(BrokerId(context.broker.controller.node_id()))
                        .with_host(StrBytes::from_string(config.advertised_host.clone()))
                        .with_port(i32::from(config.advertised_port))
                        .with_error_code(errors::NONE),
                }
            };
            let response = if context.version >= 4 {
                FindCoordinatorResponse::default()
                    .with_coordinators(request.coordinator_keys.iter().map(answer).collect())
            } else {
                let one = answer(&request.key);
                FindCoordinatorResponse::default()
                    .with_error_code(one.error_code)
                    .with_node_id(one.node_id)
                    .with_host(one.host)
                    .with_port(one.port)
            };
            context.respond(&response)
        })
    }
}
