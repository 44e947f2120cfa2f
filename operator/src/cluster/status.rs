//! Cluster status from what was observed: pure functions, tested without a server.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;

use super::names::Names;
use super::storage::{STORAGE_RESIZED, Sizing};
use super::upgrade::FeatureReport;
use crate::crd::{
    BrokerStatus, Cluster, ClusterStatus, QuorumStatus, ScalingPhase, ScalingStatus, condition,
    merge_conditions, types,
};

/// What the reconcile read of the StatefulSet, its pods and their nodes.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub stateful_set: Option<StatefulSet>,
    pub pods: Vec<Pod>,
    /// Node name → labels, for the nodes the broker pods run on.
    pub node_labels: BTreeMap<String, BTreeMap<String, String>>,
}

/// Pod label the StatefulSet controller sets to the revision a pod was made from.
const REVISION_LABEL: &str = "controller-revision-hash";

fn ordinal(names: &Names, pod: &Pod) -> Option<i32> {
    let name = pod.metadata.name.as_deref()?;
    name.strip_prefix(&format!("{}-", names.cluster))?
        .parse()
        .ok()
}

pub fn is_pod_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|conditions| {
                conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            })
}

fn update_revision(observed: &Observed) -> Option<&str> {
    observed
        .stateful_set
        .as_ref()?
        .status
        .as_ref()?
        .update_revision
        .as_deref()
}

pub(super) fn is_outdated(observed: &Observed, pod: &Pod) -> bool {
    let Some(revision) = update_revision(observed) else {
        return false;
    };
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REVISION_LABEL))
        .is_some_and(|r| r != revision)
}

/// The broker pod to restart next for a configuration change, if it is safe now: every
/// broker exists and is ready, none is terminating. Highest ordinal first, one at a time
/// (controller voters, the lowest ordinals, go last).
/// The outdated pod to restart next: highest ordinal first, the active controller's pod
/// last (one change of quorum leader per roll).
pub fn pod_to_roll(
    observed: &Observed,
    replicas: i32,
    active_controller: Option<&str>,
) -> Option<String> {
    let live = observed
        .pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .count();
    let all_ready = observed.pods.iter().all(is_pod_ready);
    if usize::try_from(replicas).ok()? != live || !all_ready || live != observed.pods.len() {
        return None;
    }
    observed
        .pods
        .iter()
        .filter(|p| is_outdated(observed, p))
        .max_by_key(|p| {
            let name = p.metadata.name.as_deref();
            (name != active_controller, name.map(pod_ordinal))
        })
        .and_then(|p| p.metadata.name.clone())
}

/// A pod's StatefulSet ordinal (the number after the last `-`), for ordering.
fn pod_ordinal(name: &str) -> i64 {
    name.rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(-1)
}

fn broker_entries(cluster: &Cluster, names: &Names, observed: &Observed) -> Vec<BrokerStatus> {
    let mut entries: Vec<BrokerStatus> = (0..cluster.spec.replicas)
        .map(|id| BrokerStatus {
            id,
            pod: names.pod(id),
            rack: None,
            state: "Missing".to_string(),
            version: None,
        })
        .collect();
    for pod in &observed.pods {
        let Some(id) = ordinal(names, pod) else {
            continue;
        };
        let Some(entry) = entries.iter_mut().find(|e| e.id == id) else {
            continue;
        };
        let node = pod.spec.as_ref().and_then(|s| s.node_name.as_ref());
        entry.rack = node
            .and_then(|n| observed.node_labels.get(n))
            .and_then(|labels| labels.get(&cluster.spec.rack.topology_key))
            .cloned();
        entry.version = super::upgrade::pod_version(pod);
        let phase = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Pending");
        entry.state = if is_outdated(observed, pod) {
            "Outdated"
        } else if is_pod_ready(pod) {
            "Ready"
        } else if phase == "Running" {
            "Running"
        } else {
            "Pending"
        }
        .to_string();
    }
    entries
}

/// The status after a successful apply.
pub fn compute(
    cluster: &Cluster,
    names: &Names,
    observed: &Observed,
    generation: Option<i64>,
    degraded_message: Option<&str>,
    scaling: Option<ScalingStatus>,
) -> ClusterStatus {
    let brokers = broker_entries(cluster, names, observed);
    let sts_status = observed
        .stateful_set
        .as_ref()
        .and_then(|s| s.status.clone())
        .unwrap_or_default();
    let ready_count = brokers.iter().filter(|b| b.state == "Ready").count();
    let ready_replicas = i32::try_from(ready_count).unwrap_or(i32::MAX);
    let outdated = brokers.iter().filter(|b| b.state == "Outdated").count();
    let wanted = cluster.spec.replicas;
    let (ready, reason, message) = if let Some(scaling) = &scaling {
        (false, scaling.phase.as_str(), scaling.message.clone())
    } else if outdated > 0 {
        (
            false,
            "Rolling",
            format!("{outdated} brokers wait for a restart with the new configuration"),
        )
    } else if sts_status.replicas > wanted {
        (
            false,
            "ScalingDown",
            format!("{} brokers, scaling down to {wanted}", sts_status.replicas),
        )
    } else if ready_replicas < wanted {
        (
            false,
            "BrokersNotReady",
            format!("{ready_replicas} of {wanted} brokers ready"),
        )
    } else {
        (true, "Ready", format!("{wanted} brokers ready"))
    };
    let existing = cluster
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let refused = scaling
        .as_ref()
        .filter(|s| s.phase == ScalingPhase::Refused);
    let degraded = match (refused, degraded_message) {
        (Some(scaling), _) => condition(
            types::DEGRADED,
            true,
            "ScaleInRefused",
            scaling.message.clone(),
            generation,
        ),
        (None, Some(message)) => condition(
            types::DEGRADED,
            true,
            "ServiceMonitorUnavailable",
            message,
            generation,
        ),
        (None, None) => condition(types::DEGRADED, false, "AsExpected", "", generation),
    };
    let conditions = merge_conditions(
        existing,
        vec![
            condition(types::READY, ready, reason, message.clone(), generation),
            condition(
                types::RECONCILING,
                !ready,
                if ready { "Reconciled" } else { reason },
                message,
                generation,
            ),
            degraded,
        ],
    );
    let previous = cluster.status.clone().unwrap_or_default();
    ClusterStatus {
        version: running_version(&brokers, wanted).or(previous.version),
        finalized_features: previous.finalized_features,
        pending_features: previous.pending_features,
        conditions,
        observed_generation: generation,
        replicas: sts_status.replicas,
        ready_replicas,
        brokers,
        bootstrap: Some(names.bootstrap(cluster.spec.listeners.kafka_port)),
        selector: Some(names.selector_string()),
        scaling,
        quorum: Some(
            cluster
                .status
                .as_ref()
                .and_then(|s| s.quorum.clone())
                .unwrap_or_else(|| QuorumStatus {
                    initial_voters: cluster.spec.controller_voters,
                    ..QuorumStatus::default()
                }),
        ),
    }
}

/// The release every one of the `replicas` brokers runs, when they all run the same one.
fn running_version(brokers: &[BrokerStatus], replicas: i32) -> Option<String> {
    let first = brokers.first()?.version.clone()?;
    (usize::try_from(replicas).ok() == Some(brokers.len())
        && brokers
            .iter()
            .all(|b| b.version.as_deref() == Some(first.as_str())))
    .then_some(first)
}

/// The status of a Cluster whose spec cannot be built: Degraded with the reason; the
/// running brokers (if any) are left alone until the spec changes.
pub fn invalid(cluster: &Cluster, names: &Names, reason: &str, message: &str) -> ClusterStatus {
    let generation = cluster.metadata.generation;
    let mut status = cluster.status.clone().unwrap_or_default();
    let existing = status.conditions.clone();
    status.conditions = merge_conditions(
        &existing,
        vec![
            condition(types::READY, false, reason, message, generation),
            condition(
                types::RECONCILING,
                false,
                reason,
                "waiting for a valid spec",
                generation,
            ),
            condition(types::DEGRADED, true, reason, message, generation),
        ],
    );
    status.observed_generation = generation;
    status.selector = Some(names.selector_string());
    status
}

/// `status` with what the act stage found: the claims' size, why a roll waits, the
/// controller quorum after the voter step.
pub fn with_outcome(
    mut status: ClusterStatus,
    cluster: &Cluster,
    sizing: Option<Sizing>,
    roll_waits: Option<&str>,
    quorum: Option<QuorumStatus>,
) -> ClusterStatus {
    if let Some(sizing) = sizing {
        status.conditions = merge_conditions(
            &cluster
                .status
                .as_ref()
                .map(|s| s.conditions.clone())
                .unwrap_or_default(),
            status
                .conditions
                .drain(..)
                .chain(std::iter::once(condition(
                    STORAGE_RESIZED,
                    sizing.at_size,
                    sizing.reason,
                    sizing.message,
                    cluster.metadata.generation,
                )))
                .collect(),
        );
    }
    if let Some(message) = roll_waits {
        for condition in status
            .conditions
            .iter_mut()
            .filter(|c| c.reason == "Rolling")
        {
            message.clone_into(&mut condition.message);
        }
    }
    if let Some(quorum) = quorum {
        status.quorum = Some(quorum);
    }
    status
}

/// `status` with the feature step's report: the finalized and pending levels and the
/// `FeaturesFinalized` condition.
pub fn with_features(
    mut status: ClusterStatus,
    cluster: &Cluster,
    report: FeatureReport,
) -> ClusterStatus {
    if let Some(finalized) = report.finalized {
        status.finalized_features = finalized;
    }
    status.pending_features = report.pending;
    let existing = cluster
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    status.conditions = merge_conditions(
        &existing,
        status
            .conditions
            .drain(..)
            .chain(std::iter::once(condition(
                types::FEATURES_FINALIZED,
                report.done,
                report.reason,
                report.message,
                cluster.metadata.generation,
            )))
            .collect(),
    );
    status
}

/// The JSON merge patch (RFC 7386) that turns the status `before` into `after`: `after`
/// with null for every field of `before` it no longer has. A merge patch keeps what it does
/// not name, so a feature gone from `pendingFeatures` or an optional field that went would
/// otherwise stay.
pub fn merge_patch(before: Option<&ClusterStatus>, after: &ClusterStatus) -> serde_json::Value {
    let after = serde_json::json!(after);
    match before {
        Some(before) => with_removals(&serde_json::json!(before), after),
        None => after,
    }
}

fn with_removals(before: &serde_json::Value, after: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (before, after) {
        (Value::Object(before), Value::Object(mut after)) => {
            for (key, old) in before {
                let new = after
                    .remove(key)
                    .map_or(Value::Null, |new| with_removals(old, new));
                after.insert(key.clone(), new);
            }
            Value::Object(after)
        }
        // Arrays (conditions, brokers) and values are replaced whole.
        (_, after) => after,
    }
}

/// Whether nothing is in progress: a Ready cluster with no scale, no claim below its size,
/// no voter change and no feature level waiting to be finalized.
///
/// A scale or a claim expansion in progress is looked at again soon even when every broker
/// is ready: the leaving pods' disappearance and the claims' growth change nothing this
/// controller watches. Claims waiting for a StorageClass that allows expanding them are
/// looked at again soon too (nothing here watches StorageClasses).
pub fn is_idle(status: &ClusterStatus) -> bool {
    let resizing = status
        .conditions
        .iter()
        .any(|c| c.type_ == STORAGE_RESIZED && c.status != "True");
    let changing_voters = status.quorum.as_ref().is_some_and(|q| q.message.is_some());
    // Levels waiting to be finalized are looked at again soon; a refusal waits for the
    // periodic check (or a change of the spec) instead of asking the controller every time.
    let finalizing = status.conditions.iter().any(|c| {
        c.type_ == types::FEATURES_FINALIZED
            && c.status != "True"
            && c.reason != super::upgrade::reasons::REFUSED
    });
    is_ready(status) && status.scaling.is_none() && !resizing && !changing_voters && !finalizing
}

/// Whether a status says Ready.
pub fn is_ready(status: &ClusterStatus) -> bool {
    crate::crd::condition_is_true(&status.conditions, types::READY)
}
