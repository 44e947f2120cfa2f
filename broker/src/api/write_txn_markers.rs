//! WriteTxnMarkers: the transaction coordinator's COMMIT or ABORT markers, written by each
//! partition's leader as a control batch of the producer's transaction and acknowledged
//! once the in-sync replicas have it (as `acks=all`), per partition.
//!
//! The partition's replica manager does the writing ([`Partition::append_marker`]); the
//! last stable offset and the aborted-transaction index follow from the marker in the
//! log. Only brokers (CLUSTER_ACTION on the cluster) may send it.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{ApiKey, WriteTxnMarkersRequest, WriteTxnMarkersResponse};
use tokio::time::Instant;

use super::lookup::leader_partition;
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::replication::CommitWait;
use crate::security::acl::Operation;
use crate::storage::TopicPartition;

/// How long a marker waits for the in-sync replicas (Kafka uses `request.timeout.ms`).
const MARKER_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct WriteTxnMarkersApi;

impl Api for WriteTxnMarkersApi {
    fn key(&self) -> ApiKey {
        ApiKey::WriteTxnMarkers
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: WriteTxnMarkersRequest = context.decode(body)?;
            let allowed = context.access().allows_cluster(Operation::ClusterAction);
            let deadline = Instant::now() + MARKER_TIMEOUT;
            let mut markers = Vec::with_capacity(request.markers.len());
            for marker in &request.markers {
                let mut topics = Vec::with_capacity(marker.topics.len());
                for topic in &marker.topics {
                    let mut partitions = Vec::with_capacity(topic.partition_indexes.len());
                    for &index in &topic.partition_indexes {
                        let code = if allowed {
                            let tp = TopicPartition::new(topic.name.0.to_string(), index);
                            write_one(context, &tp, marker, deadline).await
                        } else {
                            errors::CLUSTER_AUTHORIZATION_FAILED
                        };
                        partitions.push(
                            WritableTxnMarkerPartitionResult::default()
                                .with_partition_index(index)
                                .with_error_code(code),
                        );
                    }
                    topics.push(
                        WritableTxnMarkerTopicResult::default()
                            .with_name(topic.name.clone())
                            .with_partitions(partitions),
                    );
                }
                markers.push(
                    WritableTxnMarkerResult::default()
                        .with_producer_id(marker.producer_id)
                        .with_topics(topics),
                );
            }
            context.respond(&WriteTxnMarkersResponse::default().with_markers(markers))
        })
    }
}

/// Writes one partition's marker and waits for its in-sync replicas; the error code.
async fn write_one(
    context: &RequestContext<'_>,
    tp: &TopicPartition,
    marker: &kafka_protocol::messages::write_txn_markers_request::WritableTxnMarker,
    deadline: Instant,
) -> i16 {
    let (partition, leader_epoch) = match leader_partition(context.broker, tp, -1) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let producer_id = marker.producer_id.0;
    let info = match partition.append_marker(
        producer_id,
        marker.producer_epoch,
        marker.transaction_result,
        marker.coordinator_epoch,
    ) {
        Ok(info) => info,
        Err(error) => {
            tracing::info!(topic_partition = %tp, producer_id, %error, "Transaction marker refused");
            return errors::append_error(&error);
        }
    };
    let waited = partition
        .wait_committed(
            info.last_offset + 1,
            leader_epoch,
            deadline,
            context.broker.shutting_down.clone(),
        )
        .await;
    match waited {
        Ok(()) => 0,
        Err(CommitWait::LeadershipLost) => errors::NOT_LEADER_OR_FOLLOWER,
        Err(CommitWait::TimedOut) => errors::REQUEST_TIMED_OUT,
        Err(CommitWait::NotEnoughReplicasAfterAppend) => errors::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    }
}
