//! The scenarios' world: API client, namespace, fake cluster, reconcile context, and the
//! reads and waits the checks share.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::fake_kafka::FakeKafka;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use oxbow_operator::cluster::build::BuildSettings;
use oxbow_operator::context::Context;
use oxbow_operator::controller;
use oxbow_operator::crd::{Cluster, Topic};
use oxbow_operator::metrics::Metrics;
use serde_json::json;

pub const CLUSTER: &str = "events";
pub const TOPIC: &str = "orders";
pub const IMAGE: &str = "oxbow:reconcile-test";
/// Bound of every wait on the API server's controllers.
pub const WAIT: Duration = Duration::from_secs(120);
pub const TEST_MANAGER: &str = "reconcile-api-test";

/// One scenario's world: the API client, its namespace, the fake cluster and the
/// reconcilers' context (its bootstrap override points at the fake).
pub struct Bed {
    pub client: Client,
    pub namespace: String,
    pub fake: FakeKafka,
    pub ctx: Arc<Context>,
}

pub async fn wait_for<F, Fut>(what: &str, mut check: F)
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

pub async fn client() -> Client {
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
pub async fn install_crds(client: &Client) {
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
    assert_eq!(names.len(), 3, "clusters, topics and users CRDs: {names:?}");
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

pub async fn setup(namespace: &str, fake: FakeKafka) -> Bed {
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

pub async fn release_finalizers(client: &Client, namespace: &str) {
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

#[derive(Debug)]
pub struct ClusterRoleBindings;

impl ClusterRoleBindings {
    pub fn name(namespace: &str) -> String {
        format!("oxbow-rack-{namespace}-{CLUSTER}")
    }

    pub async fn get(client: &Client, namespace: &str) -> Option<ClusterRoleBinding> {
        let api: Api<ClusterRoleBinding> = Api::all(client.clone());
        api.get_opt(&Self::name(namespace)).await.unwrap()
    }

    pub async fn delete(client: &Client, namespace: &str) -> Result<(), kube::Error> {
        let api: Api<ClusterRoleBinding> = Api::all(client.clone());
        api.delete(&Self::name(namespace), &DeleteParams::default())
            .await
            .map(|_| ())
    }
}

impl Bed {
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// An object the reconcile must have applied; its absence fails with its name.
    pub async fn owned<K>(&self, name: &str) -> K
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

    pub async fn cluster(&self) -> Cluster {
        self.api::<Cluster>().get(CLUSTER).await.unwrap()
    }

    /// One reconcile of the Cluster as the controller runtime would run it: the object as
    /// the API server has it now.
    pub async fn reconcile_cluster(&self) {
        let cluster = self.cluster().await;
        controller::reconcile(Arc::new(cluster), self.ctx.clone())
            .await
            .unwrap_or_else(|error| panic!("Cluster reconcile failed: {error}"));
    }

    pub async fn reconcile_topic(&self) {
        let topic = self.api::<Topic>().get(TOPIC).await.unwrap();
        controller::reconcile(Arc::new(topic), self.ctx.clone())
            .await
            .unwrap_or_else(|error| panic!("Topic reconcile failed: {error}"));
    }

    pub async fn create_cluster(&self) -> Cluster {
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

    pub async fn patch_cluster(&self, patch: serde_json::Value) {
        self.api::<Cluster>()
            .patch(CLUSTER, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }

    pub async fn pods(&self) -> BTreeMap<String, Pod> {
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
    pub async fn pod_uids(&self) -> BTreeMap<String, String> {
        self.pods()
            .await
            .into_iter()
            .map(|(name, pod)| (name, pod.uid().unwrap_or_default()))
            .collect()
    }

    /// Pods the operator restarted since `before` (name → uid): deleted, recreated under a
    /// new uid, or still terminating. A graceful delete leaves the old pod in place until
    /// the kubelet (here the stand-in) confirms, so a pod with a deletion timestamp counts.
    pub async fn restarted_since(&self, before: &BTreeMap<String, String>) -> Vec<String> {
        let now = self.pods().await;
        before
            .iter()
            .filter(|(name, uid)| match now.get(*name) {
                None => true,
                Some(pod) => {
                    pod.uid().as_ref() != Some(*uid) || pod.metadata.deletion_timestamp.is_some()
                }
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Waits for `count` broker pods placed on nodes and Running (kwok), then makes each
    /// Ready. The brokers are fake, so no kubelet or pod runner probes them: the test
    /// reports readiness the way a kubelet would, through the pod's status subresource.
    pub async fn make_ready(&self, count: usize) {
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
    pub async fn wait_stateful_set_observed(&self, replicas: i32) {
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

    pub async fn update_revision(&self) -> String {
        let sts = self.api::<StatefulSet>().get(CLUSTER).await.unwrap();
        sts.status.unwrap().update_revision.unwrap()
    }

    /// How many times the operator reported `reason` about the Cluster. Repeats of one
    /// reason are one Event whose `series.count` counts them (kube's recorder).
    pub async fn events(&self, reason: &str) -> i32 {
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
    pub async fn external_services(&self) -> Vec<String> {
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
    pub async fn resource_versions(&self) -> BTreeMap<String, String> {
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

pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

pub fn condition<'a>(conditions: &'a [Condition], type_: &str) -> &'a Condition {
    conditions
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} condition in {conditions:?}"))
}
