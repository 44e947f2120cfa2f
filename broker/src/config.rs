//! Typed broker configuration: Kafka property names, layered
//! defaults → files (`--config`, repeatable: Kafka's `.properties` or YAML) → environment (`OXBOW_<KEY>`) →
//! `--override key=value` flags (repeatable), later layers winning.
//!
//! Every key is declared once in the `oxbow-config-keys` catalog with its default, type
//! and documentation ([`keys`]); `oxbow
//! --help` prints that table. Unknown keys and invalid values are refused with a message
//! naming the key.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

mod file;
mod groups;
mod listener_overrides;
mod listeners;
mod network;
mod providers;
mod quorum;
mod raw;
mod replication;
mod security;
mod ssl;
mod transactions;

use crate::storage::{LogConfig, LogConfigError};
pub use groups::GroupConfig;
pub use listener_overrides::ListenerSettings;
pub use listeners::{ClientListener, SecurityProtocol};
use network::Network;
use quorum::Quorum;
use raw::Raw;
pub use replication::ReplicationConfig;
pub use security::InterBrokerSasl;
use security::Security;
pub use ssl::{ClientAuth, KeyStore, SslConfig, TlsVersion, TrustStore};
pub use transactions::TransactionConfig;

pub use oxbow_config_keys::BrokerKey as KeySpec;

/// Every key a start-up configuration may set: the catalog's static broker keys (the
/// catalog, crate `oxbow-config-keys`, declares each key once with its default, type and
/// documentation).
pub fn keys() -> impl Iterator<Item = &'static KeySpec> {
    oxbow_config_keys::static_broker_keys()
}

/// Kafka's replica selectors (`replica.selector.class`), by the names Kafka users set.
pub const RACK_AWARE_SELECTOR: &str = "org.apache.kafka.common.replica.RackAwareReplicaSelector";
pub const LEADER_SELECTOR: &str = "org.apache.kafka.common.replica.LeaderSelector";

/// The values an integer key takes: the catalog's range, else its type's.
fn integer_range(key: &str) -> (i64, i64) {
    oxbow_config_keys::broker_key(key).map_or((i64::MIN, i64::MAX), |k| k.integer_range())
}

/// Each topic config and the broker key that gives its default (Kafka's synonyms:
/// `segment.bytes` falls back to `log.segment.bytes`).
pub fn log_config_synonyms() -> impl Iterator<Item = (&'static str, &'static str)> {
    oxbow_config_keys::TOPIC_KEYS
        .iter()
        .filter_map(|k| k.broker_synonym.map(|broker| (k.name, broker)))
}

/// A configuration value that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown configuration key `{key}` (from {source_name})")]
    UnknownKey { key: String, source_name: String },
    #[error("invalid value `{value}` for `{key}`: {reason}")]
    InvalidValue {
        key: String,
        value: String,
        reason: String,
    },
    #[error(transparent)]
    ConfigFile(file::ConfigFileError),
    #[error("`--override` needs key=value, got `{0}`")]
    OverrideSyntax(String),
}

/// The resolved broker configuration.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    pub node_id: i32,
    pub listener: SocketAddr,
    /// Every client listener (not the controller's), in `listeners` order; `listener` and
    /// `advertised_*` are the inter-broker one's.
    pub client_listeners: Vec<listeners::ClientListener>,
    /// `inter.broker.listener.name` (default: the first client listener).
    pub inter_broker_listener: String,
    pub advertised_host: String,
    pub advertised_port: u16,
    pub log_dirs: Vec<PathBuf>,
    pub num_partitions: i32,
    pub default_replication_factor: i16,
    pub auto_create_topics: bool,
    /// `delete.topic.enable`: false refuses DeleteTopics (TOPIC_DELETION_DISABLED).
    pub delete_topic_enable: bool,
    pub socket_request_max_bytes: usize,
    /// `SO_SNDBUF` / `SO_RCVBUF` of client connections; `None` keeps the kernel's autotuning.
    pub socket_send_buffer_bytes: Option<usize>,
    pub socket_receive_buffer_bytes: Option<usize>,
    pub connections_max_idle_ms: u64,
    /// `connection.failed.authentication.delay.ms`.
    pub failed_authentication_delay_ms: u64,
    pub max_connections: usize,
    pub fetch_session_slots: usize,
    pub queued_max_request_bytes: usize,
    pub metrics_listener: Option<SocketAddr>,
    pub metrics_partition_labels: bool,
    pub fetch_sendfile: bool,
    /// The `ssl.*` settings, when a listener serves TLS or a key store is set.
    pub ssl: Option<SslConfig>,
    /// `sasl.enabled.mechanisms`: what `SASL_*` listeners offer.
    pub sasl_mechanisms: Vec<crate::model::SaslMechanism>,
    /// The controller listener is `SSL`: the quorum's RPCs (votes, replication of the
    /// metadata log, brokers' registrations and heartbeats) run over mutual TLS.
    pub controller_tls: bool,
    /// `connections.max.reauth.ms` (KIP-368): how long a SASL session lasts; 0 forever.
    pub connections_max_reauth_ms: u64,
    /// `sasl.oauthbearer.jwks.endpoint.url` and its checks: OAUTHBEARER tokens must be
    /// signed by a key of that set (none: Kafka's unsecured validator).
    pub oauthbearer_jwks: Option<crate::security::JwksSettings>,
    /// `listener.name.<listener>.*` SASL settings, by upper-cased listener name.
    pub listener_settings: BTreeMap<String, ListenerSettings>,
    /// The inter-broker listener is `SASL_*`: how followers authenticate to leaders.
    pub inter_broker_sasl: Option<InterBrokerSasl>,
    /// The TLS settings of listeners with their own `listener.name.<l>.ssl.*` keys (the
    /// broker-wide `ssl.*` fill in what they leave out), by listener name.
    pub listener_ssl: BTreeMap<String, SslConfig>,
    /// `authorizer.class.name` set: every request is checked against the ACLs.
    pub authorizer: Option<crate::security::Authorizer>,
    pub log_defaults: LogConfig,
    pub retention_check_interval_ms: u64,
    pub cleaner_backoff_ms: u64,
    /// Group coordinator settings (`offsets.*`, `group.*`).
    pub groups: GroupConfig,
    /// Transaction coordinator settings (`transaction.*`).
    pub transactions: TransactionConfig,
    pub rack: Option<String>,
    pub cluster_id: Option<String>,
    pub offsets_topic_replication_factor: i16,
    /// `process.roles` holds `broker`.
    pub is_broker: bool,
    /// `process.roles` holds `controller`: this node is a voter of the quorum.
    pub is_controller: bool,
    /// The quorum's voters: node id → controller listener `host:port` (with bootstrap
    /// servers, the voters that form a new quorum).
    pub voters: BTreeMap<i32, String>,
    /// `controller.quorum.bootstrap.servers`: set for a dynamic quorum (KIP-853).
    pub bootstrap_servers: Vec<String>,
    /// Where other controllers reach this node's controller listener.
    pub controller_advertised: Option<String>,
    /// The controller listener, when `listeners` names one.
    pub controller_listener: Option<SocketAddr>,
    pub broker_heartbeat_interval_ms: u64,
    pub broker_session_timeout_ms: u64,
    pub metadata_snapshot_interval_entries: u64,
    pub auto_leader_rebalance: bool,
    /// Consumers that name their rack are sent to an in-sync replica in it (KIP-392).
    pub rack_aware_reads: bool,
    pub leader_imbalance_check_interval_s: u64,
    pub leader_imbalance_percent: u32,
    pub replication: ReplicationConfig,
    /// Every key with its effective value (DescribeConfigs on the broker resource).
    pub raw: BTreeMap<String, String>,
    /// The keys a file, the environment or a flag set (Kafka's STATIC_BROKER_CONFIG),
    /// whatever their value.
    pub explicit: std::collections::BTreeSet<String>,
}

impl BrokerConfig {
    /// The SASL mechanisms `listener` offers: its own `listener.name.*` list, else
    /// `sasl.enabled.mechanisms`.
    pub fn sasl_mechanisms_for(&self, listener: &str) -> &[crate::model::SaslMechanism] {
        self.listener_settings
            .get(listener)
            .and_then(|l| l.mechanisms.as_deref())
            .unwrap_or(&self.sasl_mechanisms)
    }

    /// The inter-broker listener is `SSL` or `SASL_SSL`: followers fetch over TLS.
    pub fn inter_broker_tls(&self) -> bool {
        self.client_listeners
            .iter()
            .any(|l| l.name == self.inter_broker_listener && l.protocol.uses_tls())
    }

    /// Resolves the layers: defaults, then each file, then the environment, then overrides.
    pub fn load(
        files: &[PathBuf],
        env: impl IntoIterator<Item = (String, String)>,
        overrides: &[String],
    ) -> Result<Self, ConfigError> {
        let mut raw: BTreeMap<String, String> = keys()
            .map(|k| (k.name.to_string(), k.default.to_string()))
            .collect();
        let mut explicit = std::collections::BTreeSet::new();
        let mut provider_keys = BTreeMap::new();
        let env: BTreeMap<String, String> = env.into_iter().collect();
        let mut set = |key: &str, value: String, source_name: &str| -> Result<(), ConfigError> {
            if key.starts_with(providers::PROVIDER_PREFIX) {
                provider_keys.insert(key.to_string(), value);
                return Ok(());
            }
            // Per-listener keys (`listener.name.<listener>.<key>`) are checked once the
            // listeners are known.
            if key.starts_with(listener_overrides::PREFIX) {
                raw.insert(key.to_string(), value);
                return Ok(());
            }
            match raw.get_mut(key) {
                Some(slot) => {
                    *slot = value;
                    explicit.insert(key.to_string());
                    Ok(())
                }
                None => {
                    let hint = keys()
                        .find(|k| edit_distance(k.name, key) <= 2)
                        .map(|near| format!("; did you mean `{}`?", near.name))
                        .unwrap_or_default();
                    Err(ConfigError::UnknownKey {
                        key: key.to_string(),
                        source_name: format!("{source_name}{hint}"),
                    })
                }
            }
        };
        for path in files {
            for (key, value) in file::read(path).map_err(ConfigError::ConfigFile)? {
                set(&key, value, &path.display().to_string())?;
            }
        }
        for (name, value) in &env {
            let Some(rest) = name.strip_prefix("OXBOW_") else {
                continue;
            };
            let key = rest.to_ascii_lowercase().replace('_', ".");
            if keys().any(|k| k.name == key) {
                set(&key, value.clone(), &format!("environment variable {name}"))?;
                continue;
            }
            // The variables of Oxbow's own tools reach brokers they start: not settings.
            if is_tool_variable(rest) {
                continue;
            }
            let hint = keys()
                .find(|k| edit_distance(k.name, &key) <= 2)
                .map(|near| {
                    format!(
                        "; did you mean OXBOW_{}?",
                        near.name.to_ascii_uppercase().replace('.', "_")
                    )
                })
                .unwrap_or_default();
            return Err(ConfigError::UnknownKey {
                key,
                source_name: format!("environment variable {name}{hint}"),
            });
        }
        for item in overrides {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| ConfigError::OverrideSyntax(item.clone()))?;
            set(key.trim(), value.trim().to_string(), "--override")?;
        }
        providers::resolve(&mut raw, &provider_keys, &env)?;
        resolve_time_synonyms(&mut raw, &explicit)?;
        let mut config = Self::from_raw(raw)?;
        config.explicit = explicit;
        Ok(config)
    }

    fn from_raw(raw: BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let reader = Raw(&raw);
        let get = |key: &str| reader.get(key);
        let invalid = |key: &str, reason: &str| reader.invalid(key, reason);
        let int = |key: &str| reader.int(key);
        let boolean = |key: &str| reader.boolean(key);
        let buffer_size = |key: &str| reader.buffer_size(key);
        let Network {
            controller_names,
            controller_listener,
            client_listeners,
            controller_tls,
        } = Network::parse(reader)?;
        let (is_broker, is_controller) = network::roles(reader)?;
        let Security {
            sasl_mechanisms,
            oauthbearer_jwks,
            listener_settings,
            ssl,
            listener_ssl,
            authorizer,
            inter_broker,
            inter_broker_sasl,
        } = Security::parse(reader, &raw, &client_listeners, controller_tls, is_broker)?;
        let listener = inter_broker.address;
        let (advertised_host, advertised_port) = (
            inter_broker.advertised_host.clone(),
            inter_broker.advertised_port,
        );
        let log_dirs: Vec<PathBuf> = get("log.dirs")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect();
        if log_dirs.is_empty() {
            return Err(invalid("log.dirs", "at least one directory is needed"));
        }
        let metrics_text = get("metrics.listener");
        let metrics_listener = if metrics_text.trim().is_empty() {
            None
        } else {
            Some(
                metrics_text
                    .trim()
                    .parse()
                    .map_err(|_| invalid("metrics.listener", "expected ip:port"))?,
            )
        };
        let mut log_defaults = LogConfig::default();
        for (topic_key, broker_key) in log_config_synonyms() {
            log_defaults
                .set(topic_key, &get(broker_key))
                .map_err(|error| match error {
                    LogConfigError::InvalidValue { reason, .. } => invalid(broker_key, &reason),
                    LogConfigError::UnknownKey { .. } => invalid(broker_key, "unknown"),
                    other => invalid(broker_key, &other.to_string()),
                })?;
        }
        let optional = |key: &str| reader.optional(key);
        let node_id = int("node.id")? as i32;
        let Quorum {
            voters,
            bootstrap_servers,
            controller_advertised,
        } = Quorum::parse(
            reader,
            node_id,
            is_controller,
            controller_listener,
            &controller_names,
        )?;
        Ok(Self {
            node_id,
            listener,
            inter_broker_listener: inter_broker.name.clone(),
            client_listeners,
            advertised_host,
            advertised_port,
            log_dirs,
            num_partitions: int("num.partitions")? as i32,
            default_replication_factor: int("default.replication.factor")? as i16,
            auto_create_topics: boolean("auto.create.topics.enable")?,
            delete_topic_enable: boolean("delete.topic.enable")?,
            socket_request_max_bytes: int("socket.request.max.bytes")? as usize,
            socket_send_buffer_bytes: buffer_size("socket.send.buffer.bytes")?,
            socket_receive_buffer_bytes: buffer_size("socket.receive.buffer.bytes")?,
            connections_max_idle_ms: int("connections.max.idle.ms")? as u64,
            failed_authentication_delay_ms: int("connection.failed.authentication.delay.ms")?
                as u64,
            max_connections: int("max.connections")? as usize,
            fetch_session_slots: int("max.incremental.fetch.session.cache.slots")? as usize,
            queued_max_request_bytes: int("queued.max.request.bytes")? as usize,
            metrics_listener,
            metrics_partition_labels: boolean("metrics.partition.labels")?,
            fetch_sendfile: boolean("fetch.sendfile.enable")?,
            ssl,
            sasl_mechanisms,
            connections_max_reauth_ms: int("connections.max.reauth.ms")? as u64,
            oauthbearer_jwks,
            listener_settings,
            inter_broker_sasl,
            listener_ssl,
            controller_tls,
            authorizer,
            log_defaults,
            retention_check_interval_ms: int("log.retention.check.interval.ms")? as u64,
            cleaner_backoff_ms: int("log.cleaner.backoff.ms")? as u64,
            groups: GroupConfig::parse(reader)?,
            transactions: TransactionConfig::parse(reader)?,
            rack: optional("broker.rack"),
            cluster_id: optional("cluster.id"),
            offsets_topic_replication_factor: int("offsets.topic.replication.factor")? as i16,
            is_broker,
            is_controller,
            voters,
            bootstrap_servers,
            controller_advertised,
            controller_listener,
            broker_heartbeat_interval_ms: int("broker.heartbeat.interval.ms")? as u64,
            broker_session_timeout_ms: int("broker.session.timeout.ms")? as u64,
            metadata_snapshot_interval_entries: int("metadata.log.snapshot.interval.entries")?
                as u64,
            auto_leader_rebalance: boolean("auto.leader.rebalance.enable")?,
            rack_aware_reads: match get("replica.selector.class").trim() {
                RACK_AWARE_SELECTOR => true,
                LEADER_SELECTOR | "" => false,
                _ => {
                    return Err(invalid(
                        "replica.selector.class",
                        &format!("expected {RACK_AWARE_SELECTOR} or {LEADER_SELECTOR}"),
                    ));
                }
            },
            leader_imbalance_check_interval_s: int("leader.imbalance.check.interval.seconds")?
                as u64,
            leader_imbalance_percent: int("leader.imbalance.per.broker.percentage")? as u32,
            replication: ReplicationConfig::parse(reader)?,
            raw,
            explicit: Default::default(),
        })
    }

    /// `--help` text: every key, its default and what it does.
    pub fn help_table() -> String {
        let mut text = String::from(
            "Configuration keys (a .properties or YAML file, OXBOW_<KEY> env, or --override key=value):\n",
        );
        for spec in keys() {
            let default = if spec.default.is_empty() {
                "\"\""
            } else {
                spec.default
            };
            text.push_str(&format!(
                "  {:<34} {}\n  {:<34} default: {}\n",
                spec.name,
                spec.plain_doc(),
                "",
                default
            ));
        }
        text
    }
}

/// Levenshtein distance between two keys (bytes; keys are ASCII).
/// `OXBOW_*` names (without the prefix) that Oxbow's other programs read: the operator,
/// the e2e suites and testbed, the benchmarks. A broker they start sees them in its
/// environment; every other `OXBOW_*` variable must name a broker key.
const TOOL_VARIABLES: &[&str] = &[
    "BIN",
    "BINARY",
    "BOOTSTRAP_OVERRIDES",
    "BROKER_IMAGE",
    "CACHE",
    "CACHE_KEEP_HOURS",
    "CLIENTS",
    "CLUSTER_PORTS",
    "DEBUG_BUILT",
    "DECODE_CASES",
    "EXTRA_OVERRIDES",
    "FAILOVER_RUNS",
    "FAILOVER_ROUNDS",
    "FUZZ_SECONDS",
    "IMAGE_BINDIR",
    "LEADER_ELECTION",
    "LEASE_NAME",
    // Read by metadata::features: an upgrade test's stand-in for an older release.
    "MAX_METADATA_VERSION",
    "POD_DIR",
    "PARALLEL",
    "PORTS",
    "RACK_CLUSTER_ROLE",
    "RDKAFKA_ECHO",
    "SKIPS",
    "SUITES",
    "SUITE_PORT",
    "VOTERS_PORT",
    "TOPICS_AT_SCALE",
    "SCALE_MB",
    "SCALE_TOPICS",
    "SCALE_LOGS",
    "WATCH_NAMESPACE",
];
/// Prefixes (after `OXBOW_`) of tool variables; no broker key starts with one.
const TOOL_PREFIXES: &[&str] = &[
    "BENCH_",
    "K8S_",
    "MOVE_",
    "OPERATOR_",
    "REASSIGN_",
    "REPLICATION_",
    "ROLL_GATE_",
    "STREAMS_",
    "TXN_",
];

/// Whether `OXBOW_<rest>` is a variable of Oxbow's tools rather than a broker setting.
pub fn is_tool_variable(rest: &str) -> bool {
    TOOL_VARIABLES.contains(&rest) || TOOL_PREFIXES.iter().any(|p| rest.starts_with(p))
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Kafka's coarser spellings of its time keys: the first key set explicitly of each row
/// (finest first) gives the `.ms` key its value; `.ms` set itself always wins. A negative
/// value in any unit means "forever" (-1), as in Kafka.
const TIME_SYNONYMS: &[(&str, &[(&str, i64)])] = &[
    (
        "log.retention.ms",
        &[
            ("log.retention.minutes", 60_000),
            ("log.retention.hours", 3_600_000),
        ],
    ),
    ("log.roll.ms", &[("log.roll.hours", 3_600_000)]),
    (
        "log.roll.jitter.ms",
        &[("log.roll.jitter.hours", 3_600_000)],
    ),
];

fn resolve_time_synonyms(
    raw: &mut BTreeMap<String, String>,
    explicit: &std::collections::BTreeSet<String>,
) -> Result<(), ConfigError> {
    for &(ms_key, coarser) in TIME_SYNONYMS {
        if explicit.contains(ms_key) {
            continue;
        }
        for &(key, unit_ms) in coarser {
            let Some(text) = raw.get(key).filter(|_| explicit.contains(key)) else {
                continue;
            };
            let value: i64 = text.trim().parse().map_err(|_| ConfigError::InvalidValue {
                key: key.to_string(),
                value: text.clone(),
                reason: "not an integer".to_string(),
            })?;
            let ms = if value < 0 {
                -1
            } else {
                value.saturating_mul(unit_ms)
            };
            raw.insert(ms_key.to_string(), ms.to_string());
            break;
        }
    }
    Ok(())
}

/// `host:port` of the listener named one of `names`.
fn named_listener(listeners: &str, names: &[String]) -> Option<String> {
    listeners.split(',').map(str::trim).find_map(|listener| {
        let (name, address) = listener.split_once("://")?;
        names
            .contains(&name.to_ascii_uppercase())
            .then(|| address.to_string())
    })
}

/// `controller.quorum.bootstrap.servers`: `host:port,...`.
fn parse_bootstrap_servers(text: &str) -> Result<Vec<String>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|server| match server.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(server.to_string())
            }
            _ => Err(format!("`{server}` is not host:port")),
        })
        .collect()
}

/// `controller.quorum.voters`: `id@host:port,...`.
fn parse_voters(text: &str) -> Result<BTreeMap<i32, String>, String> {
    let mut voters = BTreeMap::new();
    for voter in text.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        let (id, address) = voter
            .split_once('@')
            .ok_or_else(|| format!("`{voter}` is not id@host:port"))?;
        let id: i32 = id
            .trim()
            .parse()
            .map_err(|_| format!("`{id}` in `{voter}` is not a node id"))?;
        let (host, port) = address
            .rsplit_once(':')
            .ok_or_else(|| format!("`{address}` in `{voter}` has no port"))?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(format!("`{address}` in `{voter}` is not host:port"));
        }
        if voters.insert(id, address.to_string()).is_some() {
            return Err(format!("node id {id} is listed twice"));
        }
    }
    Ok(voters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_make_a_usable_local_broker() {
        let config = BrokerConfig::load(&[], [], &[]).unwrap();
        assert_eq!(config.listener.to_string(), "127.0.0.1:9092");
        assert_eq!(
            (config.advertised_host.as_str(), config.advertised_port),
            ("127.0.0.1", 9092)
        );
        assert_eq!(config.log_dirs, vec![PathBuf::from("./oxbow-data")]);
        assert_eq!(
            config.metrics_listener.map(|a| a.to_string()).as_deref(),
            Some("127.0.0.1:9644")
        );
        assert!(config.auto_create_topics);
        assert_eq!(config.log_defaults, LogConfig::default());
    }

    #[test]
    fn socket_buffer_sizes_take_kafka_values() {
        let load = |value: &str| {
            BrokerConfig::load(
                &[],
                [],
                &[
                    format!("socket.send.buffer.bytes={value}"),
                    format!("socket.receive.buffer.bytes={value}"),
                ],
            )
        };
        let defaults = BrokerConfig::load(&[], [], &[]).unwrap();
        assert_eq!(defaults.socket_send_buffer_bytes, Some(262_144));
        assert_eq!(defaults.socket_receive_buffer_bytes, None);
        let os_default = load("-1").unwrap();
        assert_eq!(os_default.socket_send_buffer_bytes, None);
        assert_eq!(os_default.socket_receive_buffer_bytes, None);
        let sized = load("102400").unwrap();
        assert_eq!(sized.socket_send_buffer_bytes, Some(102_400));
        assert_eq!(sized.socket_receive_buffer_bytes, Some(102_400));
        for bad in ["0", "-2", "lots"] {
            let error = load(bad).unwrap_err();
            assert!(error.to_string().contains("socket."), "{bad}: {error}");
        }
    }

    #[test]
    fn layers_apply_in_order_and_bad_values_name_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("broker.yaml");
        std::fs::write(
            &file,
            "node.id: 3\nnum.partitions: 4\nlog.retention.ms: 1000\n",
        )
        .unwrap();
        let config = BrokerConfig::load(
            std::slice::from_ref(&file),
            [
                ("OXBOW_NUM_PARTITIONS".to_string(), "5".to_string()),
                ("OXBOW_CACHE".to_string(), "/x".to_string()),
            ],
            &["listeners=PLAINTEXT://127.0.0.2:9000".to_string()],
        )
        .unwrap();
        assert_eq!(config.node_id, 3);
        assert_eq!(config.num_partitions, 5);
        assert_eq!(config.log_defaults.retention_ms, 1000);
        assert_eq!(config.listener.to_string(), "127.0.0.2:9000");

        let error = BrokerConfig::load(&[], [], &["num.partitions=-2".to_string()]).unwrap_err();
        assert!(error.to_string().contains("num.partitions"), "{error}");
        let error = BrokerConfig::load(&[], [], &["no.such=1".to_string()]).unwrap_err();
        assert!(error.to_string().contains("no.such"), "{error}");
        let error =
            BrokerConfig::load(&[], [], &["log.cleanup.policy=shred".to_string()]).unwrap_err();
        assert!(error.to_string().contains("log.cleanup.policy"), "{error}");
        assert!(BrokerConfig::load(&[], [], &["listeners=nonsense".to_string()]).is_err());
    }

    #[test]
    fn kraft_roles_voters_and_listeners_are_checked() {
        let load = |overrides: &[&str]| {
            let overrides: Vec<String> = overrides.iter().map(|o| o.to_string()).collect();
            BrokerConfig::load(&[], [], &overrides)
        };
        let voter = load(&[
            "node.id=2",
            "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            "controller.quorum.voters=1@a:9093,2@127.0.0.1:9093,3@c.example:9093",
        ])
        .unwrap();
        assert!(voter.is_broker && voter.is_controller);
        assert_eq!(voter.voters.len(), 3);
        assert_eq!(voter.controller_listener.map(|a| a.port()), Some(9093));
        assert_eq!(voter.listener.port(), 9092);
        // A controller-only node needs no client listener.
        let controller = load(&[
            "node.id=1",
            "process.roles=controller",
            "listeners=CONTROLLER://127.0.0.1:9093",
            "controller.quorum.voters=1@127.0.0.1:9093",
        ])
        .unwrap();
        assert!(!controller.is_broker);
        // Zero config: this node alone is the quorum.
        let alone = load(&[]).unwrap();
        assert_eq!(alone.voters.keys().copied().collect::<Vec<_>>(), vec![0]);
        for (bad, key) in [
            (vec!["process.roles=broker"], "controller.quorum.voters"),
            (vec!["process.roles=dancer"], "process.roles"),
            (
                vec!["controller.quorum.voters=1@h:1"],
                "controller.quorum.voters",
            ),
            (
                vec!["controller.quorum.voters=0@h:1,0@h:2"],
                "controller.quorum.voters",
            ),
            (
                vec!["controller.quorum.voters=0@h"],
                "controller.quorum.voters",
            ),
            (
                vec!["process.roles=broker", "controller.quorum.voters=0@h:1"],
                "process.roles",
            ),
            (vec!["controller.quorum.voters=0@h:1,1@h:2"], "listeners"),
        ] {
            let error = load(&bad).unwrap_err().to_string();
            assert!(error.contains(key), "{bad:?}: {error}");
        }
    }

    #[test]
    fn a_dynamic_quorum_is_found_through_bootstrap_servers() {
        let load = |overrides: &[&str]| {
            let overrides: Vec<String> = overrides.iter().map(|o| o.to_string()).collect();
            BrokerConfig::load(&[], [], &overrides)
        };
        // A controller outside the initial voters joins; it advertises its controller
        // listener to the others.
        let joining = load(&[
            "node.id=4",
            "listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093",
            "advertised.listeners=PLAINTEXT://broker-4:9092,CONTROLLER://broker-4:9093",
            "controller.quorum.bootstrap.servers=broker-0:9093, broker-1:9093",
        ])
        .unwrap();
        assert!(joining.voters.is_empty());
        assert_eq!(
            joining.bootstrap_servers,
            ["broker-0:9093", "broker-1:9093"]
        );
        assert_eq!(
            joining.controller_advertised.as_deref(),
            Some("broker-4:9093")
        );
        // The controller listener is never a client listener, advertised or not.
        assert!(
            joining
                .client_listeners
                .iter()
                .all(|l| l.name != "CONTROLLER")
        );
        let broker = load(&[
            "node.id=7",
            "process.roles=broker",
            "controller.quorum.bootstrap.servers=broker-0:9093",
        ])
        .unwrap();
        assert!(broker.voters.is_empty() && !broker.is_controller);
        // An initial voter that was removed restarts as a broker only: refused in a static
        // quorum (it would be a voter that never votes), fine in a dynamic one.
        let initial_voters = "controller.quorum.voters=0@broker-0:9093,2@broker-2:9093";
        let removed = load(&[
            "node.id=2",
            "process.roles=broker",
            initial_voters,
            "controller.quorum.bootstrap.servers=broker-0:9093,broker-2:9093",
        ])
        .unwrap();
        assert!(!removed.is_controller && removed.voters.contains_key(&2));
        let error = load(&["node.id=2", "process.roles=broker", initial_voters])
            .unwrap_err()
            .to_string();
        assert!(error.contains("lacks the controller role"), "{error}");
        for (bad, key) in [
            (
                vec!["controller.quorum.bootstrap.servers=broker-0"],
                "controller.quorum.bootstrap.servers",
            ),
            // Where would the leader reach it?
            (
                vec![
                    "listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093",
                    "controller.quorum.bootstrap.servers=broker-0:9093",
                ],
                "advertised.listeners",
            ),
            (
                vec!["controller.quorum.bootstrap.servers=broker-0:9093"],
                "listeners",
            ),
        ] {
            let error = load(&bad).unwrap_err().to_string();
            assert!(error.contains(key), "{bad:?}: {error}");
        }
    }

    #[test]
    fn an_unknown_environment_key_is_refused() {
        let env = vec![("OXBOW_DEFAULT_REPLICATION".to_string(), "3".to_string())];
        let error = BrokerConfig::load(&[], env, &[]).unwrap_err().to_string();
        assert!(
            error.contains("default.replication") && error.contains("OXBOW_DEFAULT_REPLICATION"),
            "{error}"
        );
    }

    /// Every `OXBOW_*` name the repository's tools and docs use outside the broker is a
    /// broker key or a tool variable: a new tool variable not listed would stop every
    /// broker that tool starts.
    #[test]
    fn the_tools_variables_are_all_known() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let pattern = regex::Regex::new(r"OXBOW_([A-Z0-9_]+)").unwrap();
        let mut unknown = std::collections::BTreeSet::new();
        let mut seen = 0;
        let mut dirs: Vec<PathBuf> = [
            "e2e",
            "operator",
            "testkit",
            ".ci",
            "charts",
            "docs",
            "manifests",
        ]
        .iter()
        .map(|d| root.join(d))
        .collect();
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().to_string();
                if path.is_dir() {
                    if !matches!(name.as_str(), "target" | "node_modules" | ".venv") {
                        dirs.push(path);
                    }
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                for found in pattern.captures_iter(&text) {
                    let rest = &found[1];
                    seen += 1;
                    let key = rest.to_ascii_lowercase().replace('_', ".");
                    // A trailing `_` is a prefix built into names (OXBOW_REPLICATION_{name}).
                    if !is_tool_variable(rest) && !keys().any(|k| k.name == key) {
                        unknown.insert(format!("OXBOW_{rest} ({})", path.display()));
                    }
                }
            }
        }
        assert!(seen > 50, "found only {seen} OXBOW_ names: wrong root?");
        assert!(
            unknown.is_empty(),
            "add these to TOOL_VARIABLES or TOOL_PREFIXES: {unknown:?}"
        );
    }

    #[test]
    fn a_misspelt_environment_key_is_refused_and_other_tools_variables_ignored() {
        let env = |name: &str| vec![(name.to_string(), "5".to_string())];
        let error = BrokerConfig::load(&[], env("OXBOW_NUM_PARTITION"), &[]).unwrap_err();
        assert!(
            error.to_string().contains("OXBOW_NUM_PARTITIONS"),
            "{error}"
        );
        let error = BrokerConfig::load(&[], env("OXBOW_LOG_RETENTION_HOUR"), &[]).unwrap_err();
        assert!(error.to_string().contains("log.retention.hour"), "{error}");
        for tool in [
            "OXBOW_CACHE",
            "OXBOW_SKIPS",
            "OXBOW_BINARY",
            "OXBOW_SUITE_PORT",
        ] {
            assert!(BrokerConfig::load(&[], env(tool), &[]).is_ok(), "{tool}");
        }
        let config = BrokerConfig::load(&[], env("OXBOW_NUM_PARTITIONS"), &[]).unwrap();
        assert_eq!(config.num_partitions, 5);
    }

    #[test]
    fn config_providers_resolve_values_from_every_layer() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("broker.yaml");
        std::fs::write(
            &file,
            "config.providers: env\n\
             config.providers.env.class: org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
             listeners: PLAINTEXT://:9092,EXTERNAL://:9094\n\
             listener.security.protocol.map: PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT\n\
             advertised.listeners: PLAINTEXT://b-0:9092,EXTERNAL://${env:HOST_IP}:30094\n",
        )
        .unwrap();
        let env = vec![
            ("HOST_IP".to_string(), "10.1.0.3".to_string()),
            (
                "OXBOW_NUM_PARTITIONS".to_string(),
                "${env:PARTS}".to_string(),
            ),
            ("PARTS".to_string(), "7".to_string()),
        ];
        let config = BrokerConfig::load(&[file], env, &[]).unwrap();
        let external = config
            .client_listeners
            .iter()
            .find(|l| l.name == "EXTERNAL")
            .unwrap();
        assert_eq!(
            (external.advertised_host.as_str(), external.advertised_port),
            ("10.1.0.3", 30094)
        );
        assert_eq!(config.num_partitions, 7);
        // A provider's keys need the provider listed, as in Kafka.
        let error = BrokerConfig::load(
            &[],
            [],
            &["config.providers.x.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider".to_string()],
        )
        .unwrap_err();
        assert!(error.to_string().contains("not listed"), "{error}");
    }

    /// Kafka's own `config/server.properties` layout and keys (a combined node), as a
    /// Kafka user brings it: comments, `key=value`, the thread settings Kafka sets.
    #[test]
    fn a_kafka_server_properties_file_starts_a_broker() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("server.properties");
        let data = dir.path().join("kraft-combined-logs");
        std::fs::write(
            &file,
            format!(
                "############################# Server Basics #############################\n\
                 # The role of this server.\n\
                 process.roles=broker,controller\n\
                 node.id=1\n\
                 controller.quorum.bootstrap.servers=localhost:9093\n\
                 listeners=PLAINTEXT://:9092,CONTROLLER://:9093\n\
                 inter.broker.listener.name=PLAINTEXT\n\
                 advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093\n\
                 controller.listener.names=CONTROLLER\n\
                 listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL\n\
                 num.network.threads=3\n\
                 num.io.threads=8\n\
                 socket.send.buffer.bytes=102400\n\
                 socket.receive.buffer.bytes=102400\n\
                 socket.request.max.bytes=104857600\n\
                 log.dirs={}\n\
                 num.partitions=1\n\
                 num.recovery.threads.per.data.dir=1\n\
                 offsets.topic.replication.factor=1\n\
                 share.coordinator.state.topic.replication.factor=1\n\
                 share.coordinator.state.topic.min.isr=1\n\
                 transaction.state.log.replication.factor=1\n\
                 transaction.state.log.min.isr=1\n\
                 log.retention.hours=168\n\
                 log.segment.bytes=1073741824\n\
                 log.retention.check.interval.ms=300000\n",
                data.display()
            ),
        )
        .unwrap();
        let config = BrokerConfig::load(std::slice::from_ref(&file), [], &[]).unwrap();
        assert_eq!(config.node_id, 1);
        assert_eq!(config.log_dirs, vec![data]);
        assert_eq!(config.listener.port(), 9092);
        assert_eq!(config.socket_send_buffer_bytes, Some(102_400));
        assert!(config.explicit.contains("num.io.threads"));
        // A misspelled key in such a file is named with the file and the near key.
        std::fs::write(&file, "num.partition=3\n").unwrap();
        let error = BrokerConfig::load(&[file], [], &[])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("server.properties") && error.contains("did you mean `num.partitions`?"),
            "{error}"
        );
    }

    #[test]
    fn a_misspelled_override_gets_the_near_key() {
        let error = BrokerConfig::load(&[], [], &["num.partition=3".to_string()])
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "unknown configuration key `num.partition` (from --override; did you mean `num.partitions`?)"
        );
    }

    #[test]
    fn kafkas_coarser_time_keys_set_the_ms_key_with_kafkas_precedence() {
        let load = |overrides: &[&str]| {
            let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
            BrokerConfig::load(&[], [], &overrides)
                .unwrap()
                .log_defaults
        };
        const HOUR: i64 = 3_600_000;
        assert_eq!(load(&[]).retention_ms, 168 * HOUR);
        assert_eq!(load(&["log.retention.hours=72"]).retention_ms, 72 * HOUR);
        assert_eq!(
            load(&["log.retention.hours=72", "log.retention.minutes=30"]).retention_ms,
            30 * 60_000
        );
        assert_eq!(
            load(&["log.retention.minutes=30", "log.retention.ms=1000"]).retention_ms,
            1000
        );
        assert_eq!(load(&["log.retention.hours=-1"]).retention_ms, -1);
        assert_eq!(load(&["log.roll.hours=2"]).segment_ms, 2 * HOUR);
        assert_eq!(
            load(&["log.roll.hours=2", "log.roll.ms=5000"]).segment_ms,
            5000
        );
        assert_eq!(load(&["log.roll.jitter.hours=1"]).segment_jitter_ms, HOUR);
        let error =
            BrokerConfig::load(&[], [], &["log.retention.hours=soon".to_string()]).unwrap_err();
        assert!(error.to_string().contains("log.retention.hours"), "{error}");
        let config = BrokerConfig::load(&[], [], &["delete.topic.enable=false".to_string()]);
        assert!(!config.unwrap().delete_topic_enable);
    }

    #[test]
    fn a_listener_of_a_protocol_oxbow_does_not_serve_is_refused_never_downgraded() {
        let load = |overrides: &[&str]| {
            let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
            BrokerConfig::load(&[], [], &overrides)
        };
        // SASL on the quorum's listener is not served.
        for protocol in ["SASL_PLAINTEXT", "SASL_SSL"] {
            let map =
                format!("listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:{protocol}");
            let refused = [
                "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
                map.as_str(),
                "ssl.keystore.location=/etc/oxbow/broker.pem",
            ];
            let error = load(&refused).unwrap_err().to_string();
            assert!(error.contains("does not serve"), "{refused:?}: {error}");
        }
        // SSL on it is mutual TLS: a trust store is required.
        let controller_ssl = [
            "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
            "ssl.keystore.location=/etc/oxbow/broker.pem",
        ];
        let error = load(&controller_ssl).unwrap_err().to_string();
        assert!(error.contains("ssl.truststore.location"), "{error}");
        let mut with_trust = controller_ssl.to_vec();
        with_trust.push("ssl.truststore.location=/etc/oxbow/ca.pem");
        assert!(load(&with_trust).unwrap().controller_tls);
        // SSL is served, with a key store; without one it is refused, never plaintext.
        let error = load(&["listeners=SSL://127.0.0.1:9093"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("ssl.keystore.location"), "{error}");
        let config = load(&[
            "listeners=PLAINTEXT://127.0.0.1:9092,CLIENT://127.0.0.1:9093",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENT:SSL",
            "ssl.keystore.location=/etc/oxbow/broker.pem",
        ])
        .unwrap();
        assert_eq!(config.client_listeners[1].protocol, SecurityProtocol::Ssl);
        assert!(config.ssl.is_some());
        // Followers verify leaders over an SSL inter-broker listener: a trust store is needed.
        let error = load(&[
            "listeners=SSL://127.0.0.1:9093",
            "ssl.keystore.location=/etc/oxbow/broker.pem",
        ])
        .unwrap_err()
        .to_string();
        assert!(error.contains("ssl.truststore.location"), "{error}");
        let config = load(&[
            "listeners=SSL://127.0.0.1:9093",
            "ssl.keystore.location=/etc/oxbow/broker.pem",
            "ssl.truststore.location=/etc/oxbow/ca.pem",
        ])
        .unwrap();
        assert!(config.inter_broker_tls());
        // SASL listeners serve clients; followers do not speak SASL, so the inter-broker
        // listener may not be one, and mechanisms Oxbow does not serve are refused by name.
        let config = load(&[
            "listeners=PLAINTEXT://127.0.0.1:9092,CLIENT://127.0.0.1:9093",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENT:SASL_PLAINTEXT",
        ])
        .unwrap();
        assert_eq!(
            config.client_listeners[1].protocol,
            SecurityProtocol::SaslPlaintext
        );
        assert_eq!(config.sasl_mechanisms.len(), 2);
        // A SASL inter-broker listener: followers need a mechanism Oxbow speaks as a client
        // (Kafka's default GSSAPI is refused) and their JAAS username and password.
        let error = load(&["listeners=SASL_PLAINTEXT://127.0.0.1:9093"])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("sasl.mechanism.inter.broker.protocol") && error.contains("GSSAPI"),
            "{error}"
        );
        let error = load(&[
            "listeners=SASL_PLAINTEXT://127.0.0.1:9093",
            "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
        ])
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config"),
            "{error}"
        );
        let config = load(&[
            "listeners=SASL_PLAINTEXT://127.0.0.1:9093",
            "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
            r#"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";"#,
        ])
        .unwrap();
        let sasl = config.inter_broker_sasl.unwrap();
        assert_eq!(
            (sasl.username.as_str(), sasl.password.as_str()),
            ("broker", "broker-secret")
        );
        assert!(!format!("{sasl:?}").contains("broker-secret"));
        let error = load(&[
            "listeners=SASL_PLAINTEXT://127.0.0.1:9093",
            "sasl.enabled.mechanisms=SCRAM-SHA-256",
            "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
        ])
        .unwrap_err()
        .to_string();
        assert!(error.contains("not offered"), "{error}");
        let error = load(&["sasl.enabled.mechanisms=SCRAM-SHA-512,GSSAPI"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("GSSAPI"), "{error}");
        let config = load(&["sasl.enabled.mechanisms=PLAIN,OAUTHBEARER,SCRAM-SHA-256"]).unwrap();
        assert_eq!(config.sasl_mechanisms.len(), 3);
        // Kafka's per-listener SASL keys: a listener's own mechanisms and JAAS entries.
        let config = load(&[
            "listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094",
            "ssl.keystore.location=/nonexistent.pem",
            "listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required;",
        ])
        .unwrap();
        assert_eq!(
            config.sasl_mechanisms_for("SASL_SSL"),
            &[crate::model::SaslMechanism::Plain]
        );
        assert_eq!(config.sasl_mechanisms_for("PLAINTEXT").len(), 2);
        let error = load(&["listener.name.external.sasl.enabled.mechanisms=PLAIN"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("no listener is named EXTERNAL"), "{error}");
        // A listener's own TLS stores; the broker-wide ones are then not needed.
        let config = load(&[
            "listeners=PLAINTEXT://127.0.0.1:9092,EXTERNAL://127.0.0.1:9094",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTERNAL:SSL",
            "listener.name.external.ssl.keystore.location=/external.pem",
            "listener.name.external.ssl.truststore.location=/clients-ca.crt",
            "listener.name.external.ssl.client.auth=required",
        ])
        .unwrap();
        assert!(config.ssl.is_none());
        let external = &config.listener_ssl["EXTERNAL"];
        assert_eq!(external.client_auth, ClientAuth::Required);
        assert_eq!(
            external.keystore,
            KeyStore::File(PathBuf::from("/external.pem"))
        );
        let error = load(&["listener.name.plaintext.ssl.keystore.location=/x.pem"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("does not use TLS"), "{error}");
        let error = load(&[
            "listeners=PLAINTEXT://127.0.0.1:9092,EXTERNAL://127.0.0.1:9094",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTERNAL:SSL",
            "listener.name.external.ssl.client.auth=required",
        ])
        .unwrap_err()
        .to_string();
        assert!(error.contains("ssl.keystore.location"), "{error}");
        // A name with no protocol is refused as Kafka refuses it.
        let error = load(&["listeners=PLAINTEXT://127.0.0.1:9092,EXTERNAL://127.0.0.1:9094"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("EXTERNAL"), "{error}");
        // Mapped to PLAINTEXT it is a second client listener; the first is inter-broker
        // unless inter.broker.listener.name says otherwise.
        let config = load(&[
            "listeners=PLAINTEXT://127.0.0.1:9092,EXTERNAL://127.0.0.1:9094",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "advertised.listeners=PLAINTEXT://internal:9092,EXTERNAL://public:31000",
        ])
        .unwrap();
        assert_eq!(config.listener.to_string(), "127.0.0.1:9092");
        assert_eq!(config.client_listeners.len(), 2);
        assert_eq!(config.inter_broker_listener, "PLAINTEXT");
        assert_eq!(
            (config.advertised_host.as_str(), config.advertised_port),
            ("internal", 9092)
        );
        let config = load(&[
            "listeners=PLAINTEXT://127.0.0.1:9092,EXTERNAL://127.0.0.1:9094",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name=EXTERNAL",
        ])
        .unwrap();
        assert_eq!(config.listener.to_string(), "127.0.0.1:9094");
        let error = load(&["inter.broker.listener.name=NOPE"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("inter.broker.listener.name"), "{error}");
        // Host names and an empty host, as Kafka takes them.
        let config = load(&["listeners=PLAINTEXT://localhost:9092"]).unwrap();
        assert!(config.listener.ip().is_loopback());
        assert_eq!(config.advertised_host, "localhost");
        let config = load(&["listeners=PLAINTEXT://:9092"]).unwrap();
        assert!(config.listener.ip().is_unspecified());
        let error = load(&["listener.security.protocol.map=PLAINTEXT:TLS"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("listener.security.protocol.map"), "{error}");
    }
}
