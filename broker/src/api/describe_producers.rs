//! DescribeProducers: the producers a partition's leader knows (idempotent and
//! transactional), with the first offset of each one's open transaction
//! (`kafka-transactions describe-producers`, and how a hanging transaction is found).

use bytes::Bytes;
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{
    ApiKey, DescribeProducersRequest, DescribeProducersResponse, ProducerId,
};

use super::lookup::leader_partition;
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::model::TopicPartition;
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct DescribeProducersApi;

impl Api for DescribeProducersApi {
    fn key(&self) -> ApiKey {
        ApiKey::DescribeProducers
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DescribeProducersRequest = context.decode(body)?;
            let access = context.access();
            let topics = request
                .topics
                .iter()
                .map(|topic| {
                    let allowed = access.allows(Operation::Read, ResourceType::Topic, &topic.name);
                    let partitions = topic
                        .partition_indexes
                        .iter()
                        .map(|&index| {
                            let answer = PartitionResponse::default().with_partition_index(index);
                            if !allowed {
                                return answer.with_error_code(errors::TOPIC_AUTHORIZATION_FAILED);
                            }
                            let tp = TopicPartition::new(topic.name.0.to_string(), index);
                            match leader_partition(context.broker, &tp, -1) {
                                Err(code) => answer.with_error_code(code),
                                Ok((partition, _)) => answer.with_active_producers(
                                    partition
                                        .producers()
                                        .into_iter()
                                        .map(|(producer, open)| {
                                            ProducerState::default()
                                                .with_producer_id(ProducerId(producer.producer_id))
                                                .with_producer_epoch(i32::from(producer.epoch))
                                                .with_last_sequence(producer.last_sequence)
                                                .with_last_timestamp(producer.last_timestamp)
                                                .with_coordinator_epoch(producer.coordinator_epoch)
                                                .with_current_txn_start_offset(
                                                    open.map_or(-1, |o| o as i64),
                                                )
                                        })
                                        .collect(),
                                ),
                            }
                        })
                        .collect();
                    TopicResponse::default()
                        .with_name(topic.name.clone())
                        .with_partitions(partitions)
                })
                .collect();
            context.respond(&DescribeProducersResponse::default().with_topics(topics))
        })
    }
}
