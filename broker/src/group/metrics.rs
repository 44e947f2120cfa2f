//! Group metrics on the broker's `/metrics`: committed offsets and lag per group and
//! partition, group state, member counts, rebalance counts and durations. Label values
//! are group and topic names (bounded by what exists) and fixed state names.

use std::collections::HashMap;

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry};

use super::coordinator::{Group, GroupKind};
use crate::storage::LogManager;

/// The group layer's metric handles.
#[derive(Debug, Clone)]
pub struct GroupMetrics {
    committed_offset: IntGaugeVec,
    lag: IntGaugeVec,
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
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
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
        Ok(Self {
            committed_offset: gauge(
                "oxbow_group_committed_offset",
                "Committed offset by group, topic and partition.",
                &["group", "topic", "partition"],
            )?,
            lag: gauge(
                "oxbow_group_lag_messages",
                "High watermark minus committed offset, by group, topic and partition.",
                &["group", "topic", "partition"],
            )?,
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

    pub(super) fn refresh(&self, groups: &HashMap<String, Group>, logs: &LogManager) {
        self.committed_offset.reset();
        self.lag.reset();
        self.state.reset();
        self.members.reset();
        for (id, group) in groups {
            let (_, state, _) = group.summary();
            for name in STATES {
                self.state
                    .with_label_values(&[id.as_str(), *name])
                    .set(i64::from(*name == state));
            }
            let members = match &group.kind {
                GroupKind::Classic(g) => g.members.len(),
                GroupKind::Consumer(g) => g.members.len(),
            };
            self.members
                .with_label_values(&[id.as_str()])
                .set(members as i64);
            for (tp, value) in &group.offsets {
                let partition = tp.partition.to_string();
                let labels = [id.as_str(), tp.topic.as_str(), partition.as_str()];
                self.committed_offset
                    .with_label_values(&labels)
                    .set(value.offset);
                if let Some(log) = logs.get(tp) {
                    let lag = (log.high_watermark() as i64 - value.offset).max(0);
                    self.lag.with_label_values(&labels).set(lag);
                }
            }
        }
    }
}
