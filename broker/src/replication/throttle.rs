//! Replication throttles (Kafka's `leader.replication.throttled.rate` and
//! `follower.replication.throttled.rate`, bytes/s, dynamic broker configs): the bytes a
//! leader serves to, and a follower fetches for, the replicas the topics'
//! `*.replication.throttled.replicas` configs name — the replicas a reassignment moves —
//! stay under a rate, so moving data does not starve clients. Other replicas are never
//! throttled.

use std::collections::BTreeMap;
use std::time::Instant;

use parking_lot::Mutex;
use prometheus::IntCounter;

/// The broker configs that can be changed while running (IncrementalAlterConfigs on a
/// broker, or on the cluster-wide broker defaults).
pub const DYNAMIC_BROKER_KEYS: &[&str] = &[
    "follower.replication.throttled.rate",
    "leader.replication.throttled.rate",
];

/// Checks one dynamic broker config: a rate in bytes/s (Kafka's LONG, at least 0).
pub fn validate_dynamic_broker_config(key: &str, value: &str) -> Result<u64, String> {
    if !DYNAMIC_BROKER_KEYS.contains(&key) {
        return Err(format!("`{key}` cannot be changed while the broker runs"));
    }
    value
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|v| i64::try_from(*v).is_ok())
        .ok_or_else(|| format!("invalid value `{value}` for `{key}`: not a LONG of at least 0"))
}

/// The rate in effect for this broker: its own setting, else the cluster default.
pub fn rate_for(
    configs: &BTreeMap<i32, BTreeMap<String, String>>,
    node_id: i32,
    key: &str,
) -> Option<u64> {
    [node_id, -1]
        .iter()
        .find_map(|id| configs.get(id)?.get(key))
        .and_then(|value| value.trim().parse().ok())
}

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

    #[test]
    fn broker_settings_beat_cluster_defaults_and_bad_values_are_refused() {
        let mut configs = BTreeMap::new();
        configs.insert(
            -1,
            BTreeMap::from([(
                "leader.replication.throttled.rate".to_string(),
                "100".to_string(),
            )]),
        );
        assert_eq!(
            rate_for(&configs, 2, "leader.replication.throttled.rate"),
            Some(100)
        );
        configs.insert(
            2,
            BTreeMap::from([(
                "leader.replication.throttled.rate".to_string(),
                "7".to_string(),
            )]),
        );
        assert_eq!(
            rate_for(&configs, 2, "leader.replication.throttled.rate"),
            Some(7)
        );
        assert_eq!(
            rate_for(&configs, 2, "follower.replication.throttled.rate"),
            None
        );
        assert!(validate_dynamic_broker_config("log.retention.ms", "1").is_err());
        assert!(validate_dynamic_broker_config("leader.replication.throttled.rate", "-1").is_err());
        assert_eq!(
            validate_dynamic_broker_config("follower.replication.throttled.rate", "5000"),
            Ok(5000)
        );
    }
}
