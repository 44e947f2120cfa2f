//! The operator's reconcilers driven against a real Kubernetes API server (the testbed of
//! `e2e/k8s`: real kube-apiserver, controller manager and scheduler; kwok nodes), with the
//! brokers replaced by a fake Kafka cluster (`fake_kafka.rs`) that records every admin call.
//!
//! The test calls `cluster::reconcile::reconcile` and `topic::reconcile` directly, the way
//! the controller runtime does, and checks each step of the pipelines as the API server and
//! the fake see it: finalizer, owned objects (owner references, spec from the CR), status
//! conditions and observedGeneration, events, idempotence (no resourceVersion moves on a
//! second reconcile), spec changes reaching the owned objects, the roll of outdated brokers
//! one at a time, the roll gate closed while partitions are under-replicated, topic
//! creation/growth/config/deletion reaching the cluster, and deletion (finalizers, garbage
//! collection).
//!
//! Nothing runs the brokers' processes: the real StatefulSet controller creates the pods,
//! the real scheduler places them, kwok marks them Running, and the test stands in for the
//! kubelet's readiness report when nothing else gives it (see `make_ready`).
//!
//! Needs `KUBECONFIG`: `e2e/suites/75-operator-reconcile.sh` starts the testbed and runs
//! these ignored tests with `--ignored`. Run without an API server they fail, never pass.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fake_kafka;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_kafka::{Call, FakeKafka};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Service, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use oxbow_operator::cluster::build::{BuildSettings, CONFIG_HASH_ANNOTATION, fnv1a};
use oxbow_operator::cluster::config::SHARED_CONFIG_FILE;
use oxbow_operator::cluster::reconcile::CLUSTER_FINALIZER;
use oxbow_operator::context::Context;
use oxbow_operator::crd::{Cluster, TOPIC_FINALIZER, Topic};
use oxbow_operator::metrics::Metrics;
use oxbow_operator::{cluster, topic};
use serde_json::json;

const CLUSTER: &str = "events";
const TOPIC: &str = "orders";
const IMAGE: &str = "oxbow:reconcile-test";
/// Bound of every wait on the API server's controllers.
const WAIT: Duration = Duration::from_secs(120);
const TEST_MANAGER: &str = "reconcile-api-test";

/// One scenario's world: the API client, its namespace, the fake cluster and the
/// reconcilers' context (its bootstrap override points at the fake).
struct Bed {
    client: Client,
    namespace: String,
    fake: FakeKafka,
    ctx: Arc<Context>,
}

async fn wait_for<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + WAIT;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        // Poll interval of a condition the API server's controllers bring about.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn client() -> Client {
    assert!(
        std::env::var_os("KUBECONFIG").is_some(),
        "KUBECONFIG must name a Kubernetes API server: e2e/suites/75-operator-reconcile.sh \
         starts the e2e/k8s testbed and runs this test; it never passes without one"
    );
    Client::try_default()
        .await
        .expect("a client from $KUBECONFIG")
}

/// Installs the CRDs of `crds/` (the files the chart ships) and waits until they serve.
async fn install_crds(client: &Client) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../crds/oxbow.dev.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    for document in serde_yaml::Deserializer::from_str(&text) {
        let crd: CustomResourceDefinition = serde::Deserialize::deserialize(document).unwrap();
        let name = crd.name_any();
        crds.patch(
            &name,
            &PatchParams::apply(TEST_MANAGER).force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap();
        names.push(name);
    }
    assert_eq!(names.len(), 2, "clusters and topics CRDs: {names:?}");
    for name in names {
        wait_for(&format!("CRD {name} established"), || async {
            let crd = crds.get(&name).await.unwrap();
            crd.status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
        .await;
    }
}

async fn setup(namespace: &str, fake: FakeKafka) -> Bed {
    let client = client().await;
    install_crds(&client).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    // A namespace left over from an earlier run goes first. Its Cluster and Topic keep
    // finalizers that only a reconcile removes: drop them, or the namespace never goes.
    release_finalizers(&client, namespace).await;
    let _ = namespaces.delete(namespace, &DeleteParams::default()).await;
    wait_for(&format!("namespace {namespace} gone"), || async {
        namespaces.get_opt(namespace).await.unwrap().is_none()
    })
    .await;
    let _ = ClusterRoleBindings::delete(&client, namespace).await;
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": namespace } })).unwrap(),
        )
        .await
        .unwrap();
    let settings = BuildSettings {
        broker_image: "oxbow:default".to_string(),
        operator_image: "oxbow-operator:reconcile-test".to_string(),
        rack_cluster_role: "oxbow-rack-reader".to_string(),
    };
    let overrides = BTreeMap::from([(format!("{namespace}/{CLUSTER}"), fake.address.clone())]);
    let ctx = Context::new(
        client.clone(),
        settings,
        Metrics::new().unwrap(),
        overrides,
        None,
    );
    Bed {
        client,
        namespace: namespace.to_string(),
        fake,
        ctx: Arc::new(ctx),
    }
}

async fn release_finalizers(client: &Client, namespace: &str) {
    let release = json!({ "metadata": { "finalizers": null } });
    let clusters: Api<Cluster> = Api::namespaced(client.clone(), namespace);
    for cluster in clusters
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
    {
        let _ = clusters
            .patch(
                &cluster.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&release),
            )
            .await;
    }
    let topics: Api<Topic> = Api::namespaced(client.clone(), namespace);
    for topic in topics
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
    {
        let _ = topics
            .patch(
                &topic.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&release),
            )
            .await;
    }
}

struct ClusterRoleBindings;

impl ClusterRoleBindings {
    fn name(namespace: &str) -> String {
        format!("oxbow-rack-{namespace}-{CLUSTER}")
    }

    async fn get(client: &Client, namespace: &str) -> Option<ClusterRoleBinding> {
        let api: Api<ClusterRoleBinding> = Api::all(client.clone());
        api.get_opt(&Self::name(namespace)).await.unwrap()
    }

    async fn delete(client: &Client, namespace: &str) -> Result<(), kube::Error> {
        let api: Api<ClusterRoleBinding> = Api::all(client.clone());
        api.delete(&Self::name(namespace), &DeleteParams::default())
            .await
            .map(|_| ())
    }
}

impl Bed {
    fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// An object the reconcile must have applied; its absence fails with its name.
    async fn owned<K>(&self, name: &str) -> K
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
        <K as Resource>::DynamicType: Default,
    {
        let kind = K::kind(&Default::default()).to_string();
        self.api::<K>()
            .get_opt(name)
            .await
            .unwrap()
            .unwrap_or_else(|| {
                panic!("{kind} {name} does not exist: the reconcile did not apply it")
            })
    }

    async fn cluster(&self) -> Cluster {
        self.api::<Cluster>().get(CLUSTER).await.unwrap()
    }

    /// One reconcile of the Cluster as the controller runtime would run it: the object as
    /// the API server has it now.
    async fn reconcile_cluster(&self) {
        let cluster = self.cluster().await;
        cluster::reconcile::reconcile(Arc::new(cluster), self.ctx.clone())
            .await
            .unwrap_or_else(|error| panic!("Cluster reconcile failed: {error}"));
    }

    async fn reconcile_topic(&self) {
        let topic = self.api::<Topic>().get(TOPIC).await.unwrap();
        topic::reconcile(Arc::new(topic), self.ctx.clone())
            .await
            .unwrap_or_else(|error| panic!("Topic reconcile failed: {error}"));
    }

    async fn create_cluster(&self) -> Cluster {
        let cluster: Cluster = serde_json::from_value(json!({
            "apiVersion": "oxbow.dev/v1alpha1",
            "kind": "Cluster",
            "metadata": { "name": CLUSTER, "namespace": self.namespace },
            "spec": {
                "replicas": 3,
                "controllerVoters": 3,
                "image": IMAGE,
                "storage": { "size": "1Gi" },
                "rack": { "enabled": true },
                "config": {
                    "num.partitions": 3,
                    "default.replication.factor": 3,
                    "min.insync.replicas": 2,
                },
            },
        }))
        .unwrap();
        self.api::<Cluster>()
            .create(&PostParams::default(), &cluster)
            .await
            .unwrap()
    }

    async fn patch_cluster(&self, patch: serde_json::Value) {
        self.api::<Cluster>()
            .patch(CLUSTER, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }

    async fn pods(&self) -> BTreeMap<String, Pod> {
        self.api::<Pod>()
            .list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={CLUSTER}")))
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|p| (p.name_any(), p))
            .collect()
    }

    /// Pod name → uid, for telling a restarted broker from one left alone.
    async fn pod_uids(&self) -> BTreeMap<String, String> {
        self.pods()
            .await
            .into_iter()
            .map(|(name, pod)| (name, pod.uid().unwrap_or_default()))
            .collect()
    }

    /// Waits for `count` broker pods placed on nodes and Running (kwok), then makes each
    /// Ready. The brokers are fake, so no kubelet or pod runner probes them: the test
    /// reports readiness the way a kubelet would, through the pod's status subresource.
    async fn make_ready(&self, count: usize) {
        wait_for(&format!("{count} broker pods Running"), || async {
            let pods = self.pods().await;
            pods.len() == count
                && pods.values().all(|p| {
                    p.metadata.deletion_timestamp.is_none()
                        && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
                        && p.status.as_ref().and_then(|s| s.pod_ip.as_ref()).is_some()
                })
        })
        .await;
        for (name, pod) in self.pods().await {
            if !is_ready(&pod) {
                let patch = json!({ "status": { "conditions": [
                    { "type": "Ready", "status": "True" },
                    { "type": "ContainersReady", "status": "True" },
                ] } });
                self.api::<Pod>()
                    .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                    .await
                    .unwrap();
            }
        }
        wait_for("broker pods Ready", || async {
            self.pods().await.values().all(is_ready)
        })
        .await;
    }

    /// Waits until the StatefulSet controller has seen the current StatefulSet spec (its
    /// status then names the revision pods must run and counts its pods).
    async fn wait_stateful_set_observed(&self, replicas: i32) {
        wait_for(
            "the StatefulSet controller to observe the StatefulSet",
            || async {
                let sts = self.api::<StatefulSet>().get(CLUSTER).await.unwrap();
                let status = sts.status.unwrap_or_default();
                status.observed_generation == sts.metadata.generation
                    && status.update_revision.is_some()
                    && status.replicas == replicas
            },
        )
        .await;
    }

    async fn update_revision(&self) -> String {
        let sts = self.api::<StatefulSet>().get(CLUSTER).await.unwrap();
        sts.status.unwrap().update_revision.unwrap()
    }

    /// How many times the operator reported `reason` about the Cluster. Repeats of one
    /// reason are one Event whose `series.count` counts them (kube's recorder).
    async fn events(&self, reason: &str) -> i32 {
        self.api::<Event>()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(CLUSTER))
            .map(|e| e.series.map_or(1, |s| s.count))
            .sum()
    }

    /// Names of the Cluster's per-broker external Services, sorted.
    async fn external_services(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .api::<Service>()
            .list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={CLUSTER}")))
            .await
            .unwrap()
            .items
            .iter()
            .map(ResourceExt::name_any)
            .filter(|n| n.ends_with("-external"))
            .collect();
        names.sort();
        names
    }

    /// resourceVersion of the Cluster and of every object it owns.
    async fn resource_versions(&self) -> BTreeMap<String, String> {
        let mut versions = BTreeMap::new();
        let mut put = |kind: &str, meta: &ObjectMeta| {
            versions.insert(
                format!("{kind}/{}", meta.name.clone().unwrap_or_default()),
                meta.resource_version.clone().unwrap_or_default(),
            );
        };
        put("Cluster", &self.cluster().await.metadata);
        put(
            "ServiceAccount",
            &self
                .api::<ServiceAccount>()
                .get("events-broker")
                .await
                .unwrap()
                .metadata,
        );
        put(
            "ConfigMap",
            &self.api::<ConfigMap>().get(CLUSTER).await.unwrap().metadata,
        );
        for service in ["events-headless", "events-bootstrap"] {
            put(
                "Service",
                &self.api::<Service>().get(service).await.unwrap().metadata,
            );
        }
        put(
            "StatefulSet",
            &self
                .api::<StatefulSet>()
                .get(CLUSTER)
                .await
                .unwrap()
                .metadata,
        );
        put(
            "PodDisruptionBudget",
            &self
                .api::<PodDisruptionBudget>()
                .get(CLUSTER)
                .await
                .unwrap()
                .metadata,
        );
        let binding = ClusterRoleBindings::get(&self.client, &self.namespace)
            .await
            .unwrap();
        put("ClusterRoleBinding", &binding.metadata);
        versions
    }
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn condition<'a>(conditions: &'a [Condition], type_: &str) -> &'a Condition {
    conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} condition in {conditions:?}"))
}

/// The object is owned (controller reference) by `cluster`, carries its labels and was
/// written by the operator with server-side apply.
fn assert_owned(kind: &str, meta: &ObjectMeta, cluster: &Cluster) {
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
async fn assert_owned_objects(bed: &Bed, replicas: i32, num_partitions: &str) {
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
async fn assert_status_observed(bed: &Bed) -> Cluster {
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
async fn assert_ready(bed: &Bed, replicas: i32) {
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
async fn assert_idempotent(bed: &Bed) {
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
async fn create_ready_cluster(bed: &Bed) {
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
async fn change_broker_config(bed: &Bed, num_partitions: i32) -> String {
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

fn gate_questions(calls: &[Call]) -> usize {
    calls
        .iter()
        .filter(|c| **c == Call::Metadata { topics: None })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Kubernetes API server (KUBECONFIG); run by e2e/suites/75-operator-reconcile.sh"]
async fn reconcile_healthy_cluster_and_topic() {
    let fake = FakeKafka::start(&[(0, "zone-a"), (1, "zone-b"), (2, "zone-c")]).await;
    let bed = setup("oxbow-reconcile-healthy", fake).await;
    create_ready_cluster(&bed).await;

    // --- Topic: created in the cluster, as the spec says -------------------------------
    let topic: Topic = serde_json::from_value(json!({
        "apiVersion": "oxbow.dev/v1alpha1",
        "kind": "Topic",
        "metadata": { "name": TOPIC, "namespace": bed.namespace },
        "spec": {
            "cluster": CLUSTER,
            "partitions": 6,
            "replicationFactor": 3,
            "config": { "retention.ms": 86400000, "cleanup.policy": "delete" },
        },
    }))
    .unwrap();
    bed.api::<Topic>()
        .create(&PostParams::default(), &topic)
        .await
        .unwrap();
    bed.reconcile_topic().await;
    let topic = bed.api::<Topic>().get(TOPIC).await.unwrap();
    assert!(
        topic.finalizers().iter().any(|f| f == TOPIC_FINALIZER),
        "the first Topic reconcile adds the finalizer"
    );
    bed.reconcile_topic().await;
    let calls = bed.fake.take_calls();
    let described = Call::Metadata {
        topics: Some(vec![TOPIC.to_string()]),
    };
    assert_eq!(calls.first(), Some(&described), "describe first: {calls:?}");
    assert_eq!(
        calls.last(),
        Some(&described),
        "describe again for status: {calls:?}"
    );
    let created: Vec<&Call> = calls.iter().filter(|c| c.mutates()).collect();
    assert_eq!(created.len(), 1, "one CreateTopics: {calls:?}");
    let Call::CreateTopics {
        name,
        assignment,
        configs,
        ..
    } = created[0]
    else {
        panic!("expected CreateTopics, got {created:?}");
    };
    assert_eq!(name, TOPIC);
    assert_eq!(
        configs,
        &BTreeMap::from([
            ("cleanup.policy".to_string(), "delete".to_string()),
            ("retention.ms".to_string(), "86400000".to_string()),
        ])
    );
    // Rack-aware: 6 partitions, each on 3 distinct brokers, one per zone.
    assert_eq!(assignment.len(), 6, "{assignment:?}");
    for replicas in assignment {
        let mut sorted = replicas.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 2], "{assignment:?}");
    }
    let topic = bed.api::<Topic>().get(TOPIC).await.unwrap();
    let status = topic.status.clone().unwrap();
    assert_eq!(status.observed_generation, topic.metadata.generation);
    let ready = condition(&status.conditions, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "Ready")
    );
    assert_eq!(status.partitions, Some(6));
    assert_eq!(status.replication_factor, Some(3));
    assert!(
        status
            .topic_id
            .as_deref()
            .is_some_and(|id| id.starts_with("0b0b")),
        "topic id from the cluster: {:?}",
        status.topic_id
    );

    // Idempotent: only questions, no change, no status write.
    let version = topic.resource_version();
    bed.reconcile_topic().await;
    let calls = bed.fake.take_calls();
    assert!(
        calls.iter().all(|c| !c.mutates()),
        "an unchanged Topic changed the cluster: {calls:?}"
    );
    assert!(
        calls.contains(&Call::DescribeConfigs {
            name: TOPIC.to_string()
        }),
        "configs are checked against the cluster (drift): {calls:?}"
    );
    assert_eq!(
        bed.api::<Topic>()
            .get(TOPIC)
            .await
            .unwrap()
            .resource_version(),
        version,
        "an unchanged Topic's status was rewritten"
    );

    // A spec change: more partitions and a changed config reach the cluster.
    bed.api::<Topic>()
        .patch(
            TOPIC,
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "spec": { "partitions": 8, "config": { "retention.ms": 3600000 } } }),
            ),
        )
        .await
        .unwrap();
    bed.reconcile_topic().await;
    let mutations: Vec<Call> = bed
        .fake
        .take_calls()
        .into_iter()
        .filter(Call::mutates)
        .collect();
    assert_eq!(
        mutations,
        vec![
            Call::CreatePartitions {
                name: TOPIC.to_string(),
                count: 8
            },
            Call::AlterConfigs {
                name: TOPIC.to_string(),
                set: BTreeMap::from([("retention.ms".to_string(), "3600000".to_string())]),
                delete: vec![],
            },
        ]
    );
    let (partitions, configs) = bed.fake.topic(TOPIC).unwrap();
    assert_eq!(partitions, 8);
    assert_eq!(configs["retention.ms"], "3600000");
    let topic = bed.api::<Topic>().get(TOPIC).await.unwrap();
    let status = topic.status.clone().unwrap();
    assert_eq!(status.observed_generation, topic.metadata.generation);
    assert_eq!(status.partitions, Some(8));

    // Deletion: the finalizer deletes the Kafka topic, then lets the Topic go.
    bed.api::<Topic>()
        .delete(TOPIC, &DeleteParams::default())
        .await
        .unwrap();
    bed.reconcile_topic().await;
    assert_eq!(
        bed.fake.take_calls(),
        vec![Call::DeleteTopics {
            names: vec![TOPIC.to_string()]
        }]
    );
    assert!(bed.fake.topic(TOPIC).is_none());
    assert!(
        bed.api::<Topic>().get_opt(TOPIC).await.unwrap().is_none(),
        "the finalizer was released"
    );

    // --- Cluster: a broker config change rolls the brokers, one at a time ---------------
    bed.fake
        .seed_topic("payments", vec![vec![0, 1, 2], vec![1, 2, 0]]);
    let original = bed.pod_uids().await;
    let revision = change_broker_config(&bed, 5).await;
    // Highest ordinal first; each restart waits for the previous broker to be back.
    for pod in ["events-2", "events-1", "events-0"] {
        bed.make_ready(3).await;
        let before = bed.pod_uids().await;
        // The reconcile of the change itself may have restarted events-2 already, if the
        // StatefulSet controller had the new revision out by then.
        if before.get(pod) == original.get(pod) {
            bed.reconcile_cluster().await;
            let after = bed.pod_uids().await;
            let restarted: Vec<&String> = before
                .iter()
                .filter(|(name, uid)| after.get(*name) != Some(uid))
                .map(|(name, _)| name)
                .collect();
            assert_eq!(restarted, vec![pod], "restarted by one reconcile");
            assert_eq!(
                gate_questions(&bed.fake.take_calls()),
                1,
                "the roll gate asked the brokers before restarting {pod}"
            );
            bed.make_ready(3).await;
        }
        let recreated = &bed.pods().await[pod];
        assert_eq!(
            recreated.labels().get("controller-revision-hash"),
            Some(&revision),
            "{pod} recreated on the new revision"
        );
    }
    assert_eq!(bed.events("RollingBroker").await, 3, "RollingBroker events");
    bed.wait_stateful_set_observed(3).await;
    bed.reconcile_cluster().await;
    assert_ready(&bed, 3).await;
    assert_idempotent(&bed).await;

    // --- Cluster deletion: finalizer removes the rack binding; GC the owned objects -----
    bed.api::<Cluster>()
        .delete(CLUSTER, &DeleteParams::default())
        .await
        .unwrap();
    bed.reconcile_cluster().await;
    assert!(
        ClusterRoleBindings::get(&bed.client, &bed.namespace)
            .await
            .is_none(),
        "the finalizer deleted the rack ClusterRoleBinding"
    );
    assert!(
        bed.api::<Cluster>()
            .get_opt(CLUSTER)
            .await
            .unwrap()
            .is_none(),
        "the finalizer was released"
    );
    wait_for(
        "the garbage collector to delete the StatefulSet",
        || async {
            bed.api::<StatefulSet>()
                .get_opt(CLUSTER)
                .await
                .unwrap()
                .is_none()
        },
    )
    .await;
    cleanup(&bed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Kubernetes API server (KUBECONFIG); run by e2e/suites/75-operator-reconcile.sh"]
async fn reconcile_waits_to_roll_while_partitions_are_under_replicated() {
    let fake = FakeKafka::start(&[(0, "zone-a"), (1, "zone-b"), (2, "zone-c")]).await;
    let bed = setup("oxbow-reconcile-under-replicated", fake).await;
    create_ready_cluster(&bed).await;

    // Broker 2 stops fetching: both partitions of a topic on it are under-replicated.
    bed.fake
        .seed_topic("payments", vec![vec![0, 1, 2], vec![2, 0, 1]]);
    bed.fake.fall_behind(Some(2));
    change_broker_config(&bed, 7).await;
    let uids = bed.pod_uids().await;
    for attempt in 0..2 {
        bed.reconcile_cluster().await;
        assert_eq!(
            bed.pod_uids().await,
            uids,
            "a broker was restarted while partitions are under-replicated (reconcile {attempt})"
        );
        assert_eq!(
            gate_questions(&bed.fake.take_calls()),
            1,
            "the roll gate asked the brokers"
        );
        let cluster = assert_status_observed(&bed).await;
        let status = cluster.status.unwrap();
        let ready = condition(&status.conditions, "Ready");
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "Rolling")
        );
        assert_eq!(
            ready.message,
            "restart of events-2 waits: 2 partitions are under-replicated"
        );
        assert!(
            status.brokers.iter().all(|b| b.state == "Outdated"),
            "{:?}",
            status.brokers
        );
    }
    assert_eq!(bed.events("RollingBroker").await, 0, "RollingBroker events");

    // In sync again: the gate opens and the roll starts with the highest ordinal.
    bed.fake.fall_behind(None);
    bed.reconcile_cluster().await;
    let after = bed.pod_uids().await;
    assert_ne!(
        after.get("events-2"),
        uids.get("events-2"),
        "events-2 restarted"
    );
    assert_eq!(after.get("events-1"), uids.get("events-1"));
    assert_eq!(after.get("events-0"), uids.get("events-0"));
    assert_eq!(gate_questions(&bed.fake.take_calls()), 1);

    // --- Scale: replicas reach the StatefulSet, the per-broker config and status --------
    bed.make_ready(3).await;
    bed.patch_cluster(json!({ "spec": { "replicas": 4 } }))
        .await;
    bed.reconcile_cluster().await;
    assert_owned_objects(&bed, 4, "7").await;
    assert_status_observed(&bed).await;
    assert_eq!(bed.events("Scaled").await, 1, "Scaled event");

    // --- Optional objects: an external listener adds per-broker Services, removing it
    // deletes them (orphans); a ServiceMonitor without the Prometheus Operator's CRD
    // (the testbed has none) degrades the Cluster instead of failing the reconcile.
    bed.patch_cluster(json!({ "spec": {
        "listeners": { "external": { "type": "LoadBalancer" } },
        "metrics": { "serviceMonitor": true },
    } }))
    .await;
    bed.reconcile_cluster().await;
    let cluster = bed.cluster().await;
    let external: Vec<String> = (0..4).map(|i| format!("events-{i}-external")).collect();
    assert_eq!(bed.external_services().await, external);
    for name in &external {
        let service = bed.api::<Service>().get(name).await.unwrap();
        assert_owned("Service", &service.metadata, &cluster);
        assert_eq!(
            service.spec.and_then(|s| s.type_).as_deref(),
            Some("LoadBalancer")
        );
    }
    let status = assert_status_observed(&bed).await.status.unwrap();
    let degraded = condition(&status.conditions, "Degraded");
    assert_eq!(
        (degraded.status.as_str(), degraded.reason.as_str()),
        ("True", "ServiceMonitorUnavailable"),
        "{degraded:?}"
    );

    bed.patch_cluster(json!({ "spec": {
        "listeners": { "external": null },
        "metrics": { "serviceMonitor": false },
    } }))
    .await;
    bed.reconcile_cluster().await;
    assert_eq!(
        bed.external_services().await,
        Vec::<String>::new(),
        "external Services of a removed listener are deleted"
    );
    let status = assert_status_observed(&bed).await.status.unwrap();
    assert_eq!(condition(&status.conditions, "Degraded").status, "False");
    assert_owned_objects(&bed, 4, "7").await;
    cleanup(&bed).await;
}

/// Deletes the scenario's namespace and rack binding (the testbed goes anyway; an
/// external cluster keeps nothing).
async fn cleanup(bed: &Bed) {
    release_finalizers(&bed.client, &bed.namespace).await;
    let namespaces: Api<Namespace> = Api::all(bed.client.clone());
    let _ = namespaces
        .delete(&bed.namespace, &DeleteParams::default())
        .await;
    let _ = ClusterRoleBindings::delete(&bed.client, &bed.namespace).await;
}
