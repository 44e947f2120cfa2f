//! DescribeLogDirs: each log directory with its partitions' sizes and, from v4, the
//! file system's total and usable bytes. An offline directory reports
//! KAFKA_STORAGE_ERROR and no partitions. A replica moving to another log directory is
//! listed there too as a "future" replica (`is_future_key`), with the bytes copied so far
//! and, as its offset lag, how far the copy is behind the log's end (Kafka's meaning). A
//! current replica's offset lag is how far its log end is behind the leader's high
//! watermark: 0 on the leader and on a caught-up follower, as in Kafka.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use bytes::Bytes;
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{
    ApiKey, DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName,
};
use kafka_protocol::protocol::{StrBytes, VersionRange};

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::model::TopicPartition;
use crate::security::acl::Operation;

#[derive(Debug)]
pub struct DescribeLogDirsApi;

/// Kafka's value for a volume size it could not read.
const UNKNOWN_VOLUME_BYTES: i64 = -1;

impl Api for DescribeLogDirsApi {
    fn key(&self) -> ApiKey {
        ApiKey::DescribeLogDirs
    }

    /// v5 reports cordoned log directories (KIP-1066): not yet.
    fn versions(&self) -> VersionRange {
        super::up_to(self.key(), 4)
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DescribeLogDirsRequest = context.decode(body)?;
            // Kafka answers an unauthorized DescribeLogDirs with no directories (and, from
            // v3, the error).
            let access = context.access();
            if !access.allows_cluster(Operation::Describe) {
                return context.respond(
                    &DescribeLogDirsResponse::default()
                        .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED),
                );
            }
            // No topic list means every partition.
            let wanted: Option<HashSet<TopicPartition>> = request.topics.map(|topics| {
                topics
                    .iter()
                    .flat_map(|t| {
                        t.partitions
                            .iter()
                            .map(|p| TopicPartition::new(t.topic.0.to_string(), *p))
                    })
                    .collect()
            });
            let results = context
                .broker
                .replicas
                .describe_log_dirs(wanted.as_ref())
                .into_iter()
                .map(|dir| {
                    let path = dir.path.as_path();
                    let result = DescribeLogDirsResult::default()
                        .with_log_dir(StrBytes::from_string(absolute(path)))
                        .with_total_bytes(UNKNOWN_VOLUME_BYTES)
                        .with_usable_bytes(UNKNOWN_VOLUME_BYTES);
                    if dir.offline {
                        return result.with_error_code(errors::KAFKA_STORAGE_ERROR);
                    }
                    let mut topics: BTreeMap<&str, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
                    for held in &dir.replicas {
                        let tp = &held.topic_partition;
                        topics.entry(tp.topic.as_str()).or_default().push(replica(
                            tp.partition,
                            held.size_bytes,
                            held.offset_lag,
                            held.future,
                        ));
                    }
                    let topics = topics
                        .into_iter()
                        .map(|(name, mut partitions)| {
                            partitions.sort_by_key(|p| p.partition_index);
                            DescribeLogDirsTopic::default()
                                .with_name(TopicName(StrBytes::from_string(name.to_string())))
                                .with_partitions(partitions)
                        })
                        .collect();
                    let (total, usable) = volume_bytes(path);
                    result
                        .with_topics(topics)
                        .with_total_bytes(total)
                        .with_usable_bytes(usable)
                })
                .collect();
            context.respond(&DescribeLogDirsResponse::default().with_results(results))
        })
    }
}

fn replica(partition: i32, size: u64, lag: u64, future: bool) -> DescribeLogDirsPartition {
    DescribeLogDirsPartition::default()
        .with_partition_index(partition)
        .with_partition_size(i64::try_from(size).unwrap_or(i64::MAX))
        .with_offset_lag(i64::try_from(lag).unwrap_or(i64::MAX))
        .with_is_future_key(future)
}

/// The directory as an absolute path, as Kafka reports log dirs.
fn absolute(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// Total and usable bytes of the file system holding `path`.
fn volume_bytes(path: &Path) -> (i64, i64) {
    match nix::sys::statvfs::statvfs(path) {
        Ok(stats) => {
            let fragment = stats.fragment_size();
            let bytes =
                |blocks: u64| i64::try_from(blocks.saturating_mul(fragment)).unwrap_or(i64::MAX);
            (bytes(stats.blocks()), bytes(stats.blocks_available()))
        }
        Err(error) => {
            tracing::warn!(dir = %path.display(), %error, "Cannot read the log directory's volume size");
            (UNKNOWN_VOLUME_BYTES, UNKNOWN_VOLUME_BYTES)
        }
    }
}
