//! An upgrade through `reconcile()`: `spec.version` rolls the brokers one at a time behind
//! the gate, then every feature level is finalized in one UpdateFeatures (and nothing more
//! is asked); `spec.features` holds a level with a safe downgrade; a refusal becomes the
//! `FeaturesFinalized` condition with the controller's reason, not a failed reconcile; a
//! release below the finalized levels is refused and nothing rolls.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::StatefulSet;
use kube::ResourceExt;
use serde_json::json;

use crate::bed::*;
use crate::checks::*;
use crate::fake_kafka::{Call, FakeKafka};

/// What the brokers of this release support.
const SUPPORTED: &[(&str, i16, i16)] = &[
    ("metadata.version", 7, 25),
    ("kraft.version", 0, 1),
    ("transaction.version", 0, 2),
    ("group.version", 0, 1),
];

/// The UpdateFeatures requests among `calls`: `(feature, level, upgrade type)` each.
fn feature_updates(calls: &[Call]) -> Vec<Vec<(String, i16, i8)>> {
    calls
        .iter()
        .filter_map(|call| match call {
            Call::UpdateFeatures { levels } => Some(levels.clone()),
            _ => None,
        })
        .collect()
}

fn levels(levels: &[(&str, i16)]) -> BTreeMap<String, i16> {
    levels.iter().map(|(n, l)| (n.to_string(), *l)).collect()
}

fn update(feature: &str, level: i16, upgrade_type: i8) -> (String, i16, i8) {
    (feature.to_string(), level, upgrade_type)
}

async fn features_condition(bed: &Bed) -> (String, String, String) {
    let status = assert_status_observed(bed).await.status.unwrap();
    let c = condition(&status.conditions, "FeaturesFinalized");
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Kubernetes API server (KUBECONFIG); run by e2e/suites/75-operator-reconcile.sh"]
async fn reconcile_upgrade_rolls_then_finalizes_every_feature() {
    let fake = FakeKafka::start(&[(0, "zone-a"), (1, "zone-b"), (2, "zone-c")]).await;
    let bed = setup("oxbow-reconcile-upgrade", fake).await;
    create_ready_cluster(&bed).await;
    // Levels as an earlier release left them: metadata at 3.9, transactions and groups at
    // their first levels.
    bed.fake
        .set_features(SUPPORTED, &[("metadata.version", 21), ("kraft.version", 1)]);

    // --- spec.version: the image follows it, the pod template changes ---------------------
    let original = bed.pod_uids().await;
    let revision_before = bed.update_revision().await;
    bed.patch_cluster(json!({ "spec": { "image": null, "version": "0.1.0" } }))
        .await;
    bed.reconcile_cluster().await;
    let stateful_set: StatefulSet = bed.owned(CLUSTER).await;
    let template = stateful_set.spec.unwrap().template;
    assert_eq!(
        template.metadata.unwrap().labels.unwrap()["app.kubernetes.io/version"],
        "0.1.0"
    );
    assert_eq!(
        template.spec.unwrap().containers[0].image.as_deref(),
        Some("oxbow:0.1.0"),
        "the operator's broker repository tagged with the version"
    );
    bed.wait_stateful_set_observed(3).await;
    assert_ne!(bed.update_revision().await, revision_before);
    let status = bed.cluster().await.status.unwrap();
    assert_eq!(status.version.as_deref(), Some("reconcile-test"));
    assert_eq!(
        status.finalized_features,
        levels(&[
            ("group.version", 0),
            ("kraft.version", 1),
            ("metadata.version", 21),
            ("transaction.version", 0),
        ])
    );
    // What 0.1.0 runs (the operator's release table), waiting for the roll.
    assert_eq!(
        status.pending_features,
        levels(&[
            ("group.version", 1),
            ("metadata.version", 25),
            ("transaction.version", 2),
        ])
    );
    let (done, reason, message) = features_condition(&bed).await;
    assert_eq!(
        (done.as_str(), reason.as_str()),
        ("False", "WaitingForBrokers")
    );
    assert!(message.contains(" waits: "), "{message}");
    assert_eq!(
        feature_updates(&bed.fake.take_calls()),
        Vec::<Vec<_>>::new()
    );

    // --- the roll: one broker at a time, nothing finalized while releases are mixed -------
    for pod in ["events-2", "events-1", "events-0"] {
        bed.make_ready(3).await;
        let before = bed.pod_uids().await;
        if before.get(pod) == original.get(pod) {
            bed.reconcile_cluster().await;
            assert_eq!(bed.restarted_since(&before).await, vec![pod]);
            let calls = bed.fake.take_calls();
            assert_eq!(gate_questions(&calls), 1, "the gate asked before {pod}");
            assert_eq!(feature_updates(&calls), Vec::<Vec<_>>::new(), "mid-roll");
            if pod == "events-1" {
                let status = bed.cluster().await.status.unwrap();
                assert_eq!(status.brokers[2].version.as_deref(), Some("0.1.0"));
                assert_eq!(status.brokers[0].version.as_deref(), Some("reconcile-test"));
                assert_eq!(status.version.as_deref(), Some("reconcile-test"));
            }
        }
    }
    bed.make_ready(3).await;
    bed.wait_stateful_set_observed(3).await;

    // --- every broker on 0.1.0: every feature finalized, in one request ---------------
    bed.reconcile_cluster().await;
    assert_eq!(
        feature_updates(&bed.fake.take_calls()),
        vec![vec![
            update("group.version", 1, 1),
            update("metadata.version", 25, 1),
            update("transaction.version", 2, 1),
        ]]
    );
    let status = bed.cluster().await.status.unwrap();
    let newest = levels(&[
        ("group.version", 1),
        ("kraft.version", 1),
        ("metadata.version", 25),
        ("transaction.version", 2),
    ]);
    assert_eq!(status.finalized_features, newest);
    assert!(
        status.pending_features.is_empty(),
        "the merge patch removed what was pending: {:?}",
        status.pending_features
    );
    assert_eq!(status.version.as_deref(), Some("0.1.0"));
    assert!(
        status
            .brokers
            .iter()
            .all(|b| b.version.as_deref() == Some("0.1.0"))
    );
    let (done, reason, _) = features_condition(&bed).await;
    assert_eq!((done.as_str(), reason.as_str()), ("True", "Finalized"));
    assert_eq!(bed.events("FeaturesFinalized").await, 1);
    assert_ready(&bed, 3).await;
    // Asked again, nothing is sent and nothing written.
    assert_idempotent(&bed).await;

    // --- spec.features holds a level: a safe downgrade --------------------------------
    bed.patch_cluster(json!({ "spec": { "features": { "group.version": 0 } } }))
        .await;
    bed.reconcile_cluster().await;
    assert_eq!(
        feature_updates(&bed.fake.take_calls()),
        vec![vec![update("group.version", 0, 2)]]
    );
    assert_eq!(
        bed.cluster().await.status.unwrap().finalized_features["group.version"],
        0
    );

    // --- a refusal: a condition with the controller's reason, told once ---------------
    let refusal = "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature.";
    bed.fake.refuse_feature_updates(Some(refusal));
    bed.patch_cluster(json!({ "spec": { "features": { "kraft.version": 0 } } }))
        .await;
    for _ in 0..2 {
        bed.reconcile_cluster().await;
        let (done, reason, message) = features_condition(&bed).await;
        assert_eq!(
            (done.as_str(), reason.as_str()),
            ("False", "UpdateFeaturesRefused")
        );
        assert!(message.ends_with(refusal), "{message}");
        let status = bed.cluster().await.status.unwrap();
        // The merge patch of `features` kept group.version's pin; kraft.version waits.
        assert_eq!(status.pending_features, levels(&[("kraft.version", 0)]));
    }
    assert_eq!(bed.events("UpdateFeaturesRefused").await, 1, "told once");
    let _ = bed.fake.take_calls();

    // --- pins removed: back to the newest levels ----------------------------------------
    bed.fake.refuse_feature_updates(None);
    bed.patch_cluster(json!({ "spec": { "features": null } }))
        .await;
    bed.reconcile_cluster().await;
    assert_eq!(
        feature_updates(&bed.fake.take_calls()),
        vec![vec![update("group.version", 1, 1)]]
    );
    let status = bed.cluster().await.status.unwrap();
    assert_eq!(status.finalized_features, newest);
    assert!(status.pending_features.is_empty());
    let (done, _, _) = features_condition(&bed).await;
    assert_eq!(done, "True");

    // --- a release below the finalized levels: refused, nothing rolls ------------------
    // The levels as a newer release finalizes them (metadata.version 26)...
    bed.fake.set_features(
        &[
            ("metadata.version", 7, 26),
            ("kraft.version", 0, 1),
            ("transaction.version", 0, 2),
            ("group.version", 0, 1),
        ],
        &[
            ("metadata.version", 26),
            ("kraft.version", 1),
            ("transaction.version", 2),
            ("group.version", 1),
        ],
    );
    bed.reconcile_cluster().await;
    // ... which 0.1.0 (spec.version) cannot run.
    let uids = bed.pod_uids().await;
    let stateful_set: StatefulSet = bed.owned(CLUSTER).await;
    bed.reconcile_cluster().await;
    let status = bed.cluster().await.status.unwrap();
    let degraded = condition(&status.conditions, "Degraded");
    assert_eq!(
        (degraded.status.as_str(), degraded.reason.as_str()),
        ("True", "DowngradeBelowFinalizedFeatures")
    );
    assert!(
        degraded
            .message
            .contains("release 0.1.0 runs metadata.version up to 25, but the cluster finalized 26"),
        "{}",
        degraded.message
    );
    assert_eq!(condition(&status.conditions, "Ready").status, "False");
    assert_eq!(bed.events("DowngradeRefused").await, 1);
    let after: StatefulSet = bed.owned(CLUSTER).await;
    assert_eq!(
        after.resource_version(),
        stateful_set.resource_version(),
        "nothing applied"
    );
    assert_eq!(bed.restarted_since(&uids).await, Vec::<String>::new());
    assert_eq!(
        feature_updates(&bed.fake.take_calls()),
        Vec::<Vec<_>>::new()
    );
    super::cleanup(&bed).await;
}
