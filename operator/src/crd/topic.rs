//! The `Topic` resource: a Kafka topic of a `Cluster` in the same namespace.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Finalizer that makes the operator delete the Kafka topic before the resource goes.
pub const TOPIC_FINALIZER: &str = "oxbow.dev/topic";

/// Desired state of a Kafka topic.
// Several `printcolumn(...)` entries repeat `type_`, which clippy takes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "oxbow.dev",
    version = "v1alpha1",
    kind = "Topic",
    namespaced,
    status = "TopicStatus",
    derive = "PartialEq",
    shortname = "oxt",
    category = "oxbow",
    doc = "A Kafka topic of an Oxbow Cluster in the same namespace.",
    printcolumn(name = "Cluster", type_ = "string", json_path = ".spec.cluster"),
    printcolumn(name = "Topic", type_ = "string", json_path = ".status.topicName"),
    printcolumn(name = "Partitions", type_ = "integer", json_path = ".spec.partitions"),
    printcolumn(name = "RF", type_ = "integer", json_path = ".spec.replicationFactor"),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].reason"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct TopicSpec {
    /// Name of the Cluster (same namespace). Immutable.
    #[schemars(length(min = 1, max = 63))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("cluster is immutable"))]
    pub cluster: String,

    /// Kafka topic name; defaults to the resource name. Use it for names Kubernetes cannot
    /// hold (upper case, underscores). Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[a-zA-Z0-9._-]{1,249}$"))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("topicName is immutable"))]
    #[x_kube(validation = Rule::new("self != '.' && self != '..'").message("topicName cannot be '.' or '..'"))]
    pub topic_name: Option<String>,

    /// Number of partitions; it can only grow.
    #[schemars(range(min = 1, max = 100000))]
    #[x_kube(validation = Rule::new("self >= oldSelf").message("partitions can only grow"))]
    pub partitions: i32,

    /// Replicas per partition.
    #[serde(default = "default_replication_factor")]
    #[schemars(range(min = 1, max = 32))]
    pub replication_factor: i32,

    /// Topic configs, Kafka property names to values (e.g. `retention.ms: 86400000`).
    /// Keys are checked against the topic configs Kafka knows.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("maxProperties" = 256))]
    pub config: BTreeMap<String, IntOrString>,
}

fn default_replication_factor() -> i32 {
    1
}

/// Observed state of a Topic.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopicStatus {
    /// Ready, Reconciling and Degraded, with reasons and messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The Kafka topic name in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_name: Option<String>,
    /// The topic id the cluster gave the topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// Partition count in the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<i32>,
    /// Replication factor in the cluster (replicas of partition 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication_factor: Option<i32>,
    /// Replica assignment summary: partition leaders and replicas per broker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignment: Option<String>,
    /// Topic configs the operator last set in the cluster (compared with the spec when the
    /// cluster cannot describe configs).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub applied_configs: BTreeMap<String, String>,
    /// What the last reconcile changed in the cluster (including drift put back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_action: Option<String>,
    /// The last error the cluster answered with, if any.
    // Written as null when absent: the status is a merge patch, and only null removes a
    // field that was there (a finished scale, an error that went away).
    #[serde(default)]
    pub last_error: Option<String>,
}

impl Topic {
    /// The Kafka topic name: `spec.topicName`, or the resource name.
    pub fn kafka_name(&self) -> String {
        self.spec
            .topic_name
            .clone()
            .unwrap_or_else(|| self.metadata.name.clone().unwrap_or_default())
    }
}
