//! The runtime: loads a coordinator's partition when this broker becomes its leader and
//! unloads it when it stops, one change at a time in the order the images made them (so a
//! partition lost and led again is unloaded before it is loaded afresh), and drives the
//! coordinators' timers.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::loader::{self, CoordinatorRecord};
pub use crate::replication::LeadershipChange;
use crate::replication::ReplicaManager;

/// How often the coordinators' timers run (sessions, rebalances, offset expiry).
const TICK: Duration = Duration::from_millis(100);

/// The publisher's end of the runtime's channel.
pub type LeadershipChanges = mpsc::UnboundedSender<LeadershipChange>;

/// A coordinator whose state lives in the partitions of one internal topic.
pub trait CoordinatorShard: Send + Sync + std::fmt::Debug {
    /// The internal topic whose partitions hold this coordinator's state.
    fn topic(&self) -> &'static str;
    /// This broker leads `partition` in `leader_epoch`: its state is `records`, in log
    /// order (state from an earlier leadership is replaced).
    fn load(&self, partition: i32, leader_epoch: i32, records: Vec<CoordinatorRecord>);
    /// This broker no longer leads `partition`: its state goes, another broker
    /// coordinates it.
    fn unload(&self, partition: i32);
    /// The timer: called every 100 ms.
    fn tick(&self) {}
}

#[derive(Debug)]
pub struct CoordinatorRuntime {
    replicas: Arc<ReplicaManager>,
    shards: Vec<Arc<dyn CoordinatorShard>>,
}

impl CoordinatorRuntime {
    pub fn new(replicas: Arc<ReplicaManager>, shards: Vec<Arc<dyn CoordinatorShard>>) -> Self {
        Self { replicas, shards }
    }

    /// Applies the publisher's leadership changes and runs the timers until shutdown.
    pub async fn run(
        self,
        mut changes: mpsc::UnboundedReceiver<LeadershipChange>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut ticker = tokio::time::interval(TICK);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // A node that is no broker has no publisher: its channel is closed from the start.
        let mut publishing = true;
        loop {
            tokio::select! {
                change = changes.recv(), if publishing => match change {
                    Some(change) => self.apply(change).await,
                    None => publishing = false,
                },
                _ = ticker.tick() => {
                    for shard in &self.shards {
                        shard.tick();
                    }
                }
                _ = shutdown.changed() => return,
            }
        }
    }

    async fn apply(&self, change: LeadershipChange) {
        let tp = change.topic_partition;
        let Some(shard) = self.shards.iter().find(|s| s.topic() == tp.topic) else {
            return;
        };
        if !change.leading {
            shard.unload(tp.partition);
            return;
        }
        let Some(replica) = self.replicas.partition(&tp) else {
            tracing::warn!(topic_partition = %tp, "A coordinator partition led here has no replica; not loaded");
            return;
        };
        let leader_epoch = replica.role().leader_epoch;
        let shard = Arc::clone(shard);
        // Reading a partition back is file I/O: off the runtime's worker threads.
        let loaded = tokio::task::spawn_blocking(move || {
            let records = loader::read(&replica);
            shard.load(tp.partition, leader_epoch, records);
        })
        .await;
        if let Err(error) = loaded {
            tracing::error!(%error, "Loading a coordinator partition failed");
        }
    }
}
