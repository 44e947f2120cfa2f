//! DescribeTransactions and ListTransactions: what the coordinators on this broker know
//! of their transactional ids (`kafka-transactions.sh describe` / `list`). Each id needs
//! DESCRIBE on it: a refused id is TRANSACTIONAL_ID_AUTHORIZATION_FAILED in Describe and
//! left out of List.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::list_transactions_response::TransactionState as ListedState;
use kafka_protocol::messages::{
    ApiKey, DescribeTransactionsRequest, DescribeTransactionsResponse, ListTransactionsRequest,
    ListTransactionsResponse, ProducerId, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::security::acl::{Operation, ResourceType};
use crate::txn::TxnState;

#[derive(Debug)]
pub struct DescribeTransactionsApi;

impl Api for DescribeTransactionsApi {
    fn key(&self) -> ApiKey {
        ApiKey::DescribeTransactions
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DescribeTransactionsRequest = context.decode(body)?;
            let access = context.access();
            let coordinator = &context.broker.transactions;
            let states = request
                .transactional_ids
                .iter()
                .map(|id| {
                    // An id described with an error keeps the schema's defaults, as Kafka's.
                    let state = TransactionState::default()
                        .with_transactional_id(id.clone())
                        .with_transaction_state(StrBytes::from_static_str(""));
                    if !access.allows(Operation::Describe, ResourceType::TransactionalId, &id.0) {
                        return state
                            .with_error_code(errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
                    }
                    match coordinator.describe(&id.0) {
                        Err(error) => state.with_error_code(errors::txn_error(&error)),
                        Ok(None) => state.with_error_code(errors::TRANSACTIONAL_ID_NOT_FOUND),
                        Ok(Some(metadata)) => {
                            let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
                            for tp in &metadata.partitions {
                                topics.entry(&tp.topic).or_default().push(tp.partition);
                            }
                            state
                                .with_transaction_state(StrBytes::from_static_str(
                                    metadata.state.name(),
                                ))
                                .with_producer_id(ProducerId(metadata.producer_id))
                                .with_producer_epoch(metadata.producer_epoch)
                                .with_transaction_timeout_ms(metadata.timeout_ms)
                                .with_transaction_start_time_ms(metadata.start_ms)
                                .with_topics(
                                    topics
                                        .into_iter()
                                        .map(|(topic, partitions)| {
                                            TopicData::default()
                                                .with_topic(TopicName(StrBytes::from_string(
                                                    topic.to_string(),
                                                )))
                                                .with_partitions(partitions)
                                        })
                                        .collect(),
                                )
                        }
                    }
                })
                .collect();
            context
                .respond(&DescribeTransactionsResponse::default().with_transaction_states(states))
        })
    }
}

#[derive(Debug)]
pub struct ListTransactionsApi;

impl Api for ListTransactionsApi {
    fn key(&self) -> ApiKey {
        ApiKey::ListTransactions
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: ListTransactionsRequest = context.decode(body)?;
            let access = context.access();
            let known = [
                TxnState::Empty,
                TxnState::Ongoing,
                TxnState::PrepareCommit,
                TxnState::PrepareAbort,
                TxnState::CompleteCommit,
                TxnState::CompleteAbort,
                TxnState::Dead,
                TxnState::PrepareEpochFence,
            ];
            let unknown_filters: Vec<StrBytes> = request
                .state_filters
                .iter()
                .filter(|f| !known.iter().any(|s| s.name() == f.as_str()))
                .cloned()
                .collect();
            let now = context.broker.replicas.now_ms();
            let listed = context
                .broker
                .transactions
                .list()
                .into_iter()
                .filter(|(id, producer_id, state, start_ms)| {
                    (request.state_filters.is_empty()
                        || request
                            .state_filters
                            .iter()
                            .any(|f| f.as_str() == state.name()))
                        && (request.producer_id_filters.is_empty()
                            || request
                                .producer_id_filters
                                .iter()
                                .any(|p| p.0 == *producer_id))
                        && (request.duration_filter < 0
                            || (*start_ms >= 0
                                && now.saturating_sub(*start_ms) >= request.duration_filter))
                        && access.sees(Operation::Describe, ResourceType::TransactionalId, id)
                })
                .map(|(id, producer_id, state, _)| {
                    ListedState::default()
                        .with_transactional_id(kafka_protocol::messages::TransactionalId(
                            StrBytes::from_string(id),
                        ))
                        .with_producer_id(ProducerId(producer_id))
                        .with_transaction_state(StrBytes::from_static_str(state.name()))
                })
                .collect();
            context.respond(
                &ListTransactionsResponse::default()
                    .with_unknown_state_filters(unknown_filters)
                    .with_transaction_states(listed),
            )
        })
    }
}
