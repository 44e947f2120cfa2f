//! Everything a request handler can reach: configuration, metadata, the partition
//! replicas (the only door to partition data), groups and metrics.

use std::sync::Arc;

use tokio::sync::watch;

use crate::config::BrokerConfig;
use crate::controller::Controller;
use crate::group::GroupCoordinator;
use crate::metrics::Metrics;
use crate::peers::PeerClient;
use crate::replication::ReplicaManager;
use crate::txn::TransactionCoordinator;

/// The broker's shared state.
#[derive(Debug)]
pub struct BrokerState {
    pub config: BrokerConfig,
    pub controller: Arc<Controller>,
    pub replicas: Arc<ReplicaManager>,
    /// Connections to the other brokers (transaction verification asks their coordinators).
    pub peers: Arc<PeerClient>,
    pub groups: Arc<GroupCoordinator>,
    pub transactions: Arc<TransactionCoordinator>,
    /// Client quota sensors (the quotas themselves are in the cluster image).
    pub quotas: crate::quota::ClientQuotas,
    pub metrics: Arc<Metrics>,
    /// Flips to true when the broker starts shutting down: parked fetches return.
    pub shutting_down: watch::Receiver<bool>,
    /// Whether the Kafka listener is bound (it opens once the broker is unfenced).
    pub serving: std::sync::atomic::AtomicBool,
    /// Brokers fenced a moment ago, still listed in Metadata answers.
    pub recently_fenced: crate::api::metadata::listed_brokers::RecentlyFenced,
}
