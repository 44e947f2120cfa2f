//! Config resources as DescribeConfigs, AlterConfigs and IncrementalAlterConfigs see
//! them: which resource a request names, where each value comes from (Kafka's config
//! sources and synonyms), and each key's type.
//!
//! A topic config's value is the topic's own setting (source TOPIC_CONFIG) or else the
//! broker key it falls back to (`segment.bytes` → `log.segment.bytes`, see
//! the catalog's synonyms): STATIC_BROKER_CONFIG when the broker's configuration sets
//! it, DEFAULT_CONFIG otherwise — unless a dynamic broker config (this broker's, then
//! the cluster-wide default) sets that broker key, which comes first.

use std::sync::Arc;

use oxbow_config_keys::{broker_key, topic_key};

use crate::config::keys;
use crate::controller::ControllerError;
use crate::metadata::dynamic_configs::{CORDONED_LOG_DIRS, cordoned_dirs};
use crate::metadata::image::TopicImage;
use crate::state::BrokerState;

use super::Access;
use super::admin::{AdminError, duplicates, existing_topic};
use crate::security::acl::{Operation, ResourceType};

/// Kafka's `ConfigResource.Type` ids.
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;

/// Kafka's `ConfigSource` ids.
pub const SOURCE_TOPIC_CONFIG: i8 = 1;
pub const SOURCE_DYNAMIC_BROKER_CONFIG: i8 = 2;
pub const SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
pub const SOURCE_STATIC_BROKER_CONFIG: i8 = 4;
pub const SOURCE_DEFAULT_CONFIG: i8 = 5;

/// Kafka's `ConfigType` ids (DescribeConfigs v3+) the handlers name; the catalog's
/// [`oxbow_config_keys::Kind`] gives every key's.
const TYPE_UNKNOWN: i8 = 0;
pub const TYPE_LIST: i8 = 7;

/// The resource a config request names.
#[derive(Debug)]
pub enum ConfigResource {
    Topic(Arc<TopicImage>),
    /// This broker (named by its id).
    Broker,
    /// The cluster-wide dynamic broker defaults (the empty broker name).
    BrokerDefaults,
}

impl ConfigResource {
    pub fn resolve(
        broker: &BrokerState,
        resource_type: i8,
        name: &str,
    ) -> Result<Self, AdminError> {
        match resource_type {
            RESOURCE_TOPIC => existing_topic(broker, name).map(Self::Topic),
            RESOURCE_BROKER if name.is_empty() => Ok(Self::BrokerDefaults),
            RESOURCE_BROKER => {
                let id: i32 = name
                    .trim()
                    .parse()
                    .map_err(|_| AdminError::BrokerIdNotInteger(name.to_string()))?;
                let expected = broker.config.node_id;
                if id == expected {
                    Ok(Self::Broker)
                } else {
                    Err(AdminError::UnexpectedBrokerId {
                        expected,
                        received: id,
                    })
                }
            }
            other => Err(AdminError::UnsupportedResourceType(other)),
        }
    }
}

/// Whether the request may describe or alter (`operation`) the configs of a resource: a
/// topic's are checked on the topic, a broker's on the cluster, as Kafka checks them.
pub fn authorize(
    access: &Access<'_>,
    resource_type: i8,
    name: &str,
    operation: Operation,
) -> Result<(), AdminError> {
    match resource_type {
        RESOURCE_TOPIC if !access.allows(operation, ResourceType::Topic, name) => {
            Err(AdminError::TopicAuthorization {
                topic: name.to_string(),
                operation,
            })
        }
        RESOURCE_TOPIC => Ok(()),
        _ if !access.allows_cluster(operation) => Err(AdminError::ClusterAuthorization(operation)),
        _ => Ok(()),
    }
}

/// The node id a broker resource stands for (-1: the cluster-wide defaults).
pub fn broker_node(broker: &BrokerState, target: &ConfigResource) -> i32 {
    match target {
        ConfigResource::BrokerDefaults => -1,
        _ => broker.config.node_id,
    }
}

/// Replaces the dynamic configs of a broker resource with `configs` (see
/// [`crate::metadata::dynamic_configs`] for which keys are dynamic); the rest are
/// static (read at start) and refused.
pub async fn alter_broker(
    broker: &BrokerState,
    target: &ConfigResource,
    configs: std::collections::BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), AdminError> {
    let fixed: Vec<&str> = configs
        .keys()
        .map(String::as_str)
        .filter(|k| !crate::metadata::dynamic_configs::is_dynamic(k))
        .collect();
    if !fixed.is_empty() {
        return Err(AdminError::NotDynamic(fixed.join(", ")));
    }
    let node_id = broker_node(broker, target);
    if matches!(target, ConfigResource::Broker)
        && let Some(value) = configs.get(CORDONED_LOG_DIRS)
    {
        check_cordoned_dirs(&broker.config.log_dirs, value)?;
    }
    broker
        .controller
        .set_broker_configs(node_id, configs, validate_only)
        .await?;
    if !validate_only {
        tracing::info!(node_id, "Altered dynamic broker configs");
    }
    Ok(())
}

/// A broker can only cordon directories it has (Kafka checks on the broker, which knows
/// its `log.dirs`; the controller does not).
fn check_cordoned_dirs(log_dirs: &[std::path::PathBuf], value: &str) -> Result<(), AdminError> {
    let canonical = |path: &std::path::Path| std::fs::canonicalize(path).ok();
    let ours: Vec<_> = log_dirs.iter().filter_map(|d| canonical(d)).collect();
    for dir in cordoned_dirs(value) {
        let known = dir == "*"
            || log_dirs.iter().any(|d| d.as_os_str() == dir)
            || canonical(std::path::Path::new(dir)).is_some_and(|c| ours.contains(&c));
        if !known {
            return Err(ControllerError::InvalidRequest(format!(
                "Invalid value {value} for configuration {CORDONED_LOG_DIRS}: {dir} is not one of this broker's log.dirs"
            ))
            .into());
        }
    }
    Ok(())
}

/// The first config key named twice in one resource, which Kafka refuses.
/// The error code and message of one resource of AlterConfigs or IncrementalAlterConfigs
/// (`(0, None)` when it was altered); a refusal is logged with the API's name.
/// Alters one resource's configs (`alter`, run only when the request may ALTER_CONFIGS it)
/// and gives the error code and message of its answer, logging a refusal.
pub async fn alter_if_authorized(
    access: &Access<'_>,
    api: &str,
    resource_type: i8,
    resource_name: &str,
    alter: impl std::future::Future<Output = Result<(), AdminError>>,
) -> (i16, Option<kafka_protocol::protocol::StrBytes>) {
    let outcome = match authorize(
        access,
        resource_type,
        resource_name,
        Operation::AlterConfigs,
    ) {
        Ok(()) => alter.await,
        Err(denied) => Err(denied),
    };
    alter_outcome(api, resource_name, outcome)
}

fn alter_outcome(
    api: &str,
    resource_name: &str,
    result: Result<(), AdminError>,
) -> (i16, Option<kafka_protocol::protocol::StrBytes>) {
    match result {
        Ok(()) => (0, None),
        Err(error) => {
            tracing::info!(resource = resource_name, %error, "{api} refused");
            (
                super::errors::admin_error(&error),
                Some(kafka_protocol::protocol::StrBytes::from_string(
                    error.to_string(),
                )),
            )
        }
    }
}

pub fn duplicate_key(keys: &[String]) -> Result<(), AdminError> {
    match duplicates(keys.iter().map(String::as_str))
        .into_iter()
        .next()
    {
        Some(key) => Err(AdminError::DuplicateConfig(key)),
        None => Ok(()),
    }
}

/// The broker key a topic config falls back to.
pub fn broker_synonym(topic: &str) -> Option<&'static str> {
    oxbow_config_keys::broker_synonym(topic)
}

/// The documented default of a broker key.
pub fn broker_default(key: &str) -> Option<&'static str> {
    keys().find(|k| k.name == key).map(|k| k.default)
}

/// The documentation of a broker key (static or dynamic only), in the catalog's Markdown
/// (Kafka's own documentation strings carry HTML).
pub fn broker_doc(key: &str) -> Option<&'static str> {
    broker_key(key).map(|k| k.doc)
}

/// Whether the broker's configuration (file, environment, flag) sets `key`.
pub fn broker_sets(broker: &BrokerState, key: &str) -> bool {
    broker.config.explicit.contains(key)
}

/// The documentation of a topic config without a broker synonym.
pub fn topic_only_doc(key: &str) -> Option<&'static str> {
    topic_key(key)
        .filter(|k| k.broker_synonym.is_none())
        .map(|k| k.doc())
}

/// The type of a topic config key, as Kafka declares it.
pub fn topic_config_type(key: &str) -> i8 {
    topic_key(key).map_or(TYPE_UNKNOWN, |k| k.kind().kafka_code())
}

/// The type of a broker config key, as Kafka declares it.
pub fn broker_config_type(key: &str) -> i8 {
    broker_key(key).map_or(TYPE_UNKNOWN, |k| k.kind.kafka_code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxbow_config_keys::{Kind, TOPIC_KEYS};

    #[test]
    fn every_topic_config_has_a_documented_broker_synonym_and_a_type() {
        for key in TOPIC_KEYS.iter().map(|k| k.name) {
            if topic_only_doc(key).is_some() {
                assert_ne!(topic_config_type(key), TYPE_UNKNOWN, "{key}");
                continue;
            }
            let synonym = broker_synonym(key).unwrap_or_else(|| panic!("{key} has no synonym"));
            assert!(broker_default(synonym).is_some(), "{synonym} is not a key");
            assert_ne!(topic_config_type(key), TYPE_UNKNOWN, "{key}");
        }
        assert_eq!(
            broker_config_type("auto.create.topics.enable"),
            Kind::Boolean.kafka_code()
        );
        assert_eq!(broker_config_type("num.partitions"), Kind::Int.kafka_code());
        assert_eq!(broker_config_type("broker.rack"), Kind::String.kafka_code());
        assert_eq!(topic_config_type("cleanup.policy"), Kind::List.kafka_code());
        assert_eq!(topic_config_type("retention.ms"), Kind::Long.kafka_code());
        assert_eq!(
            topic_config_type("min.compaction.lag.ms"),
            Kind::Long.kafka_code()
        );
        assert_eq!(
            topic_config_type("segment.jitter.ms"),
            Kind::Long.kafka_code()
        );
        assert_eq!(
            topic_config_type("min.cleanable.dirty.ratio"),
            Kind::Double.kafka_code()
        );
        assert_eq!(topic_config_type("preallocate"), Kind::Boolean.kafka_code());
        assert_eq!(
            topic_config_type("remote.storage.enable"),
            Kind::Boolean.kafka_code()
        );
    }
}
