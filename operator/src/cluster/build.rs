//! Object builders: pure functions from a Cluster to the objects it owns.
//!
//! Nothing here talks to the API server; `apply` sends what these return with server-side
//! apply. Every object carries the owner reference of the Cluster (except the
//! cluster-scoped rack binding, which a finalizer removes) and the cluster's labels.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount, ServicePort, ServiceSpec};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Resource;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};

use super::config::{self, SHARED_CONFIG_FILE};
use super::names::{Names, meta};
pub use super::settings::BuildSettings;
use super::statefulset;
pub use super::statefulset::CONFIG_HASH_ANNOTATION;
use crate::crd::{Cluster, ExternalType};

/// Label telling the headless Service apart (the ServiceMonitor scrapes through it only).
pub const SERVICE_ROLE_LABEL: &str = "oxbow.dev/service";

/// Everything a Cluster owns, in apply order.
#[derive(Debug, Clone)]
pub struct Desired {
    pub service_account: ServiceAccount,
    pub rack_binding: Option<ClusterRoleBinding>,
    pub config_map: ConfigMap,
    pub headless_service: Service,
    pub bootstrap_service: Service,
    pub external_services: Vec<Service>,
    pub stateful_set: StatefulSet,
    pub pod_disruption_budget: PodDisruptionBudget,
    pub service_monitor: Option<DynamicObject>,
    pub network_policy: Option<k8s_openapi::api::networking::v1::NetworkPolicy>,
}

/// A Cluster that cannot be built from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("the Cluster has no {0}")]
    MissingMetadata(&'static str),
    #[error("invalid broker config: {0}")]
    InvalidConfig(String),
    /// `spec.version` names a release that cannot run the finalized feature levels.
    #[error("{0}")]
    Downgrade(String),
}

/// What validation found a Cluster to be built from: its names, its owner reference and
/// its checked broker config overrides.
#[derive(Debug, Clone)]
pub struct Validated {
    pub names: Names,
    owner: OwnerReference,
    overrides: BTreeMap<String, String>,
}

/// Checks what the schema cannot (metadata, config keys, security settings, a release
/// below the finalized feature levels), before anything is read or changed: an invalid
/// spec must leave the running brokers alone.
pub fn validate(cluster: &Cluster) -> Result<Validated, BuildError> {
    let name = cluster
        .metadata
        .name
        .as_deref()
        .ok_or(BuildError::MissingMetadata("name"))?;
    let namespace = cluster
        .metadata
        .namespace
        .as_deref()
        .ok_or(BuildError::MissingMetadata("namespace"))?;
    let names = Names::new(name, namespace);
    let owner = cluster
        .controller_owner_ref(&())
        .ok_or(BuildError::MissingMetadata("uid"))?;
    let overrides = config::validate_config(
        &cluster.spec.config,
        config::BROKER_KEYS,
        "broker",
        config::MANAGED_KEYS,
    )
    .map_err(|errors| {
        BuildError::InvalidConfig(
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    super::security::validate(&cluster.spec).map_err(BuildError::InvalidConfig)?;
    if let Some(refusal) = super::upgrade::downgrade_refusal(cluster) {
        return Err(BuildError::Downgrade(refusal));
    }
    Ok(Validated {
        names,
        owner,
        overrides,
    })
}

/// Builds every owned object of `cluster` with `spec.replicas` brokers.
pub fn build(cluster: &Cluster, settings: &BuildSettings) -> Result<Desired, BuildError> {
    let validated = validate(cluster)?;
    Ok(objects(
        cluster,
        &validated,
        settings,
        cluster.spec.replicas,
    ))
}

/// Every owned object of a validated `cluster` with `brokers` brokers: fewer than
/// `spec.replicas` while a scale-in drains, when the leaving brokers keep their config
/// files and Services.
pub fn objects(
    cluster: &Cluster,
    validated: &Validated,
    settings: &BuildSettings,
    brokers: i32,
) -> Desired {
    let Validated {
        names,
        owner,
        overrides,
    } = validated;
    let config_map = config_map(cluster, names, owner, overrides, brokers);
    let config_hash = config_map
        .data
        .as_ref()
        .and_then(|data| data.get(SHARED_CONFIG_FILE))
        .map(|shared| format!("{:016x}", fnv1a(shared.as_bytes())))
        .unwrap_or_default();
    Desired {
        service_account: service_account(names, owner),
        rack_binding: cluster
            .spec
            .rack
            .enabled
            .then(|| rack_binding(names, settings)),
        headless_service: headless_service(cluster, names, owner),
        bootstrap_service: bootstrap_service(cluster, names, owner),
        external_services: external_services(cluster, names, owner, brokers),
        stateful_set: statefulset::stateful_set(
            cluster,
            names,
            owner,
            settings,
            &config_hash,
            brokers,
        ),
        pod_disruption_budget: pod_disruption_budget(names, owner),
        service_monitor: cluster
            .spec
            .metrics
            .service_monitor
            .then(|| service_monitor(names, owner)),
        network_policy: cluster
            .spec
            .network_policy
            .enabled
            .then(|| super::network_policy::network_policy(&cluster.spec, names, owner)),
        config_map,
    }
}

/// The voters the quorum was formed with: recorded in the status once the Cluster exists,
/// `controllerVoters` before that.
pub fn initial_voters(cluster: &Cluster) -> i32 {
    cluster
        .status
        .as_ref()
        .and_then(|s| s.quorum.as_ref())
        .map_or(cluster.spec.controller_voters, |q| q.initial_voters)
}

/// 64-bit FNV-1a: a stable hash (std's hasher is not stable across releases).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn service_account(names: &Names, owner: &OwnerReference) -> ServiceAccount {
    ServiceAccount {
        metadata: meta(names, names.service_account(), owner),
        automount_service_account_token: Some(true),
        ..ServiceAccount::default()
    }
}

fn rack_binding(names: &Names, settings: &BuildSettings) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(names.rack_binding()),
            labels: Some(names.labels()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_string(),
            kind: "ClusterRole".to_string(),
            name: settings.rack_cluster_role.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_string(),
            name: names.service_account(),
            namespace: Some(names.namespace.clone()),
            ..Subject::default()
        }]),
    }
}

fn config_map(
    cluster: &Cluster,
    names: &Names,
    owner: &OwnerReference,
    overrides: &BTreeMap<String, String>,
    brokers: i32,
) -> ConfigMap {
    let spec = &cluster.spec;
    let mut data = BTreeMap::new();
    data.insert(
        SHARED_CONFIG_FILE.to_string(),
        config::shared_config(spec, names, overrides, initial_voters(cluster)),
    );
    for ordinal in 0..brokers {
        data.insert(
            format!("{}.yaml", names.pod(ordinal)),
            config::broker_config(spec, names, ordinal),
        );
    }
    ConfigMap {
        metadata: meta(names, names.base(), owner),
        data: Some(data),
        ..ConfigMap::default()
    }
}

fn port(name: &str, port: i32) -> ServicePort {
    ServicePort {
        name: Some(name.to_string()),
        port,
        target_port: Some(IntOrString::String(name.to_string())),
        protocol: Some("TCP".to_string()),
        ..ServicePort::default()
    }
}

fn headless_service(cluster: &Cluster, names: &Names, owner: &OwnerReference) -> Service {
    let listeners = &cluster.spec.listeners;
    let mut metadata = meta(names, names.headless_service(), owner);
    metadata
        .labels
        .get_or_insert_default()
        .insert(SERVICE_ROLE_LABEL.to_string(), "headless".to_string());
    Service {
        metadata,
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".to_string()),
            // Brokers must find each other (quorum) before any of them is ready.
            publish_not_ready_addresses: Some(true),
            selector: Some(names.selector_labels()),
            ports: Some(vec![
                port("kafka", listeners.kafka_port),
                port("controller", listeners.controller_port),
                port("metrics", cluster.spec.metrics.port),
            ]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

fn bootstrap_service(cluster: &Cluster, names: &Names, owner: &OwnerReference) -> Service {
    Service {
        metadata: meta(names, names.bootstrap_service(), owner),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_string()),
            selector: Some(names.selector_labels()),
            ports: Some(vec![
                port("kafka", cluster.spec.listeners.kafka_port),
                port("metrics", cluster.spec.metrics.port),
            ]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

fn external_services(
    cluster: &Cluster,
    names: &Names,
    owner: &OwnerReference,
    brokers: i32,
) -> Vec<Service> {
    let Some(external) = &cluster.spec.listeners.external else {
        return Vec::new();
    };
    (0..brokers)
        .map(|ordinal| {
            let mut selector = names.selector_labels();
            selector.insert(
                "statefulset.kubernetes.io/pod-name".to_string(),
                names.pod(ordinal),
            );
            let mut service_port = port("external", external.port);
            if external.type_ == ExternalType::NodePort {
                service_port.node_port = external.node_port_base.map(|base| base + ordinal);
            }
            Service {
                metadata: meta(names, names.external_service(ordinal), owner),
                spec: Some(ServiceSpec {
                    type_: Some(
                        match external.type_ {
                            ExternalType::NodePort => "NodePort",
                            ExternalType::LoadBalancer => "LoadBalancer",
                        }
                        .to_string(),
                    ),
                    selector: Some(selector),
                    ports: Some(vec![service_port]),
                    ..ServiceSpec::default()
                }),
                ..Service::default()
            }
        })
        .collect()
}

fn pod_disruption_budget(names: &Names, owner: &OwnerReference) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: meta(names, names.base(), owner),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            selector: Some(LabelSelector {
                match_labels: Some(names.selector_labels()),
                ..LabelSelector::default()
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        ..PodDisruptionBudget::default()
    }
}

/// The Prometheus Operator resource type of a ServiceMonitor.
pub fn service_monitor_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(
        "monitoring.coreos.com",
        "v1",
        "ServiceMonitor",
    ))
}

fn service_monitor(names: &Names, owner: &OwnerReference) -> DynamicObject {
    let mut object = DynamicObject::new(&names.base(), &service_monitor_resource());
    object.metadata = meta(names, names.base(), owner);
    object.data = serde_json::json!({
        "spec": {
            "selector": { "matchLabels": {
                "app.kubernetes.io/instance": names.cluster,
                SERVICE_ROLE_LABEL: "headless",
            } },
            "namespaceSelector": { "matchNames": [names.namespace] },
            "endpoints": [{ "port": "metrics", "path": "/metrics", "interval": "30s" }],
        }
    });
    object
}
