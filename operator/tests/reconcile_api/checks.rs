//! Checks of what a reconcile step must leave in the API server and the fake cluster.

use crate::fake_kafka::Call;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;
use kube::api::Api;
use oxbow_operator::cluster::build::{CONFIG_HASH_ANNOTATION, fnv1a};
use oxbow_operator::cluster::config::SHARED_CONFIG_FILE;
use oxbow_operator::cluster::reconcile::CLUSTER_FINALIZER;
use oxbow_operator::crd::Cluster;
use serde_json::json;

use crate::bed::*;

/// The object is owned (controller reference) by `cluster`, carries its labels and was
/// written by the operator with server-side apply.
pub fn assert_owned(kind: &str, meta: &ObjectMeta, cluster: &Cluster) {
    let name = meta.name.clone().unwrap_or_default();
    let owners = meta.owner_references.clone().unwrap_or_default();
    assert_eq!(owners.len(), 1, "{kind}/{name} owners: {owners:?}");
    let owner = &owners[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str()
        ),
        ("oxbow.dev/v1alpha1", "Cluster", CLUSTER),
        "{kind}/{name} owner"
    );
    assert_eq!(
        Some(owner.uid.as_str()),
        cluster.metadata.uid.as_deref(),
        "{kind}/{name} owner uid"
    );
    assert_eq!(
        owner.controller,
        Some(true),
        "{kind}/{name} controller reference"
    );
    let labels = meta.labels.clone().unwrap_or_default();
    assert_eq!(
        labels
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("oxbow-operator"),
        "{kind}/{name} labels {labels:?}"
    );
    assert_eq!(
        labels.get("app.kubernetes.io/instance").map(String::as_str),
        Some(CLUSTER),
        "{kind}/{name} labels {labels:?}"
    );
    let applied = meta
        .managed_fields
        .clone()
        .unwrap_or_default()
        .iter()
        .any(|f| {
            f.manager.as_deref() == Some("oxbow-operator")
                && f.operation.as_deref() == Some("Apply")
        });
    assert!(
        applied,
        "{kind}/{name} was not server-side applied by oxbow-operator"
    );
}

/// Every object the Cluster owns exists, is owned, and has the spec the CR asks for:
/// `replicas` brokers, `num_partitions` in the shared broker config.
pub async fn assert_owned_objects(bed: &Bed, replicas: i32, num_partitions: &str) {
    let cluster = bed.cluster().await;
    let account = bed.owned::<ServiceAccount>("events-broker").await;
    assert_owned("ServiceAccount", &account.metadata, &cluster);

    let config_map = bed.owned::<ConfigMap>(CLUSTER).await;
    assert_owned("ConfigMap", &config_map.metadata, &cluster);
    let data = config_map.data.clone().unwrap_or_default();
    let mut expected_keys: Vec<String> =
        (0..replicas).map(|i| format!("events-{i}.yaml")).collect();
    expected_keys.push(SHARED_CONFIG_FILE.to_string());
    expected_keys.sort();
    assert_eq!(
        data.keys().cloned().collect::<Vec<_>>(),
        expected_keys,
        "ConfigMap files"
    );
    let shared = &data[SHARED_CONFIG_FILE];
    assert!(
        shared
            .lines()
            .any(|l| l == format!("num.partitions: {num_partitions}")),
        "shared config lacks num.partitions: {num_partitions}:\n{shared}"
    );
    for ordinal in 0..replicas {
        let file = &data[&format!("events-{ordinal}.yaml")];
        assert!(
            file.lines().any(|l| l == format!("node.id: {ordinal}")),
            "events-{ordinal}.yaml:\n{file}"
        );
    }

    let headless = bed.owned::<Service>("events-headless").await;
    assert_owned("Service", &headless.metadata, &cluster);
    let spec = headless.spec.unwrap();
    assert_eq!(spec.cluster_ip.as_deref(), Some("None"), "headless Service");
    assert!(
        spec.ports
            .unwrap_or_default()
            .iter()
            .any(|p| p.name.as_deref() == Some("kafka") && p.port == 9092),
        "headless Service kafka port"
    );
    let bootstrap = bed.owned::<Service>("events-bootstrap").await;
    assert_owned("Service", &bootstrap.metadata, &cluster);
    let spec = bootstrap.spec.unwrap();
    assert_eq!(
        spec.type_.as_deref(),
        Some("ClusterIP"),
        "bootstrap Service"
    );
    assert_eq!(
        spec.selector
            .unwrap_or_default()
            .get("app.kubernetes.io/instance")
            .map(String::as_str),
        Some(CLUSTER),
        "bootstrap Service selector"
    );

    let sts = bed.owned::<StatefulSet>(CLUSTER).await;
    assert_owned("StatefulSet", &sts.metadata, &cluster);
    let spec = sts.spec.unwrap();
    assert_eq!(spec.replicas, Some(replicas), "StatefulSet replicas");
    assert_eq!(spec.service_name.as_deref(), Some("events-headless"));
    assert_eq!(spec.pod_management_policy.as_deref(), Some("Parallel"));
    assert_eq!(
        spec.update_strategy.and_then(|s| s.type_).as_deref(),
        Some("OnDelete"),
        "the operator rolls brokers itself"
    );
    let template = spec.template;
    let pod_spec = template.spec.unwrap();
    let broker = pod_spec
        .containers
        .iter()
        .find(|c| c.name == "broker")
        .unwrap();
    assert_eq!(broker.image.as_deref(), Some(IMAGE), "image from the CR");
    assert_eq!(
        pod_spec.service_account_name.as_deref(),
        Some("events-broker")
    );
    assert!(
        pod_spec
            .init_containers
            .unwrap_or_default()
            .iter()
            .any(|c| c
                .args
                .clone()
                .unwrap_or_default()
                .iter()
                .any(|a| a == "rack-init")),
        "rack.enabled gives a rack-init init container"
    );
    let claim = &spec.volume_claim_templates.unwrap()[0];
    let storage = claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .map(|q| q.0.clone());
    assert_eq!(storage.as_deref(), Some("1Gi"), "claim size from the CR");
    // The pod template carries the hash of the ConfigMap it was built with: a config
    // change changes the template, and so the StatefulSet revision.
    let hash = template
        .metadata
        .and_then(|m| m.annotations)
        .and_then(|a| a.get(CONFIG_HASH_ANNOTATION).cloned());
    assert_eq!(
        hash,
        Some(format!("{:016x}", fnv1a(shared.as_bytes()))),
        "config hash of the applied ConfigMap"
    );

    let budget = bed.owned::<PodDisruptionBudget>(CLUSTER).await;
    assert_owned("PodDisruptionBudget", &budget.metadata, &cluster);
    let spec = budget.spec.unwrap();
    assert_eq!(spec.max_unavailable, Some(IntOrString::Int(1)));
    assert_eq!(
        spec.selector
            .and_then(|s| s.match_labels)
            .unwrap_or_default()
            .get("app.kubernetes.io/instance")
            .map(String::as_str),
        Some(CLUSTER)
    );

    // The rack binding is cluster-scoped, so it has no owner: a finalizer removes it.
    let binding = ClusterRoleBindings::get(&bed.client, &bed.namespace)
        .await
        .expect("rack ClusterRoleBinding");
    let subject = &binding.subjects.unwrap_or_default()[0];
    assert_eq!(
        (subject.name.as_str(), subject.namespace.as_deref()),
        ("events-broker", Some(bed.namespace.as_str()))
    );
    assert_eq!(binding.role_ref.name, "oxbow-rack-reader");
}

/// Status written for the current generation: observedGeneration and every condition's.
pub async fn assert_status_observed(bed: &Bed) -> Cluster {
    let cluster = bed.cluster().await;
    let generation = cluster.metadata.generation;
    let status = cluster.status.clone().expect("status written");
    assert_eq!(status.observed_generation, generation, "observedGeneration");
    for type_ in ["Ready", "Reconciling", "Degraded"] {
        assert_eq!(
            condition(&status.conditions, type_).observed_generation,
            generation,
            "{type_} condition's observedGeneration"
        );
    }
    assert_eq!(
        status.selector.as_deref(),
        Some(
            "app.kubernetes.io/component=broker,app.kubernetes.io/instance=events,app.kubernetes.io/name=oxbow"
        )
    );
    cluster
}

/// The Cluster is Ready with `replicas` ready brokers, each with its node's zone as rack.
pub async fn assert_ready(bed: &Bed, replicas: i32) {
    let cluster = assert_status_observed(bed).await;
    let status = cluster.status.unwrap();
    let ready = condition(&status.conditions, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "Ready"),
        "{ready:?}"
    );
    assert_eq!(condition(&status.conditions, "Reconciling").status, "False");
    assert_eq!(condition(&status.conditions, "Degraded").status, "False");
    assert_eq!(status.ready_replicas, replicas);
    assert_eq!(status.brokers.len(), usize::try_from(replicas).unwrap());
    let pods = bed.pods().await;
    let nodes: Api<Node> = Api::all(bed.client.clone());
    for broker in &status.brokers {
        assert_eq!(broker.state, "Ready", "{broker:?}");
        let node_name = pods[&broker.pod]
            .spec
            .as_ref()
            .unwrap()
            .node_name
            .clone()
            .unwrap();
        let zone =
            nodes.get(&node_name).await.unwrap().labels()["topology.kubernetes.io/zone"].clone();
        assert_eq!(broker.rack.as_deref(), Some(zone.as_str()), "{broker:?}");
    }
}

/// A second reconcile of an unchanged Cluster changes nothing: no resourceVersion moves
/// and no broker is asked anything.
pub async fn assert_idempotent(bed: &Bed) {
    let before = bed.resource_versions().await;
    bed.reconcile_cluster().await;
    assert_eq!(
        bed.resource_versions().await,
        before,
        "a reconcile of an unchanged Cluster wrote to the API server"
    );
    assert_eq!(
        bed.fake.take_calls(),
        vec![],
        "calls of an idempotent reconcile"
    );
}

/// Creation: finalizer, owned objects, status, the Created event; then Ready once the
/// brokers are, and idempotent.
pub async fn create_ready_cluster(bed: &Bed) {
    bed.create_cluster().await;
    bed.reconcile_cluster().await;
    let cluster = bed.cluster().await;
    assert!(
        cluster.finalizers().iter().any(|f| f == CLUSTER_FINALIZER),
        "the first reconcile adds the finalizer: {:?}",
        cluster.finalizers()
    );

    bed.reconcile_cluster().await;
    assert_owned_objects(bed, 3, "3").await;
    assert_status_observed(bed).await;
    assert_eq!(bed.events("Created").await, 1, "Created event");
    assert_eq!(
        bed.fake.take_calls(),
        vec![],
        "a new cluster has no broker to restart, nothing to ask"
    );

    bed.make_ready(3).await;
    bed.wait_stateful_set_observed(3).await;
    bed.reconcile_cluster().await;
    assert_ready(bed, 3).await;
    assert_idempotent(bed).await;
}

/// Changes a broker config key: the ConfigMap and the pod template follow, and the
/// StatefulSet controller gets a new revision that the pods do not run yet.
pub async fn change_broker_config(bed: &Bed, num_partitions: i32) -> String {
    let revision_before = bed.update_revision().await;
    bed.patch_cluster(json!({ "spec": { "config": { "num.partitions": num_partitions } } }))
        .await;
    bed.reconcile_cluster().await;
    assert_owned_objects(bed, 3, &num_partitions.to_string()).await;
    assert_status_observed(bed).await;
    bed.wait_stateful_set_observed(3).await;
    let revision = bed.update_revision().await;
    assert_ne!(
        revision, revision_before,
        "the config change gave the StatefulSet a new revision"
    );
    // Whether that reconcile already saw the pods outdated (and asked the roll gate)
    // depends on how fast the StatefulSet controller was: the callers check the
    // reconciles that follow.
    let _ = bed.fake.take_calls();
    revision
}

pub fn gate_questions(calls: &[Call]) -> usize {
    calls
        .iter()
        .filter(|c| **c == Call::Metadata { topics: None })
        .count()
}
