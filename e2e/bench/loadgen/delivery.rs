//! Delivery reports: a producer context that counts every acknowledgement and times messages
//! from send to acknowledgement.
//!
//! The per-message opaque is the send time as nanoseconds since the run's start `Instant`,
//! so no allocation is made per message; `UNTIMED` marks a message sent without a time
//! (produce mode times one message in `TIME_EVERY`).

use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rdkafka::ClientContext;
use rdkafka::producer::{DeliveryResult, ProducerContext};

use crate::histogram::Latencies;

/// What the delivery callbacks of one producer saw.
#[derive(Debug, Default)]
pub struct DeliveryStats {
    pub latencies: Latencies,
    pub acknowledged: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Time of the last acknowledgement, since the run's start.
    pub last_ack: Duration,
}

/// The opaque of a message whose acknowledgement is counted but not timed.
pub const UNTIMED: usize = usize::MAX;

#[derive(Debug)]
pub struct DeliveryContext {
    start: Instant,
    /// Messages this producer will send: the report that completes them is timed as the last.
    expected: u64,
    stats: Mutex<DeliveryStats>,
}

impl DeliveryContext {
    pub fn new(start: Instant, expected: u64) -> Self {
        DeliveryContext {
            start,
            expected,
            stats: Mutex::new(DeliveryStats {
                latencies: Latencies::with_capacity(usize::try_from(expected).unwrap_or(0)),
                ..DeliveryStats::default()
            }),
        }
    }

    /// The opaque to attach to a message sent now.
    pub fn send_stamp(&self) -> usize {
        usize::try_from(self.start.elapsed().as_nanos()).unwrap_or(UNTIMED - 1)
    }

    pub fn take_stats(&self) -> DeliveryStats {
        std::mem::take(&mut *self.stats.lock())
    }
}

impl ClientContext for DeliveryContext {}

impl ProducerContext for DeliveryContext {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, sent_at_nanos: usize) {
        let mut stats = self.stats.lock();
        match result {
            Ok(_) => {
                stats.acknowledged += 1;
                if sent_at_nanos != UNTIMED {
                    let sent_at = Duration::from_nanos(sent_at_nanos as u64);
                    let now = self.start.elapsed();
                    stats.latencies.record(now.saturating_sub(sent_at));
                    stats.last_ack = now;
                }
            }
            Err((error, _)) => {
                stats.errors += 1;
                if stats.first_error.is_none() {
                    stats.first_error = Some(error.to_string());
                }
            }
        }
        if stats.acknowledged + stats.errors == self.expected {
            stats.last_ack = self.start.elapsed();
        }
    }
}
