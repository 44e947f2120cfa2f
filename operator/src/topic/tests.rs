use std::collections::BTreeMap;

use super::plan::{DesiredTopic, Plan, assignment_summary, plan};
use crate::admin::{BrokerDescription, PartitionDescription, TopicDescription};

fn desired(partitions: i32, replication_factor: i32, configs: &[(&str, &str)]) -> DesiredTopic {
    DesiredTopic {
        name: "orders".into(),
        partitions,
        replication_factor,
        configs: configs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn brokers(racks: &[Option<&str>]) -> Vec<BrokerDescription> {
    racks
        .iter()
        .zip(0..)
        .map(|(rack, id)| BrokerDescription {
            id,
            rack: rack.map(str::to_string),
        })
        .collect()
}

fn existing(partitions: i32, replication_factor: i32) -> TopicDescription {
    TopicDescription {
        name: "orders".into(),
        topic_id: "id".into(),
        partitions: (0..partitions)
            .map(|p| {
                let replicas: Vec<i32> = (0..replication_factor).map(|r| (p + r) % 3).collect();
                (
                    p,
                    PartitionDescription {
                        leader: replicas[0],
                        in_sync_replicas: replicas.clone(),
                        replicas,
                    },
                )
            })
            .collect(),
    }
}

#[test]
fn missing_topic_is_created_and_placed_by_the_cluster_without_racks() {
    let p = plan(
        &desired(3, 1, &[]),
        &brokers(&[None]),
        None,
        &BTreeMap::new(),
    );
    assert_eq!(p.create, Some(None));
    assert!(p.impossible.is_empty());
}

#[test]
fn missing_topic_gets_rack_aware_assignment_when_brokers_have_racks() {
    let p = plan(
        &desired(6, 3, &[]),
        &brokers(&[
            Some("a"),
            Some("b"),
            Some("c"),
            Some("a"),
            Some("b"),
            Some("c"),
        ]),
        None,
        &BTreeMap::new(),
    );
    let assignment = p.create.unwrap().unwrap();
    assert_eq!(assignment.len(), 6);
    let rack = |id: i32| ["a", "b", "c"][usize::try_from(id % 3).unwrap()];
    for replicas in assignment {
        let racks: std::collections::BTreeSet<_> = replicas.iter().map(|id| rack(*id)).collect();
        assert_eq!(racks.len(), 3, "replicas {replicas:?} share a rack");
    }
}

#[test]
fn replication_factor_above_broker_count_is_impossible() {
    let p = plan(
        &desired(3, 3, &[]),
        &brokers(&[None]),
        None,
        &BTreeMap::new(),
    );
    assert_eq!(p.create, None);
    assert_eq!(p.impossible[0].reason, "ReplicationFactorTooLarge");
    // brokers still registering: re-checked at the waiting cadence, not after minutes
    assert!(p.impossible[0].waits_for_brokers());
}

#[test]
fn partitions_grow_but_never_shrink() {
    let grow = plan(
        &desired(6, 1, &[]),
        &brokers(&[None]),
        Some(&existing(3, 1)),
        &BTreeMap::new(),
    );
    assert_eq!(grow.grow_partitions, Some(6));
    let shrink = plan(
        &desired(2, 1, &[]),
        &brokers(&[None]),
        Some(&existing(3, 1)),
        &BTreeMap::new(),
    );
    assert_eq!(shrink.grow_partitions, None);
    assert_eq!(shrink.impossible[0].reason, "PartitionsCannotShrink");
    assert!(!shrink.impossible[0].waits_for_brokers());
}

#[test]
fn replication_factor_change_is_a_move_within_the_broker_count() {
    let p = plan(
        &desired(3, 3, &[]),
        &brokers(&[None, None, None]),
        Some(&existing(3, 1)),
        &BTreeMap::new(),
    );
    assert_eq!(p.change_replication_factor, Some(3));
    assert!(p.impossible.is_empty());
    let too_many = plan(
        &desired(3, 4, &[]),
        &brokers(&[None, None, None]),
        Some(&existing(3, 1)),
        &BTreeMap::new(),
    );
    assert_eq!(too_many.change_replication_factor, None);
    assert_eq!(too_many.impossible[0].reason, "ReplicationFactorTooLarge");
    assert!(
        too_many.impossible[0]
            .message
            .contains("keeps replication factor 1"),
        "{}",
        too_many.impossible[0].message
    );
}

#[test]
fn a_moves_throttle_is_not_drift() {
    let in_cluster = BTreeMap::from([
        (
            "leader.replication.throttled.replicas".to_string(),
            "0:1".to_string(),
        ),
        ("segment.ms".to_string(), "1000".to_string()),
    ]);
    let p = plan(
        &desired(3, 1, &[]),
        &brokers(&[None]),
        Some(&existing(3, 1)),
        &in_cluster,
    );
    assert_eq!(p.delete_configs, ["segment.ms"]);
}

#[test]
fn config_drift_is_put_back() {
    let in_cluster = BTreeMap::from([
        ("retention.ms".to_string(), "1000".to_string()),
        ("cleanup.policy".to_string(), "compact".to_string()),
    ]);
    let p = plan(
        &desired(3, 1, &[("retention.ms", "86400000")]),
        &brokers(&[None]),
        Some(&existing(3, 1)),
        &in_cluster,
    );
    assert_eq!(
        p.set_configs,
        BTreeMap::from([("retention.ms".to_string(), "86400000".to_string())])
    );
    assert_eq!(p.delete_configs, vec!["cleanup.policy".to_string()]);
    assert_eq!(
        p.describe(&desired(3, 1, &[])),
        "set retention.ms; removed cleanup.policy"
    );
}

#[test]
fn matching_topic_needs_nothing() {
    let in_cluster = BTreeMap::from([("retention.ms".to_string(), "5".to_string())]);
    let p = plan(
        &desired(3, 1, &[("retention.ms", "5")]),
        &brokers(&[None]),
        Some(&existing(3, 1)),
        &in_cluster,
    );
    assert_eq!(p, Plan::default());
}

#[test]
fn summary_counts_leaders_and_replicas() {
    let summary = assignment_summary(&existing(3, 2));
    assert_eq!(
        summary,
        "3 partitions x 2 replicas; leaders by broker 0:1 1:1 2:1; replicas by broker 0:2 1:2 2:2; 0 under-replicated"
    );
}

#[test]
fn idle_rechecks_stay_within_their_rate_however_many_topics_there_are() {
    use super::{IDLE_RECHECKS_PER_SECOND, REQUEUE_IDLE, idle_recheck};
    use std::time::Duration;
    // Few Topics: once a minute, spread over at most a quarter more.
    for name in ["a", "orders", "scale-00017"] {
        let wait = idle_recheck(10, name);
        assert!(
            wait >= REQUEUE_IDLE && wait < REQUEUE_IDLE.mul_f64(1.25),
            "{wait:?}"
        );
    }
    // 10,000 Topics: each waits long enough that all of them together stay at or below
    // the rate, and names created together land at different times.
    let count = 10_000_usize;
    let waits: Vec<Duration> = (0..count)
        .map(|i| idle_recheck(count, &format!("scale-{i:05}")))
        .collect();
    let rate: f64 = waits.iter().map(|w| 1.0 / w.as_secs_f64()).sum();
    assert!(
        rate <= f64::from(IDLE_RECHECKS_PER_SECOND),
        "{rate} re-checks/s"
    );
    assert!(
        rate > f64::from(IDLE_RECHECKS_PER_SECOND) * 0.7,
        "{rate} re-checks/s"
    );
    let distinct: std::collections::BTreeSet<u128> =
        waits.iter().map(|w| w.as_millis() / 1000).collect();
    assert!(distinct.len() > 100, "{} distinct seconds", distinct.len());
}
