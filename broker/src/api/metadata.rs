//! Metadata: brokers, the controller, topics and their partitions (auto-creating
//! requested topics when allowed).

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{ApiKey, BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::admin::{CLUSTER_OPERATIONS, TOPIC_OPERATIONS};
use super::lookup::topic_or_create;
use super::{Api, HandlerFuture, RequestContext};
use crate::controller::image::TopicImage;

#[derive(Debug)]
pub struct MetadataApi;

/// Kafka's value for "authorized operations not requested".
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

impl Api for MetadataApi {
    fn key(&self) -> ApiKey {
        ApiKey::Metadata
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: MetadataRequest = context.decode(body)?;
            let broker = context.broker;
            // v0-3 always allow auto-creation; later versions say.
            let allow_create = context.version < 4 || request.allow_auto_topic_creation;
            // Without an authorizer every operation is allowed (librdkafka's describe_cluster
            // and describe_topics ask for them here).
            let topic_operations = if request.include_topic_authorized_operations {
                TOPIC_OPERATIONS
            } else {
                OPERATIONS_NOT_REQUESTED
            };
            let topics: Vec<MetadataResponseTopic> = match &request.topics {
                None => broker
                    .controller
                    .image()
                    .topics
                    .values()
                    .map(|t| topic_entry(context, t, topic_operations))
                    .collect(),
                Some(requested) => requested
                    .iter()
                    .map(|wanted| {
                        let name = wanted.name.as_ref().map(|n| n.0.to_string()).or_else(|| {
                            broker
                                .controller
                                .image()
                                .topic_by_id(&wanted.topic_id)
                                .map(|t| t.name.clone())
                        });
                        let Some(name) = name else {
                            return MetadataResponseTopic::default()
                                .with_error_code(ResponseError::UnknownTopicId.code())
                                .with_topic_id(wanted.topic_id)
                                .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED);
                        };
                        match topic_or_create(broker, &name, allow_create) {
                            Ok(topic) => topic_entry(context, &topic, topic_operations),
                            Err(code) => MetadataResponseTopic::default()
                                .with_error_code(code)
                                .with_name(Some(TopicName(StrBytes::from_string(name))))
                                .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED),
                        }
                    })
                    .collect(),
            };
            let config = &broker.config;
            let response = MetadataResponse::default()
                .with_brokers(vec![
                    MetadataResponseBroker::default()
                        .with_node_id(BrokerId(config.node_id))
                        .with_host(StrBytes::from_string(config.advertised_host.clone()))
                        .with_port(i32::from(config.advertised_port))
                        .with_rack(config.rack.clone().map(StrBytes::from_string)),
                ])
                .with_cluster_id(Some(StrBytes::from_string(broker.controller.cluster_id())))
                .with_controller_id(BrokerId(config.node_id))
                .with_topics(topics)
                .with_cluster_authorized_operations(
                    if request.include_cluster_authorized_operations {
                        CLUSTER_OPERATIONS
                    } else {
                        OPERATIONS_NOT_REQUESTED
                    },
                );
            context.respond(&response)
        })
    }
}

fn topic_entry(
    context: &RequestContext<'_>,
    topic: &TopicImage,
    operations: i32,
) -> MetadataResponseTopic {
    let node = BrokerId(context.broker.config.node_id);
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(topic.name.clone()))))
        .with_topic_id(topic.topic_id)
        .with_is_internal(topic.name.starts_with("__"))
        .with_topic_authorized_operations(operations)
        .with_partitions(
            (0..topic.partitions)
                .map(|partition| {
                    MetadataResponsePartition::default()
                        .with_partition_index(partition)
                        .with_leader_id(node)
                        .with_leader_epoch(0)
                        .with_replica_nodes(vec![node])
                        .with_isr_nodes(vec![node])
                })
                .collect(),
        )
}
