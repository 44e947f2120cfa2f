//! The observe stage of the Cluster pipeline: what exists in the API server and what the
//! brokers report, read once, before anything is planned.
//!
//! The scale's step is taken here, with the brokers: [`scale::reconcile`] reads the
//! partitions and starts the next move, cordon or unregistration itself, because what it
//! decides next depends on whether that request succeeded. What it hands back (how many
//! brokers the StatefulSet keeps, the scale's status and Event) is an input of the plan
//! like everything else read here.
//!
//! The brokers' feature levels (each broker's ApiVersions) are read when every broker pod
//! is ready, for the feature step of the plan (`upgrade.rs`) and the status.
//!
//! The StatefulSet's status and the pods are written by the StatefulSet controller and the
//! kubelet, never by this operator's apply: read before the apply they say what a read
//! right after it would.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::error::Error;
use super::names::Names;
use super::roll::{self, RollGate};
use super::scale;
use super::status::{self, Observed};
use super::upgrade::FeatureView;
use crate::admin::AdminClient;
use crate::bootstrap::Reach;
use crate::context::Context;
use crate::crd::Cluster;

/// How long the feature read waits for one broker's TCP connection.
const BROKER_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Everything the plan is made from, besides the spec.
#[derive(Debug)]
pub struct Observation {
    /// The StatefulSet, its pods and their nodes' labels.
    pub brokers: Observed,
    /// The scale's step as the brokers allowed it.
    pub scaling: scale::Outcome,
    /// The roll gate, read only when a broker is outdated.
    pub roll: Option<RollCheck>,
    /// The brokers' feature levels, read when every broker pod is ready.
    pub features: Option<FeatureRead>,
}

/// The brokers' feature levels as read, and where they were reached (for UpdateFeatures).
#[derive(Debug)]
pub struct FeatureRead {
    pub view: Result<FeatureView, String>,
    pub addresses: Vec<String>,
}

/// What the brokers say about restarting one of them now.
#[derive(Debug)]
pub struct RollCheck {
    pub gate: RollGate,
    /// The pod of the active controller, which restarts last.
    pub active_controller_pod: Option<String>,
}

impl Observation {
    /// The StatefulSet's replicas, `None` before it exists.
    pub fn current_replicas(&self) -> Option<i32> {
        self.brokers
            .stateful_set
            .as_ref()
            .and_then(|s| s.spec.as_ref())
            .and_then(|s| s.replicas)
    }
}

/// Reads the StatefulSet, takes the scale's step, then reads the pods, their nodes and,
/// when a broker waits for a restart, the roll gate.
pub async fn observe(
    ctx: &Context,
    cluster: &Cluster,
    names: &Names,
) -> Result<Observation, Error> {
    let stateful_sets: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &names.namespace);
    let stateful_set = stateful_sets
        .get_opt(&names.base())
        .await
        .map_err(|source| Error::Fetch {
            what: "StatefulSet",
            source,
        })?;
    let current = stateful_set
        .as_ref()
        .and_then(|s| s.spec.as_ref())
        .and_then(|s| s.replicas);
    let reach = match current {
        Some(_) => Some(crate::bootstrap::reach(ctx, cluster, &names.namespace).await),
        None => None,
    };
    // A scale-in keeps the leaving brokers until they hold no replica.
    let scaling = if let Some(reach) = &reach {
        let leaving = leaving_pods(ctx, names, cluster.spec.replicas).await;
        // A scale's progress lives in status.scaling, which the last reconcile may just
        // have written: the watch cache can still hold the Cluster from before it, so the
        // scale reads the status from the API server.
        let latest = latest_status(cluster, ctx).await?;
        scale::reconcile(&latest, current, reach, leaving, &ctx.metrics).await
    } else {
        scale::Outcome {
            keep: cluster.spec.replicas,
            status: None,
            event: None,
        }
    };
    let brokers = pods_and_nodes(ctx, names, stateful_set).await?;
    let roll = if status::pod_to_roll(&brokers, cluster.spec.replicas, None).is_some() {
        let candidates = crate::bootstrap::addresses(ctx, cluster, &names.namespace).await;
        let (gate, active) =
            roll::check(&candidates, &scale::ordinals(cluster.spec.replicas)).await;
        Some(RollCheck {
            gate,
            active_controller_pod: active.map(|id| names.pod(id)),
        })
    } else {
        None
    };
    let all_ready = !brokers.pods.is_empty() && brokers.pods.iter().all(status::is_pod_ready);
    let features = match &reach {
        Some(reach) if all_ready => Some(read_features(reach).await),
        _ => None,
    };
    Ok(Observation {
        brokers,
        scaling,
        roll,
        features,
    })
}

/// Every broker's supported feature levels and the finalized ones (ApiVersions): each
/// broker asked at its own address, or, when only an override address reaches the
/// brokers, the one behind it. A broker that does not answer is left out.
async fn read_features(reach: &Reach) -> FeatureRead {
    let mut view = FeatureView::default();
    let mut epoch = i64::MIN;
    let mut errors = Vec::new();
    let answers: Vec<(i32, Result<_, _>)> = if reach.brokers.is_empty() {
        view.one_for_all = true;
        let answer = async {
            let (mut admin, _) = crate::bootstrap::connect(&reach.any).await?;
            admin.features().await
        };
        vec![(-1, answer.await)]
    } else {
        let mut answers = Vec::new();
        for (id, address) in &reach.brokers {
            let answer = async {
                let mut admin =
                    AdminClient::connect_within(address, BROKER_CONNECT_TIMEOUT).await?;
                admin.features().await
            };
            answers.push((*id, answer.await));
        }
        answers
    };
    for (id, answer) in answers {
        match answer {
            Ok(answer) => {
                // Brokers learn a change a moment apart: the newest finalized levels win.
                if answer.epoch > epoch {
                    epoch = answer.epoch;
                    view.finalized = answer.finalized;
                }
                view.brokers.insert(id, answer.supported);
            }
            Err(error) if id < 0 => errors.push(error.to_string()),
            Err(error) => errors.push(format!("broker {id}: {error}")),
        }
    }
    let view = if view.brokers.is_empty() {
        Err(errors.join("; "))
    } else {
        Ok(view)
    };
    FeatureRead {
        view,
        addresses: reach.any.clone(),
    }
}

/// `cluster` with its status as the API server has it now.
async fn latest_status(cluster: &Cluster, ctx: &Context) -> Result<Cluster, Error> {
    let api: Api<Cluster> =
        Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    let fresh = api
        .get_status(&cluster.name_any())
        .await
        .map_err(|source| Error::Fetch {
            what: "Cluster status",
            source,
        })?;
    let mut latest = cluster.clone();
    latest.status = fresh.status;
    Ok(latest)
}

/// How many broker pods with an ordinal of `keep` or more still exist.
async fn leaving_pods(ctx: &Context, names: &Names, keep: i32) -> Result<usize, String> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &names.namespace);
    let list = pods
        .list(&ListParams::default().labels(&names.selector_string()))
        .await
        .map_err(|e| format!("cannot list the broker pods: {e}"))?;
    Ok(list
        .items
        .iter()
        .filter_map(|p| p.name_any().rsplit_once('-').map(|(_, n)| n.to_string()))
        .filter_map(|ordinal| ordinal.parse::<i32>().ok())
        .filter(|ordinal| *ordinal >= keep)
        .count())
}

/// The broker pods and their nodes' racks, beside the StatefulSet already read.
async fn pods_and_nodes(
    ctx: &Context,
    names: &Names,
    stateful_set: Option<StatefulSet>,
) -> Result<Observed, Error> {
    let client = ctx.client.clone();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &names.namespace);
    let pods = pods
        .list(&ListParams::default().labels(&names.selector_string()))
        .await
        .map_err(|source| Error::Fetch {
            what: "Pods",
            source,
        })?
        .items;
    let nodes: Api<Node> = Api::all(client);
    let mut node_labels = BTreeMap::new();
    for node_name in pods
        .iter()
        .filter_map(|p| p.spec.as_ref().and_then(|s| s.node_name.clone()))
    {
        if node_labels.contains_key(&node_name) {
            continue;
        }
        // Racks in status are informative: a node that cannot be read leaves the rack empty.
        if let Ok(Some(node)) = nodes.get_opt(&node_name).await {
            node_labels.insert(node_name, node.metadata.labels.unwrap_or_default());
        }
    }
    Ok(Observed {
        stateful_set,
        pods,
        node_labels,
    })
}
