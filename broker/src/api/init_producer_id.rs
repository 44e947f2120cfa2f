//! InitProducerId. Without a transactional id: a fresh producer id for an idempotent
//! producer (epoch 0); a producer that sends its current id and epoch gets its epoch
//! bumped (KIP-360), so it can reset its sequences without a new id. With one: the
//! transaction coordinator of the id gives the producer session its id and a new epoch,
//! fencing older sessions (and aborting their open transaction first).

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, InitProducerIdRequest, InitProducerIdResponse, ProducerId};

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::security::acl::{CLUSTER_NAME, Operation, ResourceType};

#[derive(Debug)]
pub struct InitProducerIdApi;

impl Api for InitProducerIdApi {
    fn key(&self) -> ApiKey {
        ApiKey::InitProducerId
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: InitProducerIdRequest = context.decode(body)?;
            let response = InitProducerIdResponse::default()
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            if let Some(transactional_id) = &request.transactional_id {
                let id = transactional_id.0.as_str();
                if id.is_empty() {
                    return context.respond(&response.with_error_code(errors::INVALID_REQUEST));
                }
                let access = context.access();
                if !access.allows(Operation::Write, ResourceType::TransactionalId, id) {
                    return context.respond(
                        &response.with_error_code(errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
                    );
                }
                let expected = (request.producer_id.0 >= 0 && request.producer_epoch >= 0)
                    .then_some((request.producer_id.0, request.producer_epoch));
                let answer = context
                    .broker
                    .transactions
                    .init_producer_id(id, request.transaction_timeout_ms, expected)
                    .await;
                let response = match answer {
                    Ok((producer_id, epoch)) => response
                        .with_producer_id(ProducerId(producer_id))
                        .with_producer_epoch(epoch),
                    Err(error) => {
                        tracing::debug!(transactional_id = id, %error, "InitProducerId refused");
                        response.with_error_code(errors::txn_error_at(&error, context.version, 4))
                    }
                };
                return context.respond(&response);
            }
            // An idempotent producer: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
            let access = context.access();
            if !access.sees(
                Operation::IdempotentWrite,
                ResourceType::Cluster,
                CLUSTER_NAME,
            ) && !access.allows_any(Operation::Write, ResourceType::Topic)
            {
                // Counted and logged once, as the cluster denial.
                access.allows_cluster(Operation::IdempotentWrite);
                return context
                    .respond(&response.with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED));
            }
            let response = if request.producer_id.0 >= 0
                && request.producer_epoch >= 0
                && request.producer_epoch < i16::MAX - 1
            {
                response
                    .with_producer_id(request.producer_id)
                    .with_producer_epoch(request.producer_epoch + 1)
            } else {
                match context.broker.controller.allocate_producer_id().await {
                    Ok(id) => response
                        .with_producer_id(ProducerId(id))
                        .with_producer_epoch(0),
                    Err(error) => {
                        tracing::error!(%error, "Cannot allocate a producer id");
                        response.with_error_code(errors::controller_error(&error))
                    }
                }
            };
            context.respond(&response)
        })
    }
}
