//! TxnOffsetCommit: a transactional producer commits a consumer group's offsets inside
//! its transaction (consume-transform-produce). The group coordinator writes them to the
//! group's partition in the producer's transaction; they become the group's committed
//! offsets when the COMMIT marker reaches that partition, and vanish on ABORT.

use bytes::Bytes;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, TopicName, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_protocol::protocol::{StrBytes, VersionRange};

use super::offset_commit::committed;
use super::txn_verification;
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::group::TxnMember;
use crate::security::acl::{Operation, ResourceType};
use crate::storage::{TopicPartition, Verification};

#[derive(Debug)]
pub struct TxnOffsetCommitApi;

impl Api for TxnOffsetCommitApi {
    fn key(&self) -> ApiKey {
        ApiKey::TxnOffsetCommit
    }

    /// v6 names topics by id (KIP-1319): not yet.
    fn versions(&self) -> VersionRange {
        super::up_to(self.key(), 5)
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: TxnOffsetCommitRequest = context.decode(body)?;
            let id = request.transactional_id.0.as_str();
            let group = request.group_id.0.as_str();
            let image = context.broker.controller.image();
            let access = context.access();
            let common = if id.is_empty() {
                Some(errors::INVALID_REQUEST)
            } else if !access.allows(Operation::Write, ResourceType::TransactionalId, id) {
                Some(errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            } else if !access.allows(Operation::Read, ResourceType::Group, group) {
                Some(errors::GROUP_AUTHORIZATION_FAILED)
            } else {
                None
            };
            // (topic, partition, code) decided before the commit, and what is committed.
            let mut answers: Vec<(String, i32, i16)> = Vec::new();
            let mut offsets = Vec::new();
            for topic in &request.topics {
                let name = topic.name.0.to_string();
                let denied = common.or_else(|| {
                    (!access.allows(Operation::Read, ResourceType::Topic, &name))
                        .then_some(errors::TOPIC_AUTHORIZATION_FAILED)
                });
                let known = image.topics.get(&name);
                for partition in &topic.partitions {
                    let index = partition.partition_index;
                    if let Some(code) = denied {
                        answers.push((name.clone(), index, code));
                    } else if known.and_then(|t| t.partition(index)).is_none() {
                        answers.push((name.clone(), index, errors::UNKNOWN_TOPIC_OR_PARTITION));
                    } else {
                        offsets.push((
                            TopicPartition::new(name.clone(), index),
                            partition.committed_offset,
                            partition.committed_leader_epoch,
                            partition.committed_metadata.as_ref().map(|m| m.to_string()),
                        ));
                    }
                }
            }
            // KIP-890: the group's offsets partition must be in the transaction
            // (AddOffsetsToTxn, or for a version 2 producer added here), or offsets would
            // wait for a marker that never comes.
            let requester = txn_verification::Requester::TxnOffsetCommit(context.version);
            let mut verification = Verification::Unchecked;
            if !offsets.is_empty()
                && (context.broker.config.transactions.partition_verification
                    || requester.adds_implicitly())
            {
                match verify_offsets_partition(context, requester, id, group, &request).await {
                    Ok(checked) => verification = checked,
                    Err(unverified) => {
                        tracing::info!(transactional_id = id, group, error = errors::error_name(unverified.code), reason = %unverified.message, "TxnOffsetCommit refused: not verified");
                        for (tp, ..) in offsets.drain(..) {
                            answers.push((tp.topic, tp.partition, unverified.code));
                        }
                    }
                }
            }
            if !offsets.is_empty() {
                let member = TxnMember {
                    member_id: request.member_id.as_str(),
                    instance_id: request.group_instance_id.as_deref(),
                    generation_id: request.generation_id_or_member_epoch,
                };
                let mut results = context.broker.groups.txn_commit_offsets(
                    group,
                    (request.producer_id.0, request.producer_epoch),
                    member,
                    offsets,
                    verification,
                );
                if results.iter().any(|(_, r)| r.is_ok())
                    && let Err(error) = committed(context, group).await
                {
                    for (_, result) in results.iter_mut() {
                        if result.is_ok() {
                            *result = Err(error.clone());
                        }
                    }
                }
                for (tp, result) in results {
                    answers.push((tp.topic, tp.partition, errors::group_result(&result)));
                }
            }
            let mut topics: Vec<TxnOffsetCommitResponseTopic> = Vec::new();
            for (name, partition, code) in answers {
                let answer = TxnOffsetCommitResponsePartition::default()
                    .with_partition_index(partition)
                    .with_error_code(code);
                match topics.iter_mut().find(|t| t.name.0.as_str() == name) {
                    Some(topic) => topic.partitions.push(answer),
                    None => topics.push(
                        TxnOffsetCommitResponseTopic::default()
                            .with_name(TopicName(StrBytes::from_string(name)))
                            .with_partitions(vec![answer]),
                    ),
                }
            }
            context.respond(&TxnOffsetCommitResponse::default().with_topics(topics))
        })
    }
}

/// Verifies (version 2: adds) the group's offsets partition in the producer's
/// transaction: the guard the offsets' write must carry, or the refusal (NOT_COORDINATOR
/// when this broker does not lead the group's offsets partition). An add the coordinator
/// cannot take yet is retried for a moment, as Produce's are.
async fn verify_offsets_partition(
    context: &RequestContext<'_>,
    requester: txn_verification::Requester,
    transactional_id: &str,
    group: &str,
    request: &TxnOffsetCommitRequest,
) -> Result<Verification, txn_verification::Unverified> {
    let groups = &context.broker.groups;
    let producer_id = request.producer_id.0;
    let started = tokio::time::Instant::now();
    // This broker may become the group's coordinator between the check and the write: a
    // write that was not checked must not open the transaction there, so a group not
    // coordinated here is refused now, as the write would refuse it.
    let not_coordinator = || txn_verification::Unverified {
        code: errors::NOT_COORDINATOR,
        message: format!("this broker does not coordinate group {group} (now)"),
        retry: false,
    };
    loop {
        let Some((tp, guard)) =
            groups.start_txn_verification(group, producer_id, request.producer_epoch)
        else {
            return Err(not_coordinator());
        };
        let Some(guard) = guard else {
            return Ok(Verification::OPEN);
        };
        let producer = txn_verification::Producer {
            transactional_id,
            producer_id,
            epoch: request.producer_epoch,
        };
        let verdict = txn_verification::verify(context.broker, requester, producer, &[tp])
            .await
            .into_iter()
            .next()
            .flatten();
        match verdict {
            // Added: a guard taken now (see Produce's) is sound, the older epochs fenced.
            None if requester.adds_implicitly() => {
                return groups
                    .start_txn_verification(group, producer_id, request.producer_epoch)
                    .map(|(_, guard)| guard.map_or(Verification::OPEN, Verification::Guard))
                    .ok_or_else(not_coordinator);
            }
            None => return Ok(Verification::Guard(guard)),
            Some(unverified) if txn_verification::retry_later(&unverified, started) => {
                tokio::time::sleep(txn_verification::ADD_RETRY_BACKOFF).await;
            }
            Some(unverified) => return Err(unverified),
        }
    }
}
