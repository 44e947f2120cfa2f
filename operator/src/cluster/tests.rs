use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::build::{self, BuildError, BuildSettings, CONFIG_HASH_ANNOTATION};
use super::config::{self, ConfigError};
use super::names::Names;
use crate::crd::{Cluster, ClusterSpec};

/// Shared with the plan's tests.
pub(super) fn settings() -> BuildSettings {
    BuildSettings {
        broker_image: "oxbow:test".into(),
        operator_image: "oxbow-operator:test".into(),
        rack_cluster_role: "oxbow-broker-rack".into(),
    }
}

pub(super) fn cluster(yaml: &str) -> Cluster {
    let spec: ClusterSpec = serde_yaml::from_str(yaml).unwrap();
    let mut cluster = Cluster::new("events", spec);
    cluster.metadata.namespace = Some("streams".into());
    cluster.metadata.uid = Some("0000-1111".into());
    cluster
}

fn yaml_map(text: &str) -> BTreeMap<String, serde_yaml::Value> {
    serde_yaml::from_str(text).unwrap()
}

fn as_string(value: &serde_yaml::Value) -> String {
    match value {
        serde_yaml::Value::String(s) => s.clone(),
        serde_yaml::Value::Number(n) => n.to_string(),
        serde_yaml::Value::Bool(b) => b.to_string(),
        other => panic!("unexpected YAML value {other:?}"),
    }
}

#[test]
fn three_brokers_render_kraft_config() {
    let desired = build::build(&cluster("replicas: 3\ncontrollerVoters: 3"), &settings()).unwrap();
    let data = desired.config_map.data.unwrap();
    let shared = yaml_map(&data["broker.yaml"]);
    assert_eq!(
        as_string(&shared["controller.quorum.voters"]),
        "0@events-0.events-headless.streams.svc:9093,1@events-1.events-headless.streams.svc:9093,2@events-2.events-headless.streams.svc:9093"
    );
    assert_eq!(
        as_string(&shared["controller.quorum.bootstrap.servers"]),
        "events-0.events-headless.streams.svc:9093,events-1.events-headless.streams.svc:9093,events-2.events-headless.streams.svc:9093"
    );
    assert_eq!(as_string(&shared["log.dirs"]), "/var/lib/oxbow/data");
    assert_eq!(as_string(&shared["metrics.listener"]), "0.0.0.0:9644");
    for ordinal in 0..3 {
        let pod = yaml_map(&data[&format!("events-{ordinal}.yaml")]);
        assert_eq!(as_string(&pod["node.id"]), ordinal.to_string());
        assert_eq!(as_string(&pod["process.roles"]), "broker,controller");
        assert_eq!(
            as_string(&pod["advertised.listeners"]),
            format!(
                "PLAINTEXT://events-{ordinal}.events-headless.streams.svc:9092,CONTROLLER://events-{ordinal}.events-headless.streams.svc:9093"
            )
        );
        assert_eq!(
            as_string(&pod["listeners"]),
            "PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093"
        );
    }
}

#[test]
fn a_change_of_voters_keeps_the_shared_config_and_changes_roles_only() {
    // Formed with 3 voters (recorded in the status), now asked for 5: the shared file
    // (and so the roll hash) stays; brokers 3 and 4 get the controller role in their files.
    let mut grown = cluster("replicas: 5\ncontrollerVoters: 5");
    grown.status = Some(crate::crd::ClusterStatus {
        quorum: Some(crate::crd::QuorumStatus {
            initial_voters: 3,
            ..Default::default()
        }),
        ..Default::default()
    });
    let formed = build::build(&cluster("replicas: 5\ncontrollerVoters: 3"), &settings()).unwrap();
    let grown = build::build(&grown, &settings()).unwrap();
    let (formed, grown) = (
        formed.config_map.data.unwrap(),
        grown.config_map.data.unwrap(),
    );
    assert_eq!(formed["broker.yaml"], grown["broker.yaml"]);
    for ordinal in 3..5 {
        let file = format!("events-{ordinal}.yaml");
        assert_eq!(
            as_string(&yaml_map(&formed[&file])["process.roles"]),
            "broker"
        );
        assert_eq!(
            as_string(&yaml_map(&grown[&file])["process.roles"]),
            "broker,controller"
        );
    }
}

#[test]
fn brokers_beyond_the_voters_are_broker_only() {
    let desired = build::build(&cluster("replicas: 5"), &settings()).unwrap();
    let data = desired.config_map.data.unwrap();
    let shared = yaml_map(&data["broker.yaml"]);
    assert_eq!(
        as_string(&shared["controller.quorum.voters"]),
        "0@events-0.events-headless.streams.svc:9093"
    );
    let fourth = yaml_map(&data["events-3.yaml"]);
    assert_eq!(as_string(&fourth["process.roles"]), "broker");
    assert_eq!(as_string(&fourth["listeners"]), "PLAINTEXT://0.0.0.0:9092");
    assert_eq!(data.len(), 6, "shared file plus one per broker");
}

#[test]
fn pod_ip_mode_binds_and_advertises_the_pod_ip() {
    let desired = build::build(
        &cluster("replicas: 2\nlisteners:\n  advertise: PodIP"),
        &settings(),
    )
    .unwrap();
    let data = desired.config_map.data.as_ref().unwrap();
    let shared = &data["broker.yaml"];
    assert!(shared.contains("config.providers: env\n"), "{shared}");
    assert!(
        shared.contains("metrics.listener: \"${env:POD_IP}:9644\""),
        "{shared}"
    );
    let broker = &data["events-1.yaml"];
    assert!(
        broker.contains("advertised.listeners: \"PLAINTEXT://${env:POD_IP}:9092\""),
        "{broker}"
    );
    assert!(
        broker.contains("listeners: \"PLAINTEXT://${env:POD_IP}:9092\""),
        "{broker}"
    );
    let pod = desired.stateful_set.spec.unwrap().template.spec.unwrap();
    let env = pod.containers[0].env.as_ref().unwrap();
    assert!(env.iter().any(|e| e.name == "POD_IP"));
    assert!(!env.iter().any(|e| e.name == "HOST_IP"));
}

#[test]
fn a_nodeport_listener_without_a_host_advertises_each_brokers_node() {
    let desired = build::build(
        &cluster("replicas: 3\nlisteners:\n  external: {type: NodePort, nodePortBase: 30094}"),
        &settings(),
    )
    .unwrap();
    let data = desired.config_map.data.as_ref().unwrap();
    assert!(data["broker.yaml"].contains("config.providers: env\n"));
    let broker = &data["events-2.yaml"];
    assert!(
        broker.contains("EXTERNAL://${env:HOST_IP}:30096"),
        "{broker}"
    );
    let pod = desired.stateful_set.spec.unwrap().template.spec.unwrap();
    let host_ip = pod.containers[0]
        .env
        .as_ref()
        .unwrap()
        .iter()
        .find(|e| e.name == "HOST_IP")
        .and_then(|e| e.value_from.as_ref())
        .and_then(|v| v.field_ref.as_ref())
        .map(|f| f.field_path.clone());
    assert_eq!(host_ip.as_deref(), Some("status.hostIP"));
    let ports: Vec<_> = desired
        .external_services
        .iter()
        .map(|s| s.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].node_port)
        .collect();
    assert_eq!(ports, [Some(30094), Some(30095), Some(30096)]);
}

#[test]
fn overrides_are_rendered_and_typed() {
    let desired = build::build(
        &cluster(
            "replicas: 1\nconfig:\n  log.retention.ms: 72\n  auto.create.topics.enable: \"false\"",
        ),
        &settings(),
    )
    .unwrap();
    let shared = yaml_map(&desired.config_map.data.unwrap()["broker.yaml"]);
    assert_eq!(as_string(&shared["log.retention.ms"]), "72");
    assert_eq!(as_string(&shared["auto.create.topics.enable"]), "false");
}

#[test]
fn unknown_managed_and_mistyped_overrides_are_refused() {
    let config = BTreeMap::from([
        ("log.retention.hourz".to_string(), IntOrString::Int(1)),
        ("node.id".to_string(), IntOrString::Int(4)),
        (
            "num.partitions".to_string(),
            IntOrString::String("many".into()),
        ),
        (
            "log.cleanup.policy".to_string(),
            IntOrString::String("brotli".into()),
        ),
    ]);
    let errors =
        config::validate_config(&config, config::BROKER_KEYS, "broker", config::MANAGED_KEYS)
            .unwrap_err();
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert!(errors.contains(&ConfigError::Managed {
        key: "node.id".into()
    }));
    assert!(errors.contains(&ConfigError::Unknown {
        key: "log.retention.hourz".into(),
        scope: "broker"
    }));
    for (key, value) in [("num.partitions", "many"), ("log.cleanup.policy", "brotli")] {
        assert!(
            errors.iter().any(
                |e| matches!(e, ConfigError::BadValue { key: k, value: v, .. }
                if k == key && v == value)
            ),
            "{key}={value} not refused as mistyped: {errors:?}"
        );
    }
    let cluster = cluster("replicas: 1\nconfig:\n  bogus.key: 1");
    match build::build(&cluster, &settings()) {
        Err(BuildError::InvalidConfig(message)) => {
            assert!(message.contains("bogus.key"), "{message}")
        }
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
}

#[test]
fn yaml_values_that_look_like_other_types_are_quoted() {
    let rendered = config::render_yaml(&BTreeMap::from([
        ("a".to_string(), "yes: no".to_string()),
        ("b".to_string(), String::new()),
        ("c".to_string(), "PLAINTEXT://x:1".to_string()),
    ]));
    let parsed = yaml_map(&rendered);
    assert_eq!(as_string(&parsed["a"]), "yes: no");
    assert_eq!(as_string(&parsed["b"]), "");
    assert_eq!(as_string(&parsed["c"]), "PLAINTEXT://x:1");
}

#[test]
fn claims_go_with_the_cluster_or_a_scale_in_only_when_asked() {
    let desired = build::build(
        &cluster("replicas: 3\nstorage:\n  deleteClaims: true\n  deleteClaimsOnScaleIn: true"),
        &settings(),
    )
    .unwrap();
    let retention = desired
        .stateful_set
        .spec
        .unwrap()
        .persistent_volume_claim_retention_policy
        .unwrap();
    assert_eq!(retention.when_deleted.as_deref(), Some("Delete"));
    assert_eq!(retention.when_scaled.as_deref(), Some("Delete"));
}

#[test]
fn stateful_set_is_parallel_on_delete_with_claims_and_rack_init() {
    let desired = build::build(
        &cluster("replicas: 3\nstorage:\n  size: 50Gi\n  storageClassName: fast"),
        &settings(),
    )
    .unwrap();
    let sts = desired.stateful_set;
    assert_eq!(
        sts.metadata.owner_references.as_ref().unwrap()[0].kind,
        "Cluster"
    );
    let spec = sts.spec.unwrap();
    assert_eq!(spec.replicas, Some(3));
    assert_eq!(spec.pod_management_policy.as_deref(), Some("Parallel"));
    assert_eq!(
        spec.update_strategy.unwrap().type_.as_deref(),
        Some("OnDelete")
    );
    assert_eq!(spec.service_name.as_deref(), Some("events-headless"));
    let retention = spec.persistent_volume_claim_retention_policy.unwrap();
    assert_eq!(
        retention.when_deleted.as_deref(),
        Some("Retain"),
        "claims are kept by default"
    );
    assert_eq!(
        retention.when_scaled.as_deref(),
        Some("Retain"),
        "a removed broker's claim is kept by default"
    );
    let claim = &spec.volume_claim_templates.unwrap()[0];
    let claim_spec = claim.spec.as_ref().unwrap();
    assert_eq!(claim_spec.storage_class_name.as_deref(), Some("fast"));
    assert_eq!(
        claim_spec
            .resources
            .as_ref()
            .unwrap()
            .requests
            .as_ref()
            .unwrap()["storage"]
            .0,
        "50Gi"
    );
    let template = spec.template;
    assert!(
        template
            .metadata
            .unwrap()
            .annotations
            .unwrap()
            .contains_key(CONFIG_HASH_ANNOTATION)
    );
    let pod = template.spec.unwrap();
    let init = &pod.init_containers.unwrap()[0];
    assert_eq!(init.image.as_deref(), Some("oxbow-operator:test"));
    assert!(
        init.args
            .as_ref()
            .unwrap()
            .contains(&"topology.kubernetes.io/zone".to_string())
    );
    let broker = &pod.containers[0];
    assert_eq!(broker.image.as_deref(), Some("oxbow:test"));
    assert_eq!(
        broker.args.as_ref().unwrap(),
        &vec![
            "--config".to_string(),
            "/etc/oxbow/broker.yaml".into(),
            "--config".into(),
            "/etc/oxbow/$(POD_NAME).yaml".into(),
            "--config".into(),
            "/var/run/oxbow/rack.yaml".into(),
        ]
    );
    let keys: Vec<_> = pod
        .topology_spread_constraints
        .unwrap()
        .into_iter()
        .map(|c| c.topology_key)
        .collect();
    assert_eq!(
        keys,
        vec![
            "topology.kubernetes.io/zone".to_string(),
            "kubernetes.io/hostname".to_string()
        ]
    );
    assert!(pod.affinity.unwrap().pod_anti_affinity.is_some());
    assert_eq!(pod.security_context.unwrap().run_as_non_root, Some(true));
    let rack = desired.rack_binding.unwrap();
    assert_eq!(rack.role_ref.name, "oxbow-broker-rack");
    assert_eq!(rack.subjects.unwrap()[0].name, "events-broker");
}

#[test]
fn rack_awareness_off_means_no_init_container_and_no_binding() {
    let desired = build::build(
        &cluster("replicas: 1\nrack:\n  enabled: false"),
        &settings(),
    )
    .unwrap();
    let pod = desired.stateful_set.spec.unwrap().template.spec.unwrap();
    assert!(pod.init_containers.is_none());
    assert!(desired.rack_binding.is_none());
    assert_eq!(pod.containers[0].args.as_ref().unwrap().len(), 4);
    assert_eq!(pod.automount_service_account_token, Some(false));
}

#[test]
fn config_hash_changes_with_shared_config_only() {
    let hash = |yaml: &str| {
        let sts = build::build(&cluster(yaml), &settings())
            .unwrap()
            .stateful_set;
        sts.spec
            .unwrap()
            .template
            .metadata
            .unwrap()
            .annotations
            .unwrap()[CONFIG_HASH_ANNOTATION]
            .clone()
    };
    let base = hash("replicas: 3\nconfig:\n  num.partitions: 8");
    assert_eq!(base, hash("replicas: 3\nconfig:\n  num.partitions: 8"));
    assert_ne!(base, hash("replicas: 3\nconfig:\n  num.partitions: 16"));
}

#[test]
fn services_and_budget() {
    let desired = build::build(&cluster("replicas: 3"), &settings()).unwrap();
    let headless = desired.headless_service.spec.unwrap();
    assert_eq!(headless.cluster_ip.as_deref(), Some("None"));
    assert_eq!(headless.publish_not_ready_addresses, Some(true));
    assert_eq!(
        desired.bootstrap_service.metadata.name.as_deref(),
        Some("events-bootstrap")
    );
    let pdb = desired.pod_disruption_budget.spec.unwrap();
    assert_eq!(pdb.max_unavailable, Some(IntOrString::Int(1)));
    assert!(desired.external_services.is_empty());
    assert!(desired.service_monitor.is_none());
}

#[test]
fn external_node_ports_are_per_broker() {
    let desired = build::build(
        &cluster(
            "replicas: 2\nlisteners:\n  external:\n    type: NodePort\n    nodePortBase: 31000\n    advertisedHost: kafka.example.com",
        ),
        &settings(),
    )
    .unwrap();
    let ports: Vec<_> = desired
        .external_services
        .iter()
        .map(|s| s.spec.as_ref().unwrap().ports.as_ref().unwrap()[0].node_port)
        .collect();
    assert_eq!(ports, vec![Some(31000), Some(31001)]);
    let data = desired.config_map.data.unwrap();
    let second = yaml_map(&data["events-1.yaml"]);
    assert!(
        as_string(&second["advertised.listeners"]).ends_with(",EXTERNAL://kafka.example.com:31001")
    );
    assert!(as_string(&second["listeners"]).ends_with(",EXTERNAL://0.0.0.0:9094"));
}

#[test]
fn service_monitor_when_enabled() {
    let desired = build::build(
        &cluster("replicas: 1\nmetrics:\n  serviceMonitor: true"),
        &settings(),
    )
    .unwrap();
    let monitor = desired.service_monitor.unwrap();
    assert_eq!(monitor.types.unwrap().kind, "ServiceMonitor");
    assert_eq!(monitor.data["spec"]["endpoints"][0]["port"], "metrics");
}

#[test]
fn names_and_selector() {
    let names = Names::new("events", "streams");
    assert_eq!(names.bootstrap(9092), "events-bootstrap.streams.svc:9092");
    assert_eq!(
        names.selector_string(),
        "app.kubernetes.io/component=broker,app.kubernetes.io/instance=events,app.kubernetes.io/name=oxbow"
    );
}

mod status {
    use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};
    use k8s_openapi::api::core::v1::{Pod, PodCondition, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::cluster::status::{Observed, compute, is_ready, pod_to_roll};

    fn pod(name: &str, revision: &str, ready: bool) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(BTreeMap::from([(
                    "controller-revision-hash".into(),
                    revision.into(),
                )])),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: Some(format!("node-{name}")),
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..PodCondition::default()
                }]),
                ..PodStatus::default()
            }),
        }
    }

    fn observed(pods: Vec<Pod>) -> Observed {
        let replicas = i32::try_from(pods.len()).unwrap();
        Observed {
            stateful_set: Some(StatefulSet {
                status: Some(StatefulSetStatus {
                    replicas,
                    update_revision: Some("v2".into()),
                    ..StatefulSetStatus::default()
                }),
                ..StatefulSet::default()
            }),
            node_labels: pods
                .iter()
                .map(|p| {
                    let node = p.spec.as_ref().unwrap().node_name.clone().unwrap();
                    (
                        node,
                        BTreeMap::from([(
                            "topology.kubernetes.io/zone".to_string(),
                            "zone-a".to_string(),
                        )]),
                    )
                })
                .collect(),
            pods,
        }
    }

    #[test]
    fn all_ready_means_ready_with_racks() {
        let cluster = cluster("replicas: 2");
        let names = Names::new("events", "streams");
        let seen = observed(vec![
            pod("events-0", "v2", true),
            pod("events-1", "v2", true),
        ]);
        let status = compute(&cluster, &names, &seen, Some(1), None, None);
        assert!(is_ready(&status));
        assert_eq!(status.ready_replicas, 2);
        assert_eq!(status.brokers[1].rack.as_deref(), Some("zone-a"));
        assert_eq!(
            status.bootstrap.as_deref(),
            Some("events-bootstrap.streams.svc:9092")
        );
        assert_eq!(pod_to_roll(&seen, 2, None), None);
    }

    #[test]
    fn rolls_highest_outdated_pod_and_the_active_controller_last_only_when_all_ready() {
        let seen = observed(vec![
            pod("events-0", "v1", true),
            pod("events-1", "v1", true),
            pod("events-2", "v2", true),
        ]);
        assert_eq!(pod_to_roll(&seen, 3, None).as_deref(), Some("events-1"));
        // The active controller's pod goes last, whatever its ordinal.
        assert_eq!(
            pod_to_roll(&seen, 3, Some("events-1")).as_deref(),
            Some("events-0")
        );
        let only_controller = observed(vec![
            pod("events-0", "v2", true),
            pod("events-1", "v1", true),
            pod("events-2", "v2", true),
        ]);
        assert_eq!(
            pod_to_roll(&only_controller, 3, Some("events-1")).as_deref(),
            Some("events-1")
        );
        let not_ready = observed(vec![
            pod("events-0", "v1", true),
            pod("events-1", "v1", false),
        ]);
        assert_eq!(pod_to_roll(&not_ready, 2, None), None);
        let missing = observed(vec![pod("events-0", "v1", true)]);
        assert_eq!(pod_to_roll(&missing, 2, None), None);
        let status = compute(
            &cluster("replicas: 3"),
            &Names::new("events", "streams"),
            &seen,
            Some(2),
            None,
            None,
        );
        assert!(!is_ready(&status));
        assert_eq!(status.brokers[0].state, "Outdated");
    }

    #[test]
    fn missing_brokers_are_not_ready() {
        let cluster = cluster("replicas: 3");
        let seen = observed(vec![pod("events-0", "v2", true)]);
        let status = compute(
            &cluster,
            &Names::new("events", "streams"),
            &seen,
            Some(1),
            None,
            None,
        );
        assert!(!is_ready(&status));
        let ready = status
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .unwrap();
        assert_eq!(ready.reason, "BrokersNotReady");
        assert_eq!(status.brokers[2].state, "Missing");
    }

    #[test]
    fn a_refused_scale_in_is_degraded_and_not_ready_with_its_reason() {
        let seen = observed(vec![
            pod("events-0", "v2", true),
            pod("events-1", "v2", true),
            pod("events-2", "v2", true),
        ]);
        let scaling = crate::crd::ScalingStatus {
            from: 3,
            to: 2,
            phase: crate::crd::ScalingPhase::Refused,
            message: "cannot scale in to 2 broker(s): partition orders-0 has 3 replicas".into(),
            progress: None,
        };
        let status = compute(
            &cluster("replicas: 2"),
            &Names::new("events", "streams"),
            &seen,
            Some(4),
            None,
            Some(scaling.clone()),
        );
        assert!(!is_ready(&status));
        let find = |t: &str| status.conditions.iter().find(|c| c.type_ == t).unwrap();
        assert_eq!(
            (
                find("Degraded").status.as_str(),
                find("Degraded").reason.as_str()
            ),
            ("True", "ScaleInRefused")
        );
        assert_eq!(find("Ready").message, scaling.message);
        assert_eq!(status.scaling, Some(scaling));
    }

    fn with_image(mut pod: Pod, image: &str) -> Pod {
        if let Some(spec) = pod.spec.as_mut() {
            spec.containers = vec![k8s_openapi::api::core::v1::Container {
                name: "broker".into(),
                image: Some(image.into()),
                ..Default::default()
            }];
        }
        pod
    }

    #[test]
    fn each_broker_shows_its_release_and_the_cluster_the_common_one() {
        let cluster = cluster("replicas: 2");
        let names = Names::new("events", "streams");
        let mixed = observed(vec![
            with_image(pod("events-0", "v1", true), "oxbow:0.1.0"),
            with_image(pod("events-1", "v2", true), "oxbow:0.2.0"),
        ]);
        let rolling = compute(&cluster, &names, &mixed, Some(1), None, None);
        assert_eq!(rolling.brokers[0].version.as_deref(), Some("0.1.0"));
        assert_eq!(rolling.brokers[1].version.as_deref(), Some("0.2.0"));
        // Mid-roll the cluster still shows the release it ran before.
        assert_eq!(rolling.version, None);
        let mut before = cluster.clone();
        before.status = Some(crate::crd::ClusterStatus {
            version: Some("0.1.0".into()),
            ..Default::default()
        });
        let rolling = compute(&before, &names, &mixed, Some(1), None, None);
        assert_eq!(rolling.version.as_deref(), Some("0.1.0"));
        let rolled = observed(vec![
            with_image(pod("events-0", "v2", true), "oxbow:0.2.0"),
            with_image(pod("events-1", "v2", true), "oxbow:0.2.0"),
        ]);
        let rolled = compute(&before, &names, &rolled, Some(1), None, None);
        assert_eq!(rolled.version.as_deref(), Some("0.2.0"));
    }

    /// The status is written as a merge patch: what went must be sent as null, or the API
    /// server keeps it (a feature finalized meanwhile would stay pending for ever).
    #[test]
    fn the_status_patch_removes_what_went() {
        use crate::cluster::status::merge_patch;
        let before = crate::crd::ClusterStatus {
            version: Some("0.1.0".into()),
            pending_features: BTreeMap::from([
                ("group.version".into(), 1),
                ("transaction.version".into(), 2),
            ]),
            finalized_features: BTreeMap::from([("metadata.version".into(), 21)]),
            ..Default::default()
        };
        let after = crate::crd::ClusterStatus {
            version: None,
            pending_features: BTreeMap::from([("group.version".into(), 1)]),
            finalized_features: BTreeMap::from([("metadata.version".into(), 25)]),
            ..Default::default()
        };
        let patch = merge_patch(Some(&before), &after);
        assert_eq!(patch["version"], serde_json::Value::Null);
        assert_eq!(
            patch["pendingFeatures"],
            serde_json::json!({"group.version": 1, "transaction.version": null})
        );
        assert_eq!(
            patch["finalizedFeatures"],
            serde_json::json!({"metadata.version": 25})
        );
        let emptied = crate::crd::ClusterStatus {
            finalized_features: after.finalized_features.clone(),
            ..Default::default()
        };
        // Nothing pending any more: the field goes.
        let patch = merge_patch(Some(&after), &emptied);
        assert_eq!(patch["pendingFeatures"], serde_json::Value::Null);
        assert!(patch.as_object().unwrap().contains_key("pendingFeatures"));
        // Arrays are replaced whole; a first status is sent as it is.
        assert_eq!(merge_patch(None, &after), serde_json::json!(after));
    }
}
