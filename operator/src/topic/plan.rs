//! What to do to a topic: a pure comparison of the spec with what the cluster reports.

use std::collections::BTreeMap;

use crate::admin::{BrokerDescription, TopicDescription, is_move_throttle};
use oxbow_placement::{Candidate, place_partitions};

/// The desired topic, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredTopic {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i32,
    pub configs: BTreeMap<String, String>,
}

/// A request the cluster cannot satisfy; reported as a condition, not retried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Impossible {
    pub reason: &'static str,
    pub message: String,
}

impl Impossible {
    /// Whether the cluster resolves this by itself, soon: brokers register as they start, so
    /// a Cluster applied together with its Topics (the shipped example) briefly has fewer
    /// brokers than the replication factor asks.
    pub fn waits_for_brokers(&self) -> bool {
        self.reason == "ReplicationFactorTooLarge"
    }
}

/// Changes to make, in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Create the topic; with an explicit rack-aware assignment when the brokers have racks.
    pub create: Option<Option<Vec<Vec<i32>>>>,
    /// Grow to this many partitions.
    pub grow_partitions: Option<i32>,
    /// Configs to set (missing or different in the cluster).
    pub set_configs: BTreeMap<String, String>,
    /// Configs set on the topic in the cluster but absent from the spec.
    pub delete_configs: Vec<String>,
    /// Move the topic's replicas to this replication factor (a throttled reassignment).
    pub change_replication_factor: Option<i32>,
    /// Requests that cannot be carried out (yet); the rest of the plan still runs.
    pub impossible: Vec<Impossible>,
}

impl Plan {
    /// Whether the plan changes anything in the cluster.
    pub fn changes_anything(&self) -> bool {
        self.create.is_some()
            || self.grow_partitions.is_some()
            || !self.set_configs.is_empty()
            || !self.delete_configs.is_empty()
    }

    /// A one-line description of the changes, for status and events.
    pub fn describe(&self, desired: &DesiredTopic) -> String {
        let mut parts = Vec::new();
        if let Some(assignment) = &self.create {
            parts.push(format!(
                "created with {} partitions, replication factor {}{}",
                desired.partitions,
                desired.replication_factor,
                if assignment.is_some() {
                    " (rack-aware assignment)"
                } else {
                    ""
                }
            ));
        }
        if let Some(count) = self.grow_partitions {
            parts.push(format!("grew to {count} partitions"));
        }
        if !self.set_configs.is_empty() {
            let keys: Vec<_> = self.set_configs.keys().map(String::as_str).collect();
            parts.push(format!("set {}", keys.join(", ")));
        }
        if !self.delete_configs.is_empty() {
            parts.push(format!("removed {}", self.delete_configs.join(", ")));
        }
        parts.join("; ")
    }
}

/// Compares `desired` with the cluster's view.
///
/// `existing_configs` are the configs set on the topic (dynamic topic configs).
pub fn plan(
    desired: &DesiredTopic,
    brokers: &[BrokerDescription],
    existing: Option<&TopicDescription>,
    existing_configs: &BTreeMap<String, String>,
) -> Plan {
    let mut plan = Plan::default();
    let broker_count = i32::try_from(brokers.len()).unwrap_or(i32::MAX);
    let Some(existing) = existing else {
        if desired.replication_factor > broker_count {
            plan.impossible.push(Impossible {
                reason: "ReplicationFactorTooLarge",
                message: format!(
                    "replication factor {} needs at least as many brokers; the cluster has {broker_count}",
                    desired.replication_factor
                ),
            });
            return plan;
        }
        plan.create = Some(rack_aware_assignment(desired, brokers));
        return plan;
    };
    let current_partitions = i32::try_from(existing.partitions.len()).unwrap_or(i32::MAX);
    if desired.partitions > current_partitions {
        plan.grow_partitions = Some(desired.partitions);
    } else if desired.partitions < current_partitions {
        plan.impossible.push(Impossible {
            reason: "PartitionsCannotShrink",
            message: format!(
                "the topic has {current_partitions} partitions; Kafka cannot remove partitions (spec asks for {})",
                desired.partitions
            ),
        });
    }
    let current_rf = replication_factor(existing);
    let wanted = usize::try_from(desired.replication_factor).unwrap_or(0);
    if existing
        .partitions
        .values()
        .any(|p| p.replicas.len() != wanted)
    {
        if desired.replication_factor > broker_count {
            plan.impossible.push(Impossible {
                reason: "ReplicationFactorTooLarge",
                message: format!(
                    "replication factor {} needs at least as many brokers; the cluster has {broker_count} (the topic keeps replication factor {current_rf})",
                    desired.replication_factor
                ),
            });
        } else {
            plan.change_replication_factor = Some(desired.replication_factor);
        }
    }
    for (key, value) in &desired.configs {
        if existing_configs.get(key) != Some(value) {
            plan.set_configs.insert(key.clone(), value.clone());
        }
    }
    // A move's throttle lists belong to the move (removed when it ends), not drift.
    plan.delete_configs = existing_configs
        .keys()
        .filter(|k| !desired.configs.contains_key(*k) && !is_move_throttle(k))
        .cloned()
        .collect();
    plan
}

/// Replication factor of a topic as the cluster reports it (replicas of its first partition).
pub fn replication_factor(topic: &TopicDescription) -> i32 {
    topic
        .partitions
        .values()
        .next()
        .map_or(0, |p| i32::try_from(p.replicas.len()).unwrap_or(i32::MAX))
}

/// When the brokers report at least two racks, the operator assigns replicas itself with
/// the controller's own placement ([`place_partitions`], shared code) so that replicas of
/// a partition land in different racks also on a Kafka cluster; otherwise (no racks, one
/// rack) it lets the cluster place them.
fn rack_aware_assignment(
    desired: &DesiredTopic,
    brokers: &[BrokerDescription],
) -> Option<Vec<Vec<i32>>> {
    let racks: std::collections::BTreeSet<_> =
        brokers.iter().filter_map(|b| b.rack.as_deref()).collect();
    if racks.len() < 2 || brokers.iter().any(|b| b.rack.is_none()) {
        return None;
    }
    let candidates: Vec<Candidate> = brokers
        .iter()
        .map(|b| Candidate {
            node_id: b.id,
            rack: b.rack.clone(),
        })
        .collect();
    let partitions = usize::try_from(desired.partitions).ok()?;
    let replication_factor = usize::try_from(desired.replication_factor).ok()?;
    // Start from a stable per-topic offset so that many topics do not all lead on broker 0.
    let start =
        usize::try_from(crate::cluster::build::fnv1a(desired.name.as_bytes()) % 1024).ok()?;
    place_partitions(&candidates, &[], partitions, replication_factor, start).ok()
}

/// A short summary of replicas and leaders, e.g. `3 partitions x 3 replicas; leaders 0:1 1:1 2:1; replicas 0:3 1:3 2:3`.
pub fn assignment_summary(topic: &TopicDescription) -> String {
    let mut leaders: BTreeMap<i32, usize> = BTreeMap::new();
    let mut replicas: BTreeMap<i32, usize> = BTreeMap::new();
    let mut under_replicated = 0;
    for partition in topic.partitions.values() {
        *leaders.entry(partition.leader).or_default() += 1;
        for replica in &partition.replicas {
            *replicas.entry(*replica).or_default() += 1;
        }
        if partition.in_sync_replicas.len() < partition.replicas.len() {
            under_replicated += 1;
        }
    }
    let join = |m: &BTreeMap<i32, usize>| {
        m.iter()
            .map(|(b, n)| format!("{b}:{n}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!(
        "{} partitions x {} replicas; leaders by broker {}; replicas by broker {}; {under_replicated} under-replicated",
        topic.partitions.len(),
        replication_factor(topic),
        join(&leaders),
        join(&replicas)
    )
}
