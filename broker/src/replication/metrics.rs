//! Replication's Prometheus metrics: partition health as this broker's leaders see it,
//! ISR changes, and the bytes followers move.

use prometheus::{IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};

use super::ReplicaManager;

#[derive(Debug, Clone)]
pub struct ReplicationMetrics {
    under_replicated: IntGauge,
    under_min_isr: IntGauge,
    offline: IntGauge,
    leaders: IntGauge,
    unstable: IntGauge,
    max_stable_lag: IntGauge,
    follower_lag: Option<IntGaugeVec>,
    stable_lag: Option<IntGaugeVec>,
    pub isr_shrinks: IntCounter,
    pub isr_expands: IntCounter,
    pub bytes_in: IntCounter,
    pub bytes_out: IntCounter,
    /// Bytes moved for throttled replicas, by role (`leader` served, `follower` fetched).
    pub throttled_bytes: IntCounterVec,
}

impl ReplicationMetrics {
    /// The metrics, registered in `registry`; per-follower lag only with
    /// `follower_labels` (its cardinality grows with partitions × replicas).
    pub fn new(registry: &Registry, follower_labels: bool) -> Result<Self, prometheus::Error> {
        let gauge = |name: &str, help: &str| -> Result<IntGauge, prometheus::Error> {
            let metric = IntGauge::new(name, help)?;
            registry.register(Box::new(metric.clone()))?;
            Ok(metric)
        };
        let counter = |name: &str, help: &str| -> Result<IntCounter, prometheus::Error> {
            let metric = IntCounter::new(name, help)?;
            registry.register(Box::new(metric.clone()))?;
            Ok(metric)
        };
        let follower_lag = if follower_labels {
            let metric = IntGaugeVec::new(
                Opts::new(
                    "oxbow_replication_follower_lag_messages",
                    "Offsets a follower is behind this leader's log end.",
                ),
                &["topic", "partition", "replica"],
            )?;
            registry.register(Box::new(metric.clone()))?;
            Some(metric)
        } else {
            None
        };
        let stable_lag = if follower_labels {
            let metric = IntGaugeVec::new(
                Opts::new(
                    "oxbow_replication_last_stable_offset_lag_messages",
                    "High watermark minus last stable offset of a partition led here: the records read_committed consumers wait for while transactions are open.",
                ),
                &["topic", "partition"],
            )?;
            registry.register(Box::new(metric.clone()))?;
            Some(metric)
        } else {
            None
        };
        let throttled_bytes = IntCounterVec::new(
            Opts::new(
                "oxbow_replication_throttled_bytes_total",
                "Record bytes moved for replicas under a replication throttle (reassignments).",
            ),
            &["role"],
        )?;
        registry.register(Box::new(throttled_bytes.clone()))?;
        Ok(Self {
            throttled_bytes,
            under_replicated: gauge(
                "oxbow_replication_under_replicated_partitions",
                "Partitions led here whose ISR is smaller than their replica set.",
            )?,
            under_min_isr: gauge(
                "oxbow_replication_under_min_isr_partitions",
                "Partitions led here whose ISR is below min.insync.replicas (acks=all refused).",
            )?,
            offline: gauge(
                "oxbow_replication_offline_partitions",
                "Partitions without a leader (reported by the active controller only).",
            )?,
            leaders: gauge(
                "oxbow_replication_leader_partitions",
                "Partitions this broker leads.",
            )?,
            unstable: gauge(
                "oxbow_replication_unstable_partitions",
                "Partitions led here whose last stable offset is below the high watermark (an open transaction holds read_committed consumers back).",
            )?,
            max_stable_lag: gauge(
                "oxbow_replication_max_last_stable_offset_lag_messages",
                "The largest high watermark minus last stable offset over the partitions led here.",
            )?,
            follower_lag,
            stable_lag,
            isr_shrinks: counter(
                "oxbow_replication_isr_shrinks_total",
                "ISR shrinks the controller accepted from this broker's leaders.",
            )?,
            isr_expands: counter(
                "oxbow_replication_isr_expands_total",
                "ISR expansions the controller accepted from this broker's leaders.",
            )?,
            bytes_in: counter(
                "oxbow_replication_bytes_in_total",
                "Record bytes this broker's followers appended from leaders.",
            )?,
            bytes_out: counter(
                "oxbow_replication_bytes_out_total",
                "Record bytes this broker's leaders sent to followers.",
            )?,
        })
    }

    /// Refreshes the gauges (at scrape time). `offline` is the image's count of
    /// leaderless partitions, given only on the active controller.
    pub fn refresh(&self, replicas: &ReplicaManager, offline: Option<usize>) {
        let (mut under_replicated, mut under_min_isr, mut leaders) = (0, 0, 0);
        let (mut unstable, mut max_stable_lag) = (0, 0u64);
        if let Some(lag) = &self.follower_lag {
            lag.reset();
        }
        if let Some(lag) = &self.stable_lag {
            lag.reset();
        }
        for partition in replicas.all() {
            let role = partition.role();
            if role.leader != replicas.node_id() {
                continue;
            }
            leaders += 1;
            if role.in_sync_replicas.len() < role.replicas.len() {
                under_replicated += 1;
            }
            let min_isr = partition.log().config().min_insync_replicas.max(1) as usize;
            if role.in_sync_replicas.len() < min_isr {
                under_min_isr += 1;
            }
            let log = partition.log();
            let stable_lag = log
                .high_watermark()
                .saturating_sub(log.last_stable_offset());
            if stable_lag > 0 {
                unstable += 1;
                max_stable_lag = max_stable_lag.max(stable_lag);
                if let Some(lag) = &self.stable_lag {
                    let tp = partition.topic_partition();
                    lag.with_label_values(&[&tp.topic, &tp.partition.to_string()])
                        .set(i64::try_from(stable_lag).unwrap_or(i64::MAX));
                }
            }
            if let Some(lag) = &self.follower_lag {
                let tp = partition.topic_partition();
                let index = tp.partition.to_string();
                for (replica, behind) in partition.follower_lags() {
                    lag.with_label_values(&[&tp.topic, &index, &replica.to_string()])
                        .set(behind as i64);
                }
            }
        }
        self.under_replicated.set(under_replicated);
        self.under_min_isr.set(under_min_isr);
        self.leaders.set(leaders);
        self.unstable.set(unstable);
        self.max_stable_lag
            .set(i64::try_from(max_stable_lag).unwrap_or(i64::MAX));
        self.offline.set(offline.unwrap_or(0) as i64);
    }
}
