//! A fake Kafka cluster for the operator's admin client: one loopback listener that speaks
//! the real wire protocol (`kafka-protocol` decodes the requests and encodes the answers)
//! for exactly the APIs the operator uses, keeps topics in memory, records every call, and
//! answers as a healthy cluster would — or, after [`FakeKafka::fall_behind`], as one whose
//! broker has dropped out of the in-sync replicas of its partitions.
//!
//! Feature levels (`fake_kafka/features.rs`): none unless the test sets them, then listed in
//! ApiVersions and finalized by UpdateFeatures.
//!
//! Speaking the protocol (rather than replacing the admin client with a mock) keeps the
//! operator's own client, its version negotiation and its error handling in the test.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, BrokerId, CreatePartitionsRequest,
    CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest,
    DeleteTopicsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, MetadataRequest,
    MetadataResponse, RequestHeader, ResponseHeader, TopicName, UpdateFeaturesRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod features;

const UNKNOWN_TOPIC_OR_PARTITION: i16 = ResponseError::UnknownTopicOrPartition.code();
const TOPIC_ALREADY_EXISTS: i16 = ResponseError::TopicAlreadyExists.code();
const INVALID_PARTITIONS: i16 = ResponseError::InvalidPartitions.code();
/// DescribeConfigs `config_source` values (Kafka's `ConfigSource`).
const SOURCE_DYNAMIC_TOPIC: i8 = 1;
const SOURCE_DEFAULT: i8 = 5;
/// A broker default every topic reports; the operator must not take it for a topic config.
const DEFAULT_CONFIG: (&str, &str) = ("segment.bytes", "1073741824");

/// One admin call as the fake decoded it (ApiVersions, the handshake, is not recorded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// `None`: all topics (what the roll gate asks).
    Metadata {
        topics: Option<Vec<String>>,
    },
    CreateTopics {
        name: String,
        partitions: i32,
        replication_factor: i16,
        assignment: Vec<Vec<i32>>,
        configs: BTreeMap<String, String>,
    },
    CreatePartitions {
        name: String,
        count: i32,
    },
    DeleteTopics {
        names: Vec<String>,
    },
    DescribeConfigs {
        name: String,
    },
    AlterConfigs {
        name: String,
        set: BTreeMap<String, String>,
        delete: Vec<String>,
    },
    /// `(feature, level, upgrade type)`: 1 upgrade, 2 safe downgrade.
    UpdateFeatures {
        levels: Vec<(String, i16, i8)>,
    },
}

impl Call {
    /// Calls that change the cluster (what an idempotent reconcile must not make).
    pub fn mutates(&self) -> bool {
        !matches!(self, Call::Metadata { .. } | Call::DescribeConfigs { .. })
    }
}

#[derive(Debug, Clone)]
struct FakeTopic {
    id: u128,
    /// Replicas per partition, first = leader.
    partitions: Vec<Vec<i32>>,
    configs: BTreeMap<String, String>,
}

#[derive(Debug, Default)]
struct State {
    /// Broker id → rack.
    brokers: BTreeMap<i32, String>,
    topics: BTreeMap<String, FakeTopic>,
    /// A broker that fetches no more: it is in no ISR.
    behind: Option<i32>,
    calls: Vec<Call>,
    features: features::Features,
    /// Connections that failed (a request the fake cannot decode or answer).
    errors: Vec<String>,
    next_topic_id: u128,
}

/// Handle of a running fake; the listener task ends with the test's runtime.
#[derive(Debug, Clone)]
pub struct FakeKafka {
    pub address: String,
    state: Arc<Mutex<State>>,
}

impl FakeKafka {
    /// Listens on an ephemeral loopback port; `brokers` are `(id, rack)`.
    pub async fn start(brokers: &[(i32, &str)]) -> FakeKafka {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let state = Arc::new(Mutex::new(State {
            brokers: brokers
                .iter()
                .map(|(id, rack)| (*id, (*rack).to_string()))
                .collect(),
            next_topic_id: 0x0b0b_0000_0000_0000_0000_0000_0000_0001,
            ..State::default()
        }));
        let shared = state.clone();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    if let Err(error) = serve(stream, state.clone(), port).await {
                        // Kept for take_calls: a panic here would die with the task unseen.
                        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
                        state.errors.push(error.to_string());
                    }
                });
            }
        });
        FakeKafka { address, state }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every call so far, and forgets them. Fails the test if a connection failed.
    pub fn take_calls(&self) -> Vec<Call> {
        let mut state = self.state();
        assert!(
            state.errors.is_empty(),
            "fake Kafka failed: {:?}",
            state.errors
        );
        std::mem::take(&mut state.calls)
    }

    /// A topic that exists before the operator looks (created by someone else).
    pub fn seed_topic(&self, name: &str, partitions: Vec<Vec<i32>>) {
        let mut state = self.state();
        let id = state.next_topic_id;
        state.next_topic_id += 1;
        state.topics.insert(
            name.to_string(),
            FakeTopic {
                id,
                partitions,
                configs: BTreeMap::new(),
            },
        );
    }

    /// The brokers support `supported` (feature, min, max) and the cluster finalized
    /// `finalized`, as a cluster formatted by an earlier release would say.
    pub fn set_features(&self, supported: &[(&str, i16, i16)], finalized: &[(&str, i16)]) {
        let mut state = self.state();
        state.features.supported = supported
            .iter()
            .map(|(name, min, max)| (name.to_string(), (*min, *max)))
            .collect();
        state.features.finalized = finalized
            .iter()
            .map(|(name, level)| (name.to_string(), *level))
            .collect();
        state.features.epoch += 1;
    }

    /// `Some(reason)`: the controller refuses every UpdateFeatures with it.
    pub fn refuse_feature_updates(&self, reason: Option<&str>) {
        self.state().features.refusal = reason.map(str::to_string);
    }

    /// `Some(broker)`: that broker leaves every ISR (its partitions are under-replicated);
    /// `None`: every replica is in sync again.
    pub fn fall_behind(&self, broker: Option<i32>) {
        self.state().behind = broker;
    }

    /// The topic's configs and partition count as the fake holds them.
    pub fn topic(&self, name: &str) -> Option<(usize, BTreeMap<String, String>)> {
        self.state()
            .topics
            .get(name)
            .map(|t| (t.partitions.len(), t.configs.clone()))
    }
}

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn topic_name(s: &str) -> TopicName {
    TopicName(text(s))
}

fn uuid(id: u128) -> uuid::Uuid {
    uuid::Uuid::from_u128(id)
}

async fn serve(mut stream: TcpStream, state: Arc<Mutex<State>>, port: u16) -> anyhow::Result<()> {
    loop {
        let size = match stream.read_i32().await {
            Ok(size) => usize::try_from(size)?,
            // The operator closes its connection after each reconcile step.
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => return Ok(()),
            Err(error) => return Err(error.into()),
        };
        let mut frame = vec![0_u8; size];
        stream.read_exact(&mut frame).await?;
        let mut body = Bytes::from(frame);
        let key = ApiKey::try_from((&body[0..2]).get_i16())
            .map_err(|()| anyhow::anyhow!("unknown API key"))?;
        let version = (&body[2..4]).get_i16();
        let header = RequestHeader::decode(&mut body, key.request_header_version(version))?;
        let answer = {
            let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
            answer(&mut state, key, version, &mut body, port)?
        };
        let mut out = BytesMut::new();
        ResponseHeader::default()
            .with_correlation_id(header.correlation_id)
            .encode(&mut out, key.response_header_version(version))?;
        out.extend_from_slice(&answer);
        let mut framed = BytesMut::with_capacity(out.len() + 4);
        framed.put_i32(i32::try_from(out.len())?);
        framed.extend_from_slice(&out);
        stream.write_all(&framed).await?;
    }
}

fn encode<R: Encodable>(response: &R, version: i16) -> anyhow::Result<BytesMut> {
    let mut out = BytesMut::new();
    response.encode(&mut out, version)?;
    Ok(out)
}

fn supported<R: Request>() -> ApiVersion {
    ApiVersion::default()
        .with_api_key(R::KEY)
        .with_min_version(R::VERSIONS.min)
        .with_max_version(R::VERSIONS.max)
}

fn answer(
    state: &mut State,
    key: ApiKey,
    version: i16,
    body: &mut Bytes,
    port: u16,
) -> anyhow::Result<BytesMut> {
    match key {
        ApiKey::ApiVersions => {
            ApiVersionsRequest::decode(body, version)?;
            let response = ApiVersionsResponse::default().with_api_keys(vec![
                supported::<ApiVersionsRequest>(),
                supported::<MetadataRequest>(),
                supported::<CreateTopicsRequest>(),
                supported::<CreatePartitionsRequest>(),
                supported::<DeleteTopicsRequest>(),
                supported::<DescribeConfigsRequest>(),
                supported::<IncrementalAlterConfigsRequest>(),
                supported::<UpdateFeaturesRequest>(),
            ]);
            encode(
                &features::listed(response, version, &state.features),
                version,
            )
        }
        ApiKey::UpdateFeatures => {
            let State {
                features, calls, ..
            } = state;
            features::update(features, calls, body, version)
        }
        ApiKey::Metadata => {
            let request = MetadataRequest::decode(body, version)?;
            let topics = request.topics.map(|topics| {
                topics
                    .iter()
                    .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
                    .collect::<Vec<_>>()
            });
            state.calls.push(Call::Metadata {
                topics: topics.clone(),
            });
            encode(&metadata(state, topics, port), version)
        }
        ApiKey::CreateTopics => {
            let request = CreateTopicsRequest::decode(body, version)?;
            let mut results = Vec::new();
            for topic in request.topics {
                let name = topic.name.0.to_string();
                let assignment: Vec<Vec<i32>> = topic
                    .assignments
                    .iter()
                    .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
                    .collect();
                let configs: BTreeMap<String, String> = topic
                    .configs
                    .iter()
                    .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
                    .collect();
                state.calls.push(Call::CreateTopics {
                    name: name.clone(),
                    partitions: topic.num_partitions,
                    replication_factor: topic.replication_factor,
                    assignment: assignment.clone(),
                    configs: configs.clone(),
                });
                let mut result = CreatableTopicResult::default().with_name(topic_name(&name));
                if state.topics.contains_key(&name) {
                    result = result.with_error_code(TOPIC_ALREADY_EXISTS);
                } else {
                    let partitions = if assignment.is_empty() {
                        round_robin(state, topic.num_partitions, topic.replication_factor, 0)
                    } else {
                        assignment
                    };
                    let id = state.next_topic_id;
                    state.next_topic_id += 1;
                    result = result
                        .with_topic_id(uuid(id))
                        .with_num_partitions(i32::try_from(partitions.len())?)
                        .with_replication_factor(i16::try_from(
                            partitions.first().map_or(0, Vec::len),
                        )?);
                    state.topics.insert(
                        name,
                        FakeTopic {
                            id,
                            partitions,
                            configs,
                        },
                    );
                }
                results.push(result);
            }
            encode(
                &CreateTopicsResponse::default().with_topics(results),
                version,
            )
        }
        ApiKey::CreatePartitions => {
            let request = CreatePartitionsRequest::decode(body, version)?;
            let mut results = Vec::new();
            for topic in request.topics {
                let name = topic.name.0.to_string();
                state.calls.push(Call::CreatePartitions {
                    name: name.clone(),
                    count: topic.count,
                });
                let mut result =
                    CreatePartitionsTopicResult::default().with_name(topic_name(&name));
                let existing = state
                    .topics
                    .get(&name)
                    .map(|t| (t.partitions.len(), t.partitions.first().map_or(0, Vec::len)));
                match existing {
                    None => result = result.with_error_code(UNKNOWN_TOPIC_OR_PARTITION),
                    Some((count, _)) if usize::try_from(topic.count)? <= count => {
                        result = result.with_error_code(INVALID_PARTITIONS);
                    }
                    Some((count, factor)) => {
                        let added = topic.count - i32::try_from(count)?;
                        let more = round_robin(
                            state,
                            added,
                            i16::try_from(factor)?,
                            i32::try_from(count)?,
                        );
                        if let Some(t) = state.topics.get_mut(&name) {
                            t.partitions.extend(more);
                        }
                    }
                }
                results.push(result);
            }
            encode(
                &CreatePartitionsResponse::default().with_results(results),
                version,
            )
        }
        ApiKey::DeleteTopics => {
            let request = DeleteTopicsRequest::decode(body, version)?;
            let names: Vec<String> = request
                .topic_names
                .iter()
                .map(|n| n.0.to_string())
                .chain(
                    request
                        .topics
                        .iter()
                        .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string())),
                )
                .collect();
            state.calls.push(Call::DeleteTopics {
                names: names.clone(),
            });
            let responses = names
                .iter()
                .map(|name| {
                    let code = if state.topics.remove(name).is_some() {
                        0
                    } else {
                        UNKNOWN_TOPIC_OR_PARTITION
                    };
                    DeletableTopicResult::default()
                        .with_name(Some(topic_name(name)))
                        .with_error_code(code)
                })
                .collect();
            encode(
                &DeleteTopicsResponse::default().with_responses(responses),
                version,
            )
        }
        ApiKey::DescribeConfigs => {
            let request = DescribeConfigsRequest::decode(body, version)?;
            let mut results = Vec::new();
            for resource in request.resources {
                let name = resource.resource_name.to_string();
                state
                    .calls
                    .push(Call::DescribeConfigs { name: name.clone() });
                let mut result = DescribeConfigsResult::default()
                    .with_resource_type(resource.resource_type)
                    .with_resource_name(resource.resource_name.clone());
                match state.topics.get(&name) {
                    None => result = result.with_error_code(UNKNOWN_TOPIC_OR_PARTITION),
                    Some(topic) => {
                        // Kafka: a null key list asks for every config, a list (even an
                        // empty one) for exactly those keys.
                        let wanted = |key: &str| {
                            resource
                                .configuration_keys
                                .as_ref()
                                .is_none_or(|keys| keys.iter().any(|k| k.as_str() == key))
                        };
                        let mut configs: Vec<DescribeConfigsResourceResult> = topic
                            .configs
                            .iter()
                            .filter(|(k, _)| wanted(k))
                            .map(|(k, v)| {
                                DescribeConfigsResourceResult::default()
                                    .with_name(text(k))
                                    .with_value(Some(text(v)))
                                    .with_config_source(SOURCE_DYNAMIC_TOPIC)
                            })
                            .collect();
                        if !topic.configs.contains_key(DEFAULT_CONFIG.0) && wanted(DEFAULT_CONFIG.0)
                        {
                            configs.push(
                                DescribeConfigsResourceResult::default()
                                    .with_name(text(DEFAULT_CONFIG.0))
                                    .with_value(Some(text(DEFAULT_CONFIG.1)))
                                    .with_config_source(SOURCE_DEFAULT),
                            );
                        }
                        result = result.with_configs(configs);
                    }
                }
                results.push(result);
            }
            encode(
                &DescribeConfigsResponse::default().with_results(results),
                version,
            )
        }
        ApiKey::IncrementalAlterConfigs => {
            let request = IncrementalAlterConfigsRequest::decode(body, version)?;
            let mut responses = Vec::new();
            for resource in request.resources {
                let name = resource.resource_name.to_string();
                let mut set = BTreeMap::new();
                let mut delete = Vec::new();
                for config in &resource.configs {
                    match (config.config_operation, &config.value) {
                        (0, Some(value)) => {
                            set.insert(config.name.to_string(), value.to_string());
                        }
                        (1, _) => delete.push(config.name.to_string()),
                        (operation, _) => anyhow::bail!("unexpected config operation {operation}"),
                    }
                }
                state.calls.push(Call::AlterConfigs {
                    name: name.clone(),
                    set: set.clone(),
                    delete: delete.clone(),
                });
                let mut response = AlterConfigsResourceResponse::default()
                    .with_resource_type(resource.resource_type)
                    .with_resource_name(resource.resource_name.clone());
                match state.topics.get_mut(&name) {
                    None => response = response.with_error_code(UNKNOWN_TOPIC_OR_PARTITION),
                    Some(topic) => {
                        topic.configs.extend(set);
                        for key in delete {
                            topic.configs.remove(&key);
                        }
                    }
                }
                responses.push(response);
            }
            encode(
                &IncrementalAlterConfigsResponse::default().with_responses(responses),
                version,
            )
        }
        other => anyhow::bail!("the fake does not serve {other:?}"),
    }
}

/// `count` partitions of `factor` replicas over the brokers, starting at partition `first`.
fn round_robin(state: &State, count: i32, factor: i16, first: i32) -> Vec<Vec<i32>> {
    let ids: Vec<i32> = state.brokers.keys().copied().collect();
    (first..first + count)
        .map(|p| {
            (0..i32::from(factor))
                .map(|r| ids[usize::try_from(p + r).unwrap() % ids.len()])
                .collect()
        })
        .collect()
}

fn metadata(state: &State, topics: Option<Vec<String>>, port: u16) -> MetadataResponse {
    let brokers = state
        .brokers
        .iter()
        .map(|(id, rack)| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(*id))
                .with_host(text("127.0.0.1"))
                .with_port(i32::from(port))
                .with_rack(Some(text(rack)))
        })
        .collect();
    let names: Vec<String> = topics.unwrap_or_else(|| state.topics.keys().cloned().collect());
    let topics = names
        .iter()
        .map(|name| {
            let Some(topic) = state.topics.get(name) else {
                return MetadataResponseTopic::default()
                    .with_name(Some(topic_name(name)))
                    .with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
            };
            let partitions = topic
                .partitions
                .iter()
                .enumerate()
                .map(|(index, replicas)| {
                    let in_sync = replicas
                        .iter()
                        .filter(|r| Some(**r) != state.behind)
                        .map(|r| BrokerId(*r))
                        .collect();
                    MetadataResponsePartition::default()
                        .with_partition_index(i32::try_from(index).unwrap())
                        .with_leader_id(BrokerId(replicas.first().copied().unwrap_or(-1)))
                        .with_replica_nodes(replicas.iter().map(|r| BrokerId(*r)).collect())
                        .with_isr_nodes(in_sync)
                })
                .collect();
            MetadataResponseTopic::default()
                .with_name(Some(topic_name(name)))
                .with_topic_id(uuid(topic.id))
                .with_partitions(partitions)
        })
        .collect();
    MetadataResponse::default()
        .with_brokers(brokers)
        .with_cluster_id(Some(text("fake")))
        .with_controller_id(BrokerId(state.brokers.keys().next().copied().unwrap_or(-1)))
        .with_topics(topics)
}
