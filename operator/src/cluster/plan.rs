//! The plan stage of the Cluster pipeline: one pure decision, made once from the spec and
//! the observation, of everything the act stage does.
//!
//! ```text
//!   spec + Validated ─┐
//!                     ├─▶ Plan { desired objects (at the brokers the scale keeps),
//!   Observation ──────┘          announcement, roll, change_voters, scaling,
//!                                feature levels to finalize }
//! ```

use k8s_openapi::api::apps::v1::StatefulSet;

use super::build::{self, BuildSettings, Desired, Validated};
use super::observe::Observation;
use super::scale;
use super::status::{self, Observed};
use super::upgrade::{self, FeatureView, Finalize};
use crate::crd::Cluster;

/// What the act and status stages do, decided before either starts.
#[derive(Debug)]
pub struct Plan {
    /// Every owned object, built once for the brokers the StatefulSet keeps.
    pub desired: Desired,
    /// The Event telling that the StatefulSet was created or resized, once it was applied.
    pub announcement: Option<(&'static str, &'static str, String)>,
    /// A broker restart for a new configuration.
    pub roll: Roll,
    /// Whether the controller voters may change (a settled cluster).
    pub change_voters: bool,
    /// The scale's step: the brokers kept, its status and the Event told once that status
    /// is written.
    pub scaling: scale::Outcome,
    /// The StatefulSet, its pods and their nodes, for the status.
    pub brokers: Observed,
    /// The feature levels to finalize, once every broker runs the release asked for.
    pub features: FeatureStep,
}

/// The feature step of one reconcile.
#[derive(Debug)]
pub struct FeatureStep {
    pub finalize: Finalize,
    /// The brokers' levels, when they were heard.
    pub view: Option<FeatureView>,
    /// Where the brokers are reached (UpdateFeatures goes to any of them).
    pub addresses: Vec<String>,
}

/// The roll decision of one reconcile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roll {
    /// Every broker runs the current configuration, or not every broker is ready.
    Nothing,
    /// Restart this pod now.
    Restart(String),
    /// A broker waits for a restart the roll gate holds back; the message says why.
    Waits(String),
}

/// The plan of one reconcile of `cluster`.
pub fn plan(
    cluster: &Cluster,
    validated: &Validated,
    settings: &BuildSettings,
    observation: Observation,
) -> Plan {
    let current = observation.current_replicas();
    let Observation {
        brokers,
        scaling,
        roll: roll_check,
        features: read,
    } = observation;
    let replicas = cluster.spec.replicas;
    // The leaving brokers of a scale-in keep their config files and Services while they
    // drain.
    let mut desired = build::objects(cluster, validated, settings, scaling.keep);
    keep_claim_size(&mut desired.stateful_set, brokers.stateful_set.as_ref());
    let announcement = match current {
        None => Some(("Created", "Create", format!("Created {replicas} brokers"))),
        Some(before) if before != scaling.keep => Some((
            "Scaled",
            "Scale",
            format!(
                "Scaling the StatefulSet from {before} to {} brokers",
                scaling.keep
            ),
        )),
        Some(_) => None,
    };
    let active_pod = roll_check
        .as_ref()
        .and_then(|check| check.active_controller_pod.as_deref());
    let target = upgrade::target_version(&cluster.spec, settings);
    let roll = match (
        roll_check.as_ref(),
        status::pod_to_roll(&brokers, replicas, active_pod),
    ) {
        (Some(check), Some(pod)) => match (
            offline_upgrade(&brokers, &pod, target.as_deref()),
            check.gate.reason(),
        ) {
            (Some(reason), _) | (None, Some(reason)) => {
                Roll::Waits(format!("restart of {pod} waits: {reason}"))
            }
            (None, None) => Roll::Restart(pod),
        },
        _ => Roll::Nothing,
    };
    // The voters change only on a settled cluster: every broker ready, no scale, no roll.
    let change_voters = !matches!(roll, Roll::Waits(_))
        && scaling.status.is_none()
        && scaling.keep == replicas
        && brokers.pods.len() == usize::try_from(replicas).unwrap_or(0)
        && brokers.pods.iter().all(status::is_pod_ready)
        && status::pod_to_roll(&brokers, replicas, None).is_none();
    let finalize = upgrade::decide(
        cluster,
        settings,
        &brokers,
        scaling.status.is_some() || scaling.keep != replicas,
        read.as_ref().map(|r| &r.view),
    );
    let features = match read {
        Some(read) => FeatureStep {
            finalize,
            view: read.view.ok(),
            addresses: read.addresses,
        },
        None => FeatureStep {
            finalize,
            view: None,
            addresses: Vec::new(),
        },
    };
    Plan {
        desired,
        announcement,
        roll,
        change_voters,
        scaling,
        brokers,
        features,
    }
}

/// Why `pod` may not restart alone on the `target` release, when its own release and that
/// one cannot run side by side.
fn offline_upgrade(brokers: &Observed, pod: &str, target: Option<&str>) -> Option<String> {
    let running = brokers
        .pods
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some(pod))
        .and_then(upgrade::pod_version)?;
    upgrade::offline_upgrade(&running, target?)
}

/// A StatefulSet's claim templates cannot change: an existing one keeps the size it was
/// created with, and a larger `spec.storage.size` expands the claims themselves
/// ([`super::storage`]).
fn keep_claim_size(desired: &mut StatefulSet, existing: Option<&StatefulSet>) {
    let size_of = |set: &StatefulSet| {
        set.spec
            .as_ref()?
            .volume_claim_templates
            .as_ref()?
            .first()?
            .spec
            .as_ref()?
            .resources
            .as_ref()?
            .requests
            .as_ref()?
            .get("storage")
            .cloned()
    };
    let Some(size) = existing.and_then(size_of) else {
        return;
    };
    if let Some(requests) = desired
        .spec
        .as_mut()
        .and_then(|s| s.volume_claim_templates.as_mut())
        .and_then(|t| t.first_mut())
        .and_then(|c| c.spec.as_mut())
        .and_then(|s| s.resources.as_mut())
        .and_then(|r| r.requests.as_mut())
    {
        requests.insert("storage".to_string(), size);
    }
}

#[cfg(test)]
mod tests;
