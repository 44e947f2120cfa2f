//! `docs/features.md` lists the Kafka APIs Oxbow does not serve; this test holds that list
//! to the route table ApiVersions is derived from, so the two cannot drift apart.

use std::collections::BTreeSet;

use kafka_protocol::messages::ApiKey;

/// Keys Kafka 4 removed (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown):
/// the table's note names them, no row does.
const REMOVED_IN_KAFKA_4: [i16; 4] = [4, 5, 6, 7];

/// The API keys in the first column of the "Kafka APIs Oxbow does not serve" table.
fn documented_unserved() -> BTreeSet<i16> {
    let text = include_str!("../../../docs/features.md");
    let section = text
        .split("## Kafka APIs Oxbow does not serve")
        .nth(1)
        .unwrap_or_default();
    let section = section.split("\n## ").next().unwrap_or_default();
    section
        .lines()
        .filter_map(|line| line.strip_prefix('|'))
        .filter_map(|row| row.split('|').next())
        .flat_map(|cell| cell.split(',').map(str::trim).collect::<Vec<_>>())
        .filter_map(|key| key.parse::<i16>().ok())
        .collect()
}

#[test]
fn every_kafka_api_is_served_or_listed_as_not_served() {
    let served: BTreeSet<i16> = super::routes(1)
        .version_ranges()
        .iter()
        .map(|(key, _, _)| *key)
        .collect();
    let listed = documented_unserved();
    assert!(
        !listed.is_empty(),
        "docs/features.md lost its table of APIs not served"
    );
    let both: Vec<_> = listed.intersection(&served).collect();
    assert!(
        both.is_empty(),
        "docs/features.md says keys {both:?} are not served, but ApiVersions lists them"
    );
    let known: BTreeSet<i16> = (0..=i16::from(u8::MAX))
        .filter(|key| ApiKey::try_from(*key).is_ok())
        .filter(|key| !REMOVED_IN_KAFKA_4.contains(key))
        .collect();
    let silent: Vec<_> = known
        .iter()
        .filter(|key| !served.contains(key) && !listed.contains(key))
        .collect();
    assert!(
        silent.is_empty(),
        "keys {silent:?} are neither served nor listed in docs/features.md"
    );
}
