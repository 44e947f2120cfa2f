//! ListOffsets: earliest (-2), latest (-1), max timestamp (-3), earliest local (-4),
//! or the first offset at or after a timestamp.

use bytes::Bytes;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ApiKey, ListOffsetsRequest, ListOffsetsResponse};

use super::lookup::leader_partition;
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::storage::{Log, TopicPartition};

#[derive(Debug)]
pub struct ListOffsetsApi;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;

impl Api for ListOffsetsApi {
    fn key(&self) -> ApiKey {
        ApiKey::ListOffsets
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: ListOffsetsRequest = context.decode(body)?;
            let topics = request
                .topics
                .into_iter()
                .map(|topic| {
                    let partitions = topic
                        .partitions
                        .iter()
                        .map(|p| {
                            let tp =
                                TopicPartition::new(topic.name.0.to_string(), p.partition_index);
                            let response = ListOffsetsPartitionResponse::default()
                                .with_partition_index(p.partition_index);
                            let result =
                                leader_partition(context.broker, &tp, p.current_leader_epoch)
                                    .and_then(|(partition, epoch)| {
                                        lookup(partition.log(), p.timestamp)
                                            .map(|(o, t)| (o, t, epoch))
                                    });
                            match result {
                                Ok((offset, timestamp, epoch)) => response
                                    .with_offset(offset)
                                    .with_timestamp(timestamp)
                                    // The leader epoch field exists from v4 on; no
                                    // epoch goes with "no offset" (-1), as in Kafka.
                                    .with_leader_epoch(if context.version >= 4 && offset >= 0 {
                                        epoch
                                    } else {
                                        -1
                                    }),
                                Err(code) => response
                                    .with_error_code(code)
                                    .with_offset(-1)
                                    .with_timestamp(-1)
                                    .with_leader_epoch(-1),
                            }
                        })
                        .collect();
                    ListOffsetsTopicResponse::default()
                        .with_name(topic.name)
                        .with_partitions(partitions)
                })
                .collect();
            context.respond(&ListOffsetsResponse::default().with_topics(topics))
        })
    }
}

/// (offset, timestamp) for a ListOffsets query; offsets are bounded by the high watermark.
fn lookup(log: &Log, timestamp: i64) -> Result<(i64, i64), i16> {
    match timestamp {
        LATEST | LATEST_TIERED => Ok((log.high_watermark() as i64, -1)),
        EARLIEST | EARLIEST_LOCAL => Ok((log.log_start_offset() as i64, -1)),
        MAX_TIMESTAMP => match log.max_timestamp_offset() {
            Ok(Some((offset, ts))) => Ok((offset as i64, ts)),
            Ok(None) => Ok((-1, -1)),
            Err(error) => Err(errors::log_error(&error)),
        },
        ts if ts < 0 => Err(errors::INVALID_REQUEST),
        ts => match log.offset_for_timestamp(ts) {
            Ok(Some((offset, found))) => Ok((offset as i64, found)),
            Ok(None) => Ok((-1, -1)),
            Err(error) => Err(errors::log_error(&error)),
        },
    }
}
