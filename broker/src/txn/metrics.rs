//! The transaction coordinator's metrics: no per-transactional-id labels (ids are
//! unbounded; `kafka-transactions list` names them).

use prometheus::{IntCounter, IntCounterVec, IntGauge, Opts, Registry};

#[derive(Debug, Clone)]
pub struct TransactionMetrics {
    pub open: IntGauge,
    pub oldest_open_age_ms: IntGauge,
    /// Transactions completed, by `result` (commit / abort).
    pub completed: IntCounterVec,
    pub timed_out: IntCounter,
    pub fenced: IntCounter,
}

impl TransactionMetrics {
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let open = IntGauge::new(
            "oxbow_transactions_open",
            "Ongoing transactions coordinated by this broker.",
        )?;
        let oldest_open_age_ms = IntGauge::new(
            "oxbow_transactions_oldest_open_age_ms",
            "Age of the oldest ongoing transaction coordinated here, ms (0 with none open).",
        )?;
        let completed = IntCounterVec::new(
            Opts::new(
                "oxbow_transactions_completed_total",
                "Transactions whose markers were all written, by result (commit, abort).",
            ),
            &["result"],
        )?;
        let timed_out = IntCounter::new(
            "oxbow_transactions_timed_out_total",
            "Transactions the coordinator aborted past their transaction.timeout.ms.",
        )?;
        let fenced = IntCounter::new(
            "oxbow_transactions_fenced_total",
            "Ongoing transactions aborted because a new producer session of the same transactional.id began.",
        )?;
        registry.register(Box::new(open.clone()))?;
        registry.register(Box::new(oldest_open_age_ms.clone()))?;
        registry.register(Box::new(completed.clone()))?;
        registry.register(Box::new(timed_out.clone()))?;
        registry.register(Box::new(fenced.clone()))?;
        Ok(Self {
            open,
            oldest_open_age_ms,
            completed,
            timed_out,
            fenced,
        })
    }
}
