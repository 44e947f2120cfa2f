//! The log directories as DescribeLogDirs and AlterReplicaLogDirs (KIP-113) see them: which
//! replicas each directory holds, with their sizes and lags, and moving a replica to
//! another directory.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::ReplicaManager;
use crate::storage::{LogManagerError, TopicPartition};

/// One log directory and the replicas in it.
#[derive(Debug)]
pub struct LogDirReport {
    pub path: PathBuf,
    pub offline: bool,
    pub replicas: Vec<ReplicaInDir>,
}

/// A replica in a log directory: its own log, or the copy moving into this directory (a
/// future replica, in Kafka's words).
#[derive(Debug)]
pub struct ReplicaInDir {
    pub topic_partition: TopicPartition,
    pub size_bytes: u64,
    /// Own log: behind the leader's log end (0 on the leader); a moving copy: behind its
    /// source log's end.
    pub offset_lag: u64,
    pub future: bool,
}

impl ReplicaManager {
    /// Every log directory with the replicas in it (those `wanted` names, or all).
    pub fn describe_log_dirs(&self, wanted: Option<&HashSet<TopicPartition>>) -> Vec<LogDirReport> {
        let logs = self.logs.all();
        self.logs
            .log_dirs()
            .iter()
            .map(|dir| {
                let path = dir.path();
                let mut report = LogDirReport {
                    path: path.to_path_buf(),
                    offline: dir.is_offline(),
                    replicas: Vec::new(),
                };
                if report.offline {
                    return report;
                }
                for log in &logs {
                    let tp = log.topic_partition();
                    if wanted.is_some_and(|w| !w.contains(tp)) {
                        continue;
                    }
                    if log.dir().parent() == Some(path) {
                        report.replicas.push(ReplicaInDir {
                            topic_partition: tp.clone(),
                            size_bytes: log.size_bytes(),
                            offset_lag: self.partition(tp).map_or(0, |p| p.offset_lag()),
                            future: false,
                        });
                    }
                    let moving = self
                        .logs
                        .placement(tp)
                        .and_then(|p| p.moving)
                        .filter(|m| m.target().path() == path);
                    if let Some(moving) = moving {
                        report.replicas.push(ReplicaInDir {
                            topic_partition: tp.clone(),
                            size_bytes: moving.copied_bytes(),
                            offset_lag: log.log_end_offset().saturating_sub(moving.copied_offset()),
                            future: true,
                        });
                    }
                }
                report
            })
            .collect()
    }

    /// Moves `topic_partition`'s replica to the log directory `destination`.
    pub fn move_replica(
        &self,
        topic_partition: &TopicPartition,
        destination: &Path,
    ) -> Result<(), LogManagerError> {
        self.logs.move_replica(topic_partition, destination)
    }
}
