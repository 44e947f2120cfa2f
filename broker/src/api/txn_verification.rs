//! Transaction verification at the partition leader (KIP-890 part 1): before the first
//! transactional write of a transaction to a partition, the leader asks the transaction
//! coordinator whether the producer added that partition to its ongoing transaction
//! (AddPartitionsToTxn v4 `verify_only`, or the local coordinator directly). A write that
//! is not part of an ongoing transaction — a request delayed past its transaction's end, a
//! client that forgot AddPartitionsToTxn — is refused instead of opening a transaction
//! nobody will ever end (a hanging transaction holds the last stable offset back forever).
//!
//! The answer is tied to the partition's state by a guard
//! ([`crate::storage::Verification`]): a marker written meanwhile voids it, so a write
//! checked before the transaction ended still cannot open the next one.
//!
//! Errors as Kafka answers them: a partition not in the transaction is INVALID_TXN_STATE
//! for clients that predate TRANSACTION_ABORTABLE (Produce v10 and older, TxnOffsetCommit
//! v3 and older) and TRANSACTION_ABORTABLE for the others; a fenced epoch
//! INVALID_PRODUCER_EPOCH; a coordinator that cannot answer now (moving, loading,
//! deciding, unreachable) NOT_ENOUGH_REPLICAS to a producer, which every producer retries
//! without refreshing its metadata, and COORDINATOR_NOT_AVAILABLE to a TxnOffsetCommit.
//! The group coordinator verifies a TxnOffsetCommit's offsets partition the same way.
//!
//! Transaction version 2 (KIP-890 part 2; Produce v12+, TxnOffsetCommit v5+) asks the
//! coordinator to *add* the partition instead (AddPartitionsToTxn v5, not `verify_only`):
//! such producers never send AddPartitionsToTxn themselves. Their next transaction's
//! first writes follow EndTxn at once and find the coordinator still writing the last
//! one's markers (CONCURRENT_TRANSACTIONS); the caller retries those for a moment, as
//! Kafka's leaders do, with a fresh guard each time.

use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;

use super::errors;
use crate::model::TopicPartition;
use crate::state::BrokerState;
use crate::txn::TRANSACTION_STATE_TOPIC;

const REMOTE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a leader keeps retrying an implicit add the coordinator answered
/// CONCURRENT_TRANSACTIONS, and how often (Kafka's `add.partitions.to.txn.retry.backoff.*`
/// defaults); past it the producer is told NOT_ENOUGH_REPLICAS and retries itself.
const ADD_RETRY_FOR: Duration = Duration::from_millis(100);
pub const ADD_RETRY_BACKOFF: Duration = Duration::from_millis(20);

/// Whether a refusal of an implicit add is worth asking again after
/// [`ADD_RETRY_BACKOFF`], `started` being when the first attempt began.
pub fn retry_later(unverified: &Unverified, started: tokio::time::Instant) -> bool {
    unverified.retry && started.elapsed() + ADD_RETRY_BACKOFF < ADD_RETRY_FOR
}

/// One producer's request to verify.
#[derive(Debug, Clone, Copy)]
pub struct Producer<'a> {
    pub transactional_id: &'a str,
    pub producer_id: i64,
    pub epoch: i16,
}

/// Which request is verified, and at which version (what decides its error codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requester {
    Produce(i16),
    TxnOffsetCommit(i16),
}

impl Requester {
    /// Whether the request is a transaction version 2 client's, whose partitions the
    /// leader adds to the transaction itself (Kafka's "add partition" operation).
    pub fn adds_implicitly(self) -> bool {
        match self {
            Self::Produce(version) => version > 11,
            Self::TxnOffsetCommit(version) => version > 4,
        }
    }

    /// Whether the client knows TRANSACTION_ABORTABLE (Kafka's "generic error supported").
    fn knows_abortable(self) -> bool {
        match self {
            Self::Produce(version) => version > 10,
            Self::TxnOffsetCommit(version) => version > 3,
        }
    }
}

/// A partition's refusal: the code a producer is answered and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unverified {
    pub code: i16,
    pub message: String,
    /// The coordinator was deciding the producer's previous transaction: worth asking
    /// again shortly (an implicit add only).
    pub retry: bool,
}

/// Asks `producer`'s coordinator whether each of `partitions` is in its ongoing
/// transaction; `None` for a verified partition.
pub async fn verify(
    broker: &BrokerState,
    requester: Requester,
    producer: Producer<'_>,
    partitions: &[TopicPartition],
) -> Vec<Option<Unverified>> {
    let add =
        requester.adds_implicitly() && broker.transactions.version() >= crate::txn::metadata::TV2;
    let codes = match coordinator_codes(broker, producer, partitions, add).await {
        Ok(codes) => codes,
        Err(code) => vec![code; partitions.len()],
    };
    codes
        .into_iter()
        .map(|code| {
            client_error(code, requester).map(|mut unverified| {
                unverified.retry = add && code == errors::CONCURRENT_TRANSACTIONS;
                unverified
            })
        })
        .collect()
}

/// The coordinator's code per partition, or one code for all of them; `add` adds the
/// partitions rather than asking about them.
async fn coordinator_codes(
    broker: &BrokerState,
    producer: Producer<'_>,
    partitions: &[TopicPartition],
    add: bool,
) -> Result<Vec<i16>, i16> {
    let state_partition = broker.transactions.partition_for(producer.transactional_id);
    let image = broker.controller.image();
    let leader = image
        .topics
        .get(TRANSACTION_STATE_TOPIC)
        .and_then(|topic| topic.partition(state_partition))
        .map_or(-1, |p| p.leader);
    if leader < 0 {
        return Err(errors::COORDINATOR_NOT_AVAILABLE);
    }
    if leader == broker.replicas.node_id() && add {
        return broker
            .transactions
            .add_partitions(
                producer.transactional_id,
                producer.producer_id,
                producer.epoch,
                partitions,
                crate::txn::metadata::TV2,
            )
            .await
            .map(|()| vec![errors::NONE; partitions.len()])
            .map_err(|error| errors::txn_error(&error));
    }
    if leader == broker.replicas.node_id() {
        return broker
            .transactions
            .verify(
                producer.transactional_id,
                producer.producer_id,
                producer.epoch,
                partitions,
            )
            .map(membership_codes)
            .map_err(|error| errors::txn_error(&error));
    }
    let endpoint = image
        .brokers
        .get(&leader)
        .map(|b| b.endpoint.clone())
        .ok_or(errors::COORDINATOR_NOT_AVAILABLE)?;
    drop(image);
    ask_remote(broker, &endpoint, producer, partitions, add).await
}

async fn ask_remote(
    broker: &BrokerState,
    endpoint: &crate::metadata::records::Endpoint,
    producer: Producer<'_>,
    partitions: &[TopicPartition],
    add: bool,
) -> Result<Vec<i16>, i16> {
    let client_id = format!("oxbow-txn-verification-{}", broker.replicas.node_id());
    let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
    for tp in partitions {
        match topics.iter_mut().find(|t| t.name.0.as_str() == tp.topic) {
            Some(topic) => topic.partitions.push(tp.partition),
            None => topics.push(
                AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(StrBytes::from_string(tp.topic.clone())))
                    .with_partitions(vec![tp.partition]),
            ),
        }
    }
    let request = AddPartitionsToTxnRequest::default().with_transactions(vec![
        AddPartitionsToTxnTransaction::default()
            .with_transactional_id(TransactionalId(StrBytes::from_string(
                producer.transactional_id.to_string(),
            )))
            .with_producer_id(ProducerId(producer.producer_id))
            .with_producer_epoch(producer.epoch)
            .with_verify_only(!add)
            .with_topics(topics),
    ]);
    // v5 tells the coordinator the producer speaks transaction version 2.
    let version = if add { 5 } else { 4 };
    let response = broker
        .peers
        .call(endpoint, &client_id, &request, version, REMOTE_TIMEOUT)
        .await
        .map_err(|error| {
            tracing::info!(%error, "Transaction verification: the coordinator did not answer");
            errors::NETWORK_EXCEPTION
        })?;
    if response.error_code != errors::NONE {
        // A broker that may not ask (CLUSTER_ACTION) cannot verify: the write is refused,
        // the authorization failure is not the producer's to see.
        return Err(
            if response.error_code == errors::CLUSTER_AUTHORIZATION_FAILED {
                errors::INVALID_TXN_STATE
            } else {
                response.error_code
            },
        );
    }
    let answered: Vec<(String, i32, i16)> = response
        .results_by_transaction
        .into_iter()
        .flat_map(|t| t.topic_results)
        .flat_map(|topic| {
            let name = topic.name.0.to_string();
            topic
                .results_by_partition
                .into_iter()
                .map(move |p| (name.clone(), p.partition_index, p.partition_error_code))
        })
        .collect();
    Ok(partitions
        .iter()
        .map(|tp| {
            answered
                .iter()
                .find(|(topic, index, _)| *topic == tp.topic && *index == tp.partition)
                .map_or(errors::INVALID_TXN_STATE, |(_, _, code)| *code)
        })
        .collect())
}

/// The coordinator's answer per partition as AddPartitionsToTxn `verify_only` says it:
/// NONE for a partition in the ongoing transaction, INVALID_TXN_STATE for the others.
pub fn membership_codes(in_transaction: Vec<bool>) -> Vec<i16> {
    in_transaction
        .into_iter()
        .map(|found| {
            if found {
                errors::NONE
            } else {
                errors::INVALID_TXN_STATE
            }
        })
        .collect()
}

/// What the client is told for the coordinator's `code` (`None`: verified).
fn client_error(code: i16, requester: Requester) -> Option<Unverified> {
    let (code, message) = match code {
        errors::NONE => return None,
        errors::INVALID_TXN_STATE => (
            if requester.knows_abortable() {
                errors::TRANSACTION_ABORTABLE
            } else {
                errors::INVALID_TXN_STATE
            },
            "Partition was not added to the transaction".to_string(),
        ),
        errors::PRODUCER_FENCED | errors::INVALID_PRODUCER_EPOCH => (
            errors::INVALID_PRODUCER_EPOCH,
            "a newer producer of the transactional id exists".to_string(),
        ),
        errors::CONCURRENT_TRANSACTIONS
        | errors::NETWORK_EXCEPTION
        | errors::COORDINATOR_LOAD_IN_PROGRESS
        | errors::COORDINATOR_NOT_AVAILABLE
        | errors::NOT_COORDINATOR => (
            match requester {
                Requester::Produce(_) => errors::NOT_ENOUGH_REPLICAS,
                Requester::TxnOffsetCommit(_) => errors::COORDINATOR_NOT_AVAILABLE,
            },
            format!(
                "Unable to verify the partition has been added to the transaction. Underlying error: {}",
                errors::error_name(code)
            ),
        ),
        code => (
            code,
            format!(
                "the transaction coordinator refused the verification: {}",
                errors::error_name(code)
            ),
        ),
    };
    Some(Unverified {
        code,
        message,
        retry: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinator_codes_become_what_producers_retry_or_abort_on() {
        let old = Requester::Produce(10);
        assert_eq!(client_error(errors::NONE, old), None);
        let code = |c| client_error(c, old).map(|u| u.code);
        assert_eq!(
            code(errors::INVALID_TXN_STATE),
            Some(errors::INVALID_TXN_STATE)
        );
        for knows in [Requester::Produce(11), Requester::TxnOffsetCommit(4)] {
            assert_eq!(
                client_error(errors::INVALID_TXN_STATE, knows).map(|u| u.code),
                Some(errors::TRANSACTION_ABORTABLE)
            );
        }
        assert_eq!(
            client_error(errors::INVALID_TXN_STATE, Requester::TxnOffsetCommit(3)).map(|u| u.code),
            Some(errors::INVALID_TXN_STATE)
        );
        assert_eq!(
            client_error(errors::NOT_COORDINATOR, Requester::TxnOffsetCommit(3)).map(|u| u.code),
            Some(errors::COORDINATOR_NOT_AVAILABLE)
        );
        assert_eq!(
            code(errors::PRODUCER_FENCED),
            Some(errors::INVALID_PRODUCER_EPOCH)
        );
        for retriable in [
            errors::CONCURRENT_TRANSACTIONS,
            errors::NETWORK_EXCEPTION,
            errors::COORDINATOR_LOAD_IN_PROGRESS,
            errors::COORDINATOR_NOT_AVAILABLE,
            errors::NOT_COORDINATOR,
        ] {
            assert_eq!(code(retriable), Some(errors::NOT_ENOUGH_REPLICAS));
        }
        let mapping = kafka_protocol::ResponseError::InvalidProducerIdMapping.code();
        assert_eq!(code(mapping), Some(mapping));
    }
}
