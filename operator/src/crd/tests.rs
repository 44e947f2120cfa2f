use super::*;

/// The committed CRD files must be exactly what the types generate:
/// run `cargo run -p oxbow-operator -- crdgen` after changing a type.
#[test]
fn committed_crds_are_current() {
    let generated = crd_yaml().expect("CRDs serialize");
    for path in [
        "../crds/oxbow.dev.yaml",
        "../charts/oxbow/crds/oxbow.dev.yaml",
    ] {
        let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        let committed = std::fs::read_to_string(&full).unwrap_or_default();
        assert!(
            committed == generated,
            "{} is stale: run `cargo run -p oxbow-operator -- crdgen`",
            full.display()
        );
    }
}

fn crd_json(
    crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> serde_json::Value {
    serde_json::to_value(crd).expect("CRD serializes")
}

#[test]
fn cluster_crd_has_scale_subresource_and_rules() {
    let crd = crd_json(Cluster::crd());
    let version = &crd["spec"]["versions"][0];
    assert_eq!(crd["spec"]["names"]["categories"][0], "oxbow");
    let scale = &version["subresources"]["scale"];
    assert_eq!(scale["specReplicasPath"], ".spec.replicas");
    assert_eq!(scale["labelSelectorPath"], ".status.selector");
    let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(
        spec["properties"]["replicas"]["minimum"].as_f64(),
        Some(1.0)
    );
    let rules = spec["x-kubernetes-validations"].to_string();
    assert!(
        rules.contains("self.replicas >= self.controllerVoters"),
        "{rules}"
    );
    let voters = spec["properties"]["controllerVoters"]["x-kubernetes-validations"].to_string();
    // Changeable (KIP-853), but only to an odd count up to five.
    assert!(!voters.contains("self == oldSelf"), "{voters}");
    assert!(
        voters.contains("self == 1 || self == 3 || self == 5"),
        "{voters}"
    );
}

#[test]
fn topic_crd_forbids_shrinking_partitions() {
    let crd = crd_json(Topic::crd());
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    let rules = spec["properties"]["partitions"]["x-kubernetes-validations"].to_string();
    assert!(rules.contains("self >= oldSelf"), "{rules}");
    assert_eq!(
        spec["properties"]["partitions"]["minimum"].as_f64(),
        Some(1.0)
    );
}

#[test]
fn minimal_cluster_gets_defaults() {
    let cluster: ClusterSpec = serde_yaml::from_str("replicas: 3").expect("parses");
    assert_eq!(cluster.controller_voters, 1);
    assert_eq!(cluster.storage.size, DEFAULT_STORAGE_SIZE);
    assert!(!cluster.storage.delete_claims);
    assert!(cluster.rack.enabled);
    assert_eq!(cluster.rack.topology_key, DEFAULT_TOPOLOGY_KEY);
    assert_eq!(cluster.listeners.kafka_port, DEFAULT_KAFKA_PORT);
}

#[test]
fn topic_name_defaults_to_resource_name() {
    let mut topic = Topic::new(
        "orders",
        serde_yaml::from_str("cluster: c\npartitions: 3").expect("parses"),
    );
    assert_eq!(topic.kafka_name(), "orders");
    topic.spec.topic_name = Some("Orders_V2".into());
    assert_eq!(topic.kafka_name(), "Orders_V2");
}

/// Status objects written before the phase was an enum hold these strings, and the
/// `Operation` printer column shows them: the names must never change.
#[test]
fn scaling_phases_serialize_as_their_names() {
    let phases = [
        (ScalingPhase::StartingBrokers, "StartingBrokers"),
        (ScalingPhase::Balancing, "Balancing"),
        (ScalingPhase::ElectingLeaders, "ElectingLeaders"),
        (ScalingPhase::Draining, "Draining"),
        (ScalingPhase::RemovingBrokers, "RemovingBrokers"),
        (ScalingPhase::Refused, "Refused"),
    ];
    for (phase, name) in phases {
        assert_eq!(serde_json::to_value(phase).expect("serializes"), name);
        assert_eq!(phase.as_str(), name);
        let read: ScalingPhase = serde_json::from_value(name.into()).expect("deserializes");
        assert_eq!(read, phase);
    }
    let crd = crd_json(Cluster::crd());
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
        ["scaling"]["properties"]["phase"];
    assert_eq!(schema["type"], "string");
    let allowed: Vec<&str> = schema["enum"]
        .as_array()
        .expect("an enum")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(allowed, phases.map(|(_, name)| name));
}
