//! Replication: Kafka's ISR model between the API handlers and storage.
//!
//! ```text
//!   publisher ── image ──► ReplicaManager::apply_image
//!                            ├─ Partition::apply      role, epochs, ISR (per partition)
//!                            └─ FetcherPool::assign   one fetcher per leader broker
//!   Produce ──► Partition::append_records ──► min.insync.replicas, record validation
//!                                          ──► Log::append (stamped with the epoch)
//!   Fetch ──► ReplicaManager::fetch_records ──► epoch divergence, throttles, the read
//!     (replica id) ──► Partition::record_follower_fetch ──► high watermark, ISR joins
//!     (consumer with a rack, at the leader) ──► read_replica::select ──► a follower
//!                                               in its rack serves it (KIP-392)
//!   ListOffsets, OffsetForLeaderEpoch, DeleteRecords ──► partition::offsets
//!   DescribeLogDirs, AlterReplicaLogDirs ──► log_dirs
//!
//! This is the only door the API handlers have to partition data: `Partition::log` is
//! replication's own, and the replica manager does not hand out its `LogManager` (start-up
//! gives it only to the publisher, the group coordinator and the metrics endpoint).
//!   timer ──► Partition::check_lagging ──► IsrProposal ──► controller (AlterPartition)
//! ```
//!
//! The controller decides every ISR change; a leader only proposes, naming its leader
//! and partition epochs, so a stale leader's proposal is refused.

mod fetch_records;
mod fetcher;
mod high_watermarks;
mod log_dirs;
mod metrics;
mod partition;
mod read_replica;
#[cfg(test)]
pub(crate) mod testing;
mod throttle;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::ResponseError;
use parking_lot::RwLock;
use tokio::sync::{mpsc, watch};

pub use fetch_records::FetchParams;
pub use metrics::ReplicationMetrics;
pub use partition::offsets::DeleteRecordsError;
pub use partition::{AppendError, CommitWait, IsrProposal, Partition, Transition};
pub use read_replica::preferred_read_replica;

use crate::config::ReplicationConfig;
use crate::metadata::image::ClusterImage;
use crate::metadata::records::Endpoint;
use crate::metadata::scope::Scope;
use crate::peers::PeerClient;
use crate::storage::{Clock, LogManager, TopicPartition};
use fetcher::{Assignment, FetcherPool, Following};

/// Why a replica answers a request with an error: a Kafka error code decided by
/// replication, or the log's own error (the API maps it to a code).
#[derive(Debug)]
pub enum Refusal {
    Code(i16),
    Log(crate::storage::LogError),
}

/// Which replica may serve a request: the leader only, or any replica (consumers of Fetch
/// v11+ may read from followers, KIP-392).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving {
    Leader,
    AnyReplica,
}

/// Every partition replica on this broker.
#[derive(Debug)]
pub struct ReplicaManager {
    node_id: i32,
    config: ReplicationConfig,
    logs: Arc<LogManager>,
    clock: Arc<dyn Clock>,
    partitions: RwLock<HashMap<TopicPartition, Arc<Partition>>>,
    fetchers: FetcherPool,
    /// What the fetchers should follow, by leader, as of the last image applied.
    wanted: parking_lot::Mutex<HashMap<i32, (Endpoint, Assignment)>>,
    proposals: mpsc::UnboundedSender<IsrProposal>,
    /// High watermarks found at start-up, used once when a partition is first seen.
    checkpointed: parking_lot::Mutex<HashMap<TopicPartition, u64>>,
    pub metrics: metrics::ReplicationMetrics,
    /// Replication throttles (rates from the dynamic broker configs in the image).
    pub throttles: Arc<throttle::Throttles>,
}

/// This broker started (`leading`) or stopped leading a partition, as an image made it
/// (the coordinator runtime loads and unloads its partitions with these).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadershipChange {
    pub topic_partition: TopicPartition,
    pub leading: bool,
}

impl ReplicaManager {
    /// The replica manager over `logs`, and the stream of ISR changes its leaders propose
    /// (the caller sends them to the controller).
    pub fn new(
        node_id: i32,
        config: ReplicationConfig,
        logs: Arc<LogManager>,
        clock: Arc<dyn Clock>,
        metrics: metrics::ReplicationMetrics,
        peers: Arc<PeerClient>,
        shutdown: watch::Receiver<bool>,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<IsrProposal>) {
        let mut checkpointed = HashMap::new();
        for dir in logs.log_dirs() {
            match high_watermarks::read(dir.path()) {
                Ok(found) => checkpointed.extend(found),
                Err(error) => {
                    tracing::warn!(dir = %dir.path().display(), %error, "Ignoring an unreadable high-watermark checkpoint")
                }
            }
        }
        let (proposals, receiver) = mpsc::unbounded_channel();
        let throttles = Arc::new(throttle::Throttles {
            leader: throttle::Quota::new(metrics.throttled_bytes.with_label_values(&["leader"])),
            follower: throttle::Quota::new(
                metrics.throttled_bytes.with_label_values(&["follower"]),
            ),
        });
        let manager = Arc::new(Self {
            node_id,
            fetchers: FetcherPool::new(
                node_id,
                config.clone(),
                metrics.bytes_in.clone(),
                Arc::clone(&throttles),
                peers,
                shutdown,
            ),
            throttles,
            metrics,
            config,
            logs,
            clock,
            partitions: RwLock::new(HashMap::new()),
            wanted: parking_lot::Mutex::new(HashMap::new()),
            proposals,
            checkpointed: parking_lot::Mutex::new(checkpointed),
        });
        (manager, receiver)
    }

    pub fn node_id(&self) -> i32 {
        self.node_id
    }

    pub fn config(&self) -> &ReplicationConfig {
        &self.config
    }

    pub fn partition(&self, topic_partition: &TopicPartition) -> Option<Arc<Partition>> {
        self.partitions.read().get(topic_partition).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Partition>> {
        self.partitions.read().values().cloned().collect()
    }

    /// The partition, if this broker leads it in the client's epoch (`-1`: any).
    pub fn leader(
        &self,
        topic_partition: &TopicPartition,
        current_leader_epoch: i32,
    ) -> Result<(Arc<Partition>, i32), i16> {
        self.serving(topic_partition, current_leader_epoch, Serving::Leader)
    }

    /// The partition and its leader epoch, if this broker may serve `who` for it in the
    /// client's epoch.
    pub fn serving(
        &self,
        topic_partition: &TopicPartition,
        current_leader_epoch: i32,
        who: Serving,
    ) -> Result<(Arc<Partition>, i32), i16> {
        let partition = self
            .partition(topic_partition)
            .ok_or(ResponseError::NotLeaderOrFollower.code())?;
        let epoch = match who {
            Serving::Leader => partition.check_leader(current_leader_epoch)?,
            Serving::AnyReplica => partition.check_replica(current_leader_epoch)?,
        };
        Ok((partition, epoch))
    }

    /// Hands an ISR change to the controller.
    pub fn propose(&self, proposal: IsrProposal) {
        if self.proposals.send(proposal).is_err() {
            tracing::debug!("No one takes ISR proposals (shutting down)");
        }
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Gives every partition hosted here in `scope` its role from `image` and points the
    /// fetchers at the leaders. Called by the publisher after it created the logs; what is
    /// outside `scope` is unchanged since the last call, so it is left as it is. Returns the
    /// partitions this broker started or stopped leading, in the order it took them up.
    pub fn apply_image(&self, image: &ClusterImage, scope: &Scope) -> Vec<LeadershipChange> {
        let now = self.clock.now_ms();
        self.throttles
            .leader
            .set_rate(crate::metadata::dynamic_configs::rate_for(
                &image.broker_configs,
                self.node_id,
                "leader.replication.throttled.rate",
            ));
        self.throttles
            .follower
            .set_rate(crate::metadata::dynamic_configs::rate_for(
                &image.broker_configs,
                self.node_id,
                "follower.replication.throttled.rate",
            ));
        let mut changes = Vec::new();
        let mut seen = HashMap::new();
        let mut followed: Vec<(i32, TopicPartition, Following)> = Vec::new();
        for topic in scope.topics(image) {
            for (index, state) in topic.partitions.iter().enumerate() {
                if !state.replicas.contains(&self.node_id) {
                    continue;
                }
                let tp = TopicPartition::new(topic.name.clone(), index as i32);
                let Some(partition) = self.partition_for(&tp) else {
                    continue;
                };
                match partition.apply(state, now) {
                    Ok(Transition::BecameLeader { epoch, was_leader }) => {
                        tracing::info!(topic_partition = %tp, epoch, isr = ?state.in_sync_replicas, "Leading");
                        if !was_leader {
                            changes.push(LeadershipChange {
                                topic_partition: tp.clone(),
                                leading: true,
                            });
                        }
                    }
                    Ok(Transition::BecameFollower { leader, epoch }) => {
                        tracing::info!(topic_partition = %tp, leader, epoch, "Following");
                        changes.push(LeadershipChange {
                            topic_partition: tp.clone(),
                            leading: false,
                        });
                    }
                    Ok(Transition::Unchanged) => {}
                    Err(error) => {
                        tracing::error!(topic_partition = %tp, %error, "Cannot take up the partition's new role");
                    }
                }
                if state.leader >= 0 && state.leader != self.node_id {
                    followed.push((
                        state.leader,
                        tp.clone(),
                        Following {
                            partition: Arc::clone(&partition),
                            leader_epoch: state.leader_epoch,
                        },
                    ));
                }
                seen.insert(tp, partition);
            }
        }
        match scope {
            Scope::Everything => *self.partitions.write() = seen,
            Scope::Topics(_) => {
                let mut partitions = self.partitions.write();
                partitions.retain(|tp, _| !scope.covers(&tp.topic));
                partitions.extend(seen);
            }
        }
        let mut wanted = self.wanted.lock();
        match scope {
            Scope::Everything => wanted.clear(),
            Scope::Topics(_) => {
                for (_, assignment) in wanted.values_mut() {
                    assignment.retain(|tp, _| !scope.covers(&tp.topic));
                }
            }
        }
        for (leader, tp, following) in followed {
            // A leader the image does not know (yet) has no address to fetch from.
            let Some(broker) = image.brokers.get(&leader) else {
                continue;
            };
            wanted
                .entry(leader)
                .or_insert_with(|| (broker.endpoint.clone(), BTreeMap::new()))
                .1
                .insert(tp, following);
        }
        wanted.retain(|_, (_, assignment)| !assignment.is_empty());
        self.fetchers.assign(&wanted);
        changes
    }

    /// The partition of a hosted log (its `Partition` is made once, when first seen).
    fn partition_for(&self, tp: &TopicPartition) -> Option<Arc<Partition>> {
        let log = self.logs.get(tp)?;
        if let Some(existing) = self.partition(tp)
            && Arc::ptr_eq(existing.log(), &log)
        {
            return Some(existing);
        }
        let partition = Arc::new(Partition::new(tp.clone(), self.node_id, Arc::clone(&log)));
        // A restart resumes from the checkpointed high watermark: never past what was
        // committed, never hiding what was.
        let high_watermark = self.checkpointed.lock().remove(tp).unwrap_or(0);
        partition.restore_high_watermark(high_watermark);
        Some(partition)
    }

    /// Leaders' periodic duty: followers that fell behind leave the ISR.
    pub fn check_lagging(&self) {
        let now = self.clock.now_ms();
        for partition in self.all() {
            if let Some(proposal) = partition.check_lagging(now, self.config.lag_time_max_ms) {
                self.propose(proposal);
            }
        }
    }

    /// Writes every log directory's `replication-offset-checkpoint`.
    pub fn checkpoint_high_watermarks(&self) {
        let mut by_dir: HashMap<std::path::PathBuf, Vec<(TopicPartition, u64)>> = HashMap::new();
        for partition in self.all() {
            let log = partition.log();
            let partition_dir = log.dir();
            let Some(dir) = partition_dir.parent() else {
                continue;
            };
            by_dir
                .entry(dir.to_path_buf())
                .or_default()
                .push((partition.topic_partition().clone(), log.high_watermark()));
        }
        for dir in self.logs.log_dirs() {
            if dir.is_offline() {
                continue;
            }
            let entries = by_dir.remove(dir.path()).unwrap_or_default();
            if let Err(error) = high_watermarks::write(dir.path(), &entries) {
                tracing::error!(dir = %dir.path().display(), %error, "Cannot checkpoint high watermarks");
            }
        }
    }

    /// Runs the ISR checks and high-watermark checkpoints until shutdown, then writes a
    /// last checkpoint and stops the fetchers.
    pub async fn run_timers(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let lag_check =
            Duration::from_millis((self.config.lag_time_max_ms / 2).clamp(10, 1000) as u64);
        let checkpoint_every =
            Duration::from_millis(self.config.high_watermark_checkpoint_interval_ms);
        let mut lag_ticker = tokio::time::interval(lag_check);
        let mut checkpoint_ticker = tokio::time::interval(checkpoint_every);
        lag_ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        checkpoint_ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = lag_ticker.tick() => self.check_lagging(),
                _ = checkpoint_ticker.tick() => {
                    let manager = Arc::clone(&self);
                    let _ = tokio::task::spawn_blocking(move || manager.checkpoint_high_watermarks()).await;
                }
                _ = shutdown.changed() => break,
            }
        }
        self.fetchers.stop_all();
        let manager = Arc::clone(&self);
        let _ = tokio::task::spawn_blocking(move || manager.checkpoint_high_watermarks()).await;
    }
}
