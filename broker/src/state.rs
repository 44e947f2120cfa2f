//! Everything a request handler can reach: configuration, metadata, logs, metrics and
//! the wake-ups that parked fetches wait on.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch;

use crate::config::BrokerConfig;
use crate::controller::Controller;
use crate::group::GroupCoordinator;
use crate::metrics::Metrics;
use crate::storage::{LogManager, TopicPartition};

/// The broker's shared state.
#[derive(Debug)]
pub struct BrokerState {
    pub config: BrokerConfig,
    pub controller: Arc<Controller>,
    pub logs: Arc<LogManager>,
    pub groups: Arc<GroupCoordinator>,
    pub metrics: Arc<Metrics>,
    pub appends: AppendNotifier,
    /// Flips to true when the broker starts shutting down: parked fetches return.
    pub shutting_down: watch::Receiver<bool>,
    /// Whether the Kafka listener is bound (it opens once the broker is unfenced).
    pub serving: std::sync::atomic::AtomicBool,
}

/// One watch channel per partition carrying its log end offset, so a parked fetch
/// wakes on the appends it cares about and nothing else (no polling).
#[derive(Debug, Default)]
pub struct AppendNotifier {
    channels: Mutex<HashMap<TopicPartition, watch::Sender<u64>>>,
}

impl AppendNotifier {
    pub fn subscribe(&self, topic_partition: &TopicPartition) -> watch::Receiver<u64> {
        self.channels
            .lock()
            .entry(topic_partition.clone())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    pub fn appended(&self, topic_partition: &TopicPartition, log_end_offset: u64) {
        if let Some(sender) = self.channels.lock().get(topic_partition) {
            sender.send_replace(log_end_offset);
        }
    }
}
