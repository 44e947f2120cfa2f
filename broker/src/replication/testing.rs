//! Replicas for tests above replication: real logs in a directory, this broker (node 1)
//! the only replica and the leader of every partition of the given topics.

use std::sync::Arc;

use super::{LeadershipChange, ReplicaManager, ReplicationMetrics};
use crate::metadata::scope::Scope;
use crate::metadata::testing::image;
use crate::model::TopicPartition;
use crate::storage::{Clock, LogConfig, LogManager};

/// The replica manager over the logs in `dir` (created on first use) of `partitions`
/// partitions of `topic`, all led here, and the leadership changes that made them so.
pub fn leading_all(
    dir: &std::path::Path,
    clock: Arc<dyn Clock>,
    topic: &str,
    partitions: i32,
) -> (Arc<ReplicaManager>, Vec<LeadershipChange>) {
    let (logs, _) = LogManager::open(
        &[dir.to_path_buf()],
        &|_| LogConfig::default(),
        Arc::clone(&clock),
    )
    .unwrap();
    for partition in 0..partitions {
        let tp = TopicPartition::new(topic, partition);
        if logs.get(&tp).is_none() {
            logs.create(tp, LogConfig::default()).unwrap();
        }
    }
    let (_, shutdown) = tokio::sync::watch::channel(false);
    let (replicas, _) = ReplicaManager::new(
        1,
        crate::config::BrokerConfig::load(&[], Vec::new(), &[])
            .unwrap()
            .replication,
        Arc::new(logs),
        clock,
        ReplicationMetrics::new(&prometheus::Registry::new(), false).unwrap(),
        Default::default(),
        shutdown,
    );
    let only_here: Vec<&[i32]> = vec![&[1]; partitions as usize];
    let changes = replicas.apply_image(&image(&[(topic, &only_here)]), &Scope::Everything);
    (replicas, changes)
}
