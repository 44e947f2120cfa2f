//! Broker configuration rendering: the flat YAML maps of Kafka property names the broker
//! loads with `--config FILE` (later files override earlier ones).
//!
//! The ConfigMap holds one shared file and one file per broker:
//!
//! ```text
//!   broker.yaml        shared: listeners' protocol map, quorum voters, log.dirs, metrics,
//!                      then the user's overrides. Its hash is in the pod template, so a
//!                      change rolls the brokers (one at a time).
//!   NAME-<n>.yaml      per broker: node.id = n, process.roles, listeners,
//!                      advertised.listeners (the pod's stable DNS name, or its IP, and
//!                      the external address). Adding a broker adds a file without
//!                      rolling the others. Addresses only the kubelet knows (the pod's
//!                      IP, its node's) are `${env:POD_IP}` / `${env:HOST_IP}`, resolved
//!                      by the broker's env config provider (Kafka's KIP-887), which
//!                      broker.yaml turns on.
//!   /var/run/oxbow/rack.yaml   written at start-up by the `rack-init` init container:
//!                      `broker.rack: <the node's zone>`.
//! ```
//!
//! The broker is started as
//! `oxbow --config /etc/oxbow/broker.yaml --config /etc/oxbow/$(POD_NAME).yaml [--config /var/run/oxbow/rack.yaml]`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use oxbow_config_keys::Kind;

use super::names::Names;
use super::security;
use crate::crd::{AdvertiseMode, ClusterSpec, ExternalType};

/// Mount path of the ConfigMap in the broker container.
pub const CONFIG_DIR: &str = "/etc/oxbow";
/// Shared broker config file name (a ConfigMap key).
pub const SHARED_CONFIG_FILE: &str = "broker.yaml";
/// Directory of the rack file written by the init container.
pub const RACK_DIR: &str = "/var/run/oxbow";
/// Rack file name.
pub const RACK_FILE: &str = "rack.yaml";
/// Mount path of the data claim.
pub const DATA_MOUNT: &str = "/var/lib/oxbow";
/// `log.dirs` inside the data claim (a subdirectory, so `lost+found` stays out of the log).
pub const LOG_DIR: &str = "/var/lib/oxbow/data";

/// Keys the operator renders itself; a user override of one is refused.
pub const MANAGED_KEYS: &[&str] = &[
    "node.id",
    "broker.id",
    "process.roles",
    "controller.quorum.voters",
    "controller.quorum.bootstrap.servers",
    "listeners",
    "advertised.listeners",
    "controller.listener.names",
    "inter.broker.listener.name",
    "listener.security.protocol.map",
    "log.dirs",
    "log.dir",
    "broker.rack",
    "metrics.listener",
    "config.providers",
    // The security the spec declares (listeners' tls/authentication, authorization,
    // certificates), rendered by cluster/security.rs.
    "ssl.keystore.location",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.client.auth",
    "ssl.principal.mapping.rules",
    "authorizer.class.name",
    "super.users",
    "sasl.oauthbearer.jwks.endpoint.url",
];

/// Which keys a spec's config map may hold: the catalog's (crate `oxbow-config-keys`, the
/// broker's own list), so the operator offers exactly the keys the broker accepts, with the
/// broker's types and allowed values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySet {
    /// Static broker keys (a Cluster's `config`); the ones in [`MANAGED_KEYS`] are refused.
    Broker,
    /// Topic keys (a Topic's `config`).
    Topic,
}

/// Broker config keys a Cluster may override.
pub const BROKER_KEYS: KeySet = KeySet::Broker;
/// Topic config keys a Topic may set.
pub const TOPIC_KEYS: KeySet = KeySet::Topic;

impl KeySet {
    /// The type and allowed values (empty: any) of `key`, when it is in this set.
    pub fn lookup(self, key: &str) -> Option<ValueRule> {
        match self {
            KeySet::Broker => oxbow_config_keys::static_broker_keys()
                .find(|k| k.name == key)
                .map(|k| ValueRule {
                    kind: k.kind,
                    choices: k.choices,
                    range: k.range,
                }),
            KeySet::Topic => oxbow_config_keys::topic_key(key).map(|k| ValueRule {
                kind: k.kind(),
                choices: k.choices(),
                range: None,
            }),
        }
    }
}

/// What a value of a key must be: of its kind, one of its choices (if any), in its range
/// (if any) — the broker refuses to start otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueRule {
    pub kind: Kind,
    pub choices: &'static [&'static str],
    pub range: Option<(i64, i64)>,
}

/// A config override that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("config key `{key}` is managed by the operator")]
    Managed { key: String },
    #[error("config key `{key}` is not a known {scope} config")]
    Unknown { key: String, scope: &'static str },
    #[error("config key `{key}` has value `{value}`, expected {expected}")]
    BadValue {
        key: String,
        value: String,
        expected: String,
    },
}

/// The string form Kafka uses for a value.
pub fn value_string(value: &IntOrString) -> String {
    match value {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

/// Checks every entry of `config` against `known` and returns the normalised string values.
pub fn validate_config(
    config: &BTreeMap<String, IntOrString>,
    known: KeySet,
    scope: &'static str,
    managed: &[&str],
) -> Result<BTreeMap<String, String>, Vec<ConfigError>> {
    let mut errors = Vec::new();
    let mut out = BTreeMap::new();
    for (key, value) in config {
        if managed.contains(&key.as_str()) {
            errors.push(ConfigError::Managed { key: key.clone() });
            continue;
        }
        let Some(rule) = known.lookup(key) else {
            errors.push(ConfigError::Unknown {
                key: key.clone(),
                scope,
            });
            continue;
        };
        let text = value_string(value).trim().to_string();
        match check_value(&text, rule) {
            Ok(()) => {
                out.insert(key.clone(), text);
            }
            Err(expected) => errors.push(ConfigError::BadValue {
                key: key.clone(),
                value: text,
                expected,
            }),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn check_value(text: &str, rule: ValueRule) -> Result<(), String> {
    let ValueRule {
        kind,
        choices,
        range,
    } = rule;
    if let (Some((min, max)), Ok(number)) = (range, text.parse::<i64>())
        && !(min..=max).contains(&number)
    {
        return Err(format!("an integer from {min} to {max}"));
    }
    if !choices.is_empty() {
        return if choices.contains(&text) {
            Ok(())
        } else {
            Err(format!("one of {}", choices.join(", ")))
        };
    }
    let (ok, expected) = match kind {
        Kind::Short => (text.parse::<i16>().is_ok(), "a 16-bit integer"),
        Kind::Int => (text.parse::<i32>().is_ok(), "a 32-bit integer"),
        Kind::Long => (text.parse::<i64>().is_ok(), "a 64-bit integer"),
        Kind::Double => (text.parse::<f64>().is_ok_and(f64::is_finite), "a number"),
        Kind::Boolean => (matches!(text, "true" | "false"), "true or false"),
        Kind::String | Kind::Class | Kind::Password => (true, ""),
        Kind::List => (!text.is_empty(), "a non-empty value"),
    };
    if ok {
        Ok(())
    } else {
        Err(expected.to_string())
    }
}

/// Renders a flat YAML map (keys sorted, values as YAML scalars Kafka-style strings).
pub fn render_yaml(entries: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (key, value) in entries {
        out.push_str(key);
        out.push_str(": ");
        out.push_str(&yaml_scalar(value));
        out.push('\n');
    }
    out
}

/// Quotes a value when YAML would read it as something other than the same text.
fn yaml_scalar(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/@:,".contains(c))
        && !value.starts_with(['-', ':', '@', ','])
        && !value.contains(": ");
    if plain {
        value.to_string()
    } else {
        serde_json::Value::String(value.to_string()).to_string()
    }
}

/// The shared `broker.yaml`: everything equal on all brokers, then the user's overrides.
///
/// The quorum is dynamic (KIP-853): `initial_voters` (the voters it was formed with) are the
/// voters a new quorum starts from and the bootstrap servers every node finds it through;
/// every node learns the current voters from the quorum itself, so a change of
/// `controllerVoters` leaves this file, and so every broker's restart, alone.
pub fn shared_config(
    spec: &ClusterSpec,
    names: &Names,
    overrides: &BTreeMap<String, String>,
    initial_voters: i32,
) -> String {
    let mut entries = BTreeMap::new();
    let address = |id: i32| format!("{}:{}", names.pod_dns(id), spec.listeners.controller_port);
    let voters = (0..initial_voters)
        .map(|id| format!("{id}@{}", address(id)))
        .collect::<Vec<_>>()
        .join(",");
    let bootstrap = (0..initial_voters)
        .map(address)
        .collect::<Vec<_>>()
        .join(",");
    entries.insert("controller.quorum.voters".to_string(), voters);
    entries.insert("controller.quorum.bootstrap.servers".to_string(), bootstrap);
    entries.insert(
        "controller.listener.names".to_string(),
        "CONTROLLER".to_string(),
    );
    entries.insert("log.dirs".to_string(), LOG_DIR.to_string());
    entries.insert(
        "metrics.listener".to_string(),
        format!("{}:{}", bind_host(spec), spec.metrics.port),
    );
    if uses_env_provider(spec) {
        entries.insert("config.providers".to_string(), "env".to_string());
        entries.insert(
            "config.providers.env.class".to_string(),
            ENV_PROVIDER_CLASS.to_string(),
        );
    }
    if security::secured(spec) {
        entries.extend(security::shared_entries(spec, names));
    }
    for (key, value) in overrides {
        entries.insert(key.clone(), value.clone());
    }
    render_yaml(&entries)
}

/// Whether broker `ordinal` is a controller voter.
pub fn is_controller(spec: &ClusterSpec, ordinal: i32) -> bool {
    ordinal < spec.controller_voters
}

/// The `listeners` value of a broker bound to `host`.
pub fn listeners(spec: &ClusterSpec, host: &str, controller: bool) -> String {
    let mut listeners = vec![format!(
        "{}://{host}:{}",
        internal_name(spec),
        spec.listeners.kafka_port
    )];
    if security::secured(spec) {
        listeners.push(format!(
            "REPLICATION://{host}:{}",
            spec.listeners.replication_port
        ));
    }
    if controller {
        listeners.push(format!(
            "CONTROLLER://{host}:{}",
            spec.listeners.controller_port
        ));
    }
    if let Some(external) = &spec.listeners.external {
        listeners.push(format!("EXTERNAL://{host}:{}", external.port));
    }
    listeners.join(",")
}

/// The per-broker file: identity and addresses of broker `ordinal`.
pub fn broker_config(spec: &ClusterSpec, names: &Names, ordinal: i32) -> String {
    let mut entries = BTreeMap::new();
    let controller = is_controller(spec, ordinal);
    entries.insert("node.id".to_string(), ordinal.to_string());
    entries.insert(
        "process.roles".to_string(),
        if controller {
            "broker,controller"
        } else {
            "broker"
        }
        .to_string(),
    );
    let internal_host = match spec.listeners.advertise {
        AdvertiseMode::ServiceDns => names.pod_dns(ordinal),
        AdvertiseMode::PodIp => POD_IP.to_string(),
    };
    let mut advertised = vec![format!(
        "{}://{internal_host}:{}",
        internal_name(spec),
        spec.listeners.kafka_port
    )];
    if security::secured(spec) {
        // Brokers and the operator check the name in the certificate: the stable DNS name.
        advertised.push(format!(
            "REPLICATION://{}:{}",
            names.pod_dns(ordinal),
            spec.listeners.replication_port
        ));
        entries.extend(security::broker_entries(names, ordinal));
    }
    if let Some(external) = &spec.listeners.external {
        let (host, port) = match external.type_ {
            ExternalType::NodePort => (
                external
                    .advertised_host
                    .clone()
                    .unwrap_or_else(|| HOST_IP.to_string()),
                external
                    .node_port_base
                    .map_or(external.port, |base| base + ordinal),
            ),
            ExternalType::LoadBalancer => (
                external
                    .advertised_host
                    .clone()
                    .unwrap_or_else(|| names.external_service_dns(ordinal)),
                external.port,
            ),
        };
        advertised.push(format!("EXTERNAL://{host}:{port}"));
    }
    if controller {
        // Where the other controllers reach this one when it joins the quorum.
        advertised.push(format!(
            "CONTROLLER://{}:{}",
            names.pod_dns(ordinal),
            spec.listeners.controller_port
        ));
    }
    entries.insert(
        "listeners".to_string(),
        listeners(spec, bind_host(spec), controller),
    );
    entries.insert("advertised.listeners".to_string(), advertised.join(","));
    // A secured Cluster's map is in the shared file (with every listener's protocol).
    if spec.listeners.external.is_some() && !security::secured(spec) {
        entries.insert(
            "listener.security.protocol.map".to_string(),
            SECURITY_PROTOCOL_MAP.to_string(),
        );
    }
    render_yaml(&entries)
}

/// The internal listener's name: PLAINTEXT as before on an unsecured Cluster (no change,
/// no roll), INTERNAL on a secured one.
fn internal_name(spec: &ClusterSpec) -> &'static str {
    if security::secured(spec) {
        "INTERNAL"
    } else {
        "PLAINTEXT"
    }
}

/// The pod's own address, filled in by the broker's env config provider (Kafka's
/// `${env:NAME}`) from the variable the kubelet sets from `status.podIP`.
const POD_IP: &str = "${env:POD_IP}";
/// The address of the pod's node (`status.hostIP`), likewise.
const HOST_IP: &str = "${env:HOST_IP}";
const ENV_PROVIDER_CLASS: &str = "org.apache.kafka.common.config.provider.EnvVarConfigProvider";

/// Where brokers bind: every interface, or only the pod IP they advertise.
fn bind_host(spec: &ClusterSpec) -> &'static str {
    match spec.listeners.advertise {
        AdvertiseMode::ServiceDns => "0.0.0.0",
        AdvertiseMode::PodIp => POD_IP,
    }
}

/// Whether a NodePort listener advertises each broker's node address (no advertisedHost).
pub fn advertises_node_address(spec: &ClusterSpec) -> bool {
    spec.listeners.external.as_ref().is_some_and(|external| {
        external.type_ == ExternalType::NodePort && external.advertised_host.is_none()
    })
}

/// Whether the broker files hold `${env:...}` values (the pod IP or the node's address).
fn uses_env_provider(spec: &ClusterSpec) -> bool {
    spec.listeners.advertise == AdvertiseMode::PodIp || advertises_node_address(spec)
}

/// Every listener the operator renders is plaintext: the broker refuses a listener name
/// with no protocol in the map (Kafka's rule), and EXTERNAL is not one of Kafka's defaults.
const SECURITY_PROTOCOL_MAP: &str = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTERNAL:PLAINTEXT";
