//! Dynamic broker configs, as Kafka's `kafka-configs --entity-type brokers` sets them:
//! AlterConfigs / IncrementalAlterConfigs on one broker (`--entity-name N`) or on the
//! cluster-wide default (`--entity-default`, node id -1) become a `BrokerConfigChanged`
//! record of the metadata log, so every broker applies them and they survive restarts.
//!
//! ```text
//!   value in effect = broker's own dynamic setting
//!                   > cluster-wide dynamic default
//!                   > the broker's static configuration (file, env, flags)
//!                   > the documented default
//! ```
//!
//! Dynamic here: the replication throttle rates, `cordoned.log.dirs` (KIP-1066: a broker
//! whose log directories are cordoned takes no new replicas; Oxbow brokers serve one log
//! directory, so cordoning it, or `*`, cordons the broker), and every broker key a topic
//! config falls back to (`log.retention.ms`, `min.insync.replicas`, `compression.type`, …), whose
//! new values reach the logs of every topic that does not set the key itself. Other keys
//! (listeners, ids, directories) are static, as most of them are in Kafka.

use std::collections::BTreeMap;

use crate::config::log_config_synonyms;
use crate::storage::{LogConfig, LogConfigError};

/// The node id under which the cluster-wide defaults are stored.
pub const CLUSTER_DEFAULT: i32 = -1;

/// Dynamic configs by node id (`CLUSTER_DEFAULT` for the cluster-wide ones).
pub type BrokerConfigs = BTreeMap<i32, BTreeMap<String, String>>;

/// The topic config a dynamic broker key stands in for.
pub fn topic_key_of(broker_key: &str) -> Option<&'static str> {
    log_config_synonyms()
        .find(|(_, broker)| *broker == broker_key)
        .map(|(topic, _)| topic)
}

/// KIP-1066: the log directories (or `*`) of a broker that take no new replicas.
pub const CORDONED_LOG_DIRS: &str = "cordoned.log.dirs";

/// Whether `key` can be changed while brokers run.
pub fn is_dynamic(key: &str) -> bool {
    DYNAMIC_BROKER_KEYS.contains(&key) || key == CORDONED_LOG_DIRS || topic_key_of(key).is_some()
}

/// Every dynamic key, in a stable order.
pub fn dynamic_keys() -> impl Iterator<Item = &'static str> {
    DYNAMIC_BROKER_KEYS
        .iter()
        .copied()
        .chain(std::iter::once(CORDONED_LOG_DIRS))
        .chain(log_config_synonyms().map(|(_, broker)| broker))
}

/// The directories a `cordoned.log.dirs` value names (`*`: all of them); empty when it
/// names none.
pub fn cordoned_dirs(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|dir| !dir.is_empty())
        .collect()
}

/// Whether `node_id` takes no new replicas: its own `cordoned.log.dirs` names a
/// directory (a broker serves one, so naming it cordons the broker).
pub fn is_cordoned(configs: &BrokerConfigs, node_id: i32) -> bool {
    configs
        .get(&node_id)
        .and_then(|c| c.get(CORDONED_LOG_DIRS))
        .is_some_and(|value| !cordoned_dirs(value).is_empty())
}

fn validate_cordoned(value: &str) -> Result<(), String> {
    let dirs = cordoned_dirs(value);
    if dirs.len() > 1 && dirs.contains(&"*") {
        return Err(format!(
            "Invalid value {value} for configuration {CORDONED_LOG_DIRS}: * cannot be combined with directories"
        ));
    }
    Ok(())
}

/// Checks one dynamic setting, in Kafka's wording.
pub fn validate(key: &str, value: &str) -> Result<(), String> {
    match topic_key_of(key) {
        Some(topic_key) => {
            LogConfig::default()
                .set(topic_key, value)
                .map_err(|error| match error {
                    LogConfigError::InvalidValue { value, reason, .. } => {
                        format!("Invalid value {value} for configuration {key}: {reason}")
                    }
                    other => other.to_string(),
                })
        }
        None if key == CORDONED_LOG_DIRS => validate_cordoned(value),
        None => validate_dynamic_broker_config(key, value).map(|_| ()),
    }
}

/// The log defaults in effect on `node_id`: the static ones with the cluster-wide and
/// then the broker's own dynamic settings on top. A stored value this broker cannot
/// apply (written by a newer version) is skipped with a warning.
pub fn log_defaults(
    static_defaults: &LogConfig,
    configs: &BrokerConfigs,
    node_id: i32,
) -> LogConfig {
    let mut defaults = static_defaults.clone();
    let layers = [CLUSTER_DEFAULT, node_id];
    for id in layers
        .iter()
        .take(if node_id == CLUSTER_DEFAULT { 1 } else { 2 })
    {
        for (key, value) in configs.get(id).into_iter().flatten() {
            let Some(topic_key) = topic_key_of(key) else {
                continue;
            };
            if let Err(error) = defaults.set(topic_key, value) {
                tracing::warn!(node_id = id, key, %error, "Ignoring a dynamic broker config");
            }
        }
    }
    defaults
}

/// The broker configs that can be changed while running (IncrementalAlterConfigs on a
/// broker, or on the cluster-wide broker defaults).
pub const DYNAMIC_BROKER_KEYS: &[&str] = &[
    "follower.replication.throttled.rate",
    "leader.replication.throttled.rate",
];

/// Checks one dynamic broker config: a rate in bytes/s (Kafka's LONG, at least 0).
pub fn validate_dynamic_broker_config(key: &str, value: &str) -> Result<u64, String> {
    if !DYNAMIC_BROKER_KEYS.contains(&key) {
        return Err(format!("`{key}` cannot be changed while the broker runs"));
    }
    value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|v| i64::try_from(*v).is_ok())
        .ok_or_else(|| format!("invalid value `{value}` for `{key}`: not a LONG of at least 0"))
}

/// The rate in effect for this broker: its own setting, else the cluster default.
pub fn rate_for(
    configs: &BTreeMap<i32, BTreeMap<String, String>>,
    node_id: i32,
    key: &str,
) -> Option<u64> {
    [node_id, -1]
        .iter()
        .find_map(|id| configs.get(id)?.get(key))
        .and_then(|value| value.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_brokers_own_setting_beats_the_cluster_default_which_beats_the_static_one() {
        let static_defaults = LogConfig {
            retention_ms: 1,
            segment_bytes: 1 << 20,
            ..LogConfig::default()
        };
        let configs = BrokerConfigs::from([
            (
                CLUSTER_DEFAULT,
                BTreeMap::from([
                    ("log.retention.ms".to_string(), "2".to_string()),
                    ("min.insync.replicas".to_string(), "2".to_string()),
                ]),
            ),
            (
                3,
                BTreeMap::from([
                    ("log.retention.ms".to_string(), "3".to_string()),
                    (
                        "leader.replication.throttled.rate".to_string(),
                        "9".to_string(),
                    ),
                ]),
            ),
        ]);
        let on_3 = log_defaults(&static_defaults, &configs, 3);
        assert_eq!(on_3.retention_ms, 3);
        assert_eq!(on_3.min_insync_replicas, 2);
        assert_eq!(on_3.segment_bytes, 1 << 20);
        let on_4 = log_defaults(&static_defaults, &configs, 4);
        assert_eq!((on_4.retention_ms, on_4.min_insync_replicas), (2, 2));
        let cluster = log_defaults(&static_defaults, &configs, CLUSTER_DEFAULT);
        assert_eq!(cluster.retention_ms, 2);
        assert_eq!(
            log_defaults(&static_defaults, &BrokerConfigs::new(), 3),
            static_defaults
        );
    }

    #[test]
    fn only_dynamic_keys_with_valid_values_are_accepted() {
        assert!(is_dynamic("log.cleaner.min.cleanable.ratio"));
        assert!(is_dynamic("follower.replication.throttled.rate"));
        assert!(!is_dynamic("node.id"));
        assert!(is_dynamic(CORDONED_LOG_DIRS));
        assert!(!is_dynamic("retention.ms"), "a topic key, not a broker key");
        assert_eq!(validate("log.retention.ms", "5000"), Ok(()));
        assert_eq!(
            validate("log.retention.ms", "abc"),
            Err(
                "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"
                    .into()
            )
        );
        assert!(validate("leader.replication.throttled.rate", "-1").is_err());
        assert!(dynamic_keys().all(is_dynamic));
    }

    #[test]
    fn a_broker_is_cordoned_when_its_own_setting_names_a_directory() {
        let configs = BrokerConfigs::from([
            (
                1,
                BTreeMap::from([(CORDONED_LOG_DIRS.to_string(), "*".to_string())]),
            ),
            (
                2,
                BTreeMap::from([(CORDONED_LOG_DIRS.to_string(), " , ".to_string())]),
            ),
            (
                3,
                BTreeMap::from([(CORDONED_LOG_DIRS.to_string(), "/data".to_string())]),
            ),
            (
                CLUSTER_DEFAULT,
                BTreeMap::from([(CORDONED_LOG_DIRS.to_string(), "*".to_string())]),
            ),
        ]);
        assert!(is_cordoned(&configs, 1));
        assert!(!is_cordoned(&configs, 2), "an empty list cordons nothing");
        assert!(is_cordoned(&configs, 3));
        assert!(
            !is_cordoned(&configs, 4),
            "the cluster default is not a broker's own"
        );
        assert!(validate(CORDONED_LOG_DIRS, "*").is_ok());
        assert!(validate(CORDONED_LOG_DIRS, "").is_ok());
        assert!(validate(CORDONED_LOG_DIRS, "*,/data").is_err());
    }

    #[test]
    fn broker_settings_beat_cluster_defaults_and_bad_values_are_refused() {
        let mut configs = BTreeMap::new();
        configs.insert(
            -1,
            BTreeMap::from([(
                "leader.replication.throttled.rate".to_string(),
                "100".to_string(),
            )]),
        );
        assert_eq!(
            rate_for(&configs, 2, "leader.replication.throttled.rate"),
            Some(100)
        );
        configs.insert(
            2,
            BTreeMap::from([(
                "leader.replication.throttled.rate".to_string(),
                "7".to_string(),
            )]),
        );
        assert_eq!(
            rate_for(&configs, 2, "leader.replication.throttled.rate"),
            Some(7)
        );
        assert_eq!(
            rate_for(&configs, 2, "follower.replication.throttled.rate"),
            None
        );
        assert!(validate_dynamic_broker_config("log.retention.ms", "1").is_err());
        assert!(validate_dynamic_broker_config("leader.replication.throttled.rate", "-1").is_err());
        assert_eq!(
            validate_dynamic_broker_config("follower.replication.throttled.rate", "5000"),
            Ok(5000)
        );
    }
}
