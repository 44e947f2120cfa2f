//! Finding topics by name or id, and auto-creating them where Kafka would.

use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::errors;
use crate::controller::image::TopicImage;
use crate::controller::{ControllerError, validate_topic_name};
use crate::state::BrokerState;

/// The topic named `name`, created with broker defaults when auto-creation is allowed.
pub fn topic_or_create(
    broker: &BrokerState,
    name: &str,
    allow_create: bool,
) -> Result<TopicImage, i16> {
    if let Some(topic) = broker.controller.image().topics.get(name) {
        return Ok(topic.clone());
    }
    if let Err(error) = validate_topic_name(name) {
        return Err(errors::controller_error(&error));
    }
    if !(allow_create && broker.config.auto_create_topics) {
        return Err(ResponseError::UnknownTopicOrPartition.code());
    }
    let created = broker.controller.create_topic(
        name,
        broker.config.num_partitions,
        broker.config.default_replication_factor,
        Default::default(),
        false,
    );
    match created {
        Ok(topic) => Ok(topic),
        // Another request created it first.
        Err(ControllerError::TopicAlreadyExists(_)) => broker
            .controller
            .image()
            .topics
            .get(name)
            .cloned()
            .ok_or(ResponseError::UnknownTopicOrPartition.code()),
        Err(error) => {
            tracing::warn!(topic = name, %error, "Auto-creating a topic failed");
            Err(errors::controller_error(&error))
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
