//! FindCoordinator: the coordinator of a group is the leader of its
//! `__consumer_offsets` partition, the coordinator of a transactional id the leader of
//! its `__transaction_state` partition. Each topic is created on the first request for
//! it, as Kafka does, with its replication factor capped to the live brokers.

use bytes::Bytes;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{ApiKey, BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::controller::ControllerError;
use crate::group::OFFSETS_TOPIC;
use crate::group::records::partition_for;
use crate::security::acl::{Operation, ResourceType};
use crate::state::BrokerState;
use crate::txn::TRANSACTION_STATE_TOPIC;

const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

#[derive(Debug)]
pub struct FindCoordinatorApi;

impl Api for FindCoordinatorApi {
    fn key(&self) -> ApiKey {
        ApiKey::FindCoordinator
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: FindCoordinatorRequest = context.decode(body)?;
            let broker = context.broker;
            let (topic, resource, denied) = match request.key_type {
                KEY_TYPE_GROUP => (
                    OFFSETS_TOPIC,
                    ResourceType::Group,
                    errors::GROUP_AUTHORIZATION_FAILED,
                ),
                KEY_TYPE_TRANSACTION => (
                    TRANSACTION_STATE_TOPIC,
                    ResourceType::TransactionalId,
                    errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                ),
                _ => ("", ResourceType::Group, errors::INVALID_REQUEST),
            };
            let ready = match request.key_type {
                KEY_TYPE_GROUP => ensure_offsets_topic(broker).await,
                KEY_TYPE_TRANSACTION => ensure_transaction_state_topic(broker).await,
                _ => false,
            };
            let image = broker.controller.image();
            let access = context.access();
            let answer = |key: &StrBytes| -> Coordinator {
                // An unknown key type. An empty key is a key as any other, as in Kafka.
                let coordinator = if topic.is_empty() {
                    Err(errors::INVALID_REQUEST)
                } else if !access.allows(Operation::Describe, resource, key) {
                    Err(denied)
                } else if !ready {
                    Err(errors::COORDINATOR_NOT_AVAILABLE)
                } else {
                    image
                        .topics
                        .get(topic)
                        .and_then(|t| t.partition(partition_for(key, t.partition_count())))
                        .and_then(|p| image.brokers.get(&p.leader))
                        .filter(|b| !b.fenced)
                        .and_then(|b| Some((b, b.endpoint_for(context.listener)?)))
                        .ok_or(errors::COORDINATOR_NOT_AVAILABLE)
                };
                match coordinator {
                    Err(code) => Coordinator::default()
                        .with_key(key.clone())
                        .with_node_id(BrokerId(-1))
                        .with_host(StrBytes::from_static_str(""))
                        .with_port(-1)
                        .with_error_code(code),
                    Ok((leader, endpoint)) => Coordinator::default()
                        .with_key(key.clone())
                        .with_node_id(BrokerId(leader.node_id))
                        .with_host(StrBytes::from_string(endpoint.host.clone()))
                        .with_port(i32::from(endpoint.port))
                        .with_error_code(errors::NONE),
                }
            };
            let response = if context.version >= 4 {
                FindCoordinatorResponse::default()
                    .with_coordinators(request.coordinator_keys.iter().map(answer).collect())
            } else {
                let one = answer(&request.key);
                FindCoordinatorResponse::default()
                    .with_error_code(one.error_code)
                    .with_node_id(one.node_id)
                    .with_host(one.host)
                    .with_port(one.port)
            };
            context.respond(&response)
        })
    }
}

/// Creates the compacted `__consumer_offsets` topic if it does not exist yet; whether it
/// exists now.
async fn ensure_offsets_topic(broker: &BrokerState) -> bool {
    ensure_internal_topic(
        broker,
        OFFSETS_TOPIC,
        broker.config.groups.offsets_partitions,
        broker.config.offsets_topic_replication_factor,
        None,
    )
    .await
}

/// Creates the compacted `__transaction_state` topic (`transaction.state.log.*`) if it
/// does not exist yet; whether it exists now.
async fn ensure_transaction_state_topic(broker: &BrokerState) -> bool {
    let config = &broker.config.transactions;
    ensure_internal_topic(
        broker,
        TRANSACTION_STATE_TOPIC,
        config.state_partitions,
        config.state_replication_factor,
        Some(config.state_min_isr),
    )
    .await
}

/// Creates a compacted internal topic with `wanted` replicas capped to the live brokers
/// (and `min.insync.replicas` capped to the replicas); whether it exists now.
async fn ensure_internal_topic(
    broker: &BrokerState,
    topic: &str,
    partitions: i32,
    wanted: i16,
    min_isr: Option<i32>,
) -> bool {
    if broker.controller.image().topics.contains_key(topic) {
        return true;
    }
    let live = broker.controller.image().live_brokers().count();
    let replication_factor = wanted.min(i16::try_from(live).unwrap_or(i16::MAX)).max(1);
    if replication_factor < wanted {
        tracing::warn!(
            topic,
            wanted,
            live_brokers = live,
            "Creating an internal topic with replication factor {replication_factor}: fewer live brokers than asked for"
        );
    }
    let mut configs: std::collections::BTreeMap<String, String> =
        [("cleanup.policy".to_string(), "compact".to_string())].into();
    if let Some(min_isr) = min_isr {
        configs.insert(
            "min.insync.replicas".to_string(),
            min_isr.min(i32::from(replication_factor)).to_string(),
        );
    }
    let created = broker
        .controller
        .create_topic(topic, partitions, replication_factor, configs, false)
        .await;
    match created {
        Ok(_) | Err(ControllerError::TopicAlreadyExists(_)) => true,
        Err(error) => {
            tracing::warn!(topic, %error, "Cannot create the internal topic yet");
            false
        }
    }
}
