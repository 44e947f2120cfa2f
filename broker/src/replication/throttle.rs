//! Replication throttles (Kafka's `leader.replication.throttled.rate` and
//! `follower.replication.throttled.rate`, bytes/s, dynamic broker configs): the bytes a
//! leader serves to, and a follower fetches for, the replicas the topics'
//! `*.replication.throttled.replicas` configs name — the replicas a reassignment moves —
//! stay under a rate, so moving data does not starve clients. Other replicas are never
//! throttled.

use std::time::Instant;

use parking_lot::Mutex;
use prometheus::IntCounter;

/// A byte budget refilled at `rate` per second, holding at most one second's worth: a
/// transfer is allowed while the budget is not overdrawn, and charged afterwards (so a
/// rate is kept on average over a few seconds, as Kafka's quota windows do).
#[derive(Debug)]
pub struct Quota {
    state: Mutex<QuotaState>,
    pub throttled_bytes: IntCounter,
}

#[derive(Debug)]
struct QuotaState {
    rate: Option<u64>,
    budget: f64,
    at: Instant,
}

impl Quota {
    pub fn new(throttled_bytes: IntCounter) -> Self {
        Self {
            state: Mutex::new(QuotaState {
                rate: None,
                budget: 0.0,
                at: Instant::now(),
            }),
            throttled_bytes,
        }
    }

    pub fn set_rate(&self, rate: Option<u64>) {
        let mut state = self.state.lock();
        if state.rate != rate {
            if let Some(rate) = rate {
                tracing::info!(rate, "Replication throttle set (bytes/s)");
            }
            state.rate = rate;
            state.budget = 0.0;
            state.at = Instant::now();
        }
    }

    fn refill(state: &mut QuotaState) {
        let now = Instant::now();
        if let Some(rate) = state.rate {
            let elapsed = now.duration_since(state.at).as_secs_f64();
            state.budget = (state.budget + elapsed * rate as f64).min(rate as f64);
        }
        state.at = now;
    }

    /// Whether a throttled replica must wait now.
    pub fn exceeded(&self) -> bool {
        let mut state = self.state.lock();
        Self::refill(&mut state);
        state.rate.is_some() && state.budget < 0.0
    }

    /// Charges `bytes` moved for throttled replicas.
    pub fn record(&self, bytes: u64) {
        self.throttled_bytes.inc_by(bytes);
        let mut state = self.state.lock();
        Self::refill(&mut state);
        if state.rate.is_some() {
            state.budget -= bytes as f64;
        }
    }
}

/// The two throttles of one broker.
#[derive(Debug)]
pub struct Throttles {
    pub leader: Quota,
    pub follower: Quota,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counter() -> IntCounter {
        IntCounter::new("t", "t").unwrap()
    }

    #[test]
    fn a_quota_allows_about_its_rate() {
        let quota = Quota::new(counter());
        assert!(!quota.exceeded(), "no rate: never exceeded");
        quota.record(u64::MAX / 2);
        assert!(!quota.exceeded());
        quota.set_rate(Some(1_000_000));
        quota.record(600_000);
        assert!(
            quota.exceeded(),
            "the first second's bytes overdraw an empty budget"
        );
        std::thread::sleep(std::time::Duration::from_millis(700));
        assert!(!quota.exceeded(), "refilled at the rate");
        quota.set_rate(None);
        quota.record(10_000_000);
        assert!(!quota.exceeded());
    }
}
