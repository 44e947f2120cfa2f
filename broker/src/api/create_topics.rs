//! CreateTopics: new topics with partition counts, replication factors and configs;
//! `validate_only` checks without creating.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{ApiKey, CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::controller::ControllerError;

/// The first version whose response lists the created topic's configs.
const FIRST_VERSION_WITH_CONFIGS: i16 = 5;

#[derive(Debug)]
pub struct CreateTopicsApi;

/// Kafka's config source for a topic's own config and for a broker default.
const SOURCE_TOPIC: i8 = 1;
const SOURCE_DEFAULT: i8 = 5;

impl Api for CreateTopicsApi {
    fn key(&self) -> ApiKey {
        ApiKey::CreateTopics
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: CreateTopicsRequest = context.decode(body)?;
            let broker = context.broker;
            let mut results = Vec::with_capacity(request.topics.len());
            for topic in request.topics {
                results.push({
                    let name = topic.name.0.to_string();
                    let configs: BTreeMap<String, String> = topic
                        .configs
                        .iter()
                        .filter_map(|c| {
                            c.value
                                .as_ref()
                                .map(|v| (c.name.to_string(), v.to_string()))
                        })
                        .collect();
                    let partitions = if topic.num_partitions == -1 {
                        if topic.assignments.is_empty() {
                            broker.config.num_partitions
                        } else {
                            topic.assignments.len() as i32
                        }
                    } else {
                        topic.num_partitions
                    };
                    let replication_factor = if topic.replication_factor == -1 {
                        topic
                            .assignments
                            .first()
                            .map_or(broker.config.default_replication_factor, |a| {
                                a.broker_ids.len() as i16
                            })
                    } else {
                        topic.replication_factor
                    };
                    let result = CreatableTopicResult::default().with_name(topic.name.clone());
                    let mut ordered: Vec<_> = topic.assignments.iter().collect();
                    ordered.sort_by_key(|a| a.partition_index);
                    let consecutive = ordered
                        .iter()
                        .enumerate()
                        .all(|(i, a)| a.partition_index == i as i32);
                    let assignments: Vec<Vec<i32>> = ordered
                        .iter()
                        .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
                        .collect();
                    let created = if !consecutive {
                        Err(ControllerError::InvalidReplicaAssignment(
                            "partitions of a manual assignment must be numbered 0, 1, 2, ...".into(),
                        ))
                    } else if !assignments.is_empty()
                        && (topic.num_partitions != -1 || topic.replication_factor != -1)
                    {
                        // Kafka's rule: a manual assignment comes without counts.
                        Err(ControllerError::InvalidRequest(
                            "both numPartitions or replicationFactor and replicasAssignments were set"
                                .into(),
                        ))
                    } else {
                        broker
                            .controller
                            .create_topic_assigned(
                                &name,
                                partitions,
                                replication_factor,
                                configs,
                                request.validate_only,
                                assignments,
                            )
                            .await
                    };
                    match created {
                        Ok(created) => {
                            let effective = broker
                                .controller
                                .log_config_for(&created)
                                .unwrap_or_default()
                                .to_topic_configs();
                            result
                                .with_topic_id(created.topic_id)
                                .with_num_partitions(created.partition_count())
                                .with_replication_factor(created.replication_factor)
                                // The effective configs are part of the response from
                                // v5 on; older versions cannot encode them.
                                .with_configs((context.version >= FIRST_VERSION_WITH_CONFIGS).then(
                                    || {
                                        effective
                                            .into_iter()
                                            .map(|(key, value)| {
                                                CreatableTopicConfigs::default()
                                                    .with_config_source(
                                                        if created.configs.contains_key(key) {
                                                            SOURCE_TOPIC
                                                        } else {
                                                            SOURCE_DEFAULT
                                                        },
                                                    )
                                                    .with_name(StrBytes::from_static_str(key))
                                                    .with_value(Some(StrBytes::from_string(value)))
                                            })
                                            .collect()
                                    },
                                ))
                        }
                        Err(error) => {
                            tracing::info!(topic = %name, %error, "CreateTopics refused");
                            result
                                .with_error_code(errors::controller_error(&error))
                                .with_error_message(Some(StrBytes::from_string(error.to_string())))
                                .with_num_partitions(-1)
                                .with_replication_factor(-1)
                        }
                    }
                });
            }
            context.respond(&CreateTopicsResponse::default().with_topics(results))
        })
    }
}
