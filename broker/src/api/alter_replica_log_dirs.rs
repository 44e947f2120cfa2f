//! AlterReplicaLogDirs: moves replicas between this broker's `log.dirs` while they serve
//! (see `storage::relocation`). Kafka's answers: LOG_DIR_NOT_FOUND for a path that is not
//! one of the `log.dirs`, KAFKA_STORAGE_ERROR for an offline one,
//! UNKNOWN_TOPIC_OR_PARTITION for a partition the cluster does not have, and
//! NOT_LEADER_OR_FOLLOWER for one this broker holds no replica of yet (the directory is
//! remembered: the replica is created there, and `kafka-reassign-partitions` asks again).

use std::path::Path;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
};
use kafka_protocol::messages::{AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, ApiKey};

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::security::acl::Operation;
use crate::storage::{LogManagerError, TopicPartition};

#[derive(Debug)]
pub struct AlterReplicaLogDirsApi;

impl Api for AlterReplicaLogDirsApi {
    fn key(&self) -> ApiKey {
        ApiKey::AlterReplicaLogDirs
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: AlterReplicaLogDirsRequest = context.decode(body)?;
            let broker = context.broker;
            let image = broker.controller.image();
            let allowed = context.access().allows_cluster(Operation::Alter);
            let mut results: Vec<AlterReplicaLogDirTopicResult> = Vec::new();
            for dir in &request.dirs {
                let destination = Path::new(dir.path.as_str());
                for topic in &dir.topics {
                    let mut partitions = Vec::new();
                    for partition in &topic.partitions {
                        let tp = TopicPartition::new(topic.name.0.to_string(), *partition);
                        let code = if !allowed {
                            errors::CLUSTER_AUTHORIZATION_FAILED
                        } else if image.partition(&tp.topic, tp.partition).is_none() {
                            errors::UNKNOWN_TOPIC_OR_PARTITION
                        } else {
                            match broker.replicas.move_replica(&tp, destination) {
                                Ok(()) => {
                                    tracing::info!(topic_partition = %tp, to = %destination.display(), "AlterReplicaLogDirs");
                                    errors::NONE
                                }
                                Err(error) => {
                                    tracing::info!(topic_partition = %tp, to = %destination.display(), %error, "AlterReplicaLogDirs refused");
                                    move_error(&error)
                                }
                            }
                        };
                        partitions.push(
                            AlterReplicaLogDirPartitionResult::default()
                                .with_partition_index(*partition)
                                .with_error_code(code),
                        );
                    }
                    results.push(
                        AlterReplicaLogDirTopicResult::default()
                            .with_topic_name(topic.name.clone())
                            .with_partitions(partitions),
                    );
                }
            }
            context.respond(&AlterReplicaLogDirsResponse::default().with_results(results))
        })
    }
}

fn move_error(error: &LogManagerError) -> i16 {
    match error {
        LogManagerError::UnknownLogDir(_) => ResponseError::LogDirNotFound.code(),
        LogManagerError::NotHosted(_) => errors::NOT_LEADER_OR_FOLLOWER,
        LogManagerError::Log(error) => errors::log_error(error),
        LogManagerError::LogDirOffline(_)
        | LogManagerError::AllDirsOffline
        | LogManagerError::NoLogDirs
        | LogManagerError::CreateDir { .. }
        | LogManagerError::Lock(_)
        | LogManagerError::AlreadyExists(_) => errors::KAFKA_STORAGE_ERROR,
    }
}
