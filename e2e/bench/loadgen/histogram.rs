//! Latency samples and their percentiles (exact: every sample is kept, in microseconds).

use std::time::Duration;

use serde::Serialize;

/// Latency samples in microseconds.
#[derive(Debug, Default)]
pub struct Latencies {
    micros: Vec<u32>,
}

/// Percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Latencies {
    pub fn with_capacity(capacity: usize) -> Self {
        Latencies {
            micros: Vec::with_capacity(capacity),
        }
    }

    pub fn record(&mut self, latency: Duration) {
        self.micros
            .push(u32::try_from(latency.as_micros()).unwrap_or(u32::MAX));
    }

    pub fn merge(&mut self, other: Latencies) {
        self.micros.extend(other.micros);
    }

    pub fn summary(mut self) -> Option<LatencySummary> {
        if self.micros.is_empty() {
            return None;
        }
        self.micros.sort_unstable();
        let sorted = &self.micros;
        let at = |quantile: f64| {
            // Nearest-rank percentile: the smallest sample with at least `quantile` below it.
            let rank = (quantile * sorted.len() as f64).ceil() as usize;
            let index = rank.clamp(1, sorted.len()) - 1;
            sorted.get(index).copied().map_or(0.0, millis)
        };
        Some(LatencySummary {
            count: sorted.len() as u64,
            p50: at(0.50),
            p99: at(0.99),
            p999: at(0.999),
            max: sorted.last().copied().map_or(0.0, millis),
        })
    }
}

fn millis(micros: u32) -> f64 {
    f64::from(micros) / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_one_to_thousand() {
        let mut latencies = Latencies::default();
        for i in 1..=1000u64 {
            latencies.record(Duration::from_micros(i * 1000));
        }
        let summary = latencies.summary().unwrap_or_else(|| unreachable!());
        assert_eq!(summary.count, 1000);
        assert_eq!(summary.p50, 500.0);
        assert_eq!(summary.p99, 990.0);
        assert_eq!(summary.p999, 999.0);
        assert_eq!(summary.max, 1000.0);
    }

    #[test]
    fn empty_has_no_summary() {
        assert!(Latencies::default().summary().is_none());
    }
}
