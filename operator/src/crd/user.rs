//! The `User` resource: a principal of a secured `Cluster` in the same namespace, with its
//! credentials (a SCRAM password or a certificate of the clients CA), its ACLs and its quotas.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Finalizer that makes the operator remove the User's credentials, ACLs and quotas from the
/// cluster before the resource goes.
pub const USER_FINALIZER: &str = "oxbow.dev/user";

/// Desired state of a Kafka user. Its name is the Kafka user name (principal `User:<name>`).
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "oxbow.dev",
    version = "v1alpha1",
    kind = "User",
    namespaced,
    status = "UserStatus",
    derive = "PartialEq",
    shortname = "oxu",
    category = "oxbow",
    doc = "A Kafka user of an Oxbow Cluster in the same namespace: credentials, ACLs, quotas.",
    printcolumn(name = "Cluster", type_ = "string", json_path = ".spec.cluster"),
    printcolumn(
        name = "Authentication",
        type_ = "string",
        json_path = ".spec.authentication.type"
    ),
    printcolumn(name = "Secret", type_ = "string", json_path = ".status.secret"),
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
pub struct UserSpec {
    /// Name of the Cluster (same namespace). Immutable.
    #[schemars(length(min = 1, max = 63))]
    #[x_kube(validation = Rule::new("self == oldSelf").message("cluster is immutable"))]
    pub cluster: String,

    /// How the user proves who it is. Unset: no credentials (ACLs and quotas only, e.g. for
    /// a principal another mechanism authenticates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<UserAuthentication>,

    /// What the user may do: ACLs checked by the Cluster's `simple` authorization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<UserAuthorization>,

    /// Kafka client quotas of the user (entity `user=<name>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quotas: Option<UserQuotas>,
}

/// The user's credentials.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.password) || self.type != 'tls'").message("a tls user has a certificate, not a password"))]
pub struct UserAuthentication {
    #[serde(rename = "type")]
    pub type_: UserAuthenticationType,
    /// The password of a SCRAM user, from a Secret of the namespace. Unset: the operator
    /// generates one (32 characters) and keeps it in the User's Secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<PasswordSource>,
}

/// The mechanism a user authenticates with.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum UserAuthenticationType {
    /// A SCRAM-SHA-512 credential (a `scram-sha-512` listener).
    #[serde(rename = "scram-sha-512")]
    ScramSha512,
    /// A SCRAM-SHA-256 credential (a `scram-sha-256` listener).
    #[serde(rename = "scram-sha-256")]
    ScramSha256,
    /// A client certificate issued by the Cluster's clients CA (a `tls` listener).
    #[serde(rename = "tls")]
    Tls,
}

/// Where a given password is.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordSource {
    pub value_from: PasswordValueFrom,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordValueFrom {
    pub secret_key_ref: SecretKeyRef,
}

/// A key of a Secret in the User's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeyRef {
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// The user's ACLs.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserAuthorization {
    /// Only `simple` (Kafka's ACLs).
    #[serde(rename = "type", default)]
    pub type_: UserAuthorizationType,
    /// The rules; each operation of a rule becomes one Kafka ACL.
    #[serde(default)]
    #[schemars(length(max = 256))]
    pub acls: Vec<AclRule>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum UserAuthorizationType {
    #[default]
    #[serde(rename = "simple")]
    Simple,
}

/// One ACL rule: `operations` on `resource` from `host`, allowed or denied.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AclRule {
    pub resource: AclResource,
    /// Kafka operations, e.g. `Read`, `Write`, `Describe`, `Create`, `Delete`, `Alter`,
    /// `DescribeConfigs`, `AlterConfigs`, `IdempotentWrite`, `ClusterAction`, `All`. Which
    /// apply depends on the resource type; the operator checks them (condition `InvalidAcl`).
    #[schemars(length(min = 1, max = 16))]
    pub operations: Vec<String>,
    /// The client host the rule applies to; `*` for any.
    #[serde(default = "any_host")]
    #[schemars(length(min = 1, max = 255))]
    pub host: String,
    /// `allow` (default) or `deny`.
    #[serde(rename = "type", default)]
    pub type_: AclPermission,
}

fn any_host() -> String {
    "*".to_string()
}

/// What an ACL rule is about.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self.type == 'cluster' || has(self.name)").message("a topic, group or transactionalId rule needs a name ('*' for all)"))]
pub struct AclResource {
    #[serde(rename = "type")]
    pub type_: AclResourceType,
    /// The resource name (or prefix); `*` for every resource of the type. Not used for `cluster`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 255))]
    pub name: Option<String>,
    /// `literal` (default) or `prefix`.
    #[serde(default)]
    pub pattern_type: AclPatternType,
}

#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
pub enum AclResourceType {
    #[serde(rename = "topic")]
    Topic,
    #[serde(rename = "group")]
    Group,
    #[serde(rename = "cluster")]
    Cluster,
    #[serde(rename = "transactionalId")]
    TransactionalId,
}

#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
pub enum AclPatternType {
    #[default]
    #[serde(rename = "literal")]
    Literal,
    #[serde(rename = "prefix")]
    Prefix,
}

#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
pub enum AclPermission {
    #[default]
    #[serde(rename = "allow")]
    Allow,
    #[serde(rename = "deny")]
    Deny,
}

/// Kafka client quotas; an unset one is removed from the cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserQuotas {
    /// Bytes per second the user may produce (`producer_byte_rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub producer_byte_rate: Option<i64>,
    /// Bytes per second the user may fetch (`consumer_byte_rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub consumer_byte_rate: Option<i64>,
    /// Share of a request handler's time per second, in percent (`request_percentage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub request_percentage: Option<i64>,
}

/// Observed state of a User.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserStatus {
    /// Ready, Reconciling and Degraded, with reasons and messages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The Kafka user name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The principal the brokers see, e.g. `User:alice`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The Secret with the user's credentials (same name as the User).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Which password the cluster's SCRAM credential was last set from
    /// (`<secret>/<key>@<resourceVersion>`): a change of it sets the credential again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_source: Option<String>,
    /// ACLs of the user in the cluster after the last reconcile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acls: Option<i32>,
}

impl User {
    /// The Kafka user name: the resource name.
    pub fn username(&self) -> String {
        self.metadata.name.clone().unwrap_or_default()
    }
}
