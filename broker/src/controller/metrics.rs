//! The metadata quorum's metrics, read from this node's Raft state and image at scrape
//! time: whether this node is the active controller, its Raft term and indexes, how far
//! each voter lags the active controller, and how many brokers are fenced. An operator
//! alerts on "no active controller" (the sum over nodes is not 1) and on fenced brokers.

use prometheus::{IntGauge, IntGaugeVec, Opts, Registry};

use super::Controller;

#[derive(Debug)]
pub struct ControllerMetrics {
    active: IntGauge,
    term: IntGauge,
    commit_index: IntGauge,
    applied_index: IntGauge,
    voter_lag: IntGaugeVec,
    fenced_brokers: IntGauge,
}

impl ControllerMetrics {
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let gauge = |name: &str, help: &str| -> Result<IntGauge, prometheus::Error> {
            let metric = IntGauge::new(name, help)?;
            registry.register(Box::new(metric.clone()))?;
            Ok(metric)
        };
        let voter_lag = IntGaugeVec::new(
            Opts::new(
                "oxbow_controller_raft_voter_lag_entries",
                "On the active controller: metadata log entries each voter is behind it.",
            ),
            &["voter"],
        )?;
        registry.register(Box::new(voter_lag.clone()))?;
        Ok(Self {
            active: gauge(
                "oxbow_controller_active",
                "1 on the node that is the active controller, 0 elsewhere.",
            )?,
            term: gauge(
                "oxbow_controller_raft_term",
                "Raft term of this voter (0 on brokers that are not voters).",
            )?,
            commit_index: gauge(
                "oxbow_controller_raft_commit_index",
                "Highest metadata log index known committed: a quorum's match on the active controller, the applied index elsewhere.",
            )?,
            applied_index: gauge(
                "oxbow_controller_raft_applied_index",
                "Metadata log index this node has applied to its image.",
            )?,
            voter_lag,
            fenced_brokers: gauge(
                "oxbow_controller_fenced_brokers",
                "On the active controller: registered brokers that are fenced.",
            )?,
        })
    }

    pub fn refresh(&self, controller: &Controller) {
        let node_id = controller.node_id();
        let active = controller.controller_id() == Some(node_id);
        self.active.set(i64::from(active));
        let view = controller.feed.current();
        let applied = i64::try_from(view.applied_index).unwrap_or(i64::MAX);
        self.applied_index.set(applied);
        self.fenced_brokers.set(if active {
            view.image.brokers.values().filter(|b| b.fenced).count() as i64
        } else {
            0
        });
        self.voter_lag.reset();
        let Some(raft) = controller.raft() else {
            self.commit_index.set(applied);
            return;
        };
        let metrics = raft.metrics().borrow().clone();
        self.term
            .set(i64::try_from(metrics.current_term).unwrap_or(i64::MAX));
        let leads = u64::try_from(node_id)
            .is_ok_and(|id| super::quorum::known_leader(&metrics, id) == Some(id));
        let last = metrics.last_log_index.unwrap_or(0);
        let matched: Vec<(u64, u64)> = match (&metrics.replication, leads) {
            (Some(replication), true) => metrics
                .membership_config
                .voter_ids()
                .map(|id| {
                    let index = if Some(id) == u64::try_from(node_id).ok() {
                        last
                    } else {
                        replication
                            .get(&id)
                            .copied()
                            .flatten()
                            .map_or(0, |log_id| log_id.index)
                    };
                    (id, index)
                })
                .collect(),
            _ => Vec::new(),
        };
        for (voter, index) in &matched {
            self.voter_lag
                .with_label_values(&[&voter.to_string()])
                .set(i64::try_from(last.saturating_sub(*index)).unwrap_or(i64::MAX));
        }
        let mut indexes: Vec<u64> = matched.iter().map(|(_, index)| *index).collect();
        indexes.sort_unstable_by(|a, b| b.cmp(a));
        // The largest index a majority of voters hold.
        let committed = indexes
            .get(indexes.len() / 2)
            .map_or(applied, |index| i64::try_from(*index).unwrap_or(i64::MAX));
        self.commit_index.set(committed.max(applied));
    }
}
