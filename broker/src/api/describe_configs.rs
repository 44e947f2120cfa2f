//! DescribeConfigs: a topic's effective configs or this broker's, each with its source,
//! synonyms (the chain of settings it falls back through) and, on request, its
//! documentation — as Kafka reports them (see [`super::configs`] and
//! [`crate::metadata::dynamic_configs`]).

use bytes::Bytes;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{ApiKey, DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;

use super::admin::AdminError;
use super::configs::{
    ConfigResource, SOURCE_DEFAULT_CONFIG, SOURCE_DYNAMIC_BROKER_CONFIG,
    SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG, SOURCE_STATIC_BROKER_CONFIG, SOURCE_TOPIC_CONFIG,
    broker_config_type, broker_default, broker_doc, broker_sets, broker_synonym, topic_config_type,
    topic_only_doc,
};
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::metadata::dynamic_configs::{CLUSTER_DEFAULT, dynamic_keys, is_dynamic};
use crate::metadata::image::TopicImage;
use crate::security::acl::Operation;
use crate::state::BrokerState;

#[derive(Debug)]
pub struct DescribeConfigsApi;

impl Api for DescribeConfigsApi {
    fn key(&self) -> ApiKey {
        ApiKey::DescribeConfigs
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DescribeConfigsRequest = context.decode(body)?;
            let options = Options {
                synonyms: request.include_synonyms,
                documentation: request.include_documentation,
            };
            let access = context.access();
            let results = request
                .resources
                .iter()
                .map(|resource| {
                    let result = DescribeConfigsResult::default()
                        .with_resource_type(resource.resource_type)
                        .with_resource_name(resource.resource_name.clone());
                    let described = super::configs::authorize(
                        &access,
                        resource.resource_type,
                        &resource.resource_name,
                        Operation::DescribeConfigs,
                    )
                    .and_then(|()| describe(context.broker, resource, options));
                    match described {
                        Ok(configs) => result.with_configs(configs),
                        Err(error) => {
                            tracing::info!(resource = %resource.resource_name, %error, "DescribeConfigs refused");
                            result
                                .with_error_code(errors::admin_error(&error))
                                .with_error_message(Some(StrBytes::from_string(error.to_string())))
                        }
                    }
                })
                .collect();
            context.respond(&DescribeConfigsResponse::default().with_results(results))
        })
    }
}

#[derive(Debug, Clone, Copy)]
struct Options {
    synonyms: bool,
    documentation: bool,
}

/// One config before it is put on the wire.
struct Entry {
    name: String,
    /// `None`: Kafka's null (a key whose default comes from a coarser key).
    value: Option<String>,
    source: i8,
    read_only: bool,
    config_type: i8,
    documentation: Option<&'static str>,
    /// (name, value, source), highest precedence first.
    synonyms: Vec<(String, String, i8)>,
}

fn describe(
    broker: &BrokerState,
    resource: &DescribeConfigsResource,
    options: Options,
) -> Result<Vec<DescribeConfigsResourceResult>, AdminError> {
    let entries =
        match ConfigResource::resolve(broker, resource.resource_type, &resource.resource_name)? {
            ConfigResource::Topic(topic) => topic_entries(broker, &topic)?,
            ConfigResource::Broker => {
                let mut entries = broker_entries(broker);
                entries.extend(
                    dynamic_entries(broker, broker.config.node_id)
                        .filter(|e| !broker.config.raw.contains_key(&e.name)),
                );
                entries
            }
            ConfigResource::BrokerDefaults => dynamic_entries(broker, CLUSTER_DEFAULT).collect(),
        };
    // Kafka: no key list means every config; a list means exactly those that exist.
    let wanted = |name: &str| {
        resource
            .configuration_keys
            .as_ref()
            .is_none_or(|keys| keys.iter().any(|k| k.as_str() == name))
    };
    Ok(entries
        .into_iter()
        .filter(|e| wanted(&e.name))
        .map(|entry| {
            // Kafka never sends a password's value (keys, key-store PEM strings): null,
            // marked sensitive, in synonyms too.
            let sensitive = entry.config_type == oxbow_config_keys::Kind::Password.kafka_code();
            let synonyms = if options.synonyms {
                entry
                    .synonyms
                    .into_iter()
                    .map(|(name, value, source)| {
                        DescribeConfigsSynonym::default()
                            .with_name(StrBytes::from_string(name))
                            .with_value(Some(StrBytes::from_string(value)).filter(|_| !sensitive))
                            .with_source(source)
                    })
                    .collect()
            } else {
                Vec::new()
            };
            DescribeConfigsResourceResult::default()
                .with_name(StrBytes::from_string(entry.name))
                .with_value(
                    entry
                        .value
                        .map(StrBytes::from_string)
                        .filter(|_| !sensitive),
                )
                .with_read_only(entry.read_only)
                .with_config_source(entry.source)
                .with_is_sensitive(sensitive)
                .with_synonyms(synonyms)
                .with_config_type(entry.config_type)
                .with_documentation(
                    entry
                        .documentation
                        .filter(|_| options.documentation)
                        .map(StrBytes::from_static_str),
                )
        })
        .collect())
}

/// Every topic config with the value in effect on the topic's logs.
fn topic_entries(broker: &BrokerState, topic: &TopicImage) -> Result<Vec<Entry>, AdminError> {
    let effective = broker
        .controller
        .log_config_for(topic)
        .map_err(crate::controller::ControllerError::from)?
        .to_topic_configs();
    Ok(effective
        .into_iter()
        .map(|(key, value)| {
            let broker_key = broker_synonym(key);
            let mut synonyms = Vec::new();
            if topic.configs.contains_key(key) {
                synonyms.push((key.to_string(), value.clone(), SOURCE_TOPIC_CONFIG));
            }
            if let Some(broker_key) = broker_key {
                let dynamic = dynamic_synonyms(broker, broker_key, broker.config.node_id);
                // Kafka lists the coarser default below dynamic settings only, not
                // below the topic's own.
                let after_dynamic = !dynamic.is_empty();
                synonyms.extend(dynamic);
                synonyms.extend(broker_synonyms_after(broker, broker_key, after_dynamic));
            }
            let source = synonyms
                .first()
                .map_or(SOURCE_DEFAULT_CONFIG, |(_, _, source)| *source);
            Entry {
                name: key.to_string(),
                value: Some(value),
                source,
                read_only: false,
                config_type: topic_config_type(key),
                documentation: broker_key
                    .and_then(broker_doc)
                    .or_else(|| topic_only_doc(key)),
                synonyms,
            }
        })
        .collect())
}

/// Broker keys whose Kafka default is null, the value coming from a coarser key (the
/// second, with its default; `None`: no default at all). Kafka lists that coarser
/// default as the last synonym only below a setting of the key itself, and describes
/// the unset key on a broker with a null value.
const NULL_DEFAULTS: &[(&str, Option<(&str, &str)>)] = &[
    ("log.roll.ms", Some(("log.roll.hours", "168"))),
    ("log.retention.ms", Some(("log.retention.hours", "168"))),
    ("log.roll.jitter.ms", Some(("log.roll.jitter.hours", "0"))),
    ("log.flush.interval.ms", None),
    // Required in Kafka, so it has no default synonym there.
    ("node.id", None),
];

/// Every broker config with its effective value: a dynamic setting (this broker's, then
/// the cluster default) over the static configuration over the default.
fn broker_entries(broker: &BrokerState) -> Vec<Entry> {
    let node_id = broker.config.node_id;
    broker
        .config
        .raw
        .iter()
        .map(|(key, value)| {
            let mut synonyms = dynamic_synonyms(broker, key, node_id);
            let dynamic = !synonyms.is_empty();
            synonyms.extend(broker_synonyms_after(broker, key, dynamic));
            // A null-default key left unset has no value, as in Kafka.
            // node.id keeps its value: Oxbow defaults it where Kafka requires it.
            let null_default = key != "node.id" && NULL_DEFAULTS.iter().any(|(k, _)| k == key);
            let (value, source) = match synonyms.first() {
                Some((_, value, source)) if !null_default || *source != SOURCE_DEFAULT_CONFIG => {
                    (Some(value.clone()), *source)
                }
                _ if null_default => (None, SOURCE_DEFAULT_CONFIG),
                _ => (Some(value.clone()), SOURCE_DEFAULT_CONFIG),
            };
            Entry {
                name: key.clone(),
                value,
                source,
                read_only: !is_dynamic(key),
                config_type: broker_config_type(key),
                documentation: broker_doc(key),
                synonyms,
            }
        })
        .collect()
}

/// The dynamic settings of `key` for `node_id` (-1: the cluster defaults only), highest
/// precedence first.
fn dynamic_synonyms(broker: &BrokerState, key: &str, node_id: i32) -> Vec<(String, String, i8)> {
    let image = broker.controller.image();
    let mut synonyms = Vec::new();
    if node_id != CLUSTER_DEFAULT
        && let Some(value) = image.broker_configs.get(&node_id).and_then(|c| c.get(key))
    {
        synonyms.push((key.to_string(), value.clone(), SOURCE_DYNAMIC_BROKER_CONFIG));
    }
    if let Some(value) = image
        .broker_configs
        .get(&CLUSTER_DEFAULT)
        .and_then(|c| c.get(key))
    {
        synonyms.push((
            key.to_string(),
            value.clone(),
            SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
        ));
    }
    synonyms
}

/// The dynamic configs set for `node_id` (-1: the cluster defaults), as Kafka lists a
/// broker's (or the defaults') dynamic configs.
fn dynamic_entries(broker: &BrokerState, node_id: i32) -> impl Iterator<Item = Entry> {
    dynamic_keys().filter_map(move |key| {
        let synonyms = dynamic_synonyms(broker, key, node_id);
        let (_, value, source) = synonyms.first()?.clone();
        Some(Entry {
            name: key.to_string(),
            value: Some(value),
            source,
            read_only: false,
            config_type: broker_config_type(key),
            documentation: broker_doc(key),
            synonyms,
        })
    })
}

/// A broker key's static settings, highest precedence first: the broker's configuration
/// (when it sets the key), then the default (see [`NULL_DEFAULTS`] for the keys Kafka
/// leaves null). `after_setting` says whether a setting precedes these.
fn broker_synonyms_after(
    broker: &BrokerState,
    key: &str,
    after_setting: bool,
) -> Vec<(String, String, i8)> {
    let mut synonyms = Vec::new();
    if broker_sets(broker, key)
        && let Some(value) = broker.config.raw.get(key)
    {
        synonyms.push((key.to_string(), value.clone(), SOURCE_STATIC_BROKER_CONFIG));
    }
    match NULL_DEFAULTS.iter().find(|(k, _)| *k == key) {
        Some((_, Some((coarse, default)))) if after_setting || !synonyms.is_empty() => {
            synonyms.push((
                coarse.to_string(),
                default.to_string(),
                SOURCE_DEFAULT_CONFIG,
            ));
        }
        Some(_) => {}
        None => {
            if let Some(default) = broker_default(key) {
                synonyms.push((key.to_string(), default.to_string(), SOURCE_DEFAULT_CONFIG));
            }
        }
    }
    synonyms
}
