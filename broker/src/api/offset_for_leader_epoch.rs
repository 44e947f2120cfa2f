//! OffsetForLeaderEpoch: the end offset of a leader epoch, which clients use to detect
//! log truncation. One broker has only ever had leader epoch 0, so epoch 0 (and any
//! later epoch) ends at the log end offset; earlier epochs do not exist.

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{ApiKey, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use super::{Api, HandlerFuture, RequestContext};
use crate::storage::TopicPartition;

#[derive(Debug)]
pub struct OffsetForLeaderEpochApi;

/// The only leader epoch a single broker has had.
const CURRENT_LEADER_EPOCH: i32 = 0;

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
                            match context.broker.logs.get(&tp) {
                                None => answer
                                    .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                                    .with_leader_epoch(-1)
                                    .with_end_offset(-1),
                                Some(_) if p.current_leader_epoch > CURRENT_LEADER_EPOCH => answer
                                    .with_error_code(ResponseError::UnknownLeaderEpoch.code())
                                    .with_leader_epoch(-1)
                                    .with_end_offset(-1),
                                Some(_) if p.leader_epoch < CURRENT_LEADER_EPOCH => {
                                    answer.with_leader_epoch(-1).with_end_offset(-1)
                                }
                                Some(log) => answer
                                    .with_leader_epoch(CURRENT_LEADER_EPOCH)
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
