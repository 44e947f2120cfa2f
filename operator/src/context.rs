//! What every reconcile shares: the API client, settings, metrics, events and back-off.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::admin::AdminPool;
use crate::bootstrap::Reach;
use crate::cluster::build::BuildSettings;
use crate::crd::{Cluster, Topic};
use crate::events::EventRecorder;
use crate::metrics::Metrics;

/// Shared state of the controllers.
pub struct Context {
    pub client: Client,
    pub settings: BuildSettings,
    pub metrics: Metrics,
    recorder: EventRecorder,
    /// `namespace/cluster` → `host:port` used instead of the bootstrap Service address
    /// (for an operator running outside the Kubernetes network, e.g. in tests).
    pub bootstrap_overrides: BTreeMap<String, String>,
    failures: Mutex<BTreeMap<String, u32>>,
    /// Admin connections the Topic reconciles share.
    pub admin_pool: AdminPool,
    /// Recently listed broker addresses by `namespace/cluster` (see `bootstrap::reach_cached`).
    pub(crate) reach_cache: Mutex<BTreeMap<String, (Instant, Reach)>>,
    /// The operator's TLS client side of each secured Cluster, by `namespace/cluster`
    /// (from its `-operator-cert` Secret; see `admin::tls`).
    pub(crate) cluster_tls: Mutex<BTreeMap<String, std::sync::Arc<crate::admin::tls::ClusterTls>>>,
    /// The controllers' caches of Clusters and Topics, once they run: a Topic reconcile
    /// reads its Cluster there instead of asking the API server each time.
    clusters: OnceLock<Store<Cluster>>,
    topics: OnceLock<Store<Topic>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// First retry delay after a transient error; doubled per consecutive failure.
const BACKOFF_BASE: Duration = Duration::from_secs(2);
/// Longest retry delay.
const BACKOFF_MAX: Duration = Duration::from_secs(300);

impl Context {
    pub fn new(
        client: Client,
        settings: BuildSettings,
        metrics: Metrics,
        bootstrap_overrides: BTreeMap<String, String>,
        instance: Option<String>,
    ) -> Self {
        Self {
            recorder: EventRecorder::new(client.clone(), "oxbow-operator", instance),
            client,
            settings,
            metrics,
            bootstrap_overrides,
            failures: Mutex::new(BTreeMap::new()),
            admin_pool: AdminPool::default(),
            reach_cache: Mutex::new(BTreeMap::new()),
            cluster_tls: Mutex::new(BTreeMap::new()),
            clusters: OnceLock::new(),
            topics: OnceLock::new(),
        }
    }

    /// Hands over the controllers' caches (once; later calls change nothing).
    pub fn use_stores(&self, clusters: Store<Cluster>, topics: Store<Topic>) {
        let _ = self.clusters.set(clusters);
        let _ = self.topics.set(topics);
    }

    /// `name` in `namespace` from the Cluster cache; `None` when there is no cache or it
    /// does not have that Cluster (yet): the caller then asks the API server.
    pub fn cached_cluster(&self, namespace: &str, name: &str) -> Option<std::sync::Arc<Cluster>> {
        self.clusters
            .get()?
            .get(&ObjectRef::new(name).within(namespace))
    }

    /// Cluster `name` of `namespace`: from the controller's cache, else from the API server
    /// (the Topic and User reconcilers both look up their Cluster so).
    pub async fn find_cluster(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<std::sync::Arc<Cluster>>, kube::Error> {
        if let Some(cluster) = self.cached_cluster(namespace, name) {
            return Ok(Some(cluster));
        }
        let clusters: kube::Api<Cluster> = kube::Api::namespaced(self.client.clone(), namespace);
        Ok(clusters.get_opt(name).await?.map(std::sync::Arc::new))
    }

    /// How many Topics the cache holds (0 before the Topic controller runs).
    pub fn topic_count(&self) -> usize {
        self.topics.get().map_or(0, |store| store.state().len())
    }

    /// Publishes a Kubernetes Event about `object`; a failure is logged, never fatal.
    pub async fn event(
        &self,
        object: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        if let Err(error) = self
            .recorder
            .publish(object, warning, reason, action, note)
            .await
        {
            tracing::warn!(%error, reason, "Publishing an event failed");
        }
    }

    /// Requeue action after a transient error of `key`: exponential back-off.
    pub fn backoff(&self, key: &str) -> Action {
        let mut failures = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = failures.entry(key.to_string()).or_insert(0);
        *count = count.saturating_add(1);
        let delay = BACKOFF_BASE
            .saturating_mul(1_u32 << (*count - 1).min(8))
            .min(BACKOFF_MAX);
        Action::requeue(delay)
    }

    /// Forgets the failures of `key` after a successful reconcile.
    pub fn succeeded(&self, key: &str) {
        let mut failures = self
            .failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        failures.remove(key);
    }
}
