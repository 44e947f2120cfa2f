//! WriteTxnMarkers: the transaction coordinator's COMMIT or ABORT markers, written by each
//! partition's leader as a control batch of the producer's transaction and acknowledged
//! once the in-sync replicas have it (as `acks=all`), per partition.
//!
//! The partition's replica manager does the writing (`Partition::append_marker`, through
//! [`crate::txn::markers`], which the local coordinator uses too); the last stable offset
//! and the aborted-transaction index follow from the marker in the log, and a marker on a
//! `__consumer_offsets` partition settles the transaction's offsets. Only brokers
//! (CLUSTER_ACTION on the cluster) may send it.

use bytes::Bytes;
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{ApiKey, WriteTxnMarkersRequest, WriteTxnMarkersResponse};
use kafka_protocol::protocol::VersionRange;
use tokio::time::Instant;

use super::lookup::leader_partition;
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::model::TopicPartition;
use crate::security::acl::Operation;
use crate::txn::markers::{MARKER_TIMEOUT, MarkerSpec};

#[derive(Debug)]
pub struct WriteTxnMarkersApi;

impl Api for WriteTxnMarkersApi {
    fn key(&self) -> ApiKey {
        ApiKey::WriteTxnMarkers
    }

    /// v2 carries each marker's transaction version (KIP-1228): not yet.
    fn versions(&self) -> VersionRange {
        super::up_to(self.key(), 1)
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: WriteTxnMarkersRequest = context.decode(body)?;
            let allowed = context.access().allows_cluster(Operation::ClusterAction);
            let deadline = Instant::now() + MARKER_TIMEOUT;
            let mut markers = Vec::with_capacity(request.markers.len());
            for marker in &request.markers {
                let codes = write_marker(context, marker, allowed, deadline).await;
                let mut codes = codes.into_iter();
                let mut topics = Vec::with_capacity(marker.topics.len());
                for topic in &marker.topics {
                    let partitions = topic
                        .partition_indexes
                        .iter()
                        .map(|&index| {
                            WritableTxnMarkerPartitionResult::default()
                                .with_partition_index(index)
                                .with_error_code(
                                    codes.next().unwrap_or(errors::UNKNOWN_SERVER_ERROR),
                                )
                        })
                        .collect();
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

/// Writes one marker to each of its partitions, then waits for their in-sync replicas
/// (their replication overlaps); each partition's code, in the request's order.
async fn write_marker(
    context: &RequestContext<'_>,
    marker: &kafka_protocol::messages::write_txn_markers_request::WritableTxnMarker,
    allowed: bool,
    deadline: Instant,
) -> Vec<i16> {
    let spec = MarkerSpec {
        producer_id: marker.producer_id.0,
        producer_epoch: marker.producer_epoch,
        commit: marker.transaction_result,
        coordinator_epoch: marker.coordinator_epoch,
    };
    // Each partition's code, or `None` while its marker is to be written.
    let mut codes: Vec<Option<i16>> = Vec::new();
    let mut led = Vec::new();
    for topic in &marker.topics {
        for &index in &topic.partition_indexes {
            let tp = TopicPartition::new(topic.name.0.to_string(), index);
            // UNKNOWN_TOPIC_OR_PARTITION and NOT_LEADER_OR_FOLLOWER as every partition
            // API says them.
            let refused = if allowed {
                leader_partition(context.broker, &tp, -1).err()
            } else {
                Some(errors::CLUSTER_AUTHORIZATION_FAILED)
            };
            if refused.is_none() {
                led.push(tp);
            }
            codes.push(refused);
        }
    }
    let mut written = context
        .broker
        .transactions
        .markers()
        .write_local_all(led, spec, deadline)
        .await
        .into_iter();
    codes
        .into_iter()
        .map(|code| {
            code.unwrap_or_else(|| {
                written
                    .next()
                    .map_or(errors::UNKNOWN_SERVER_ERROR, |(_, outcome)| {
                        outcome.map_or_else(
                            |failure| errors::marker_error(&failure),
                            |()| errors::NONE,
                        )
                    })
            })
        })
        .collect()
}
