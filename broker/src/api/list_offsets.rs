//! ListOffsets: earliest (-2), latest (-1), max timestamp (-3), earliest local (-4),
//! or the first offset at or after a timestamp.

use bytes::Bytes;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ApiKey, ListOffsetsRequest, ListOffsetsResponse};
use kafka_protocol::protocol::VersionRange;

use super::lookup::leader_partition;
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::model::TopicPartition;
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct ListOffsetsApi;

impl Api for ListOffsetsApi {
    fn key(&self) -> ApiKey {
        ApiKey::ListOffsets
    }

    /// v11 lists the earliest offset not yet uploaded to tiered storage (KIP-1023), which Oxbow has not got yet.
    fn versions(&self) -> VersionRange {
        super::up_to(self.key(), 10)
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: ListOffsetsRequest = context.decode(body)?;
            let access = context.access();
            let read_committed = request.isolation_level == 1;
            let topics = request
                .topics
                .into_iter()
                .map(|topic| {
                    let allowed =
                        access.allows(Operation::Describe, ResourceType::Topic, &topic.name);
                    let partitions = topic
                        .partitions
                        .iter()
                        .map(|p| {
                            let tp =
                                TopicPartition::new(topic.name.0.to_string(), p.partition_index);
                            let response = ListOffsetsPartitionResponse::default()
                                .with_partition_index(p.partition_index);
                            let result = if allowed {
                                Ok(())
                            } else {
                                Err(errors::TOPIC_AUTHORIZATION_FAILED)
                            };
                            let result = result
                                .and_then(|()| {
                                    leader_partition(context.broker, &tp, p.current_leader_epoch)
                                })
                                .and_then(|(partition, epoch)| {
                                    partition
                                        .offset_for_timestamp(p.timestamp, read_committed)
                                        .map(|(o, t)| (o, t, epoch))
                                        .map_err(|refusal| errors::refusal(&refusal))
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
