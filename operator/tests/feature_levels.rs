//! The operator's feature step against real brokers: two `oxbow` processes on loopback (a
//! voter and a broker-only node), read through the operator's own admin client (each
//! broker's ApiVersions), planned with the pure `cluster::upgrade` functions and finalized
//! with UpdateFeatures, as a reconcile does once every broker runs the release.
//!
//! - the release table's line for this crate's version is what a broker of this tree
//!   supports (the table cannot drift from the brokers);
//! - pinned lower levels are safe downgrades the controller accepts; unpinned, every
//!   feature (not only `metadata.version`) goes back up to the highest level both brokers
//!   support, in one request; asked again, nothing is sent;
//! - what the controller refuses (lowering `kraft.version`, a `metadata.version` downgrade
//!   that would drop SCRAM records) comes back with its reason and changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use oxbow_operator::admin::{AdminClient, AdminError};
use oxbow_operator::cluster::upgrade::{self, FeatureView};
use oxbow_testkit::Cluster;

/// Kafka's INVALID_UPDATE_VERSION.
const INVALID_UPDATE_VERSION: i16 = 95;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Every broker's answer, as the observe stage reads it (broker ids 0 and 1 as ordinals).
fn read(runtime: &tokio::runtime::Runtime, ports: &[u16]) -> FeatureView {
    runtime.block_on(async {
        let mut view = FeatureView::default();
        let mut epoch = i64::MIN;
        for (ordinal, port) in (0..).zip(ports) {
            let mut admin = AdminClient::connect(&format!("127.0.0.1:{port}"))
                .await
                .unwrap();
            let answer = admin.features().await.unwrap();
            if answer.epoch > epoch {
                epoch = answer.epoch;
                view.finalized = answer.finalized;
            }
            view.brokers.insert(ordinal, answer.supported);
        }
        view
    })
}

fn update(
    runtime: &tokio::runtime::Runtime,
    port: u16,
    view: &FeatureView,
    pins: &BTreeMap<String, i16>,
) -> Result<usize, AdminError> {
    let updates = upgrade::updates(view, &upgrade::targets(view, pins));
    if updates.is_empty() {
        return Ok(0);
    }
    runtime.block_on(async {
        let mut admin = AdminClient::connect(&format!("127.0.0.1:{port}")).await?;
        admin.update_features(&updates).await?;
        Ok(updates.len())
    })
}

fn levels(levels: &[(&str, i16)]) -> BTreeMap<String, i16> {
    levels.iter().map(|(n, l)| (n.to_string(), *l)).collect()
}

#[test]
fn the_operator_finalizes_every_feature_against_real_brokers() {
    let cluster = Cluster::start(1, 1, &[]);
    cluster.wait_ready(&[1, 2]);
    let ports = [cluster.nodes[&1].port, cluster.nodes[&2].port];
    let runtime = runtime();
    // Both brokers see the same finalized levels (a change reaches them a moment apart).
    let settled = |want: &BTreeMap<String, i16>| {
        cluster.wait_for(
            "both brokers to report the finalized levels",
            Duration::from_secs(30),
            || {
                ports.iter().all(|port| {
                    let view = read(&runtime, &[*port]);
                    view.finalized_levels() == *want
                })
            },
        );
    };

    // --- the release table is what the brokers of this tree run ------------------------
    let view = read(&runtime, &ports);
    let release = upgrade::release(env!("CARGO_PKG_VERSION")).expect("this release is listed");
    for supported in view.brokers.values() {
        let newest: BTreeMap<String, i16> = supported
            .iter()
            .map(|(name, (_, max))| (name.clone(), *max))
            .collect();
        let listed: BTreeMap<String, i16> = release
            .max_levels
            .iter()
            .map(|(name, max)| (name.to_string(), *max))
            .collect();
        assert_eq!(
            newest, listed,
            "upgrade::RELEASES' line for {} differs from what its brokers support",
            release.version
        );
    }
    // A new cluster starts at the newest levels: nothing to finalize.
    let newest = view.finalized_levels();
    assert_eq!(
        update(&runtime, ports[0], &view, &BTreeMap::new()).unwrap(),
        0
    );

    // --- pinned lower: safe downgrades ---------------------------------------------------
    // metadata.version 12 (3.6-IV0) is above the SCRAM level, so nothing would be lost.
    let low = levels(&[
        ("metadata.version", 12),
        ("transaction.version", 0),
        ("group.version", 0),
    ]);
    assert_eq!(update(&runtime, ports[0], &view, &low).unwrap(), 3);
    let mut lowered = newest.clone();
    lowered.extend(low.clone());
    settled(&lowered);

    // --- unpinned: every feature back up to what both brokers support, once ----------
    let view = read(&runtime, &ports);
    assert_eq!(
        upgrade::targets(&view, &BTreeMap::new()),
        newest,
        "the targets are the brokers' newest levels"
    );
    assert_eq!(
        update(&runtime, ports[1], &view, &BTreeMap::new()).unwrap(),
        3
    );
    settled(&newest);
    let view = read(&runtime, &ports);
    assert_eq!(
        update(&runtime, ports[0], &view, &BTreeMap::new()).unwrap(),
        0,
        "asked again, nothing is sent"
    );

    // --- refusals come back with the controller's reason, nothing changed -------------
    for (pins, reason) in [
        (
            levels(&[("kraft.version", 0)]),
            "Can't downgrade the version of this feature",
        ),
        (
            levels(&[("metadata.version", 10)]),
            "might delete metadata information",
        ),
        (
            levels(&[("transaction.version", 9)]),
            "only supports versions 0-2",
        ),
    ] {
        let error = update(&runtime, ports[0], &view, &pins).unwrap_err();
        assert_eq!(error.kafka_code(), Some(INVALID_UPDATE_VERSION), "{error}");
        assert!(error.to_string().contains(reason), "{error}");
    }
    assert_eq!(read(&runtime, &ports).finalized_levels(), newest);
}
