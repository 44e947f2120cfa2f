//! EndTxn: the producer commits or aborts its transaction. The answer comes once the
//! decision (PrepareCommit / PrepareAbort) is replicated in `__transaction_state`; the
//! coordinator then writes the markers (a producer's next transaction waits for them,
//! CONCURRENT_TRANSACTIONS, as in Kafka).

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, EndTxnRequest, EndTxnResponse, ProducerId};

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct EndTxnApi;

impl Api for EndTxnApi {
    fn key(&self) -> ApiKey {
        ApiKey::EndTxn
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: EndTxnRequest = context.decode(body)?;
            let id = request.transactional_id.0.as_str();
            let access = context.access();
            // v5 is a transaction version 2 client: every end bumps its epoch, and the
            // answer carries the producer id and epoch it goes on with.
            let client_version = if context.version >= 5
                && context.broker.transactions.version() >= crate::txn::metadata::TV2
            {
                crate::txn::metadata::TV2
            } else {
                0
            };
            let (code, (producer_id, producer_epoch)) = if id.is_empty() {
                (errors::INVALID_REQUEST, (-1, -1))
            } else if !access.allows(Operation::Write, ResourceType::TransactionalId, id) {
                (errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, (-1, -1))
            } else {
                match context
                    .broker
                    .transactions
                    .end_transaction(
                        id,
                        request.producer_id.0,
                        request.producer_epoch,
                        request.committed,
                        client_version,
                    )
                    .await
                {
                    Ok(next) => (errors::NONE, next),
                    Err(error) => {
                        tracing::debug!(transactional_id = id, committed = request.committed, %error, "EndTxn refused");
                        (errors::txn_error_at(&error, context.version, 2), (-1, -1))
                    }
                }
            };
            context.respond(
                &EndTxnResponse::default()
                    .with_error_code(code)
                    .with_producer_id(ProducerId(producer_id))
                    .with_producer_epoch(producer_epoch),
            )
        })
    }
}
