//! OffsetCommit: validates the member and generation (classic) or member epoch
//! (KIP-848), appends the offsets to the group's `__consumer_offsets` partition and
//! answers once its in-sync replicas have them.

use bytes::Bytes;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{ApiKey, OffsetCommitRequest, OffsetCommitResponse, TopicName};
use kafka_protocol::protocol::{StrBytes, VersionRange};

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::group::records::partition_for;
use crate::group::{GroupError, OFFSETS_TOPIC};
use crate::model::TopicPartition;
use crate::replication::CommitWait;
use crate::security::acl::{Operation, ResourceType};

/// Kafka's `offsets.commit.timeout.ms` default.
const OFFSET_COMMIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Debug)]
pub struct OffsetCommitApi;

impl Api for OffsetCommitApi {
    fn key(&self) -> ApiKey {
        ApiKey::OffsetCommit
    }

    /// v10 names topics by id (KIP-848): not yet; clients negotiate down to v9.
    fn versions(&self) -> VersionRange {
        super::up_to(self.key(), 9)
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: OffsetCommitRequest = context.decode(body)?;
            let image = context.broker.controller.image();
            let mut topics = Vec::new();
            let mut to_commit = Vec::new();
            // (topic index, partition, error) of partitions refused before the commit.
            let mut refused = Vec::new();
            // READ on the group for every partition, READ on each topic for its own.
            let access = context.access();
            let group_allowed =
                access.allows(Operation::Read, ResourceType::Group, &request.group_id);
            for (index, topic) in request.topics.iter().enumerate() {
                let name = if context.version >= 10 {
                    image
                        .topics
                        .values()
                        .find(|t| t.topic_id == topic.topic_id)
                        .map(|t| t.name.clone())
                } else {
                    Some(topic.name.0.to_string())
                };
                let known = name.as_ref().and_then(|n| image.topics.get(n));
                let denied = if !group_allowed {
                    Some(errors::GROUP_AUTHORIZATION_FAILED)
                } else {
                    name.as_deref()
                        .filter(|n| !access.allows(Operation::Read, ResourceType::Topic, n))
                        .map(|_| errors::TOPIC_AUTHORIZATION_FAILED)
                };
                topics.push(
                    OffsetCommitResponseTopic::default()
                        .with_name(TopicName(StrBytes::from_string(
                            name.clone().unwrap_or_default(),
                        )))
                        .with_topic_id(topic.topic_id),
                );
                for partition in &topic.partitions {
                    let index_ok = known.is_some_and(|t| {
                        (0..t.partition_count()).contains(&partition.partition_index)
                    });
                    if let Some(code) = denied {
                        refused.push((index, partition.partition_index, code));
                        continue;
                    }
                    match (&name, index_ok) {
                        (Some(name), true) => to_commit.push((
                            index,
                            TopicPartition::new(name.clone(), partition.partition_index),
                            partition.committed_offset,
                            partition.committed_leader_epoch,
                            partition.committed_metadata.as_ref().map(|m| m.to_string()),
                        )),
                        (None, _) if context.version >= 10 => refused.push((
                            index,
                            partition.partition_index,
                            errors::UNKNOWN_TOPIC_ID,
                        )),
                        _ => refused.push((
                            index,
                            partition.partition_index,
                            errors::UNKNOWN_TOPIC_OR_PARTITION,
                        )),
                    }
                }
            }
            let mut indexes = std::collections::HashMap::new();
            let offsets = to_commit
                .into_iter()
                .map(|(index, tp, offset, epoch, metadata)| {
                    indexes.insert(tp.clone(), index);
                    (tp, offset, epoch, metadata)
                })
                .collect();
            let mut results = context.broker.groups.commit_offsets(
                &request.group_id.0,
                &request.member_id,
                request.group_instance_id.as_deref(),
                request.generation_id_or_member_epoch,
                offsets,
            );
            if results.iter().any(|(_, r)| r.is_ok())
                && let Err(error) = committed(context, &request.group_id.0).await
            {
                for (_, result) in results.iter_mut() {
                    if result.is_ok() {
                        *result = Err(error.clone());
                    }
                }
            }
            for (tp, result) in results {
                if let Some(topic) = indexes.get(&tp).and_then(|i| topics.get_mut(*i)) {
                    topic.partitions.push(
                        OffsetCommitResponsePartition::default()
                            .with_partition_index(tp.partition)
                            .with_error_code(errors::group_result(&result)),
                    );
                }
            }
            for (index, partition, code) in refused {
                if let Some(topic) = topics.get_mut(index) {
                    topic.partitions.push(
                        OffsetCommitResponsePartition::default()
                            .with_partition_index(partition)
                            .with_error_code(code),
                    );
                }
            }
            context.respond(&OffsetCommitResponse::default().with_topics(topics))
        })
    }
}

/// An offset commit is acknowledged once the in-sync replicas of the group's
/// `__consumer_offsets` partition have it (`offsets.commit.timeout.ms`, 5 s as in Kafka);
/// failures map as Kafka maps them for commits.
pub(super) async fn committed(context: &RequestContext<'_>, group: &str) -> Result<(), GroupError> {
    let broker = context.broker;
    let partition = partition_for(group, broker.groups.config.offsets_partitions);
    let tp = TopicPartition::new(OFFSETS_TOPIC, partition);
    let Some(replica) = broker.replicas.partition(&tp) else {
        return Err(GroupError::NotCoordinator);
    };
    let Ok(leader_epoch) = replica.check_leader(-1) else {
        return Err(GroupError::NotCoordinator);
    };
    let required = replica.log_end_offset();
    let deadline = tokio::time::Instant::now() + OFFSET_COMMIT_TIMEOUT;
    replica
        .wait_committed(
            required,
            leader_epoch,
            deadline,
            broker.shutting_down.clone(),
        )
        .await
        .map_err(|wait| match wait {
            CommitWait::LeadershipLost => GroupError::NotCoordinator,
            CommitWait::TimedOut | CommitWait::NotEnoughReplicasAfterAppend => {
                GroupError::CoordinatorNotAvailable
            }
        })
}
