//! The broker StatefulSet: pod template (broker container, rack-init init container,
//! spreading over nodes and zones) and volume claims. Pure, like the rest of `build`.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    StatefulSet, StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetSpec,
    StatefulSetUpdateStrategy,
};
use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, ConfigMapVolumeSource, Container, ContainerPort, EmptyDirVolumeSource,
    EnvVar, EnvVarSource, HTTPGetAction, ObjectFieldSelector, PersistentVolumeClaim,
    PersistentVolumeClaimSpec, PodAffinityTerm, PodAntiAffinity, PodSecurityContext, PodSpec,
    PodTemplateSpec, Probe, SecretVolumeSource, SecurityContext, TopologySpreadConstraint, Volume,
    VolumeMount, VolumeResourceRequirements, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::config::{self, CONFIG_DIR, DATA_MOUNT, RACK_DIR, RACK_FILE, SHARED_CONFIG_FILE};
use super::names::{Names, meta};
use super::settings::BuildSettings;
use super::{certificate_secrets, security};
use crate::crd::Cluster;

/// Pod template annotation holding the hash of the shared config: a change rolls brokers.
pub const CONFIG_HASH_ANNOTATION: &str = "oxbow.dev/config-hash";

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
    if security::secured(spec) {
        mounts.push(mount("certs", security::CERTS_DIR));
    }
    if spec.listeners.oauth.is_some() {
        mounts.push(mount("oauth", security::OAUTH_DIR));
    }
    if spec.rack.enabled {
        args.extend(["--config".to_string(), format!("{RACK_DIR}/{RACK_FILE}")]);
        mounts.push(mount("rack", RACK_DIR));
    }
    let mut ports = vec![
        container_port("kafka", spec.listeners.kafka_port),
        container_port("controller", spec.listeners.controller_port),
        container_port("metrics", spec.metrics.port),
    ];
    if security::secured(spec) {
        ports.push(container_port(
            "replication",
            spec.listeners.replication_port,
        ));
    }
    if let Some(external) = &spec.listeners.external {
        ports.push(container_port("external", external.port));
    }
    // The broker files name POD_IP and HOST_IP as `${env:...}` (see config.rs).
    let mut env = vec![
        env_from_field("POD_NAME", "metadata.name"),
        env_from_field("POD_NAMESPACE", "metadata.namespace"),
        env_from_field("POD_IP", "status.podIP"),
    ];
    if config::advertises_node_address(spec) {
        env.push(env_from_field("HOST_IP", "status.hostIP"));
    }
    Container {
        name: "broker".to_string(),
        image: Some(super::upgrade::broker_image(spec, settings)),
        image_pull_policy: spec.image_pull_policy.map(|p| p.as_str().to_string()),
        command: Some(vec!["oxbow".to_string()]),
        args: Some(args),
        env: Some(env),
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

pub(super) fn stateful_set(
    cluster: &Cluster,
    names: &Names,
    owner: &OwnerReference,
    settings: &BuildSettings,
    config_hash: &str,
    brokers: i32,
) -> StatefulSet {
    let spec = &cluster.spec;
    let overrides = spec.pod_template.clone().unwrap_or_default();
    let mut pod_labels = overrides.labels.clone();
    pod_labels.extend(names.labels());
    // The release each broker runs, for the status (and `kubectl get pods -L`); only with
    // `spec.version`, so that a Cluster without one does not roll for a new label.
    if let Some(version) = &spec.version {
        pod_labels.insert(super::upgrade::VERSION_LABEL.to_string(), version.clone());
    }
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
    if security::secured(spec) {
        // The brokers' key stores and the CAs' certificates (never a CA key); the kubelet
        // updates the files in place when the Secret changes, and the brokers re-read them.
        volumes.push(Volume {
            name: "certs".to_string(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(certificate_secrets::broker_certs_secret(names)),
                default_mode: Some(0o440),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        });
    }
    if let Some(oauth) = &spec.listeners.oauth {
        volumes.push(Volume {
            name: "oauth".to_string(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(oauth.jwks.name.clone()),
                default_mode: Some(0o440),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        });
    }
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
            replicas: Some(brokers),
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
                    when_scaled: Some(
                        if spec.storage.delete_claims_on_scale_in {
                            "Delete"
                        } else {
                            "Retain"
                        }
                        .to_string(),
                    ),
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
