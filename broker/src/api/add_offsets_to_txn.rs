//! AddOffsetsToTxn: a transactional producer that will commit a group's offsets in its
//! transaction (`sendOffsetsToTransaction`) adds the group's `__consumer_offsets`
//! partition to it, so the markers reach the group coordinator too.

use bytes::Bytes;
use kafka_protocol::messages::{AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, ApiKey};

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::group::OFFSETS_TOPIC;
use crate::group::records::partition_for;
use crate::model::TopicPartition;
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct AddOffsetsToTxnApi;

impl Api for AddOffsetsToTxnApi {
    fn key(&self) -> ApiKey {
        ApiKey::AddOffsetsToTxn
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: AddOffsetsToTxnRequest = context.decode(body)?;
            let id = request.transactional_id.0.as_str();
            let group = request.group_id.0.as_str();
            let access = context.access();
            let code = if id.is_empty() || group.is_empty() {
                errors::INVALID_REQUEST
            } else if !access.allows(Operation::Write, ResourceType::TransactionalId, id) {
                errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            } else if !access.allows(Operation::Read, ResourceType::Group, group) {
                errors::GROUP_AUTHORIZATION_FAILED
            } else {
                let partition =
                    partition_for(group, context.broker.config.groups.offsets_partitions);
                let offsets = TopicPartition::new(OFFSETS_TOPIC, partition);
                match context
                    .broker
                    .transactions
                    .add_partitions(
                        id,
                        request.producer_id.0,
                        request.producer_epoch,
                        std::slice::from_ref(&offsets),
                        0,
                    )
                    .await
                {
                    Ok(()) => errors::NONE,
                    Err(error) => {
                        tracing::debug!(transactional_id = id, group, %error, "AddOffsetsToTxn refused");
                        errors::txn_error_at(&error, context.version, 2)
                    }
                }
            };
            context.respond(&AddOffsetsToTxnResponse::default().with_error_code(code))
        })
    }
}
