//! Delivery reports: a producer context that times every message from send to acknowledgement.
//!
//! The per-message opaque is the send time as nanoseconds since the run's start `Instant`,
//! so no allocation is made per message.

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

#[derive(Debug)]
pub struct DeliveryContext {
    start: Instant,
    stats: Mutex<DeliveryStats>,
}

impl DeliveryContext {
    pub fn new(start: Instant, expected: u64) -> Self {
        DeliveryContext {
            start,
            stats: Mutex::new(DeliveryStats {
                latencies: Latencies::with_capacity(usize::try_from(expected).unwrap_or(0)),
                ..DeliveryStats::default()
            }),
        }
    }

    /// The opaque to attach to a message sent now.
    pub fn send_stamp(&self) -> usize {
        usize::try_from(self.start.elapsed().as_nanos()).unwrap_or(usize::MAX)
    }

    pub fn take_stats(&self) -> DeliveryStats {
        std::mem::take(&mut *self.stats.lock())
    }
}

impl ClientContext for DeliveryContext {}

impl ProducerContext for DeliveryContext {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, sent_at_nanos: usize) {
        let now = self.start.elapsed();
        let sent_at = Duration::from_nanos(u64::try_from(sent_at_nanos).unwrap_or(u64::MAX));
        let mut stats = self.stats.lock();
        match result {
            Ok(_) => {
                stats.acknowledged += 1;
                stats.latencies.record(now.saturating_sub(sent_at));
                stats.last_ack = now;
            }
            Err((error, _)) => {
                stats.errors += 1;
                if stats.first_error.is_none() {
                    stats.first_error = Some(error.to_string());
                }
            }
        }
    }
}
