//! How the operator reaches a Cluster's brokers for Kafka admin requests.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use crate::admin::{AdminClient, AdminError, tls};
use crate::cluster::names::Names;
use crate::context::Context;
use crate::crd::Cluster;

/// How the operator reaches a Cluster's brokers.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    /// Addresses to try, in order, for requests any broker answers.
    pub any: Vec<String>,
    /// Each broker's own address, for what only that broker takes (its own configs).
    pub brokers: BTreeMap<i32, String>,
}

/// Addresses the operator tries, in order, to reach `cluster`'s brokers: an override
/// (`--bootstrap-override`), then the pod IPs of its running brokers (reachable from the
/// operator's pod in any cluster, and without cluster DNS), then the bootstrap Service.
pub async fn addresses(ctx: &Context, cluster: &Cluster, namespace: &str) -> Vec<String> {
    reach(ctx, cluster, namespace).await.any
}

/// [`addresses`], and each broker's own pod IP (a broker's own configs go to it).
pub async fn reach(ctx: &Context, cluster: &Cluster, namespace: &str) -> Reach {
    let name = cluster.name_any();
    let names = Names::new(&name, namespace);
    // A secured Cluster is administered over its replication listener (mutual TLS).
    let secured = crate::cluster::security::secured(&cluster.spec);
    let port = if secured {
        cluster.spec.listeners.replication_port
    } else {
        cluster.spec.listeners.kafka_port
    };
    let tls = if secured {
        cluster_tls(ctx, &names).await
    } else {
        None
    };
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let brokers: BTreeMap<i32, String> = match pods
        .list(&ListParams::default().labels(&names.selector_string()))
        .await
    {
        Ok(list) => list
            .items
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| {
                let ordinal = p.name_any().rsplit_once('-')?.1.parse::<i32>().ok()?;
                let ip = p.status.as_ref()?.pod_ip.clone()?;
                let address = format!("{ip}:{port}");
                match &tls {
                    Some(tls) => tls::route(&address, Arc::clone(tls), names.pod_dns(ordinal)),
                    None => tls::forget(&address),
                }
                Some((ordinal, address))
            })
            .collect(),
        Err(error) => {
            tracing::debug!(%error, "Listing broker pods failed; using the bootstrap Service");
            BTreeMap::new()
        }
    };
    match ctx.bootstrap_overrides.get(&format!("{namespace}/{name}")) {
        // An operator outside the cluster network reaches the brokers only through the
        // override: no per-broker requests (no cordons, plans without sizes).
        Some(address) => Reach {
            any: vec![address.clone()],
            brokers: BTreeMap::new(),
        },
        None => {
            let bootstrap = names.bootstrap(port);
            if let Some(tls) = &tls {
                let service = format!("{}.{}.svc", names.bootstrap_service(), names.namespace);
                tls::route(&bootstrap, Arc::clone(tls), service);
            }
            Reach {
                any: brokers
                    .values()
                    .cloned()
                    .chain(std::iter::once(bootstrap))
                    .collect(),
                brokers,
            }
        }
    }
}

/// The operator's TLS client side of a secured Cluster: cached, else read from its
/// `-operator-cert` Secret (none yet: the first reconcile has not issued it).
async fn cluster_tls(ctx: &Context, names: &Names) -> Option<Arc<tls::ClusterTls>> {
    let key = format!("{}/{}", names.namespace, names.cluster);
    if let Some(cached) = lock(&ctx.cluster_tls).get(&key) {
        return Some(Arc::clone(cached));
    }
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &names.namespace);
    let name = crate::cluster::certificate_secrets::operator_cert_secret(names);
    let secret = secrets.get_opt(&name).await.ok().flatten()?;
    let data = crate::cluster::certificate_secrets::text_data(&secret);
    remember_cluster_tls(ctx, names, &data)
}

/// Keeps the TLS client side made from an `-operator-cert` Secret's data (the reconciler
/// calls it whenever it applies that Secret, so a renewed certificate is used at once).
pub fn remember_cluster_tls(
    ctx: &Context,
    names: &Names,
    data: &BTreeMap<String, String>,
) -> Option<Arc<tls::ClusterTls>> {
    use crate::cluster::certificate_secrets::OPERATOR_STORE;
    use crate::cluster::security::CLUSTER_CA_FILE;
    let made = tls::ClusterTls::from_pem(data.get(CLUSTER_CA_FILE)?, data.get(OPERATOR_STORE)?);
    match made {
        Ok(made) => {
            let made = Arc::new(made);
            lock(&ctx.cluster_tls).insert(
                format!("{}/{}", names.namespace, names.cluster),
                Arc::clone(&made),
            );
            Some(made)
        }
        Err(reason) => {
            tracing::warn!(cluster = %names.cluster, %reason, "The operator's certificate cannot be used");
            None
        }
    }
}

/// How long a listing of broker pods serves Topic reconciles: thousands of Topics
/// re-checked would otherwise each list the pods through the API server.
const REACH_REUSE: Duration = Duration::from_secs(5);

/// [`reach`] as listed at most [`REACH_REUSE`] ago, for reconciles that only need some
/// broker to answer. A pod that moved since is skipped by [`connect`] (the bootstrap
/// Service stays last); [`forget_reach`] drops a listing none of whose addresses answered.
pub async fn reach_cached(ctx: &Context, cluster: &Cluster, namespace: &str) -> Reach {
    let key = format!("{namespace}/{}", cluster.name_any());
    let now = Instant::now();
    if let Some((at, reach)) = lock(&ctx.reach_cache).get(&key)
        && now.duration_since(*at) < REACH_REUSE
    {
        return reach.clone();
    }
    let fresh = reach(ctx, cluster, namespace).await;
    lock(&ctx.reach_cache).insert(key, (now, fresh.clone()));
    fresh
}

/// Forgets the cached [`reach_cached`] listing of `cluster`.
pub fn forget_reach(ctx: &Context, cluster: &Cluster, namespace: &str) {
    lock(&ctx.reach_cache).remove(&format!("{namespace}/{}", cluster.name_any()));
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An idle pooled connection to one of `addresses`, or else a new one ([`connect`]).
pub async fn connect_pooled(
    ctx: &Context,
    addresses: &[String],
) -> Result<(AdminClient, String), AdminError> {
    match ctx.admin_pool.take(addresses) {
        Some(pooled) => Ok(pooled),
        None => connect(addresses).await,
    }
}

/// Connects to the first address that answers.
pub async fn connect(addresses: &[String]) -> Result<(AdminClient, String), AdminError> {
    let mut last = None;
    for address in addresses {
        match AdminClient::connect(address).await {
            Ok(client) => return Ok((client, address.clone())),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or(AdminError::Wire(
        oxbow_kafka_client::WireError::ConnectTimeout {
            address: "(no address to try)".to_string(),
        },
    )))
}
