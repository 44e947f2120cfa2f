//! Metadata: brokers, the controller, topics and their partitions (auto-creating
//! requested topics when allowed).

pub(crate) mod listed_brokers;

use bytes::Bytes;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{ApiKey, BrokerId, MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::lookup::topic_or_create;
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::metadata::image::{ClusterImage, TopicImage};
use crate::security::acl::{CLUSTER_NAME, Operation, ResourceType};

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
            let access = context.access();
            let topic_operations = |name: &str| {
                if request.include_topic_authorized_operations {
                    access.operations(ResourceType::Topic, name)
                } else {
                    OPERATIONS_NOT_REQUESTED
                }
            };
            let image = broker.controller.image();
            let topics: Vec<MetadataResponseTopic> = match &request.topics {
                // Every topic the principal may describe; the others are left out.
                None => image
                    .topics
                    .values()
                    .filter(|t| access.sees(Operation::Describe, ResourceType::Topic, &t.name))
                    .map(|t| topic_entry(&image, t, topic_operations(&t.name)))
                    .collect(),
                Some(requested) => {
                    let mut topics = Vec::with_capacity(requested.len());
                    for wanted in requested {
                        let name = wanted.name.as_ref().map(|n| n.0.to_string()).or_else(|| {
                            image.topic_by_id(&wanted.topic_id).map(|t| t.name.clone())
                        });
                        let Some(name) = name else {
                            topics.push(
                                MetadataResponseTopic::default()
                                    .with_error_code(errors::UNKNOWN_TOPIC_ID)
                                    .with_topic_id(wanted.topic_id)
                                    .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED),
                            );
                            continue;
                        };
                        if !access.allows(Operation::Describe, ResourceType::Topic, &name) {
                            topics.push(
                                MetadataResponseTopic::default()
                                    .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED)
                                    .with_name(Some(TopicName(StrBytes::from_string(name))))
                                    .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED),
                            );
                            continue;
                        }
                        // Auto-creation needs CREATE on the cluster or on the topic.
                        let may_create = allow_create
                            && (access.sees(
                                Operation::Create,
                                ResourceType::Cluster,
                                CLUSTER_NAME,
                            ) || access.sees(Operation::Create, ResourceType::Topic, &name));
                        let created = topic_or_create(broker, &name, may_create).await;
                        topics.push(match created {
                            Ok(topic) => topic_entry(
                                &broker.controller.image(),
                                &topic,
                                topic_operations(&name),
                            ),
                            Err(code)
                                if allow_create
                                    && broker.config.auto_create_topics
                                    && !may_create
                                    && code == errors::UNKNOWN_TOPIC_OR_PARTITION =>
                            {
                                access.allows(Operation::Create, ResourceType::Topic, &name);
                                MetadataResponseTopic::default()
                                    .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED)
                                    .with_name(Some(TopicName(StrBytes::from_string(name))))
                                    .with_topic_authorized_operations(OPERATIONS_NOT_REQUESTED)
                            }
                            // A topic the principal may describe reports its operations
                            // even when it does not exist, as in Kafka.
                            Err(code) => MetadataResponseTopic::default()
                                .with_error_code(code)
                                .with_topic_authorized_operations(topic_operations(&name))
                                .with_name(Some(TopicName(StrBytes::from_string(name)))),
                        });
                    }
                    topics
                }
            };
            let image = broker.controller.image();
            let response = MetadataResponse::default()
                .with_brokers(
                    broker
                        .recently_fenced
                        .listed(&image, std::time::Instant::now())
                        .into_iter()
                        .filter_map(|b| {
                            // Each broker's address on the listener this client used;
                            // one not on that listener is left out, as Kafka does.
                            let endpoint = b.endpoint_for(context.listener)?;
                            Some(
                                MetadataResponseBroker::default()
                                    .with_node_id(BrokerId(b.node_id))
                                    .with_host(StrBytes::from_string(endpoint.host.clone()))
                                    .with_port(i32::from(endpoint.port))
                                    .with_rack(b.rack.clone().map(StrBytes::from_string)),
                            )
                        })
                        .collect(),
                )
                .with_cluster_id(image.cluster_id.clone().map(StrBytes::from_string))
                // A live broker (this one) that forwards admin requests, as Kafka in
                // KRaft mode answers; see DescribeCluster.
                .with_controller_id(BrokerId(broker.config.node_id))
                .with_topics(topics)
                .with_cluster_authorized_operations(
                    if request.include_cluster_authorized_operations {
                        if access.sees(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME) {
                            access.operations(ResourceType::Cluster, CLUSTER_NAME)
                        } else {
                            0
                        }
                    } else {
                        OPERATIONS_NOT_REQUESTED
                    },
                );
            context.respond(&response)
        })
    }
}

fn topic_entry(image: &ClusterImage, topic: &TopicImage, operations: i32) -> MetadataResponseTopic {
    let ids = |nodes: &[i32]| nodes.iter().map(|n| BrokerId(*n)).collect::<Vec<_>>();
    MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(topic.name.clone()))))
        .with_topic_id(topic.topic_id)
        .with_is_internal(topic.name.starts_with("__"))
        .with_topic_authorized_operations(operations)
        .with_partitions(
            topic
                .partitions
                .iter()
                .enumerate()
                .map(|(partition, state)| {
                    // Kafka lists every replica but answers LEADER_NOT_AVAILABLE for a
                    // partition without a live leader, so clients wait and retry.
                    let error = if state.leader == -1 || !image.is_live(state.leader) {
                        errors::LEADER_NOT_AVAILABLE
                    } else {
                        0
                    };
                    MetadataResponsePartition::default()
                        .with_error_code(error)
                        .with_partition_index(partition as i32)
                        .with_leader_id(BrokerId(if error == 0 { state.leader } else { -1 }))
                        .with_leader_epoch(state.leader_epoch)
                        .with_replica_nodes(ids(&state.replicas))
                        .with_isr_nodes(ids(&state.in_sync_replicas))
                })
                .collect(),
        )
}
