//! OffsetForLeaderEpoch: the end offset of a leader epoch, which clients use to detect
//! log truncation. Answered by the partition's leader, with its epoch fencing.

use bytes::Bytes;
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{ApiKey, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use super::lookup::leader_log;
use super::{Api, HandlerFuture, RequestContext};
use crate::storage::TopicPartition;

#[derive(Debug)]
pub struct OffsetForLeaderEpochApi;

impl Api for OffsetForLeaderEpochApi {
    fn key(&self) -> ApiKey {
        ApiKey::OffsetForLeaderEpoch
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: OffsetForLeaderEpochRequest = context.decode(body)?;
            let topics = request
                .topics
                .into_iter()
                .map(|topic| {
                    let partitions = topic
                        .partitions
                        .iter()
                        .map(|p| {
                            let answer = EpochEndOffset::default().with_partition(p.partition);
                            let tp = TopicPartition::new(topic.topic.0.to_string(), p.partition);
                            match leader_log(context.broker, &tp, p.current_leader_epoch) {
                                Err(code) => answer
                                    .with_error_code(code)
                                    .with_leader_epoch(-1)
                                    .with_end_offset(-1),
                                Ok(_) if p.leader_epoch < 0 => {
                                    answer.with_leader_epoch(-1).with_end_offset(-1)
                                }
                                // Until replication keeps a leader-epoch cache, a partition's
                                // log has one copy that never diverges: every epoch up to the
                                // current one ends at the log end, so no client truncates.
                                Ok((log, epoch)) => answer
                                    .with_leader_epoch(p.leader_epoch.min(epoch))
                                    .with_end_offset(log.log_end_offset() as i64),
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
