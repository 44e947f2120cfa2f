//! OffsetForLeaderEpoch: the end offset of a leader epoch (from the leader-epoch cache),
//! which consumers use to detect log truncation (KIP-320) and followers to find where
//! they diverge (KIP-101/279). Answered by the partition's leader, with epoch fencing.

use bytes::Bytes;
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{ApiKey, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use super::lookup::leader_partition;
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::model::TopicPartition;
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct OffsetForLeaderEpochApi;

impl Api for OffsetForLeaderEpochApi {
    fn key(&self) -> ApiKey {
        ApiKey::OffsetForLeaderEpoch
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: OffsetForLeaderEpochRequest = context.decode(body)?;
            // A follower needs CLUSTER_ACTION, a consumer DESCRIBE on the topic.
            let access = context.access();
            let follower_allowed =
                request.replica_id.0 < 0 || access.allows_cluster(Operation::ClusterAction);
            let topics = request
                .topics
                .into_iter()
                .map(|topic| {
                    let allowed = follower_allowed
                        && (request.replica_id.0 >= 0
                            || access.allows(
                                Operation::Describe,
                                ResourceType::Topic,
                                &topic.topic,
                            ));
                    let partitions = topic
                        .partitions
                        .iter()
                        .map(|p| {
                            let answer = EpochEndOffset::default().with_partition(p.partition);
                            let tp = TopicPartition::new(topic.topic.0.to_string(), p.partition);
                            let found = if allowed {
                                leader_partition(context.broker, &tp, p.current_leader_epoch)
                            } else {
                                Err(errors::TOPIC_AUTHORIZATION_FAILED)
                            };
                            match found {
                                Err(code) => answer
                                    .with_error_code(code)
                                    .with_leader_epoch(-1)
                                    .with_end_offset(-1),
                                // The largest epoch at or below the asked one and where it
                                // ends (the next epoch's start); UNDEFINED (-1, -1) when
                                // this log has no epoch that old.
                                Ok((partition, _)) => {
                                    match partition.end_offset_for_epoch(p.leader_epoch) {
                                        Some((epoch, end)) if p.leader_epoch >= 0 => answer
                                            .with_leader_epoch(epoch)
                                            .with_end_offset(end as i64),
                                        _ => answer.with_leader_epoch(-1).with_end_offset(-1),
                                    }
                                }
                            }
                        })
                        .collect();
                    OffsetForLeaderTopicResult::default()
                        .with_topic(topic.topic)
                        .with_partitions(partitions)
                })
                .collect();
            context.respond(&OffsetForLeaderEpochResponse::default().with_topics(topics))
        })
    }
}
