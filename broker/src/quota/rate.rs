//! What a quota sensor measures: a token bucket that fills at the quota's rate and holds at
//! most one window's worth. A request takes its bytes (or its share of request time) from
//! it; a bucket in debt earns a throttle of the time the debt takes to repay.
//!
//! Kafka measures a sampled rate over 11 one-second windows, padded to ten while young.
//! Under a client that pushes as fast as it may, that admits ten seconds' worth at once
//! and again each time a burst's window expires: a producer held to 1 MiB/s by it
//! averaged 1.3 MiB/s over 30 s with 1 MB batches. The bucket holds the same clients to
//! the quota within one window's worth over any period, and answers with the same
//! `throttle_time_ms` and muting.

#[derive(Debug, Clone)]
pub struct Rate {
    /// Most a bucket holds, in seconds of the quota.
    burst_seconds: f64,
    /// The longest single throttle (Kafka caps a throttle at its whole sampled window).
    max_throttle_ms: u64,
    /// Negative: the debt not yet repaid.
    tokens: Option<f64>,
    refilled_ms: u64,
    pub last_record_ms: u64,
}

impl Rate {
    pub fn new(window_ms: u64, samples: usize) -> Self {
        Self {
            burst_seconds: window_ms as f64 / 1000.0,
            max_throttle_ms: window_ms * samples as u64,
            tokens: None,
            refilled_ms: 0,
            last_record_ms: 0,
        }
    }

    /// Takes `value` at `now_ms` from a bucket filling at `bound_per_second`; the throttle
    /// in ms it earns.
    pub fn record(&mut self, now_ms: u64, value: f64, bound_per_second: f64) -> u64 {
        self.last_record_ms = now_ms;
        if bound_per_second <= 0.0 {
            return 0;
        }
        let capacity = bound_per_second * self.burst_seconds;
        let tokens = match self.tokens {
            None => capacity,
            Some(tokens) => {
                let elapsed = now_ms.saturating_sub(self.refilled_ms) as f64 / 1000.0;
                (tokens + elapsed * bound_per_second).min(capacity)
            }
        };
        self.refilled_ms = now_ms;
        let left = tokens - value;
        self.tokens = Some(left);
        if left >= 0.0 {
            return 0;
        }
        let throttle = (-left / bound_per_second * 1000.0).ceil() as u64;
        throttle.min(self.max_throttle_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_admits_one_window_then_throttles_the_debt() {
        let mut rate = Rate::new(1000, 11);
        assert_eq!(rate.record(0, 1000.0, 1000.0), 0, "one window's worth");
        assert_eq!(rate.record(0, 500.0, 1000.0), 500, "half a second of debt");
        assert_eq!(
            rate.record(500, 0.0, 1000.0),
            0,
            "repaid after the throttle"
        );
    }

    #[test]
    fn a_client_pushing_as_fast_as_allowed_averages_the_quota() {
        let mut rate = Rate::new(1000, 11);
        let (mut now, mut sent) = (0u64, 0.0);
        // 1 MB requests against 100 KB/s, each sent as soon as the throttle allows.
        while now < 300_000 {
            sent += 1_000_000.0;
            now += rate.record(now, 1_000_000.0, 100_000.0).max(1);
        }
        let average = sent / (now as f64 / 1000.0);
        assert!((average - 100_000.0).abs() < 5_000.0, "{average}");
    }

    #[test]
    fn one_huge_request_is_throttled_at_most_the_window_and_repaid_later() {
        let mut rate = Rate::new(1000, 11);
        assert_eq!(rate.record(0, 1e9, 1000.0), 11_000);
        assert!(rate.record(11_000, 1.0, 1000.0) > 0, "the debt remains");
    }
}
