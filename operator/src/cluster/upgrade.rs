//! Upgrades: the release a Cluster runs (`spec.version`), the broker image it names, and
//! the feature levels (KIP-584) the operator finalizes once every broker runs it. Pure, like
//! `plan.rs`; observe reads the brokers' levels and act sends what is decided here.
//!
//! ```text
//!   spec.version ─▶ image repository:version ─▶ StatefulSet template ─▶ roll (the gate)
//!   every broker on the release and ready ─▶ each one's ApiVersions (observe)
//!     ─▶ target levels (pure: pinned, else the highest every broker supports)
//!     ─▶ UpdateFeatures for what differs (act) ─▶ finalizedFeatures, pendingFeatures,
//!        FeaturesFinalized (status)
//! ```
//!
//! A level only goes up unless `spec.features` pins it lower (then a safe downgrade is
//! asked for, and the controller refuses one that would lose metadata). A `spec.version`
//! whose release cannot run a finalized level is refused before anything rolls
//! ([`downgrade_refusal`]): its brokers would refuse to start.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;

use super::settings::BuildSettings;
use super::status::{self, Observed};
use crate::admin::{FeatureUpdate, SupportedFeatures, UpgradeType};
use crate::crd::{Cluster, ClusterSpec};

/// Pod label holding the release a broker runs (the Kubernetes recommended label). Set
/// only when `spec.version` is, so a Cluster without one does not roll for it.
pub const VERSION_LABEL: &str = "app.kubernetes.io/version";

/// A release this operator knows: the newest level of every feature its brokers run (what
/// they list as `supported_features` in ApiVersions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    pub version: &'static str,
    pub max_levels: &'static [(&'static str, i16)],
    /// The generation of the node-to-node protocol: nodes of two releases of different
    /// generations cannot talk, so one cannot roll onto the other.
    pub protocol: u16,
}

impl Release {
    /// The newest level of `feature` this release runs (0: it does not know the feature).
    pub fn max_level(&self, feature: &str) -> i16 {
        self.max_levels
            .iter()
            .find(|(name, _)| *name == feature)
            .map_or(0, |(_, level)| *level)
    }
}

/// Every release this operator knows, oldest first. Each release adds its line (the levels
/// its brokers list in ApiVersions): `tests/feature_levels.rs` fails when the line of this
/// crate's version is missing or differs from what a broker of this tree supports. A
/// `spec.version` not listed (a newer release, a private build) is not checked here; its
/// brokers still refuse to start below a finalized level they cannot run.
pub const RELEASES: &[Release] = &[
    Release {
        // The first release with feature levels (metadata.version 25 is Kafka's 4.0-IV3).
        version: "0.1.0",
        max_levels: &[
            ("group.version", 1),
            ("kraft.version", 1),
            ("metadata.version", 25),
            ("transaction.version", 2),
        ],
        // Unversioned JSON between nodes.
        protocol: 1,
    },
    Release {
        // The versioned node protocol: the first release a later one rolls onto.
        version: "0.2.0",
        max_levels: &[
            ("group.version", 1),
            ("kraft.version", 1),
            ("metadata.version", 25),
            ("transaction.version", 2),
        ],
        protocol: 2,
    },
    Release {
        // Rolls onto 0.2.0 (the upgrade suites run the two side by side).
        version: "0.3.0",
        max_levels: &[
            ("group.version", 1),
            ("kraft.version", 1),
            ("metadata.version", 25),
            ("transaction.version", 2),
        ],
        protocol: 2,
    },
];

/// The release named `version`, when this operator knows it.
pub fn release(version: &str) -> Option<&'static Release> {
    RELEASES.iter().find(|r| r.version == version)
}

/// The broker image of a Cluster: `spec.image`; else the operator's broker image
/// repository tagged with `spec.version`; else the operator's broker image.
pub fn broker_image(spec: &ClusterSpec, settings: &BuildSettings) -> String {
    match (&spec.image, &spec.version) {
        (Some(image), _) => image.clone(),
        (None, Some(version)) => format!("{}:{version}", image_repository(&settings.broker_image)),
        (None, None) => settings.broker_image.clone(),
    }
}

/// `image` without its tag or digest: `registry:5000/oxbow:0.1.0` → `registry:5000/oxbow`.
pub fn image_repository(image: &str) -> &str {
    let image = image.split_once('@').map_or(image, |(name, _)| name);
    match image.rsplit_once(':') {
        // A colon before the last slash is a registry's port, not a tag.
        Some((name, tag)) if !tag.contains('/') => name,
        _ => image,
    }
}

/// The tag of `image`, if it has one (not a digest).
pub fn image_tag(image: &str) -> Option<&str> {
    if image.contains('@') {
        return None;
    }
    let tag = image.rsplit_once(':')?.1;
    (!tag.contains('/') && !tag.is_empty()).then_some(tag)
}

/// The release a Cluster asks for: `spec.version`, else the tag of its broker image.
pub fn target_version(spec: &ClusterSpec, settings: &BuildSettings) -> Option<String> {
    spec.version
        .clone()
        .or_else(|| image_tag(&broker_image(spec, settings)).map(str::to_string))
}

/// The release a broker pod runs: its [`VERSION_LABEL`], else the tag of its broker image.
pub fn pod_version(pod: &Pod) -> Option<String> {
    if let Some(version) = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(VERSION_LABEL))
    {
        return Some(version.clone());
    }
    let image = pod
        .spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == "broker")?
        .image
        .as_deref()?;
    image_tag(image).map(str::to_string)
}

/// Why a broker of release `from` cannot be restarted alone on release `to`, if it cannot:
/// their nodes speak different protocols, so the upgrade is offline (every broker at once).
/// Releases this operator does not know are left to the brokers.
pub fn offline_upgrade(from: &str, to: &str) -> Option<String> {
    let (old, new) = (release(from)?, release(to)?);
    (old.protocol != new.protocol).then(|| {
        format!(
            "release {from} cannot roll to {to} one broker at a time (their nodes speak different protocols); upgrade offline: delete every broker pod at once and they start together on {to}"
        )
    })
}

/// Why `spec.version` cannot be rolled to, if it cannot: the first finalized level (of
/// `finalized`, the levels in the status) its release does not run, in one sentence.
pub fn downgrade_refusal(cluster: &Cluster) -> Option<String> {
    let version = cluster.spec.version.as_deref()?;
    let release = release(version)?;
    let finalized = &cluster.status.as_ref()?.finalized_features;
    finalized.iter().find_map(|(feature, &level)| {
        let max = release.max_level(feature);
        (level > max).then(|| {
            if max == 0 {
                format!(
                    "release {version} does not support {feature}, which the cluster finalized at {level}: its brokers could not start, so nothing is rolled (keep spec.version at a release that runs the finalized levels)"
                )
            } else {
                format!(
                    "release {version} runs {feature} up to {max}, but the cluster finalized {level}: its brokers could not start, so nothing is rolled (keep spec.version at a release that runs the finalized levels)"
                )
            }
        })
    })
}

/// What the brokers say about feature levels: each one's supported ranges (by broker id)
/// and the cluster's finalized levels (from the answer with the highest epoch).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeatureView {
    pub brokers: BTreeMap<i32, SupportedFeatures>,
    /// Finalized levels; a feature left out is at 0.
    pub finalized: BTreeMap<String, i16>,
    /// The operator reaches the brokers through one address (`--bootstrap-override`) and
    /// heard the one broker behind it, which stands for all of them (the controller still
    /// checks every registered broker's support before it finalizes a level).
    pub one_for_all: bool,
}

impl FeatureView {
    fn finalized_level(&self, feature: &str) -> i16 {
        self.finalized.get(feature).copied().unwrap_or(0)
    }

    /// The finalized levels with every feature a broker supports (0: not finalized), as the
    /// status shows them.
    pub fn finalized_levels(&self) -> BTreeMap<String, i16> {
        self.brokers
            .values()
            .flat_map(|supported| supported.keys())
            .chain(self.finalized.keys())
            .map(|feature| (feature.clone(), self.finalized_level(feature)))
            .collect()
    }
}

/// The level each feature should be finalized at: the pinned level when `pins` holds one,
/// else the highest level every broker supports (a broker that does not list a feature
/// supports none of it), never below the finalized level (the operator only upgrades on
/// its own). Features no broker lists and nothing pins keep their finalized level.
pub fn targets(view: &FeatureView, pins: &BTreeMap<String, i16>) -> BTreeMap<String, i16> {
    let names: BTreeSet<&String> = view
        .brokers
        .values()
        .flat_map(|supported| supported.keys())
        .chain(view.finalized.keys())
        .chain(pins.keys())
        .collect();
    names
        .into_iter()
        .map(|feature| {
            let finalized = view.finalized_level(feature);
            let level = match pins.get(feature) {
                Some(pinned) => *pinned,
                None => view
                    .brokers
                    .values()
                    .map(|supported| supported.get(feature).map_or(0, |(_, max)| *max))
                    .min()
                    .unwrap_or(0)
                    .max(finalized),
            };
            (feature.clone(), level)
        })
        .collect()
}

/// The UpdateFeatures requests that bring the finalized levels to `targets`: an upgrade
/// where the target is higher, a safe downgrade where a pin is lower. Empty when every
/// feature is at its target, so asking again changes nothing.
pub fn updates(view: &FeatureView, targets: &BTreeMap<String, i16>) -> Vec<FeatureUpdate> {
    targets
        .iter()
        .filter_map(|(feature, &level)| {
            let finalized = view.finalized_level(feature);
            (level != finalized).then(|| FeatureUpdate {
                feature: feature.clone(),
                level,
                upgrade_type: if level > finalized {
                    UpgradeType::Upgrade
                } else {
                    UpgradeType::SafeDowngrade
                },
            })
        })
        .collect()
}

/// What the operator does about feature levels in one reconcile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finalize {
    /// Nothing yet: the message says what it waits for.
    Waits(String),
    /// Every feature is at its target level.
    Done,
    /// Finalize these (all or none).
    Update(Vec<FeatureUpdate>),
}

/// Decides the feature step of one reconcile of `cluster`, from the brokers' pods and the
/// levels they reported (`view`: `None` when they were not asked, an error when they could
/// not be), while no scale runs (`scaling`). Levels are finalized only when every broker
/// exists, is ready, runs the configuration and the release asked for, and answered.
pub fn decide(
    cluster: &Cluster,
    settings: &BuildSettings,
    observed: &Observed,
    scaling: bool,
    view: Option<&Result<FeatureView, String>>,
) -> Finalize {
    if let Some(waits) = waits_for(cluster, settings, observed, scaling) {
        return Finalize::Waits(waits);
    }
    let view = match view {
        None => return Finalize::Waits("the brokers' feature levels were not read".into()),
        Some(Err(error)) => return Finalize::Waits(format!("cannot read feature levels: {error}")),
        Some(Ok(view)) => view,
    };
    let missing: Vec<String> = (0..cluster.spec.replicas)
        .filter(|id| !view.brokers.contains_key(id))
        .map(|id| id.to_string())
        .collect();
    if !view.one_for_all && !missing.is_empty() {
        return Finalize::Waits(format!(
            "broker(s) {} did not report their feature levels",
            missing.join(", ")
        ));
    }
    let wanted = updates(view, &targets(view, &cluster.spec.features));
    if wanted.is_empty() {
        Finalize::Done
    } else {
        Finalize::Update(wanted)
    }
}

/// What keeps the operator from finalizing now, in a sentence; `None` when nothing does.
fn waits_for(
    cluster: &Cluster,
    settings: &BuildSettings,
    observed: &Observed,
    scaling: bool,
) -> Option<String> {
    let replicas = cluster.spec.replicas;
    if scaling {
        return Some("a scale is in progress".into());
    }
    let live: Vec<&Pod> = observed
        .pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let ready = live.iter().filter(|p| status::is_pod_ready(p)).count();
    if usize::try_from(replicas).ok() != Some(ready) || live.len() != observed.pods.len() {
        return Some(format!("{ready} of {replicas} brokers are ready"));
    }
    let outdated = live
        .iter()
        .filter(|p| status::is_outdated(observed, p))
        .count();
    if outdated > 0 {
        return Some(format!("{outdated} broker(s) wait for a restart"));
    }
    let target = target_version(&cluster.spec, settings)?;
    let behind: Vec<String> = live
        .iter()
        .filter(|p| pod_version(p).as_deref() != Some(target.as_str()))
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    (!behind.is_empty()).then(|| format!("{} do not run release {target} yet", behind.join(", ")))
}

/// The levels the operator will finalize and has not: once every broker runs the release,
/// what the brokers support; before that, what the release is known to run ([`RELEASES`])
/// when the operator knows it, else what the brokers support now.
pub fn pending(
    cluster: &Cluster,
    settings: &BuildSettings,
    view: &FeatureView,
    finalize: &Finalize,
) -> BTreeMap<String, i16> {
    let known = target_version(&cluster.spec, settings)
        .as_deref()
        .and_then(release);
    let expected = match (finalize, known) {
        (Finalize::Waits(_), Some(release)) => FeatureView {
            brokers: BTreeMap::from([(
                0,
                release
                    .max_levels
                    .iter()
                    .map(|(name, max)| (name.to_string(), (0, *max)))
                    .collect(),
            )]),
            ..view.clone()
        },
        _ => view.clone(),
    };
    updates(&expected, &targets(&expected, &cluster.spec.features))
        .into_iter()
        .map(|update| (update.feature, update.level))
        .collect()
}

/// What the act stage did about feature levels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finalized {
    /// Nothing was asked (the plan waited, or every level was at its target).
    Nothing,
    /// The brokers finalized these.
    Updated(Vec<FeatureUpdate>),
    /// The controller refused them; its reason.
    Refused(String),
    /// The request could not be made or answered.
    Failed(String),
}

/// Condition reasons of [`crate::crd::types::FEATURES_FINALIZED`].
pub mod reasons {
    pub const FINALIZED: &str = "Finalized";
    pub const WAITING: &str = "WaitingForBrokers";
    pub const REFUSED: &str = "UpdateFeaturesRefused";
    pub const FAILED: &str = "UpdateFeaturesFailed";
    /// The Degraded reason of a `spec.version` below the finalized levels.
    pub const DOWNGRADE: &str = "DowngradeBelowFinalizedFeatures";
}

/// What the status shows about feature levels after one reconcile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureReport {
    /// The finalized levels; `None` when the brokers were not heard (the status keeps what
    /// it had).
    pub finalized: Option<BTreeMap<String, i16>>,
    /// The levels still to finalize.
    pub pending: BTreeMap<String, i16>,
    /// The `FeaturesFinalized` condition.
    pub done: bool,
    pub reason: &'static str,
    pub message: String,
}

/// The status of the feature step: the brokers' `view` (when they were heard), what the
/// plan decided and what acting on it did. While the brokers are not heard (one
/// restarting) the pending levels of the status (`cluster.status`) are kept.
pub fn report(
    cluster: &Cluster,
    settings: &BuildSettings,
    view: Option<&FeatureView>,
    finalize: &Finalize,
    acted: &Finalized,
) -> FeatureReport {
    let before = cluster.status.clone().unwrap_or_default();
    let finalized = view.map(FeatureView::finalized_levels);
    let pending = view.map_or_else(
        || before.pending_features.clone(),
        |view| pending(cluster, settings, view, finalize),
    );
    // Levels never heard (a new Cluster whose brokers are starting) are not at any target.
    let unheard = view.is_none() && before.finalized_features.is_empty();
    let pending_levels = levels(pending.iter().map(|(f, l)| (f.as_str(), *l)));
    let at_targets = || {
        format!(
            "every feature is at its target level{}",
            finalized
                .as_ref()
                .map(|f| format!(": {}", levels(f.iter().map(|(f, l)| (f.as_str(), *l)))))
                .unwrap_or_default()
        )
    };
    let (done, reason, message) = match (finalize, acted) {
        (Finalize::Waits(why), _) if unheard => (
            false,
            reasons::WAITING,
            format!("the brokers have not reported their feature levels yet: {why}"),
        ),
        (Finalize::Waits(_) | Finalize::Done, _) if pending.is_empty() => {
            (true, reasons::FINALIZED, at_targets())
        }
        (Finalize::Waits(why), _) => (
            false,
            reasons::WAITING,
            format!("finalizing {pending_levels} waits: {why}"),
        ),
        (Finalize::Done, _) => (true, reasons::FINALIZED, at_targets()),
        (Finalize::Update(_), Finalized::Updated(done)) => {
            let mut now = finalized.clone().unwrap_or_default();
            now.extend(done.iter().map(|u| (u.feature.clone(), u.level)));
            // The message the next reconcile writes too (the Event told what changed).
            return FeatureReport {
                message: format!(
                    "every feature is at its target level: {}",
                    levels(now.iter().map(|(f, l)| (f.as_str(), *l)))
                ),
                finalized: Some(now),
                pending: BTreeMap::new(),
                done: true,
                reason: reasons::FINALIZED,
            };
        }
        (Finalize::Update(_), Finalized::Refused(why)) => (
            false,
            reasons::REFUSED,
            format!("the brokers refused to finalize {pending_levels}: {why}"),
        ),
        (Finalize::Update(_), Finalized::Failed(why)) => (
            false,
            reasons::FAILED,
            format!("cannot finalize {pending_levels}: {why}"),
        ),
        (Finalize::Update(_), Finalized::Nothing) => (
            false,
            reasons::FAILED,
            format!("{pending_levels} not finalized"),
        ),
    };
    FeatureReport {
        finalized,
        pending,
        done,
        reason,
        message,
    }
}

/// `feature level, ...` for messages.
pub fn levels<'a>(levels: impl Iterator<Item = (&'a str, i16)>) -> String {
    let shown: Vec<String> = levels.map(|(f, l)| format!("{f} {l}")).collect();
    if shown.is_empty() {
        "none".to_string()
    } else {
        shown.join(", ")
    }
}

#[cfg(test)]
mod tests;
