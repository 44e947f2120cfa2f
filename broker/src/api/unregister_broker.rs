//! UnregisterBroker: a broker that holds no replicas leaves the cluster and disappears
//! from Metadata (a broker that still holds replicas is refused, naming how many).

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, UnregisterBrokerRequest, UnregisterBrokerResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::security::acl::Operation;

#[derive(Debug)]
pub struct UnregisterBrokerApi;

impl Api for UnregisterBrokerApi {
    fn key(&self) -> ApiKey {
        ApiKey::UnregisterBroker
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: UnregisterBrokerRequest = context.decode(body)?;
            let access = context.access();
            if !access.allows_cluster(Operation::Alter) {
                return context.respond(
                    &UnregisterBrokerResponse::default()
                        .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED)
                        .with_error_message(access.cluster_denied(Operation::Alter)),
                );
            }
            let node_id = request.broker_id.0;
            let response = match context.broker.controller.unregister_broker(node_id).await {
                Ok(()) => {
                    tracing::info!(node_id, "Unregistered a broker");
                    UnregisterBrokerResponse::default()
                }
                Err(error) => {
                    tracing::info!(node_id, %error, "UnregisterBroker refused");
                    UnregisterBrokerResponse::default()
                        .with_error_code(errors::controller_error(&error))
                        .with_error_message(Some(StrBytes::from_string(error.to_string())))
                }
            };
            context.respond(&response)
        })
    }
}
