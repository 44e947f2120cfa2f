//! A small Kafka admin client over one connection (`oxbow_kafka_client`, which frames,
//! matches correlation ids and negotiates versions), used by the reconcilers: typed calls
//! for the admin APIs and Kafka's error codes as [`AdminError`].

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::create_partitions_request::{
    CreatePartitionsRequest, CreatePartitionsTopic,
};
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig, CreateTopicsRequest,
};
use kafka_protocol::messages::delete_topics_request::{DeleteTopicState, DeleteTopicsRequest};
use kafka_protocol::messages::describe_configs_request::{
    DescribeConfigsRequest, DescribeConfigsResource,
};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest,
};
use kafka_protocol::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_protocol::messages::metadata_response::{MetadataResponse, MetadataResponsePartition};
use kafka_protocol::messages::{ApiKey, BrokerId, TopicName};
use kafka_protocol::protocol::{Request, StrBytes};
use oxbow_kafka_client::{Connection, ResponseError, WireError};

mod features;
mod log_dirs;
mod moves;
mod pool;
mod quorum;
pub use features::{BrokerFeatures, FeatureUpdate, SupportedFeatures, UpgradeType};
pub use pool::AdminPool;
pub use quorum::QuorumState;
mod throttle;
pub mod tls;
pub mod users;
pub use moves::{Partitions, Reassigning, ReplicaSizes};
pub use throttle::{THROTTLED_REPLICAS_KEYS, is_move_throttle};

/// Largest response frame accepted (a Metadata answer of a big cluster fits easily).
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;
/// Time limit of one request, including connecting.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// `timeout_ms` sent with topic operations.
const OPERATION_TIMEOUT_MS: i32 = 30_000;
/// Kafka's ConfigResource types.
const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
/// IncrementalAlterConfigs operations.
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
/// DescribeConfigs sources meaning "set on this topic".
const SOURCE_DYNAMIC_TOPIC: i8 = 1;
/// Kafka error codes the reconcilers react to (kafka-protocol's table, not a copy).
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = ResponseError::UnknownTopicOrPartition.code();
pub const TOPIC_ALREADY_EXISTS: i16 = ResponseError::TopicAlreadyExists.code();
pub const INVALID_PARTITIONS: i16 = ResponseError::InvalidPartitions.code();
pub const INVALID_REPLICATION_FACTOR: i16 = ResponseError::InvalidReplicationFactor.code();
pub const INVALID_CONFIG: i16 = ResponseError::InvalidConfig.code();
pub const INVALID_TOPIC: i16 = ResponseError::InvalidTopicException.code();
pub const INVALID_REPLICA_ASSIGNMENT: i16 = ResponseError::InvalidReplicaAssignment.code();
pub const INVALID_REQUEST: i16 = ResponseError::InvalidRequest.code();
pub const POLICY_VIOLATION: i16 = ResponseError::PolicyViolation.code();

/// What went wrong talking to the cluster.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The connection failed, timed out or went out of step.
    #[error(transparent)]
    Wire(oxbow_kafka_client::WireError),
    #[error("the broker supports no version of {api} that this client speaks")]
    Unsupported { api: &'static str },
    #[error("{api} answered error code {code} ({name}){}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Kafka {
        api: &'static str,
        code: i16,
        name: String,
        message: Option<String>,
    },
    /// Something on the operator's side failed before a request could be made.
    #[error("{0}")]
    Local(String),
}

impl From<WireError> for AdminError {
    fn from(error: WireError) -> Self {
        match error {
            WireError::Unsupported { api, .. } => AdminError::Unsupported { api: api_name(api) },
            other => AdminError::Wire(other),
        }
    }
}

impl AdminError {
    /// The Kafka error code, when the broker answered with one.
    pub fn kafka_code(&self) -> Option<i16> {
        match self {
            AdminError::Kafka { code, .. } => Some(*code),
            _ => None,
        }
    }
}

fn check(api: &'static str, code: i16, message: Option<&StrBytes>) -> Result<(), AdminError> {
    if code == 0 {
        return Ok(());
    }
    Err(AdminError::Kafka {
        api,
        code,
        name: oxbow_kafka_client::error_name(code),
        message: message.map(|m| m.to_string()),
    })
}

/// A topic as the cluster describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDescription {
    pub name: String,
    pub topic_id: String,
    /// Replica lists by partition index (first = preferred leader).
    pub partitions: BTreeMap<i32, PartitionDescription>,
}

/// One partition as the cluster describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionDescription {
    pub leader: i32,
    pub replicas: Vec<i32>,
    pub in_sync_replicas: Vec<i32>,
}

/// A broker as Metadata lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerDescription {
    pub id: i32,
    pub rack: Option<String>,
}

/// Metadata about one topic and the brokers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterView {
    pub brokers: Vec<BrokerDescription>,
    /// `None` when the topic does not exist.
    pub topic: Option<TopicDescription>,
}

/// One connection to a broker.
#[derive(Debug)]
pub struct AdminClient {
    connection: Connection,
}

impl AdminClient {
    /// Connects to `address` (`host:port`) and negotiates API versions.
    pub async fn connect(address: &str) -> Result<Self, AdminError> {
        Self::connect_within(address, REQUEST_TIMEOUT).await
    }

    /// [`Self::connect`], giving up on the TCP connection after `timeout`.
    /// A secured Cluster's broker (see [`tls`]) is reached over mutual TLS.
    pub async fn connect_within(address: &str, timeout: Duration) -> Result<Self, AdminError> {
        let connection = match tls::lookup(address) {
            Some((tls, server_name)) => {
                tls.connect(address, &server_name, "oxbow-operator", timeout)
                    .await?
            }
            None => Connection::connect(address, "oxbow-operator", timeout).await?,
        };
        let mut connection = connection.with_max_response(MAX_RESPONSE_BYTES);
        connection
            .negotiate(
                ("oxbow-operator", env!("CARGO_PKG_VERSION")),
                REQUEST_TIMEOUT,
            )
            .await?;
        Ok(Self { connection })
    }

    async fn call<R: Request>(&mut self, request: &R) -> Result<R::Response, AdminError> {
        Ok(self.connection.call(request, REQUEST_TIMEOUT).await?)
    }

    /// Lists the brokers and describes `topic` (without creating it).
    pub async fn describe(&mut self, topic: &str) -> Result<ClusterView, AdminError> {
        let request = MetadataRequest::default()
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(topic_name(topic))),
            ]))
            .with_allow_auto_topic_creation(false);
        let response = self.call(&request).await?;
        let brokers = brokers_of(&response);
        let mut described = None;
        for entry in &response.topics {
            let name = entry
                .name
                .as_ref()
                .map(|n| n.0.to_string())
                .unwrap_or_default();
            if name != topic {
                continue;
            }
            if entry.error_code == UNKNOWN_TOPIC_OR_PARTITION {
                break;
            }
            check("Metadata", entry.error_code, None)?;
            let partitions = entry
                .partitions
                .iter()
                .map(|p| (p.partition_index, partition_of(p)))
                .collect();
            described = Some(TopicDescription {
                name,
                topic_id: entry.topic_id.to_string(),
                partitions,
            });
        }
        Ok(ClusterView {
            brokers,
            topic: described,
        })
    }

    /// Number of partitions, over all topics, whose in-sync replicas are fewer than their replicas.
    pub async fn under_replicated_partitions(&mut self) -> Result<usize, AdminError> {
        let request = MetadataRequest::default()
            .with_topics(None)
            .with_allow_auto_topic_creation(false);
        let response = self.call(&request).await?;
        Ok(response
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .filter(|p| p.isr_nodes.len() < p.replica_nodes.len())
            .count())
    }

    /// Creates a topic; `assignment` (replicas per partition) replaces the count and factor when given.
    pub async fn create_topic(
        &mut self,
        topic: &str,
        partitions: i32,
        replication_factor: i16,
        assignment: Option<&[Vec<i32>]>,
        configs: &BTreeMap<String, String>,
    ) -> Result<(), AdminError> {
        let mut creatable = CreatableTopic::default()
            .with_name(topic_name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(replication_factor)
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        CreatableTopicConfig::default()
                            .with_name(StrBytes::from_string(k.clone()))
                            .with_value(Some(StrBytes::from_string(v.clone())))
                    })
                    .collect(),
            );
        if let Some(assignment) = assignment {
            creatable = creatable
                .with_num_partitions(-1)
                .with_replication_factor(-1)
                .with_assignments(
                    assignment
                        .iter()
                        .zip(0..)
                        .map(|(replicas, index)| {
                            CreatableReplicaAssignment::default()
                                .with_partition_index(index)
                                .with_broker_ids(replicas.iter().map(|id| BrokerId(*id)).collect())
                        })
                        .collect(),
                );
        }
        let request = CreateTopicsRequest::default()
            .with_topics(vec![creatable])
            .with_timeout_ms(OPERATION_TIMEOUT_MS);
        let response = self.call(&request).await?;
        for result in &response.topics {
            check(
                "CreateTopics",
                result.error_code,
                result.error_message.as_ref(),
            )?;
        }
        Ok(())
    }

    /// Grows a topic to `count` partitions.
    pub async fn create_partitions(&mut self, topic: &str, count: i32) -> Result<(), AdminError> {
        let request = create_partitions_request(topic, count);
        let response = self.call(&request).await?;
        for result in &response.results {
            check(
                "CreatePartitions",
                result.error_code,
                result.error_message.as_ref(),
            )?;
        }
        Ok(())
    }

    /// Deletes a topic; a topic that does not exist counts as deleted.
    pub async fn delete_topic(&mut self, topic: &str) -> Result<(), AdminError> {
        let request = DeleteTopicsRequest::default()
            .with_topic_names(vec![topic_name(topic)])
            .with_topics(vec![
                DeleteTopicState::default().with_name(Some(topic_name(topic))),
            ])
            .with_timeout_ms(OPERATION_TIMEOUT_MS);
        let response = self.call(&request).await?;
        for result in &response.responses {
            if result.error_code != UNKNOWN_TOPIC_OR_PARTITION {
                check(
                    "DeleteTopics",
                    result.error_code,
                    result.error_message.as_ref(),
                )?;
            }
        }
        Ok(())
    }

    /// The configs set on the topic itself (dynamic topic configs), name to value.
    pub async fn topic_configs(
        &mut self,
        topic: &str,
    ) -> Result<BTreeMap<String, String>, AdminError> {
        let mut all = self.configs_of_topics(&[topic.to_string()], false).await?;
        Ok(all.remove(topic).unwrap_or_default())
    }

    /// The dynamic configs of several topics in one DescribeConfigs request; with
    /// `skip_unknown`, a topic deleted meanwhile is left out instead of failing the call.
    pub async fn configs_of_topics(
        &mut self,
        topics: &[String],
        skip_unknown: bool,
    ) -> Result<BTreeMap<String, BTreeMap<String, String>>, AdminError> {
        let request = DescribeConfigsRequest::default().with_resources(
            topics
                .iter()
                .map(|topic| {
                    // kafka-protocol defaults to an empty key list, which asks for no
                    // config at all; null asks for every one.
                    DescribeConfigsResource::default()
                        .with_resource_type(RESOURCE_TOPIC)
                        .with_resource_name(StrBytes::from_string(topic.clone()))
                        .with_configuration_keys(None)
                })
                .collect(),
        );
        let response = self.call(&request).await?;
        let mut all = BTreeMap::new();
        for result in &response.results {
            if skip_unknown && result.error_code == UNKNOWN_TOPIC_OR_PARTITION {
                continue;
            }
            check(
                "DescribeConfigs",
                result.error_code,
                result.error_message.as_ref(),
            )?;
            let configs: BTreeMap<String, String> = result
                .configs
                .iter()
                .filter(|entry| entry.config_source == SOURCE_DYNAMIC_TOPIC)
                .filter_map(|entry| {
                    let value = entry.value.as_ref()?;
                    Some((entry.name.to_string(), value.to_string()))
                })
                .collect();
            all.insert(result.resource_name.to_string(), configs);
        }
        Ok(all)
    }

    /// Sets `set` and removes `delete` on the topic, in one IncrementalAlterConfigs request.
    pub async fn alter_topic_configs(
        &mut self,
        topic: &str,
        set: &BTreeMap<String, String>,
        delete: &[String],
    ) -> Result<(), AdminError> {
        self.alter_configs(vec![ConfigChange {
            resource_type: RESOURCE_TOPIC,
            name: topic.to_string(),
            set: set.clone(),
            delete: delete.to_vec(),
        }])
        .await
    }

    /// Applies several resources' config changes in one IncrementalAlterConfigs request.
    async fn alter_configs(&mut self, changes: Vec<ConfigChange>) -> Result<(), AdminError> {
        if changes.is_empty() {
            return Ok(());
        }
        let resources = changes
            .into_iter()
            .map(|change| {
                let mut configs: Vec<AlterableConfig> = change
                    .set
                    .into_iter()
                    .map(|(k, v)| {
                        AlterableConfig::default()
                            .with_name(StrBytes::from_string(k))
                            .with_config_operation(OP_SET)
                            .with_value(Some(StrBytes::from_string(v)))
                    })
                    .collect();
                configs.extend(change.delete.into_iter().map(|k| {
                    AlterableConfig::default()
                        .with_name(StrBytes::from_string(k))
                        .with_config_operation(OP_DELETE)
                }));
                AlterConfigsResource::default()
                    .with_resource_type(change.resource_type)
                    .with_resource_name(StrBytes::from_string(change.name))
                    .with_configs(configs)
            })
            .collect();
        let request = IncrementalAlterConfigsRequest::default().with_resources(resources);
        let response = self.call(&request).await?;
        for result in &response.responses {
            check(
                "IncrementalAlterConfigs",
                result.error_code,
                result.error_message.as_ref(),
            )?;
        }
        Ok(())
    }
}

/// One resource's part of an IncrementalAlterConfigs request.
struct ConfigChange {
    resource_type: i8,
    name: String,
    set: BTreeMap<String, String>,
    delete: Vec<String>,
}

/// The brokers a Metadata response lists.
fn brokers_of(response: &MetadataResponse) -> Vec<BrokerDescription> {
    response
        .brokers
        .iter()
        .map(|b| BrokerDescription {
            id: b.node_id.0,
            rack: b.rack.as_ref().map(|r| r.to_string()),
        })
        .collect()
}

/// One partition of a Metadata response.
fn partition_of(p: &MetadataResponsePartition) -> PartitionDescription {
    PartitionDescription {
        leader: p.leader_id.0,
        replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
        in_sync_replicas: p.isr_nodes.iter().map(|b| b.0).collect(),
    }
}

fn topic_name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

fn api_name(key: i16) -> &'static str {
    match ApiKey::try_from(key) {
        Ok(ApiKey::ApiVersions) => "ApiVersions",
        Ok(ApiKey::Metadata) => "Metadata",
        Ok(ApiKey::CreateTopics) => "CreateTopics",
        Ok(ApiKey::DeleteTopics) => "DeleteTopics",
        Ok(ApiKey::CreatePartitions) => "CreatePartitions",
        Ok(ApiKey::DescribeConfigs) => "DescribeConfigs",
        Ok(ApiKey::IncrementalAlterConfigs) => "IncrementalAlterConfigs",
        Ok(ApiKey::AlterPartitionReassignments) => "AlterPartitionReassignments",
        Ok(ApiKey::ListPartitionReassignments) => "ListPartitionReassignments",
        Ok(ApiKey::ElectLeaders) => "ElectLeaders",
        Ok(ApiKey::UnregisterBroker) => "UnregisterBroker",
        Ok(ApiKey::DescribeUserScramCredentials) => "DescribeUserScramCredentials",
        Ok(ApiKey::AlterUserScramCredentials) => "AlterUserScramCredentials",
        Ok(ApiKey::DescribeAcls) => "DescribeAcls",
        Ok(ApiKey::CreateAcls) => "CreateAcls",
        Ok(ApiKey::DeleteAcls) => "DeleteAcls",
        Ok(ApiKey::DescribeClientQuotas) => "DescribeClientQuotas",
        Ok(ApiKey::AlterClientQuotas) => "AlterClientQuotas",
        Ok(ApiKey::UpdateFeatures) => "UpdateFeatures",
        _ => "Kafka",
    }
}

/// Grows `topic` to `count` partitions and lets the cluster place the new replicas. The
/// assignments must be null, not the generated default (an empty list): Kafka, and Oxbow with
/// it, refuse an empty list as "0 assignment(s) given for N new partition(s)".
fn create_partitions_request(topic: &str, count: i32) -> CreatePartitionsRequest {
    CreatePartitionsRequest::default()
        .with_topics(vec![
            CreatePartitionsTopic::default()
                .with_name(topic_name(topic))
                .with_count(count)
                .with_assignments(None),
        ])
        .with_timeout_ms(OPERATION_TIMEOUT_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_partitions_leaves_the_assignment_to_the_cluster() {
        let request = create_partitions_request("orders", 6);
        assert_eq!(request.topics.len(), 1);
        assert_eq!(request.topics[0].count, 6);
        assert_eq!(request.topics[0].assignments, None);
    }
}
