//! Finding topics by name or id, auto-creating them where Kafka would, and finding the
//! replica of a partition this broker leads.

use std::sync::Arc;

use uuid::Uuid;

use super::errors;
use crate::controller::{ControllerError, validate_topic_name};
use crate::metadata::image::TopicImage;
use crate::model::TopicPartition;
use crate::replication::{Partition, Serving};
use crate::state::BrokerState;

/// The topic named `name`, created with broker defaults when auto-creation is allowed.
pub async fn topic_or_create(
    broker: &BrokerState,
    name: &str,
    allow_create: bool,
) -> Result<Arc<TopicImage>, i16> {
    if let Some(topic) = broker.controller.image().topics.get(name) {
        return Ok(Arc::clone(topic));
    }
    if let Err(error) = validate_topic_name(name) {
        return Err(errors::controller_error(&error));
    }
    if !(allow_create && broker.config.auto_create_topics) {
        return Err(errors::UNKNOWN_TOPIC_OR_PARTITION);
    }
    let created = broker
        .controller
        .create_topic(
            name,
            broker.config.num_partitions,
            broker.config.default_replication_factor,
            Default::default(),
            false,
        )
        .await;
    match created {
        Ok(topic) => Ok(Arc::new(topic)),
        // Another request created it first.
        Err(ControllerError::TopicAlreadyExists(_)) => broker
            .controller
            .image()
            .topics
            .get(name)
            .cloned()
            .ok_or(errors::LEADER_NOT_AVAILABLE),
        Err(error) => {
            tracing::warn!(topic = name, %error, "Auto-creating a topic failed");
            // While the quorum cannot take the topic, clients retry (as they do while
            // Kafka's controller is unavailable).
            Err(match error {
                ControllerError::NotController(_) | ControllerError::Timeout(_) => {
                    errors::LEADER_NOT_AVAILABLE
                }
                other => errors::controller_error(&other),
            })
        }
    }
}

/// The topic's name for a request that names it by id (newer Produce/Fetch versions) or
/// by name.
pub fn topic_name(broker: &BrokerState, name: &str, topic_id: &Uuid) -> Option<String> {
    if !topic_id.is_nil() {
        return broker
            .controller
            .image()
            .topic_by_id(topic_id)
            .map(|t| t.name.clone());
    }
    (!name.is_empty()).then(|| name.to_string())
}

/// The replica and leader epoch of a partition this broker leads: an unknown partition
/// is UNKNOWN_TOPIC_OR_PARTITION, one led elsewhere (or by nobody) NOT_LEADER_OR_FOLLOWER,
/// so clients refresh their metadata and go to the leader. A client's
/// `current_leader_epoch` (-1: not given) older than the leader's is FENCED_LEADER_EPOCH,
/// a newer one UNKNOWN_LEADER_EPOCH (this broker has not seen that epoch yet).
pub fn leader_partition(
    broker: &BrokerState,
    topic_partition: &TopicPartition,
    current_leader_epoch: i32,
) -> Result<(Arc<Partition>, i32), i16> {
    serving_partition(
        broker,
        topic_partition,
        current_leader_epoch,
        Serving::Leader,
    )
}

/// As [`leader_partition`], for the replicas `who` names (a follower will do for
/// consumers that may read from followers, KIP-392).
pub fn serving_partition(
    broker: &BrokerState,
    topic_partition: &TopicPartition,
    current_leader_epoch: i32,
    who: Serving,
) -> Result<(Arc<Partition>, i32), i16> {
    let image = broker.controller.image();
    if image
        .partition(&topic_partition.topic, topic_partition.partition)
        .is_none()
    {
        return Err(errors::UNKNOWN_TOPIC_OR_PARTITION);
    }
    broker
        .replicas
        .serving(topic_partition, current_leader_epoch, who)
}
