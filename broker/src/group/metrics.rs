//! Group metrics on the broker's `/metrics`: lag per group, group state, member counts,
//! rebalance counts and durations; with `metrics.partition.labels` also committed offset
//! and lag per group, topic and partition (opt-in, like the storage metrics' partition
//! labels: 500 groups over 10,000 partitions would otherwise be millions of series).
//! Label values are group and topic names (bounded by what exists) and fixed state names.
//!
//! This module knows nothing of the coordinator: at scrape time the coordinator describes
//! each group as a [`GroupSnapshot`] and hands them to [`GroupMetrics::refresh`].

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry};

use crate::model::TopicPartition;

/// What `/metrics` shows of one group, as the coordinator saw it at scrape time.
#[derive(Debug)]
pub struct GroupSnapshot<'a> {
    pub group_id: &'a str,
    /// One of the state names ListGroups reports.
    pub state: &'static str,
    pub members: usize,
    pub partitions: Vec<PartitionPosition<'a>>,
}

/// A group's position in one partition.
#[derive(Debug)]
pub struct PartitionPosition<'a> {
    pub topic_partition: &'a TopicPartition,
    pub committed_offset: i64,
    /// High watermark minus the committed offset (at least 0); `None` when the partition's
    /// log is not on this broker.
    pub lag: Option<i64>,
}

/// The per-(group, topic, partition) gauges, registered only when opted in.
#[derive(Debug, Clone)]
struct PartitionGauges {
    committed_offset: IntGaugeVec,
    lag: IntGaugeVec,
}

/// The group layer's metric handles.
#[derive(Debug, Clone)]
pub struct GroupMetrics {
    lag: IntGaugeVec,
    partitions: Option<PartitionGauges>,
    state: IntGaugeVec,
    members: IntGaugeVec,
    rebalances: IntCounterVec,
    rebalance_duration: HistogramVec,
}

const STATES: &[&str] = &[
    "Empty",
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Assigning",
    "Reconciling",
];

impl GroupMetrics {
    /// Per-group metrics only (no per-partition labels).
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        Self::with_partition_labels(registry, false)
    }

    /// Per-group metrics, and per-(group, topic, partition) committed offset and lag when
    /// `partition_labels` (the broker's `metrics.partition.labels`).
    pub fn with_partition_labels(
        registry: &Registry,
        partition_labels: bool,
    ) -> Result<Self, prometheus::Error> {
        let gauge =
            |name: &str, help: &str, labels: &[&str]| -> Result<IntGaugeVec, prometheus::Error> {
                let metric = IntGaugeVec::new(Opts::new(name, help), labels)?;
                registry.register(Box::new(metric.clone()))?;
                Ok(metric)
            };
        let rebalances = IntCounterVec::new(
            Opts::new(
                "oxbow_group_rebalances_total",
                "Completed rebalances, by group and protocol.",
            ),
            &["group", "protocol"],
        )?;
        registry.register(Box::new(rebalances.clone()))?;
        let rebalance_duration = HistogramVec::new(
            HistogramOpts::new(
                "oxbow_group_rebalance_duration_seconds",
                "Time from the start of a rebalance until every member has its assignment (classic: join phase).",
            )
            .buckets(vec![0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0]),
            &["protocol"],
        )?;
        registry.register(Box::new(rebalance_duration.clone()))?;
        let partitions = if partition_labels {
            Some(PartitionGauges {
                committed_offset: gauge(
                    "oxbow_group_partition_committed_offset",
                    "Committed offset by group, topic and partition (metrics.partition.labels).",
                    &["group", "topic", "partition"],
                )?,
                lag: gauge(
                    "oxbow_group_partition_lag_messages",
                    "High watermark minus committed offset, by group, topic and partition (metrics.partition.labels).",
                    &["group", "topic", "partition"],
                )?,
            })
        } else {
            None
        };
        Ok(Self {
            lag: gauge(
                "oxbow_group_lag_messages",
                "Sum over the group's committed partitions on this broker of high watermark minus committed offset.",
                &["group"],
            )?,
            partitions,
            state: gauge(
                "oxbow_group_state",
                "1 for the group's current state.",
                &["group", "state"],
            )?,
            members: gauge("oxbow_group_members", "Members of the group.", &["group"])?,
            rebalances,
            rebalance_duration,
        })
    }

    pub fn rebalance_completed(&self, group: &str, protocol: &str, duration_ms: i64) {
        self.rebalances.with_label_values(&[group, protocol]).inc();
        self.rebalance_duration
            .with_label_values(&[protocol])
            .observe(duration_ms.max(0) as f64 / 1000.0);
    }

    pub fn forget_group(&self, group: &str) {
        let _ = self.rebalances.remove_label_values(&[group, "classic"]);
        let _ = self.rebalances.remove_label_values(&[group, "consumer"]);
    }

    /// Replaces every per-group gauge with what `groups` show.
    pub fn refresh<'a>(&self, groups: impl IntoIterator<Item = GroupSnapshot<'a>>) {
        self.lag.reset();
        self.state.reset();
        self.members.reset();
        if let Some(partitions) = &self.partitions {
            partitions.committed_offset.reset();
            partitions.lag.reset();
        }
        for group in groups {
            let id = group.group_id;
            for name in STATES {
                self.state
                    .with_label_values(&[id, *name])
                    .set(i64::from(*name == group.state));
            }
            self.members
                .with_label_values(&[id])
                .set(i64::try_from(group.members).unwrap_or(i64::MAX));
            let total: i64 = group
                .partitions
                .iter()
                .filter_map(|p| p.lag)
                .fold(0, i64::saturating_add);
            self.lag.with_label_values(&[id]).set(total);
            let Some(gauges) = &self.partitions else {
                continue;
            };
            for position in &group.partitions {
                let tp = position.topic_partition;
                let partition = tp.partition.to_string();
                let labels = [id, tp.topic.as_str(), partition.as_str()];
                gauges
                    .committed_offset
                    .with_label_values(&labels)
                    .set(position.committed_offset);
                if let Some(lag) = position.lag {
                    gauges.lag.with_label_values(&labels).set(lag);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Every sample in `registry` in the text format (`name{label="value",...} value`).
    fn samples(registry: &Registry) -> Vec<String> {
        let mut text = String::new();
        prometheus::TextEncoder::new()
            .encode_utf8(&registry.gather(), &mut text)
            .unwrap();
        text.lines()
            .filter(|line| !line.starts_with('#'))
            .map(str::to_string)
            .collect()
    }

    fn refresh(metrics: &GroupMetrics, t0: &TopicPartition, t1: &TopicPartition) {
        metrics.refresh([GroupSnapshot {
            group_id: "g",
            state: "Stable",
            members: 2,
            partitions: vec![
                PartitionPosition {
                    topic_partition: t0,
                    committed_offset: 10,
                    lag: Some(5),
                },
                PartitionPosition {
                    topic_partition: t1,
                    committed_offset: 3,
                    lag: Some(7),
                },
            ],
        }]);
    }

    #[test]
    fn per_group_lag_always_per_partition_only_when_opted_in() {
        let (t0, t1) = (TopicPartition::new("t", 0), TopicPartition::new("t", 1));

        let registry = Registry::new();
        refresh(&GroupMetrics::new(&registry).unwrap(), &t0, &t1);
        let off = samples(&registry);
        for expected in [
            r#"oxbow_group_lag_messages{group="g"} 12"#,
            r#"oxbow_group_members{group="g"} 2"#,
        ] {
            assert!(
                off.iter().any(|s| s == expected),
                "{expected} missing: {off:?}"
            );
        }
        assert!(
            !off.iter().any(|s| s.contains("partition=")),
            "per-partition series without the opt-in: {off:?}"
        );

        let registry = Registry::new();
        refresh(
            &GroupMetrics::with_partition_labels(&registry, true).unwrap(),
            &t0,
            &t1,
        );
        let on = samples(&registry);
        for expected in [
            r#"oxbow_group_lag_messages{group="g"} 12"#,
            r#"oxbow_group_partition_lag_messages{group="g",partition="0",topic="t"} 5"#,
            r#"oxbow_group_partition_lag_messages{group="g",partition="1",topic="t"} 7"#,
            r#"oxbow_group_partition_committed_offset{group="g",partition="0",topic="t"} 10"#,
            r#"oxbow_group_partition_committed_offset{group="g",partition="1",topic="t"} 3"#,
        ] {
            assert!(
                on.iter().any(|s| s == expected),
                "{expected} missing: {on:?}"
            );
        }
    }
}
