//! The `Cluster` resource: a set of Oxbow brokers run as one StatefulSet.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, ResourceRequirements, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default rack topology key: the well-known zone label of a node.
pub const DEFAULT_TOPOLOGY_KEY: &str = "topology.kubernetes.io/zone";
/// Default Kafka listener port.
pub const DEFAULT_KAFKA_PORT: i32 = 9092;
/// Default KRaft controller listener port.
pub const DEFAULT_CONTROLLER_PORT: i32 = 9093;
/// Default port of the broker's Prometheus endpoint (`/metrics`, `/healthz`, `/readyz`).
pub const DEFAULT_METRICS_PORT: i32 = 9644;
/// Default port of the optional external listener inside the pod.
pub const DEFAULT_EXTERNAL_PORT: i32 = 9094;
/// Default port of the replication listener of a secured Cluster (Strimzi's too).
pub const DEFAULT_REPLICATION_PORT: i32 = 9091;
/// Default volume size of each broker's data claim.
pub const DEFAULT_STORAGE_SIZE: &str = "10Gi";

/// Desired state of an Oxbow cluster.
// Several `printcolumn(...)` entries repeat `type_`, which clippy takes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "oxbow.dev",
    version = "v1alpha1",
    kind = "Cluster",
    namespaced,
    status = "ClusterStatus",
    derive = "PartialEq",
    shortname = "oxc",
    category = "oxbow",
    doc = "An Oxbow cluster: brokers in a StatefulSet with per-broker DNS, a bootstrap Service and rack awareness.",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyReplicas"),
    printcolumn(name = "Version", type_ = "string", json_path = ".status.version"),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].reason"
    ),
    printcolumn(
        name = "Operation",
        type_ = "string",
        json_path = ".status.scaling.phase"
    ),
    printcolumn(
        name = "Scaling",
        type_ = "string",
        json_path = ".status.scaling.message"
    ),
    printcolumn(
        name = "Bootstrap",
        type_ = "string",
        json_path = ".status.bootstrap",
        priority = 1
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[x_kube(validation = Rule::new("self.replicas >= self.controllerVoters").message("replicas must be at least controllerVoters"))]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// Number of brokers. `kubectl scale cluster/NAME --replicas=N` changes it.
    #[schemars(range(min = 1, max = 1000))]
    pub replicas: i32,

    /// The Oxbow release the brokers run, e.g. `0.1.0`. The broker image is then the
    /// operator's broker image repository tagged with it (unless `image` names one). A change
    /// restarts the brokers one at a time behind the roll gate; once every broker runs it and
    /// is ready, the operator finalizes every feature level (`metadata.version`,
    /// `kraft.version`, `transaction.version`, `group.version`, ...) at the highest level
    /// every broker supports, unless `features` holds it. A release that cannot run the
    /// levels the cluster already finalized is refused (Degraded,
    /// `DowngradeBelowFinalizedFeatures`) and nothing rolls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$"))]
    pub version: Option<String>,

    /// Broker container image; defaults to the operator's broker image repository tagged
    /// with `version`, or without `version` to the image the operator was configured with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,

    /// Feature levels (KIP-584) to hold, e.g. `{metadata.version: 21, group.version: 0}`:
    /// the operator finalizes these levels, asking for a safe downgrade when one is below the
    /// finalized level, instead of the highest the brokers support. What the brokers refuse
    /// (a level a broker does not support, a downgrade that would lose metadata, lowering
    /// `kraft.version`) is shown in the `FeaturesFinalized` condition with their reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 32))]
    #[schemars(extend("additionalProperties" = {"type": "integer", "minimum": 0, "maximum": 32767}))]
    pub features: BTreeMap<String, i16>,

    /// Image pull policy of the broker container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<PullPolicy>,

    /// CPU and memory requests and limits of the broker container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,

    /// Persistent storage of each broker.
    #[serde(default)]
    pub storage: StorageSpec,

    /// Broker configuration overrides, Kafka property names to values
    /// (e.g. `log.retention.hours: 72`). Keys are checked against the keys the broker knows;
    /// keys the operator manages (node.id, listeners, ...) are refused.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[x_kube(validation = Rule::new(
        "!('node.id' in self) && !('broker.id' in self) && !('process.roles' in self) && !('controller.quorum.voters' in self) && !('controller.quorum.bootstrap.servers' in self) && !('listeners' in self) && !('advertised.listeners' in self) && !('controller.listener.names' in self) && !('inter.broker.listener.name' in self) && !('listener.security.protocol.map' in self) && !('log.dirs' in self) && !('log.dir' in self) && !('broker.rack' in self) && !('metrics.listener' in self) && !('ssl.keystore.location' in self) && !('ssl.keystore.certificate.chain' in self) && !('ssl.keystore.key' in self) && !('ssl.truststore.location' in self) && !('ssl.truststore.certificates' in self) && !('ssl.client.auth' in self) && !('ssl.principal.mapping.rules' in self) && !('authorizer.class.name' in self) && !('super.users' in self) && !('sasl.oauthbearer.jwks.endpoint.url' in self)"
    ).message("this key is managed by the operator and cannot be overridden (security: listeners.tls/authentication, authorization)"))]
    #[schemars(extend("maxProperties" = 256))]
    pub config: BTreeMap<String, IntOrString>,

    /// Number of KRaft controller voters: the first 1, 3 or 5 brokers (ordinals 0..N).
    /// A change is carried out one voter at a time with KIP-853's AddRaftVoter /
    /// RemoveRaftVoter: a broker that becomes a voter restarts with the controller role and
    /// is added once it has caught up; a voter that goes is removed, then restarts as a
    /// broker only. Each restart waits for the roll gate.
    #[serde(default = "default_controller_voters")]
    #[x_kube(validation = Rule::new("self == 1 || self == 3 || self == 5").message("controllerVoters must be 1, 3 or 5 (an odd count)"))]
    pub controller_voters: i32,

    /// Bytes per second each broker may spend copying the replicas that a move creates
    /// (scaling, a Topic's replication factor change): Kafka's replication throttle, applied
    /// only to the moving replicas, so clients are never slowed. Default 100 MiB/s.
    #[serde(default = "default_move_throttle")]
    #[schemars(range(min = 1048576))]
    pub move_throttle_bytes_per_second: i64,

    /// Rack awareness: each broker's `broker.rack` is its node's value of `topologyKey`.
    #[serde(default)]
    pub rack: RackSpec,

    /// Listener ports, their TLS and authentication, and the optional external listener.
    #[serde(default)]
    pub listeners: ListenersSpec,

    /// Access control: `simple` checks every request against the ACLs (Kafka's
    /// StandardAuthorizer) over the ACLs of the Cluster's `User` resources; `superUsers` may
    /// do anything. Unset: no checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<AuthorizationSpec>,

    /// The certificates the operator issues when a listener uses TLS (a cluster CA for the
    /// brokers, a clients CA for `tls` Users): how long they last and when they are renewed.
    #[serde(default)]
    pub certificates: CertificatesSpec,

    /// Prometheus metrics of the brokers.
    #[serde(default)]
    pub metrics: MetricsSpec,

    /// A NetworkPolicy for the brokers: client listeners and metrics open, the replication
    /// listener to the brokers and the operator, the controller port to the brokers only.
    #[serde(default)]
    pub network_policy: NetworkPolicyOption,

    /// Pod template overrides: scheduling and priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplateOverrides>,
}

fn default_move_throttle() -> i64 {
    100 * 1024 * 1024
}

fn default_controller_voters() -> i32 {
    1
}

/// Image pull policy, as in a Pod's container.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum PullPolicy {
    Always,
    IfNotPresent,
    Never,
}

impl PullPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            PullPolicy::Always => "Always",
            PullPolicy::IfNotPresent => "IfNotPresent",
            PullPolicy::Never => "Never",
        }
    }
}

/// Persistent storage of each broker: one PersistentVolumeClaim per broker.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StorageSpec {
    /// Size of each broker's claim (a Kubernetes quantity, e.g. `100Gi`). It can grow: the
    /// operator expands every claim where the StorageClass allows volume expansion (the
    /// `StorageResized` condition says where it stands); it cannot shrink.
    #[serde(default = "default_storage_size")]
    #[schemars(regex(pattern = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"))]
    #[x_kube(validation = Rule::new("!isQuantity(self) || !isQuantity(oldSelf) || quantity(self).compareTo(quantity(oldSelf)) >= 0").message("storage.size can only grow: a claim cannot shrink"))]
    pub size: String,
    /// Storage class of the claims; the cluster default when unset. Fixed at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("storage.storageClassName is immutable"))]
    pub storage_class_name: Option<String>,
    /// Delete the claims (and so the data) when the Cluster is deleted. Kept by default.
    #[serde(default)]
    pub delete_claims: bool,
    /// Delete a removed broker's claim when a scale-in has drained and removed it. Kept by
    /// default (a later scale-out reuses it; the broker drops the partitions the metadata
    /// no longer places on it).
    #[serde(default)]
    pub delete_claims_on_scale_in: bool,
}

fn default_storage_size() -> String {
    DEFAULT_STORAGE_SIZE.to_string()
}

impl Default for StorageSpec {
    fn default() -> Self {
        Self {
            size: default_storage_size(),
            storage_class_name: None,
            delete_claims: false,
            delete_claims_on_scale_in: false,
        }
    }
}

/// Rack awareness.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RackSpec {
    /// When false, brokers get no `broker.rack` and no node lookup happens.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Node label whose value is the broker's rack.
    #[serde(default = "default_topology_key")]
    #[schemars(length(min = 1, max = 317))]
    pub topology_key: String,
}

fn default_true() -> bool {
    true
}

fn default_topology_key() -> String {
    DEFAULT_TOPOLOGY_KEY.to_string()
}

impl Default for RackSpec {
    fn default() -> Self {
        Self {
            enabled: true,
            topology_key: default_topology_key(),
        }
    }
}

/// Listener ports inside the pod, their security, and the optional external listener.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.authentication) || self.authentication != 'tls' || (has(self.tls) && self.tls)").message("authentication tls needs tls: true on the internal listener"))]
pub struct ListenersSpec {
    /// Port of the internal Kafka listener (PLAINTEXT).
    #[serde(default = "default_kafka_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub kafka_port: i32,
    /// Port of the KRaft controller listener.
    #[serde(default = "default_controller_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub controller_port: i32,
    /// What brokers advertise to clients: their stable DNS names through the headless
    /// Service (`ServiceDNS`, the default), or their pod IPs (`PodIP`: for environments
    /// without cluster DNS; brokers then also bind their pod IP).
    #[serde(default)]
    pub advertise: AdvertiseMode,
    /// Optional external listener: one NodePort or LoadBalancer Service per broker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalListener>,
    /// TLS on the internal listener, with a broker certificate from the cluster CA.
    #[serde(default)]
    pub tls: bool,
    /// How clients of the internal listener authenticate: with the credentials of `User`
    /// resources (a SCRAM password, a certificate of the clients CA), or `none`.
    #[serde(default)]
    pub authentication: ListenerAuthentication,
    /// The identity provider of `oauth` listeners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthSpec>,
    /// Port of the replication listener: mutual TLS with the cluster CA, for the brokers
    /// and the operator only; there when any listener uses TLS or authentication.
    #[serde(default = "default_replication_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub replication_port: i32,
}

/// How the clients of a listener prove who they are.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ListenerAuthentication {
    /// Nobody: every client is `User:ANONYMOUS`.
    #[default]
    #[serde(rename = "none")]
    None,
    /// SASL/SCRAM-SHA-512 with a User's password.
    #[serde(rename = "scram-sha-512")]
    ScramSha512,
    /// SASL/SCRAM-SHA-256 with a User's password.
    #[serde(rename = "scram-sha-256")]
    ScramSha256,
    /// A client certificate from the clients CA (needs `tls: true`).
    #[serde(rename = "tls")]
    Tls,
    /// SASL/OAUTHBEARER: a JWT signed by a key of `listeners.oauth.jwks`; the principal is
    /// its `sub` claim (`sasl.oauthbearer.sub.claim.name`), `User:<sub>`.
    #[serde(rename = "oauth")]
    Oauth,
}

/// The identity provider an `oauth` listener trusts.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OAuthSpec {
    /// The provider's JSON Web Key Set, from a Secret of the namespace (mounted in the pods;
    /// the brokers re-read it when the Secret changes, so a key rotation needs no restart).
    /// `sasl.oauthbearer.expected.audience`, `expected.issuer`, `sub.claim.name` and
    /// `clock.skew.seconds` may be set in `config`.
    pub jwks: super::SecretKeyRef,
}

/// Access control of a Cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationSpec {
    #[serde(rename = "type")]
    pub type_: AuthorizationType,
    /// Principals every check allows, e.g. `User:admin`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub super_users: Vec<String>,
}

/// The authorizer.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum AuthorizationType {
    /// Kafka's StandardAuthorizer over the ACLs in the metadata log.
    #[serde(rename = "simple")]
    Simple,
}

/// Validity of the certificates the operator issues.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self.renewBeforeDays < self.validityDays").message("renewBeforeDays must be less than validityDays"))]
pub struct CertificatesSpec {
    /// Days a certificate is valid.
    #[serde(default = "default_validity_days")]
    #[schemars(range(min = 1, max = 3650))]
    pub validity_days: i32,
    /// Days before the end of its validity a certificate is issued again.
    #[serde(default = "default_renew_before_days")]
    #[schemars(range(min = 1, max = 3649))]
    pub renew_before_days: i32,
    /// `false`: the cluster CA and the clients CA are yours, not the operator's: Secrets
    /// `NAME-cluster-ca` and `NAME-clients-ca` with `ca.crt` and `ca.key` (or `tls.crt` and
    /// `tls.key`, as a cert-manager Certificate with `isCA: true` writes them). The operator
    /// signs the brokers' and Users' certificates with them and never changes them; a new CA
    /// in a Secret re-issues what it signs, the previous one trusted while it is valid.
    #[serde(default = "generate_certificate_authority")]
    pub generate_certificate_authority: bool,
}

fn generate_certificate_authority() -> bool {
    true
}

fn default_validity_days() -> i32 {
    365
}

fn default_renew_before_days() -> i32 {
    30
}

fn default_replication_port() -> i32 {
    DEFAULT_REPLICATION_PORT
}

impl Default for CertificatesSpec {
    fn default() -> Self {
        Self {
            validity_days: default_validity_days(),
            renew_before_days: default_renew_before_days(),
            generate_certificate_authority: true,
        }
    }
}

/// Address a broker advertises on its internal listener.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum AdvertiseMode {
    #[default]
    #[serde(rename = "ServiceDNS")]
    ServiceDns,
    #[serde(rename = "PodIP")]
    PodIp,
}

fn default_kafka_port() -> i32 {
    DEFAULT_KAFKA_PORT
}

fn default_controller_port() -> i32 {
    DEFAULT_CONTROLLER_PORT
}

impl Default for ListenersSpec {
    fn default() -> Self {
        Self {
            kafka_port: DEFAULT_KAFKA_PORT,
            controller_port: DEFAULT_CONTROLLER_PORT,
            advertise: AdvertiseMode::default(),
            external: None,
            tls: false,
            authentication: ListenerAuthentication::None,
            oauth: None,
            replication_port: DEFAULT_REPLICATION_PORT,
        }
    }
}

/// External access: each broker gets its own Service so clients can reach the partition
/// leaders they are sent to.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self.type != 'NodePort' || has(self.nodePortBase)").message("a NodePort external listener needs nodePortBase"))]
#[x_kube(validation = Rule::new("!has(self.authentication) || self.authentication != 'tls' || (has(self.tls) && self.tls)").message("authentication tls needs tls: true on the external listener"))]
pub struct ExternalListener {
    /// Service type of the per-broker Services.
    #[serde(rename = "type")]
    pub type_: ExternalType,
    /// Port of the external listener inside the pod (and of a LoadBalancer Service).
    #[serde(default = "default_external_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// First node port (broker N gets `nodePortBase + N`); Kubernetes picks when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub node_port_base: Option<i32>,
    /// Host name or address clients use to reach the nodes (NodePort) or the load balancers.
    /// NodePort without it: each broker advertises the node it runs on (the pod's
    /// `status.hostIP`, the node's InternalIP), as a client that reaches any node needs.
    /// LoadBalancer without it: the per-broker Service's cluster DNS name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advertised_host: Option<String>,
    /// TLS on the external listener (the broker certificates name the advertised address).
    #[serde(default)]
    pub tls: bool,
    /// How clients of the external listener authenticate, as the internal listener's.
    #[serde(default)]
    pub authentication: ListenerAuthentication,
}

fn default_external_port() -> i32 {
    DEFAULT_EXTERNAL_PORT
}

/// Service type of the external listener.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ExternalType {
    NodePort,
    LoadBalancer,
}

/// Prometheus metrics of the brokers.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricsSpec {
    /// Port of the broker's `/metrics`, `/healthz` and `/readyz`.
    #[serde(default = "default_metrics_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// Create a Prometheus Operator ServiceMonitor for the brokers.
    #[serde(default)]
    pub service_monitor: bool,
}

fn default_metrics_port() -> i32 {
    DEFAULT_METRICS_PORT
}

impl Default for MetricsSpec {
    fn default() -> Self {
        Self {
            port: DEFAULT_METRICS_PORT,
            service_monitor: false,
        }
    }
}

/// Whether the operator manages a NetworkPolicy for the brokers (it needs a network plugin
/// that enforces NetworkPolicies).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicyOption {
    #[serde(default)]
    pub enabled: bool,
}

/// Pod template overrides for the broker pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplateOverrides {
    /// Tolerations of the broker pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Node selector of the broker pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Affinity of the broker pods; replaces the operator's default anti-affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Priority class of the broker pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Extra labels on the broker pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Extra annotations on the broker pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// Observed state of a Cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// Ready, Reconciling and Degraded, with reasons and messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Brokers that exist (StatefulSet pods).
    #[serde(default)]
    pub replicas: i32,
    /// Brokers that are ready.
    #[serde(default)]
    pub ready_replicas: i32,
    /// One entry per broker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub brokers: Vec<BrokerStatus>,
    /// Bootstrap address for clients inside the Kubernetes cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<String>,
    /// Label selector of the broker pods (used by the scale subresource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// A scale that moves data, while it runs (or while it is refused).
    // Written as null when absent: the status is a merge patch, and only null removes a
    // field that was there (a finished scale, an error that went away).
    #[serde(default)]
    pub scaling: Option<ScalingStatus>,
    /// The metadata quorum's voters (null until the brokers answered once).
    #[serde(default)]
    pub quorum: Option<QuorumStatus>,
    /// The release every broker runs (`spec.version`, or the tag of their image); while a
    /// roll moves them to another, the release they ran before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The cluster's finalized feature levels (KIP-584), as the brokers report them, with
    /// every feature a broker supports (0: not finalized).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("additionalProperties" = {"type": "integer", "minimum": 0, "maximum": 32767}))]
    pub finalized_features: BTreeMap<String, i16>,
    /// The levels the operator will finalize, by feature, and has not yet (the
    /// `FeaturesFinalized` condition says what it waits for).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("additionalProperties" = {"type": "integer", "minimum": 0, "maximum": 32767}))]
    pub pending_features: BTreeMap<String, i16>,
}

/// The controller voters, and a change of them in progress.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuorumStatus {
    /// The voters that formed the quorum (the brokers' `controller.quorum.voters`); kept, so
    /// that a later change of `controllerVoters` changes no broker's shared configuration.
    pub initial_voters: i32,
    /// The voters now, as the active controller reports them.
    #[serde(default)]
    pub voters: Vec<i32>,
    /// The active controller.
    #[serde(default)]
    pub leader: Option<i32>,
    /// What a change of the voters is doing or waits for, in a sentence (null when the
    /// voters are as asked).
    #[serde(default)]
    pub message: Option<String>,
}

/// A scale in progress: a scale-in drains the leaving brokers before their pods go, a
/// scale-out moves replicas onto the new brokers.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScalingStatus {
    /// Brokers before.
    pub from: i32,
    /// Brokers asked for.
    pub to: i32,
    /// StartingBrokers, Balancing, ElectingLeaders, Draining, RemovingBrokers or Refused.
    pub phase: ScalingPhase,
    /// What is happening, in a sentence.
    pub message: String,
    /// The data moves in flight, while replicas copy (null otherwise).
    #[serde(default)]
    pub progress: Option<MoveProgress>,
}

/// Where a scale is. Serialized as the variant's name, which is also the Ready and
/// Reconciling conditions' reason while it runs (and the `Operation` printer column).
// Plain comments on the variants: doc comments would turn the schema's `enum` into a
// `oneOf` of constants.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum ScalingPhase {
    // Scale-out: the new brokers' pods start and register.
    StartingBrokers,
    // Scale-out: replicas move onto the new brokers.
    Balancing,
    // Scale-out: leadership goes back to the preferred replicas.
    ElectingLeaders,
    // Scale-in: replicas move off the leaving brokers, which stay until they hold none.
    Draining,
    // Scale-in: the drained brokers' pods go and the brokers are unregistered.
    RemovingBrokers,
    // The scale cannot be done as asked; the message says why.
    Refused,
}

impl ScalingPhase {
    /// The phase as the status shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            ScalingPhase::StartingBrokers => "StartingBrokers",
            ScalingPhase::Balancing => "Balancing",
            ScalingPhase::ElectingLeaders => "ElectingLeaders",
            ScalingPhase::Draining => "Draining",
            ScalingPhase::RemovingBrokers => "RemovingBrokers",
            ScalingPhase::Refused => "Refused",
        }
    }
}

impl std::fmt::Display for ScalingPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How far the replica copies of a scale are, from the brokers' log sizes (DescribeLogDirs).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MoveProgress {
    /// Partitions still copying.
    pub partitions: i32,
    /// Bytes the new replicas of those partitions copy in all (their leaders' log sizes).
    pub bytes_to_copy: i64,
    /// Bytes of that already on the new replicas.
    pub bytes_copied: i64,
    /// Copy rate between the operator's last two looks, bytes/s (null on the first look).
    #[serde(default)]
    pub bytes_per_second: Option<i64>,
    /// Seconds left at that rate (null without a rate).
    #[serde(default)]
    pub eta_seconds: Option<i64>,
    /// When these numbers were read, milliseconds since the Unix epoch.
    pub observed_at_ms: i64,
}

/// One broker as the operator sees it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrokerStatus {
    /// Kafka `node.id` (the pod ordinal).
    pub id: i32,
    /// Pod name.
    pub pod: String,
    /// Rack (the node's zone), once the pod is scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    /// Pending, Running, Ready, Outdated (config changed, restart pending) or Missing.
    pub state: String,
    /// The release the broker's pod runs (its `app.kubernetes.io/version` label, or the tag
    /// of its image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}
