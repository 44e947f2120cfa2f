//! AddPartitionsToTxn: a transactional producer names the partitions it is about to write
//! before writing them, so the coordinator knows where the markers go. v0–3 come from
//! producers (one transaction); v4+ from brokers (several, and `verify_only` to ask
//! whether partitions are already in a transaction, KIP-890).
//!
//! Refusals follow Kafka: a partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION,
//! one whose topic may not be written TOPIC_AUTHORIZATION_FAILED, and then every other
//! partition of the request OPERATION_NOT_ATTEMPTED; nothing is added.

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, TopicName, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::model::TopicPartition;
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct AddPartitionsToTxnApi;

/// One transaction of the request.
struct Transaction<'r> {
    id: &'r TransactionalId,
    producer_id: i64,
    epoch: i16,
    verify_only: bool,
    topics: &'r [AddPartitionsToTxnTopic],
}

impl Api for AddPartitionsToTxnApi {
    fn key(&self) -> ApiKey {
        ApiKey::AddPartitionsToTxn
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: AddPartitionsToTxnRequest = context.decode(body)?;
            if context.version <= 3 {
                let transaction = Transaction {
                    id: &request.v3_and_below_transactional_id,
                    producer_id: request.v3_and_below_producer_id.0,
                    epoch: request.v3_and_below_producer_epoch,
                    verify_only: false,
                    topics: &request.v3_and_below_topics,
                };
                let topics = add(context, &transaction).await;
                return context.respond(
                    &AddPartitionsToTxnResponse::default()
                        .with_results_by_topic_v3_and_below(topics),
                );
            }
            // v4+: brokers only.
            let access = context.access();
            if !access.allows_cluster(Operation::ClusterAction) {
                return context.respond(
                    &AddPartitionsToTxnResponse::default()
                        .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED),
                );
            }
            let mut results = Vec::with_capacity(request.transactions.len());
            for transaction in &request.transactions {
                let one = Transaction {
                    id: &transaction.transactional_id,
                    producer_id: transaction.producer_id.0,
                    epoch: transaction.producer_epoch,
                    verify_only: transaction.verify_only,
                    topics: &transaction.topics,
                };
                results.push(
                    AddPartitionsToTxnResult::default()
                        .with_transactional_id(transaction.transactional_id.clone())
                        .with_topic_results(add(context, &one).await),
                );
            }
            context.respond(
                &AddPartitionsToTxnResponse::default().with_results_by_transaction(results),
            )
        })
    }
}

/// Every partition's result for one transaction.
async fn add(
    context: &RequestContext<'_>,
    transaction: &Transaction<'_>,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let id = transaction.id.0.as_str();
    let access = context.access();
    let image = context.broker.controller.image();
    // Per partition: Ok(()) when it may be added, or its refusal.
    let mut checked: Vec<(TopicPartition, Result<(), i16>)> = Vec::new();
    for topic in transaction.topics {
        let name = topic.name.0.as_str();
        let known = image.topics.get(name);
        let allowed = access.allows(Operation::Write, ResourceType::Topic, name);
        for &partition in &topic.partitions {
            let verdict = if !allowed {
                Err(errors::TOPIC_AUTHORIZATION_FAILED)
            } else if known.and_then(|t| t.partition(partition)).is_none() {
                Err(errors::UNKNOWN_TOPIC_OR_PARTITION)
            } else {
                Ok(())
            };
            checked.push((TopicPartition::new(name.to_string(), partition), verdict));
        }
    }
    let common = if id.is_empty() {
        Some(errors::INVALID_REQUEST)
    } else if !access.allows(Operation::Write, ResourceType::TransactionalId, id) {
        Some(errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    } else {
        None
    };
    let codes: Vec<(TopicPartition, i16)> = if let Some(code) = common {
        checked.into_iter().map(|(tp, _)| (tp, code)).collect()
    } else if checked.iter().any(|(_, verdict)| verdict.is_err()) {
        checked
            .into_iter()
            .map(|(tp, verdict)| (tp, verdict.err().unwrap_or(errors::OPERATION_NOT_ATTEMPTED)))
            .collect()
    } else {
        let partitions: Vec<TopicPartition> = checked.into_iter().map(|(tp, _)| tp).collect();
        let coordinator = &context.broker.transactions;
        let outcome = if transaction.verify_only {
            coordinator
                .verify(id, transaction.producer_id, transaction.epoch, &partitions)
                .map(super::txn_verification::membership_codes)
        } else {
            // v5 comes from a leader adding a version 2 producer's partition implicitly.
            let client_version =
                if context.version >= 5 && coordinator.version() >= crate::txn::metadata::TV2 {
                    crate::txn::metadata::TV2
                } else {
                    0
                };
            coordinator
                .add_partitions(
                    id,
                    transaction.producer_id,
                    transaction.epoch,
                    &partitions,
                    client_version,
                )
                .await
                .map(|()| vec![errors::NONE; partitions.len()])
        };
        match outcome {
            Ok(codes) => partitions.into_iter().zip(codes).collect(),
            Err(error) => {
                tracing::debug!(transactional_id = id, %error, "AddPartitionsToTxn refused");
                let code = errors::txn_error_at(&error, context.version, 2);
                partitions.into_iter().map(|tp| (tp, code)).collect()
            }
        }
    };
    let mut topics: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    for (tp, code) in codes {
        let result = AddPartitionsToTxnPartitionResult::default()
            .with_partition_index(tp.partition)
            .with_partition_error_code(code);
        match topics.iter_mut().find(|t| t.name.0.as_str() == tp.topic) {
            Some(topic) => topic.results_by_partition.push(result),
            None => topics.push(
                AddPartitionsToTxnTopicResult::default()
                    .with_name(TopicName(StrBytes::from_string(tp.topic.clone())))
                    .with_results_by_partition(vec![result]),
            ),
        }
    }
    topics
}
