//! Object builders: pure functions from a Cluster to the objects it owns.
//!
//! Nothing here talks to the API server; `apply` sends what these return with server-side
//! apply. Every object carries the owner reference of the Cluster (except the
//! cluster-scoped rack binding, which a finalizer removes) and the cluster's labels.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    StatefulSet, StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetSpec,
    StatefulSetUpdateStrategy,
};
use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, ConfigMap, ConfigMapVolumeSource, Container, ContainerPort,
    EmptyDirVolumeSource, EnvVar, EnvVarSource, HTTPGetAction, ObjectFieldSelector,
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PodAffinityTerm, PodAntiAffinity,
    PodSecurityContext, PodSpec, PodTemplateSpec, Probe, SecurityContext, Service, ServiceAccount,
    ServicePort, ServiceSpec, TopologySpreadConstraint, Volume, VolumeMount,
    VolumeResourceRequirements, WeightedPodAffinityTerm,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Resource;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};

use super::config::{self, CONFIG_DIR, DATA_MOUNT, RACK_DIR, RACK_FILE, SHARED_CONFIG_FILE};
use super::names::Names;
use crate::crd::{AdvertiseMode, Cluster, ExternalType};

/// Pod template annotation holding the hash of the shared config: a change rolls brokers.
pub const CONFIG_HASH_ANNOTATION: &str = "oxbow.dev/config-hash";
/// Label telling the headless Service apart (the ServiceMonitor scrapes through it only).
pub const SERVICE_ROLE_LABEL: &str = "oxbow.dev/service";

/// Settings of the operator deployment that shape what it builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildSettings {
    /// Broker image when a Cluster names none.
    pub broker_image: String,
    /// The operator's own image: runs the `rack-init` init container.
    pub operator_image: String,
    /// ClusterRole allowing `get` on nodes, bound to each cluster's broker ServiceAccount.
    pub rack_cluster_role: String,
}

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
}

/// A Cluster that cannot be built from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    #[error("the Cluster has no {0}")]
    MissingMetadata(&'static str),
    #[error("invalid broker config: {0}")]
    InvalidConfig(String),
}

/// Builds every owned object of `cluster`.
pub fn build(cluster: &Cluster, settings: &BuildSettings) -> Result<Desired, BuildError> {
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
    let config_map = config_map(cluster, &names, &owner, &overrides);
    let config_hash = config_map
        .data
        .as_ref()
        .and_then(|data| data.get(SHARED_CONFIG_FILE))
        .map(|shared| format!("{:016x}", fnv1a(shared.as_bytes())))
        .unwrap_or_default();
    Ok(Desired {
        service_account: service_account(&names, &owner),
        rack_binding: cluster
            .spec
            .rack
            .enabled
            .then(|| rack_binding(&names, settings)),
        headless_service: headless_service(cluster, &names, &owner),
        bootstrap_service: bootstrap_service(cluster, &names, &owner),
        external_services: external_services(cluster, &names, &owner),
        stateful_set: stateful_set(cluster, &names, &owner, settings, &config_hash),
        pod_disruption_budget: pod_disruption_budget(&names, &owner),
        service_monitor: cluster
            .spec
            .metrics
            .service_monitor
            .then(|| service_monitor(&names, &owner)),
        config_map,
    })
}

/// 64-bit FNV-1a: a stable hash (std's hasher is not stable across releases).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn meta(names: &Names, name: String, owner: &OwnerReference) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(names.namespace.clone()),
        labels: Some(names.labels()),
        owner_references: Some(vec![owner.clone()]),
        ..ObjectMeta::default()
    }
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
) -> ConfigMap {
    let spec = &cluster.spec;
    let mut data = BTreeMap::new();
    data.insert(
        SHARED_CONFIG_FILE.to_string(),
        config::shared_config(spec, names, overrides),
    );
    for ordinal in 0..spec.replicas {
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

fn external_services(cluster: &Cluster, names: &Names, owner: &OwnerReference) -> Vec<Service> {
    let Some(external) = &cluster.spec.listeners.external else {
        return Vec::new();
    };
    (0..cluster.spec.replicas)
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

fn env_from_field(name: &str, path: &str) -> EnvVar {
    EnvVar {
        name: name.to_string(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.to_string(),
                ..ObjectFieldSelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

fn restricted_security_context() -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        read_only_root_filesystem: Some(true),
        run_as_non_root: Some(true),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".to_string()]),
            ..Capabilities::default()
        }),
        ..SecurityContext::default()
    }
}

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.to_string(),
        mount_path: path.to_string(),
        ..VolumeMount::default()
    }
}

fn http_probe(path: &str, port: &str, period: i32, failures: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_string()),
            port: IntOrString::String(port.to_string()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period),
        failure_threshold: Some(failures),
        ..Probe::default()
    }
}

fn broker_container(cluster: &Cluster, settings: &BuildSettings) -> Container {
    let spec = &cluster.spec;
    let mut args = vec![
        "--config".to_string(),
        format!("{CONFIG_DIR}/{SHARED_CONFIG_FILE}"),
        "--config".to_string(),
        format!("{CONFIG_DIR}/$(POD_NAME).yaml"),
    ];
    let mut mounts = vec![mount("data", DATA_MOUNT), mount("config", CONFIG_DIR)];
    if spec.rack.enabled {
        args.extend(["--config".to_string(), format!("{RACK_DIR}/{RACK_FILE}")]);
        mounts.push(mount("rack", RACK_DIR));
    }
    if spec.listeners.advertise == AdvertiseMode::PodIp {
        args.extend(config::pod_ip_overrides(spec));
    }
    let mut ports = vec![
        container_port("kafka", spec.listeners.kafka_port),
        container_port("controller", spec.listeners.controller_port),
        container_port("metrics", spec.metrics.port),
    ];
    if let Some(external) = &spec.listeners.external {
        ports.push(container_port("external", external.port));
    }
    Container {
        name: "broker".to_string(),
        image: Some(
            spec.image
                .clone()
                .unwrap_or_else(|| settings.broker_image.clone()),
        ),
        image_pull_policy: spec.image_pull_policy.map(|p| p.as_str().to_string()),
        command: Some(vec!["oxbow".to_string()]),
        args: Some(args),
        env: Some(vec![
            env_from_field("POD_NAME", "metadata.name"),
            env_from_field("POD_NAMESPACE", "metadata.namespace"),
            env_from_field("POD_IP", "status.podIP"),
        ]),
        ports: Some(ports),
        readiness_probe: Some(http_probe("/readyz", "metrics", 5, 3)),
        liveness_probe: Some(http_probe("/healthz", "metrics", 10, 6)),
        resources: spec.resources.clone(),
        security_context: Some(restricted_security_context()),
        volume_mounts: Some(mounts),
        ..Container::default()
    }
}

fn container_port(name: &str, port: i32) -> ContainerPort {
    ContainerPort {
        name: Some(name.to_string()),
        container_port: port,
        protocol: Some("TCP".to_string()),
        ..ContainerPort::default()
    }
}

fn rack_init_container(cluster: &Cluster, settings: &BuildSettings) -> Container {
    Container {
        name: "rack-init".to_string(),
        image: Some(settings.operator_image.clone()),
        command: Some(vec!["oxbow-operator".to_string()]),
        args: Some(vec![
            "rack-init".to_string(),
            "--node".to_string(),
            "$(NODE_NAME)".to_string(),
            "--topology-key".to_string(),
            cluster.spec.rack.topology_key.clone(),
            "--out".to_string(),
            format!("{RACK_DIR}/{RACK_FILE}"),
        ]),
        env: Some(vec![env_from_field("NODE_NAME", "spec.nodeName")]),
        security_context: Some(restricted_security_context()),
        volume_mounts: Some(vec![mount("rack", RACK_DIR)]),
        ..Container::default()
    }
}

/// Default spreading: preferably one broker per node and an even spread over zones.
fn default_affinity(names: &Names) -> Affinity {
    Affinity {
        pod_anti_affinity: Some(PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![
                WeightedPodAffinityTerm {
                    weight: 100,
                    pod_affinity_term: PodAffinityTerm {
                        label_selector: Some(LabelSelector {
                            match_labels: Some(names.selector_labels()),
                            ..LabelSelector::default()
                        }),
                        topology_key: "kubernetes.io/hostname".to_string(),
                        ..PodAffinityTerm::default()
                    },
                },
            ]),
            ..PodAntiAffinity::default()
        }),
        ..Affinity::default()
    }
}

fn spread(names: &Names, key: &str) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew: 1,
        topology_key: key.to_string(),
        when_unsatisfiable: "ScheduleAnyway".to_string(),
        label_selector: Some(LabelSelector {
            match_labels: Some(names.selector_labels()),
            ..LabelSelector::default()
        }),
        ..TopologySpreadConstraint::default()
    }
}

fn stateful_set(
    cluster: &Cluster,
    names: &Names,
    owner: &OwnerReference,
    settings: &BuildSettings,
    config_hash: &str,
) -> StatefulSet {
    let spec = &cluster.spec;
    let overrides = spec.pod_template.clone().unwrap_or_default();
    let mut pod_labels = overrides.labels.clone();
    pod_labels.extend(names.labels());
    let mut annotations = overrides.annotations.clone();
    annotations.insert(CONFIG_HASH_ANNOTATION.to_string(), config_hash.to_string());
    let mut volumes = vec![Volume {
        name: "config".to_string(),
        config_map: Some(ConfigMapVolumeSource {
            name: names.base(),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    }];
    let mut init_containers = Vec::new();
    let mut constraints = vec![spread(names, "kubernetes.io/hostname")];
    if spec.rack.enabled {
        volumes.push(Volume {
            name: "rack".to_string(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        });
        init_containers.push(rack_init_container(cluster, settings));
        constraints.insert(0, spread(names, &spec.rack.topology_key));
    }
    let claim = PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some("data".to_string()),
            labels: Some(names.labels()),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".to_string()]),
            storage_class_name: spec.storage.storage_class_name.clone(),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_string(),
                    Quantity(spec.storage.size.clone()),
                )])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    };
    StatefulSet {
        metadata: meta(names, names.base(), owner),
        spec: Some(StatefulSetSpec {
            replicas: Some(spec.replicas),
            service_name: Some(names.headless_service()),
            pod_management_policy: Some("Parallel".to_string()),
            update_strategy: Some(StatefulSetUpdateStrategy {
                type_: Some("OnDelete".to_string()),
                ..StatefulSetUpdateStrategy::default()
            }),
            persistent_volume_claim_retention_policy: Some(
                StatefulSetPersistentVolumeClaimRetentionPolicy {
                    when_deleted: Some(
                        if spec.storage.delete_claims {
                            "Delete"
                        } else {
                            "Retain"
                        }
                        .to_string(),
                    ),
                    when_scaled: Some("Retain".to_string()),
                },
            ),
            selector: LabelSelector {
                match_labels: Some(names.selector_labels()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    annotations: Some(annotations),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some(names.service_account()),
                    // The broker needs no API access; only the init container reads its node.
                    automount_service_account_token: Some(spec.rack.enabled),
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        run_as_user: Some(65532),
                        run_as_group: Some(65532),
                        fs_group: Some(65532),
                        ..PodSecurityContext::default()
                    }),
                    init_containers: (!init_containers.is_empty()).then_some(init_containers),
                    containers: vec![broker_container(cluster, settings)],
                    volumes: Some(volumes),
                    affinity: Some(
                        overrides
                            .affinity
                            .clone()
                            .unwrap_or_else(|| default_affinity(names)),
                    ),
                    topology_spread_constraints: Some(constraints),
                    tolerations: (!overrides.tolerations.is_empty())
                        .then(|| overrides.tolerations.clone()),
                    node_selector: (!overrides.node_selector.is_empty())
                        .then(|| overrides.node_selector.clone()),
                    priority_class_name: overrides.priority_class_name.clone(),
                    termination_grace_period_seconds: Some(60),
                    ..PodSpec::default()
                }),
            },
            volume_claim_templates: Some(vec![claim]),
            ..StatefulSetSpec::default()
        }),
        ..StatefulSet::default()
    }
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
