//! AlterConfigs (the legacy, non-incremental form): a topic's configs are replaced by
//! exactly the set given — keys left out fall back to the broker defaults. The new
//! configs are checked as a whole and take effect on the live logs at once.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::alter_configs_request::AlterConfigsResource;
use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse, ApiKey};

use super::admin::AdminError;
use super::configs::{ConfigResource, alter_broker, alter_if_authorized, duplicate_key};
use super::{Api, HandlerFuture, RequestContext};
use crate::state::BrokerState;

#[derive(Debug)]
pub struct AlterConfigsApi;

impl Api for AlterConfigsApi {
    fn key(&self) -> ApiKey {
        ApiKey::AlterConfigs
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: AlterConfigsRequest = context.decode(body)?;
            let mut responses = Vec::with_capacity(request.resources.len());
            let access = context.access();
            for resource in &request.resources {
                let (code, message) = alter_if_authorized(
                    &access,
                    "AlterConfigs",
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
            context.respond(&AlterConfigsResponse::default().with_responses(responses))
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
    let target = ConfigResource::resolve(broker, resource.resource_type, &resource.resource_name)?;
    let configs = resource
        .configs
        .iter()
        .map(|config| {
            let value = config
                .value
                .as_ref()
                .ok_or_else(|| AdminError::NullValue(config.name.to_string()))?;
            Ok((config.name.to_string(), value.trim().to_string()))
        })
        .collect::<Result<BTreeMap<_, _>, AdminError>>()?;
    let ConfigResource::Topic(topic) = target else {
        // AlterConfigs replaces the whole dynamic set of the broker resource.
        return alter_broker(broker, &target, configs, validate_only).await;
    };
    broker
        .controller
        .set_topic_configs(&topic.name, configs, validate_only)
        .await?;
    if !validate_only {
        tracing::info!(topic = %topic.name, "Replaced topic configs");
    }
    Ok(())
}
