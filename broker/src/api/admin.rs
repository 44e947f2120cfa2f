//! What the admin APIs share: the ways an admin request is refused, and the checks
//! every one of them makes (duplicate names, which topic a name or id means).

use std::collections::HashSet;
use std::sync::Arc;

use uuid::Uuid;

use crate::controller::{ControllerError, validate_topic_name};
use crate::metadata::image::TopicImage;
use crate::state::BrokerState;
use crate::storage::LogError;

/// Why one topic, partition or config resource of an admin request was refused. The
/// Kafka error code of each is chosen in [`super::errors::admin_error`].
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("topic `{0}` appears more than once in the request")]
    DuplicateTopic(String),
    #[error("not authorized to {operation:?} topic `{topic}`")]
    TopicAuthorization {
        topic: String,
        operation: crate::security::acl::Operation,
    },
    #[error("not authorized to {0:?} the cluster")]
    ClusterAuthorization(crate::security::acl::Operation),
    #[error("Topic deletion is disabled.")]
    TopicDeletionDisabled,
    #[error("config `{0}` appears more than once for the same resource")]
    DuplicateConfig(String),
    #[error("topic id {0} does not exist")]
    UnknownTopicId(Uuid),
    #[error("partition {partition} of topic `{topic}` does not exist")]
    UnknownPartition { topic: String, partition: i32 },
    #[error("this broker does not lead partition {partition} of topic `{topic}`")]
    NotLeader { topic: String, partition: i32 },
    #[error("give a topic name or a topic id, not both")]
    NameAndId,
    #[error("resource type {0} is not supported")]
    UnsupportedResourceType(i8),
    #[error("broker id must be an integer, but it is: `{0}`")]
    BrokerIdNotInteger(String),
    #[error(
        "unexpected broker id, expected {expected} or an empty string, but received {received}"
    )]
    UnexpectedBrokerId { expected: i32, received: i32 },
    #[error("Cannot update these configs dynamically: Set({0})")]
    NotDynamic(String),
    #[error("a null value is not supported for config `{0}`")]
    NullValue(String),
    #[error("config operation {0} is not one of SET (0), DELETE (1), APPEND (2), SUBTRACT (3)")]
    UnknownOperation(i8),
    #[error("can't {operation} to key {key} because its type is not LIST")]
    NotAList {
        operation: &'static str,
        key: String,
    },
    #[error("invalid replica assignment: {0}")]
    InvalidReplicaAssignment(String),
    #[error("records of {topic}-{partition} cannot be deleted: its cleanup.policy is compact")]
    CompactedTopic { topic: String, partition: i32 },
    #[error("offset {offset} is out of range for {topic}-{partition}: {reason}")]
    OffsetOutOfRange {
        topic: String,
        partition: i32,
        offset: i64,
        reason: String,
    },
    #[error("endpoint type {0} is not served by a broker listener")]
    UnsupportedEndpointType(i8),
    #[error(transparent)]
    Controller(#[from] ControllerError),
    #[error(transparent)]
    Log(#[from] LogError),
}

/// Names that occur more than once in a request; Kafka refuses each such entry.
pub fn duplicates<'a>(names: impl IntoIterator<Item = &'a str>) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut twice = HashSet::new();
    for name in names {
        if !seen.insert(name) {
            twice.insert(name.to_string());
        }
    }
    twice
}

/// The existing topic `name`: an invalid name and an unknown topic are told apart, as
/// Kafka does.
pub fn existing_topic(broker: &BrokerState, name: &str) -> Result<Arc<TopicImage>, AdminError> {
    validate_topic_name(name)?;
    broker
        .controller
        .image()
        .topics
        .get(name)
        .cloned()
        .ok_or_else(|| ControllerError::UnknownTopic(name.to_string()).into())
}
