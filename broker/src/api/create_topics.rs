//! CreateTopics: new topics with partition counts, replication factors and configs;
//! `validate_only` checks without creating.

use std::collections::{BTreeMap, HashMap, HashSet};

use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{ApiKey, CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::controller::{ControllerError, TopicToCreate};
use crate::security::acl::{CLUSTER_NAME, Operation, ResourceType};
use crate::state::BrokerState;

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
            let mut names: HashMap<&str, usize> = HashMap::new();
            for topic in &request.topics {
                *names.entry(topic.name.0.as_str()).or_default() += 1;
            }
            let access = context.access();
            let may_create_any =
                access.sees(Operation::Create, ResourceType::Cluster, CLUSTER_NAME);
            // What the request itself gets wrong is answered here; the rest goes to the
            // controller as one command (one quorum round for the whole request).
            let checked: Vec<Result<TopicToCreate, ControllerError>> = request
                .topics
                .iter()
                .map(|topic| {
                    if names.get(topic.name.0.as_str()).is_some_and(|n| *n > 1) {
                        // Kafka refuses a name given twice, with one result for it.
                        return Err(ControllerError::InvalidRequest(
                            "Duplicate topic name.".into(),
                        ));
                    }
                    // CREATE on the cluster, or on the topic.
                    if !may_create_any
                        && !access.allows(Operation::Create, ResourceType::Topic, &topic.name)
                    {
                        return Err(ControllerError::TopicAuthorization(topic.name.to_string()));
                    }
                    to_create(broker, topic)
                })
                .collect();
            let wanted: Vec<TopicToCreate> = checked
                .iter()
                .filter_map(|c| c.as_ref().ok().cloned())
                .collect();
            let asked = wanted.len();
            let mut decided = if asked == 0 {
                Vec::new()
            } else {
                match broker
                    .controller
                    .create_topics(wanted, request.validate_only)
                    .await
                {
                    Ok(outcomes) => outcomes,
                    Err(error) => vec![Err(error); asked],
                }
            }
            .into_iter();
            let mut results = Vec::with_capacity(request.topics.len());
            let mut answered = HashSet::new();
            for (topic, checked) in request.topics.iter().zip(checked) {
                if !answered.insert(topic.name.0.as_str()) {
                    continue;
                }
                let created = match checked {
                    Ok(_) => decided.next().unwrap_or_else(|| {
                        Err(ControllerError::InvalidRequest(
                            "the controller answered fewer topics than asked".into(),
                        ))
                    }),
                    Err(error) => Err(error),
                };
                let result = CreatableTopicResult::default().with_name(topic.name.clone());
                results.push(match created {
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
                            // The effective configs are part of the response from v5 on;
                            // older versions cannot encode them.
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
                        tracing::info!(topic = %topic.name.0, %error, "CreateTopics refused");
                        result
                            .with_error_code(errors::controller_error(&error))
                            .with_error_message(Some(StrBytes::from_string(error.to_string())))
                            .with_num_partitions(-1)
                            .with_replication_factor(-1)
                    }
                });
            }
            context.respond(&CreateTopicsResponse::default().with_topics(results))
        })
    }
}

/// One requested topic as the controller takes it: counts filled in from broker defaults,
/// a manual assignment in partition order, or what is wrong with the request's entry.
fn to_create(
    broker: &BrokerState,
    topic: &CreatableTopic,
) -> Result<TopicToCreate, ControllerError> {
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
    let mut ordered: Vec<_> = topic.assignments.iter().collect();
    ordered.sort_by_key(|a| a.partition_index);
    let consecutive = ordered
        .iter()
        .enumerate()
        .all(|(i, a)| a.partition_index == i as i32);
    if !consecutive {
        return Err(ControllerError::InvalidReplicaAssignment(
            "partitions of a manual assignment must be numbered 0, 1, 2, ...".into(),
        ));
    }
    if !ordered.is_empty() && (topic.num_partitions != -1 || topic.replication_factor != -1) {
        // Kafka's rule: a manual assignment comes without counts.
        return Err(ControllerError::InvalidRequest(
            "both numPartitions or replicationFactor and replicasAssignments were set".into(),
        ));
    }
    Ok(TopicToCreate {
        name: topic.name.0.to_string(),
        partitions,
        replication_factor,
        configs,
        assignments: ordered
            .iter()
            .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
            .collect(),
    })
}
