//! DeleteTopics: removes topics named by name (v1+) or by id (v6), with their data.
//! A name or id given twice is refused for every occurrence, as Kafka does.

use bytes::Bytes;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{ApiKey, DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use uuid::Uuid;

use super::admin::{AdminError, duplicates};
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::controller::ControllerError;
use crate::security::acl::{Operation, ResourceType};
use crate::state::BrokerState;

#[derive(Debug)]
pub struct DeleteTopicsApi;

impl Api for DeleteTopicsApi {
    fn key(&self) -> ApiKey {
        ApiKey::DeleteTopics
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DeleteTopicsRequest = context.decode(body)?;
            // v6 names topics in `topics` (by name or id); older versions in `topic_names`.
            let wanted: Vec<(Option<String>, Uuid)> = if context.version >= 6 {
                request
                    .topics
                    .iter()
                    .map(|t| (t.name.as_ref().map(|n| n.0.to_string()), t.topic_id))
                    .collect()
            } else {
                request
                    .topic_names
                    .iter()
                    .map(|n| (Some(n.0.to_string()), Uuid::nil()))
                    .collect()
            };
            let keys: Vec<String> = wanted
                .iter()
                .map(|(name, id)| name.clone().unwrap_or_else(|| id.to_string()))
                .collect();
            let twice = duplicates(keys.iter().map(String::as_str));
            let mut responses = Vec::with_capacity(keys.len());
            let access = context.access();
            let image = context.broker.controller.image();
            for ((name, topic_id), key) in wanted.into_iter().zip(&keys) {
                {
                    let outcome = if !context.broker.config.delete_topic_enable {
                        Err(AdminError::TopicDeletionDisabled)
                    } else if twice.contains(key) {
                        Err(AdminError::DuplicateTopic(key.clone()))
                    } else if let Some(denied) = name
                        .clone()
                        .or_else(|| image.topic_by_id(&topic_id).map(|t| t.name.clone()))
                        .filter(|n| !access.allows(Operation::Delete, ResourceType::Topic, n))
                    {
                        Err(AdminError::TopicAuthorization {
                            topic: denied,
                            operation: Operation::Delete,
                        })
                    } else {
                        delete(context.broker, name.as_deref(), topic_id).await
                    };
                    let result = DeletableTopicResult::default()
                        .with_name(name.map(|n| TopicName(StrBytes::from_string(n))))
                        .with_topic_id(topic_id);
                    responses.push(match outcome {
                        Ok((name, topic_id)) => result
                            .with_name(Some(TopicName(StrBytes::from_string(name))))
                            .with_topic_id(topic_id),
                        Err(error) => {
                            tracing::info!(topic = %key, %error, "DeleteTopics refused");
                            result
                                .with_error_code(errors::admin_error(&error))
                                .with_error_message(Some(StrBytes::from_string(error.to_string())))
                        }
                    });
                }
            }
            context.respond(&DeleteTopicsResponse::default().with_responses(responses))
        })
    }
}

/// Deletes the topic; returns its name and id.
async fn delete(
    broker: &BrokerState,
    name: Option<&str>,
    topic_id: Uuid,
) -> Result<(String, Uuid), AdminError> {
    let name = match (name, topic_id.is_nil()) {
        (Some(_), false) => return Err(AdminError::NameAndId),
        (Some(name), true) => name.to_string(),
        (None, false) => broker
            .controller
            .image()
            .topic_by_id(&topic_id)
            .map(|t| t.name.clone())
            .ok_or(AdminError::UnknownTopicId(topic_id))?,
        (None, true) => return Err(ControllerError::UnknownTopic(String::new()).into()),
    };
    let topic_id = broker.controller.delete_topic(&name).await?;
    Ok((name, topic_id))
}
