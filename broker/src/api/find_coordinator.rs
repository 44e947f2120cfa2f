//! FindCoordinator: the coordinator of a group is the leader of its
//! `__consumer_offsets` partition. The topic is created on the first request, as Kafka
//! does, with `offsets.topic.replication.factor` capped to the live brokers.

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

const KEY_TYPE_GROUP: i8 = 0;

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
            let offsets_ready = if request.key_type == KEY_TYPE_GROUP {
                ensure_offsets_topic(broker).await
            } else {
                false
            };
            let image = broker.controller.image();
            let access = context.access();
            let answer = |key: &StrBytes| -> Coordinator {
                let coordinator = if request.key_type != KEY_TYPE_GROUP {
                    // Transactions have no coordinator yet.
                    Err(errors::COORDINATOR_NOT_AVAILABLE)
                } else if key.is_empty() {
                    Err(errors::INVALID_REQUEST)
                } else if !access.allows(Operation::Describe, ResourceType::Group, key) {
                    Err(errors::GROUP_AUTHORIZATION_FAILED)
                } else if !offsets_ready {
                    Err(errors::COORDINATOR_NOT_AVAILABLE)
                } else {
                    image
                        .topics
                        .get(OFFSETS_TOPIC)
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
    if broker.controller.image().topics.contains_key(OFFSETS_TOPIC) {
        return true;
    }
    let live = broker.controller.image().live_brokers().count();
    let wanted = broker.config.offsets_topic_replication_factor;
    let replication_factor = wanted.min(i16::try_from(live).unwrap_or(i16::MAX)).max(1);
    if replication_factor < wanted {
        tracing::warn!(
            wanted,
            live_brokers = live,
            "Creating __consumer_offsets with replication factor {replication_factor}: fewer live brokers than offsets.topic.replication.factor"
        );
    }
    let configs = [("cleanup.policy".to_string(), "compact".to_string())].into();
    let created = broker
        .controller
        .create_topic(
            OFFSETS_TOPIC,
            broker.config.groups.offsets_partitions,
            replication_factor,
            configs,
            false,
        )
        .await;
    match created {
        Ok(_) | Err(ControllerError::TopicAlreadyExists(_)) => true,
        Err(error) => {
            tracing::warn!(%error, "Cannot create __consumer_offsets yet");
            false
        }
    }
}
