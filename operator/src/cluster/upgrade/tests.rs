use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{Container, Pod, PodCondition, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::cluster::build;
use crate::cluster::tests::{cluster, settings};
use crate::crd::ClusterStatus;

fn supported(levels: &[(&str, i16, i16)]) -> SupportedFeatures {
    levels
        .iter()
        .map(|(name, min, max)| (name.to_string(), (*min, *max)))
        .collect()
}

fn levels(levels: &[(&str, i16)]) -> BTreeMap<String, i16> {
    levels.iter().map(|(n, l)| (n.to_string(), *l)).collect()
}

/// What this release's brokers support.
fn this_release() -> SupportedFeatures {
    supported(&[
        ("metadata.version", 7, 25),
        ("kraft.version", 0, 1),
        ("transaction.version", 0, 2),
        ("group.version", 0, 1),
    ])
}

/// A cluster finalized as a release before this one left it: older metadata, transactions
/// and groups at their first levels.
fn before_upgrade() -> BTreeMap<String, i16> {
    levels(&[
        ("metadata.version", 21),
        ("kraft.version", 1),
        ("transaction.version", 0),
    ])
}

fn view(brokers: &[SupportedFeatures], finalized: BTreeMap<String, i16>) -> FeatureView {
    FeatureView {
        brokers: (0..).zip(brokers.iter().cloned()).collect(),
        finalized,
        one_for_all: false,
    }
}

fn update(feature: &str, level: i16, upgrade_type: UpgradeType) -> FeatureUpdate {
    FeatureUpdate {
        feature: feature.into(),
        level,
        upgrade_type,
    }
}

#[test]
fn every_feature_goes_to_the_highest_level_every_broker_supports() {
    let view = view(&[this_release(), this_release()], before_upgrade());
    let targets = targets(&view, &BTreeMap::new());
    assert_eq!(
        targets,
        levels(&[
            ("group.version", 1),
            ("kraft.version", 1),
            ("metadata.version", 25),
            ("transaction.version", 2),
        ])
    );
    // Not only metadata.version: every feature below its target is upgraded.
    assert_eq!(
        updates(&view, &targets),
        vec![
            update("group.version", 1, UpgradeType::Upgrade),
            update("metadata.version", 25, UpgradeType::Upgrade),
            update("transaction.version", 2, UpgradeType::Upgrade),
        ]
    );
}

#[test]
fn the_broker_that_supports_least_holds_a_feature_back() {
    let older = supported(&[
        ("metadata.version", 7, 22),
        ("kraft.version", 0, 1),
        ("transaction.version", 0, 1),
    ]);
    let view = view(&[this_release(), older, this_release()], before_upgrade());
    let targets = targets(&view, &BTreeMap::new());
    // metadata.version: the minimum over the brokers of their maximum.
    assert_eq!(targets["metadata.version"], 22);
    assert_eq!(targets["transaction.version"], 1);
    // A broker that does not list group.version supports none of it.
    assert_eq!(targets["group.version"], 0);
    assert_eq!(
        updates(&view, &targets),
        vec![
            update("metadata.version", 22, UpgradeType::Upgrade),
            update("transaction.version", 1, UpgradeType::Upgrade),
        ]
    );
}

#[test]
fn the_operator_never_lowers_a_level_on_its_own() {
    // A broker's answer without a feature (an ApiVersions version that leaves out the
    // features starting at 0) must not turn into a downgrade.
    let partial = supported(&[("metadata.version", 7, 25)]);
    let finalized = levels(&[
        ("metadata.version", 25),
        ("kraft.version", 1),
        ("group.version", 1),
    ]);
    let view = view(&[partial], finalized);
    assert!(updates(&view, &targets(&view, &BTreeMap::new())).is_empty());
}

#[test]
fn a_pinned_level_is_held_and_a_lower_one_is_a_safe_downgrade() {
    let finalized = levels(&[
        ("metadata.version", 25),
        ("kraft.version", 1),
        ("transaction.version", 2),
        ("group.version", 1),
    ]);
    let view = view(&[this_release()], finalized);
    let pins = levels(&[("group.version", 0), ("metadata.version", 25)]);
    let targets = targets(&view, &pins);
    assert_eq!(targets["group.version"], 0);
    assert_eq!(
        updates(&view, &targets),
        vec![update("group.version", 0, UpgradeType::SafeDowngrade)]
    );
    // A pin above what the brokers support is asked for as it is: the controller refuses
    // it with its reason, which the status shows.
    let pins = levels(&[("transaction.version", 3)]);
    assert_eq!(
        updates(&view, &super::targets(&view, &pins)),
        vec![update("transaction.version", 3, UpgradeType::Upgrade)]
    );
    // A pin of a feature no broker knows too.
    let pins = levels(&[("share.version", 1)]);
    assert_eq!(
        updates(&view, &super::targets(&view, &pins)),
        vec![update("share.version", 1, UpgradeType::Upgrade)]
    );
}

#[test]
fn once_finalized_nothing_more_is_asked() {
    let first = view(&[this_release(), this_release()], before_upgrade());
    let done = updates(&first, &targets(&first, &BTreeMap::new()));
    let mut finalized = before_upgrade();
    finalized.extend(done.iter().map(|u| (u.feature.clone(), u.level)));
    let after = view(&[this_release(), this_release()], finalized);
    assert!(updates(&after, &targets(&after, &BTreeMap::new())).is_empty());
    // The same with pins.
    let pins = levels(&[("group.version", 0)]);
    let mut pinned = after.finalized.clone();
    pinned.insert("group.version".into(), 0);
    let pinned = view(&[this_release()], pinned);
    assert!(updates(&pinned, &targets(&pinned, &pins)).is_empty());
}

#[test]
fn the_status_lists_every_supported_feature_with_zero_for_the_unfinalized() {
    let view = view(&[this_release()], levels(&[("metadata.version", 25)]));
    assert_eq!(
        view.finalized_levels(),
        levels(&[
            ("group.version", 0),
            ("kraft.version", 0),
            ("metadata.version", 25),
            ("transaction.version", 0),
        ])
    );
}

// --- the release and its image ---------------------------------------------------------

#[test]
fn the_image_comes_from_the_version_unless_the_spec_names_one() {
    let settings = BuildSettings {
        broker_image: "registry.example.com:5000/team/oxbow:0.1.0".into(),
        ..settings()
    };
    let spec = |yaml| cluster(yaml).spec;
    assert_eq!(
        broker_image(&spec("replicas: 1"), &settings),
        settings.broker_image,
        "neither: the operator's image, as before"
    );
    assert_eq!(
        broker_image(&spec("replicas: 1\nversion: 0.2.0"), &settings),
        "registry.example.com:5000/team/oxbow:0.2.0"
    );
    assert_eq!(
        broker_image(
            &spec("replicas: 1\nversion: 0.2.0\nimage: mine/oxbow:dev"),
            &settings
        ),
        "mine/oxbow:dev"
    );
    assert_eq!(image_repository("oxbow@sha256:abc"), "oxbow");
    assert_eq!(
        image_repository("localhost:5000/oxbow"),
        "localhost:5000/oxbow"
    );
    assert_eq!(image_tag("localhost:5000/oxbow"), None);
    assert_eq!(image_tag("oxbow@sha256:abc"), None);
    assert_eq!(image_tag("ghcr.io/oxbow-dev/oxbow:0.1.0"), Some("0.1.0"));
    assert_eq!(
        target_version(&spec("replicas: 1\nimage: mine/oxbow:dev"), &settings).as_deref(),
        Some("dev")
    );
    assert_eq!(
        target_version(
            &spec("replicas: 1\nversion: 0.2.0\nimage: mine/oxbow:dev"),
            &settings
        )
        .as_deref(),
        Some("0.2.0")
    );
}

#[test]
fn a_version_labels_the_pods_and_changes_the_template() {
    let before = build::build(&cluster("replicas: 3"), &settings()).unwrap();
    let template =
        |desired: &build::Desired| desired.stateful_set.spec.as_ref().unwrap().template.clone();
    // No version: no label (a Cluster of an earlier operator does not roll for one).
    let labels = template(&before).metadata.unwrap().labels.unwrap();
    assert!(!labels.contains_key(VERSION_LABEL));
    let pinned = build::build(&cluster("replicas: 3\nversion: 0.1.0"), &settings()).unwrap();
    let next = build::build(&cluster("replicas: 3\nversion: 0.2.0"), &settings()).unwrap();
    let pod = template(&next);
    assert_eq!(
        pod.metadata.unwrap().labels.unwrap()[VERSION_LABEL],
        "0.2.0"
    );
    assert_eq!(
        pod.spec.unwrap().containers[0].image.as_deref(),
        Some("oxbow:0.2.0")
    );
    // A version change is a change of the pod template: the StatefulSet gets a new
    // revision, and the existing roll restarts the brokers one at a time.
    assert_ne!(template(&pinned), template(&next));
}

fn downgrade_of(version: &str, finalized: &[(&str, i16)]) -> Option<String> {
    let mut cluster = cluster(&format!("replicas: 3\nversion: {version}"));
    cluster.status = Some(ClusterStatus {
        finalized_features: levels(finalized),
        ..ClusterStatus::default()
    });
    downgrade_refusal(&cluster)
}

#[test]
fn a_release_below_the_finalized_levels_is_refused_naming_the_level() {
    let refusal =
        downgrade_of("0.1.0", &[("metadata.version", 26), ("kraft.version", 1)]).expect("refused");
    assert!(
        refusal
            .contains("release 0.1.0 runs metadata.version up to 25, but the cluster finalized 26"),
        "{refusal}"
    );
    let refusal = downgrade_of("0.1.0", &[("share.version", 1)]).expect("refused");
    assert!(
        refusal.contains("does not support share.version, which the cluster finalized at 1"),
        "{refusal}"
    );
    // At or below what the release runs: rolled.
    assert_eq!(
        downgrade_of(
            "0.1.0",
            &[
                ("metadata.version", 25),
                ("transaction.version", 2),
                ("group.version", 0)
            ]
        ),
        None
    );
    // A release the operator does not know is not judged here (its brokers refuse to
    // start below a level they cannot run).
    assert_eq!(downgrade_of("9.9.9", &[("metadata.version", 99)]), None);
    // Nothing finalized yet, or no version: nothing to refuse.
    assert_eq!(
        downgrade_refusal(&cluster("replicas: 3\nversion: 0.1.0")),
        None
    );
    let mut unversioned = cluster("replicas: 3");
    unversioned.status = Some(ClusterStatus {
        finalized_features: levels(&[("metadata.version", 99)]),
        ..ClusterStatus::default()
    });
    assert_eq!(downgrade_refusal(&unversioned), None);
}

#[test]
fn a_refused_downgrade_fails_validation_so_nothing_is_applied() {
    let mut cluster = cluster("replicas: 3\nversion: 0.1.0");
    cluster.status = Some(ClusterStatus {
        finalized_features: levels(&[("metadata.version", 26)]),
        ..ClusterStatus::default()
    });
    let Err(build::BuildError::Downgrade(message)) = build::validate(&cluster) else {
        panic!("a downgrade must be refused at validation");
    };
    assert!(message.contains("metadata.version"), "{message}");
}

#[test]
fn this_crates_release_is_known() {
    assert!(
        release(env!("CARGO_PKG_VERSION")).is_some(),
        "add release {} to RELEASES (its brokers' newest feature levels)",
        env!("CARGO_PKG_VERSION")
    );
}

// --- when the operator finalizes -------------------------------------------------------

fn pod(ordinal: i32, revision: &str, version: &str, ready: bool) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("events-{ordinal}")),
            labels: Some(BTreeMap::from([
                ("controller-revision-hash".into(), revision.into()),
                (VERSION_LABEL.into(), version.into()),
            ])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "broker".into(),
                image: Some(format!("oxbow:{version}")),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        }),
    }
}

fn observed(pods: Vec<Pod>) -> Observed {
    Observed {
        stateful_set: Some(StatefulSet {
            status: Some(StatefulSetStatus {
                update_revision: Some("v2".into()),
                ..StatefulSetStatus::default()
            }),
            ..StatefulSet::default()
        }),
        pods,
        node_labels: BTreeMap::new(),
    }
}

fn every_broker_on(version: &str) -> Observed {
    observed((0..3).map(|i| pod(i, "v2", version, true)).collect())
}

fn heard(view: FeatureView) -> Option<Result<FeatureView, String>> {
    Some(Ok(view))
}

#[test]
fn levels_are_finalized_once_every_broker_runs_the_release() {
    let cluster = cluster("replicas: 3\nversion: 0.2.0");
    let three = view(
        &[this_release(), this_release(), this_release()],
        before_upgrade(),
    );
    let decide_with = |observed: &Observed, scaling| {
        decide(
            &cluster,
            &settings(),
            observed,
            scaling,
            heard(three.clone()).as_ref(),
        )
    };
    let Finalize::Update(asked) = decide_with(&every_broker_on("0.2.0"), false) else {
        panic!("every broker runs 0.2.0: finalize");
    };
    assert_eq!(asked.len(), 3, "{asked:?}");

    // Mid-roll: one broker still on the release before.
    let mut mixed = every_broker_on("0.2.0");
    mixed.pods[0] = pod(0, "v2", "0.1.0", true);
    let Finalize::Waits(why) = decide_with(&mixed, false) else {
        panic!("a broker on the previous release holds the levels back");
    };
    assert_eq!(why, "events-0 do not run release 0.2.0 yet");
    // Outdated, not ready, missing, scaling: all wait.
    let mut outdated = every_broker_on("0.2.0");
    outdated.pods[1] = pod(1, "v1", "0.2.0", true);
    assert!(matches!(decide_with(&outdated, false), Finalize::Waits(_)));
    let mut restarting = every_broker_on("0.2.0");
    restarting.pods[2] = pod(2, "v2", "0.2.0", false);
    assert!(matches!(
        decide_with(&restarting, false),
        Finalize::Waits(_)
    ));
    let mut missing = every_broker_on("0.2.0");
    missing.pods.pop();
    assert!(matches!(decide_with(&missing, false), Finalize::Waits(_)));
    assert!(matches!(
        decide_with(&every_broker_on("0.2.0"), true),
        Finalize::Waits(_)
    ));
    // A broker that did not answer: its support is unknown, so nothing is asked.
    let two = view(&[this_release(), this_release()], before_upgrade());
    let Finalize::Waits(why) = decide(
        &cluster,
        &settings(),
        &every_broker_on("0.2.0"),
        false,
        heard(two.clone()).as_ref(),
    ) else {
        panic!("broker 2 did not answer");
    };
    assert_eq!(why, "broker(s) 2 did not report their feature levels");
    // ... unless one address stands for all of them (an override).
    let one = FeatureView {
        one_for_all: true,
        ..view(&[this_release()], before_upgrade())
    };
    assert!(matches!(
        decide(
            &cluster,
            &settings(),
            &every_broker_on("0.2.0"),
            false,
            heard(one).as_ref()
        ),
        Finalize::Update(_)
    ));
    let unread = decide(
        &cluster,
        &settings(),
        &every_broker_on("0.2.0"),
        false,
        Some(&Err("connection refused".into())),
    );
    assert_eq!(
        unread,
        Finalize::Waits("cannot read feature levels: connection refused".into())
    );
}

#[test]
fn a_cluster_without_a_version_finalizes_once_its_roll_is_done() {
    // The release is the tag of the image every pod runs.
    let cluster = cluster("replicas: 3");
    let on_test = observed((0..3).map(|i| pod_without_label(i, "oxbow:test")).collect());
    let three = view(
        &[this_release(), this_release(), this_release()],
        before_upgrade(),
    );
    assert!(matches!(
        decide(
            &cluster,
            &settings(),
            &on_test,
            false,
            heard(three).as_ref()
        ),
        Finalize::Update(_)
    ));
}

fn pod_without_label(ordinal: i32, image: &str) -> Pod {
    let mut pod = pod(ordinal, "v2", "", true);
    if let Some(labels) = pod.metadata.labels.as_mut() {
        labels.remove(VERSION_LABEL);
    }
    if let Some(spec) = pod.spec.as_mut() {
        spec.containers[0].image = Some(image.into());
    }
    pod
}

#[test]
fn a_pods_release_is_its_label_else_its_image_tag() {
    assert_eq!(
        pod_version(&pod(0, "v2", "0.2.0", true)).as_deref(),
        Some("0.2.0")
    );
    assert_eq!(
        pod_version(&pod_without_label(0, "ghcr.io/oxbow-dev/oxbow:0.1.0")).as_deref(),
        Some("0.1.0")
    );
    assert_eq!(pod_version(&pod_without_label(0, "oxbow")), None);
}

// --- what the status says --------------------------------------------------------------

#[test]
fn the_report_tells_finalized_pending_and_refused() {
    let cluster = cluster("replicas: 3\nversion: 0.1.0");
    let view = view(
        &[this_release(), this_release(), this_release()],
        before_upgrade(),
    );
    let wanted = updates(&view, &targets(&view, &BTreeMap::new()));
    let finalize = Finalize::Update(wanted.clone());

    let done = report(
        &cluster,
        &settings(),
        Some(&view),
        &finalize,
        &Finalized::Updated(wanted.clone()),
    );
    assert!(done.done);
    assert_eq!(done.reason, reasons::FINALIZED);
    assert!(done.pending.is_empty());
    assert_eq!(
        done.finalized.as_ref().unwrap(),
        &levels(&[
            ("group.version", 1),
            ("kraft.version", 1),
            ("metadata.version", 25),
            ("transaction.version", 2),
        ])
    );
    // What the next reconcile, finding nothing to do, says too: the status does not change.
    assert_eq!(
        done.message,
        "every feature is at its target level: group.version 1, kraft.version 1, metadata.version 25, transaction.version 2"
    );
    let finalized = FeatureView {
        finalized: done.finalized.clone().unwrap(),
        ..view.clone()
    };
    let next = report(
        &cluster,
        &settings(),
        Some(&finalized),
        &Finalize::Done,
        &Finalized::Nothing,
    );
    assert_eq!(next, done);

    let refused = report(
        &cluster,
        &settings(),
        Some(&view),
        &finalize,
        &Finalized::Refused("Broker 2 only supports versions 0-1".into()),
    );
    assert!(!refused.done);
    assert_eq!(refused.reason, reasons::REFUSED);
    assert!(
        refused
            .message
            .ends_with(": Broker 2 only supports versions 0-1"),
        "{}",
        refused.message
    );
    assert_eq!(
        refused.pending,
        levels(&[
            ("group.version", 1),
            ("metadata.version", 25),
            ("transaction.version", 2),
        ])
    );
    // The levels as they are, not as asked.
    assert_eq!(refused.finalized.unwrap()["metadata.version"], 21);
}

#[test]
fn while_the_roll_runs_the_release_says_what_is_pending() {
    let cluster = cluster("replicas: 3\nversion: 0.1.0");
    // The brokers still support less than the release does.
    let older = supported(&[("metadata.version", 7, 21), ("kraft.version", 0, 1)]);
    let view = view(&[older.clone(), older.clone(), older], before_upgrade());
    let waits = Finalize::Waits("events-0 do not run release 0.1.0 yet".into());
    let report = report(
        &cluster,
        &settings(),
        Some(&view),
        &waits,
        &Finalized::Nothing,
    );
    assert!(!report.done);
    assert_eq!(report.reason, reasons::WAITING);
    // From the release table: what 0.1.0 runs.
    assert_eq!(
        report.pending,
        levels(&[
            ("group.version", 1),
            ("metadata.version", 25),
            ("transaction.version", 2),
        ])
    );
    assert!(
        report
            .message
            .ends_with("waits: events-0 do not run release 0.1.0 yet"),
        "{}",
        report.message
    );
}

#[test]
fn a_restarting_broker_keeps_the_last_report() {
    let mut cluster = cluster("replicas: 3");
    let waits = Finalize::Waits("2 of 3 brokers are ready".into());
    // A new Cluster whose brokers never answered: nothing is claimed.
    let new = report(&cluster, &settings(), None, &waits, &Finalized::Nothing);
    assert!(!new.done);
    assert_eq!(new.reason, reasons::WAITING);
    assert_eq!(new.finalized, None);

    let pending = levels(&[("transaction.version", 2)]);
    cluster.status = Some(ClusterStatus {
        finalized_features: levels(&[("transaction.version", 1)]),
        pending_features: pending.clone(),
        ..ClusterStatus::default()
    });
    let unheard = report(&cluster, &settings(), None, &waits, &Finalized::Nothing);
    assert_eq!(unheard.finalized, None, "the status keeps its levels");
    assert_eq!(unheard.pending, pending);
    assert!(!unheard.done);
    // Nothing pending: a config roll does not make the levels look unfinalized.
    cluster.status = Some(ClusterStatus {
        finalized_features: levels(&[("transaction.version", 2)]),
        ..ClusterStatus::default()
    });
    let settled = report(&cluster, &settings(), None, &waits, &Finalized::Nothing);
    assert!(settled.done);
    assert_eq!(settled.reason, reasons::FINALIZED);
}
