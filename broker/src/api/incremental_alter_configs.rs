//! IncrementalAlterConfigs: SET, DELETE (back to the broker default), APPEND and
//! SUBTRACT (list configs only) on a topic's configs. All operations of a resource are
//! applied together or not at all, and take effect on the live logs at once.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{
    ApiKey, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};

use super::admin::AdminError;
use super::configs::{
    ConfigResource, TYPE_LIST, alter_broker, alter_if_authorized, duplicate_key, topic_config_type,
};
use super::{Api, HandlerFuture, RequestContext};
use crate::controller::ControllerError;
use crate::metadata::image::TopicImage;
use crate::state::BrokerState;
use crate::storage::LogConfigError;

#[derive(Debug)]
pub struct IncrementalAlterConfigsApi;

/// Kafka's `AlterConfigOp.OpType` ids.
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

impl Api for IncrementalAlterConfigsApi {
    fn key(&self) -> ApiKey {
        ApiKey::IncrementalAlterConfigs
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: IncrementalAlterConfigsRequest = context.decode(body)?;
            let mut responses = Vec::with_capacity(request.resources.len());
            let access = context.access();
            for resource in &request.resources {
                let (code, message) = alter_if_authorized(
                    &access,
                    "IncrementalAlterConfigs",
                    resource.resource_type,
                    &resource.resource_name,
                    alter(context.broker, resource, request.validate_only),
                )
                .await;
                responses.push(
                    AlterConfigsResourceResponse::default()
                        .with_resource_type(resource.resource_type)
                        .with_resource_name(resource.resource_name.clone())
                        .with_error_code(code)
                        .with_error_message(message),
                );
            }
            context.respond(&IncrementalAlterConfigsResponse::default().with_responses(responses))
        })
    }
}

async fn alter(
    broker: &BrokerState,
    resource: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), AdminError> {
    let keys: Vec<String> = resource
        .configs
        .iter()
        .map(|c| c.name.to_string())
        .collect();
    duplicate_key(&keys)?;
    for config in &resource.configs {
        if !matches!(config.config_operation, OP_SET..=OP_SUBTRACT) {
            return Err(AdminError::UnknownOperation(config.config_operation));
        }
        if config.config_operation != OP_DELETE && config.value.is_none() {
            return Err(AdminError::NullValue(config.name.to_string()));
        }
    }
    let target = ConfigResource::resolve(broker, resource.resource_type, &resource.resource_name)?;
    let ConfigResource::Topic(topic) = target else {
        let node_id = super::configs::broker_node(broker, &target);
        let mut configs = broker
            .controller
            .image()
            .broker_configs
            .get(&node_id)
            .cloned()
            .unwrap_or_default();
        for config in &resource.configs {
            let key = config.name.to_string();
            match config.config_operation {
                // Deleting a key that is not set changes nothing, as in Kafka
                // (kafka-reassign-partitions clears the throttle keys this way).
                OP_DELETE => {
                    configs.remove(&key);
                }
                OP_SET => {
                    let value = config.value.as_deref().unwrap_or_default().trim();
                    configs.insert(key, value.to_string());
                }
                operation => return Err(not_a_list(operation, key)),
            }
        }
        return alter_broker(broker, &target, configs, validate_only).await;
    };
    let mut configs = topic.configs.clone();
    for config in &resource.configs {
        apply(broker, &topic, &mut configs, config)?;
    }
    broker
        .controller
        .set_topic_configs(&topic.name, configs, validate_only)
        .await?;
    if !validate_only {
        tracing::info!(topic = %topic.name, "Altered topic configs");
    }
    Ok(())
}

/// Applies one operation to the topic's own configs.
fn apply(
    broker: &BrokerState,
    topic: &TopicImage,
    configs: &mut BTreeMap<String, String>,
    config: &AlterableConfig,
) -> Result<(), AdminError> {
    let key = config.name.to_string();
    let value = config
        .value
        .as_ref()
        .map(|v| v.trim().to_string())
        .unwrap_or_default();
    let operation = config.config_operation;
    if operation == OP_DELETE {
        // Deleting a key that is not set (or not known) changes nothing, as in Kafka.
        configs.remove(&key);
        return Ok(());
    }
    if oxbow_config_keys::topic_key(&key).is_none() {
        return Err(ControllerError::from(LogConfigError::UnknownKey { key }).into());
    }
    if operation == OP_SET {
        configs.insert(key, value);
        return Ok(());
    }
    if topic_config_type(&key) != TYPE_LIST {
        return Err(not_a_list(operation, key));
    }
    // The list in effect now: the topic's own value, else the broker default.
    let current = match configs.get(&key) {
        Some(current) => current.clone(),
        None => broker
            .controller
            .log_config_for(topic)
            .map_err(ControllerError::from)?
            .to_topic_configs()
            .get(key.as_str())
            .cloned()
            .unwrap_or_default(),
    };
    let mut items: Vec<String> = split_list(&current);
    let operands = split_list(&value);
    if operation == OP_APPEND {
        for item in operands {
            if !items.contains(&item) {
                items.push(item);
            }
        }
    } else {
        items.retain(|item| !operands.contains(item));
    }
    configs.insert(key, items.join(","));
    Ok(())
}

fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// APPEND or SUBTRACT on a key that is not a list.
fn not_a_list(operation: i8, key: String) -> AdminError {
    AdminError::NotAList {
        operation: if operation == OP_APPEND {
            "APPEND"
        } else {
            "SUBTRACT"
        },
        key,
    }
}
