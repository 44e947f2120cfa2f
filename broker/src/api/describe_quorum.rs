//! DescribeQuorum: the metadata quorum's leader, epoch, high watermark, voters and
//! observers (what `kafka-metadata-quorum describe --status` and `--replication` show).
//! Any broker answers, asking the active controller when it is not one itself. The
//! metadata log is Raft's, so offsets are Raft log indexes and the epoch is the term.

use bytes::Bytes;
use kafka_protocol::messages::describe_quorum_response::{
    Listener, Node, PartitionData, ReplicaState, TopicData,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, DescribeQuorumRequest, DescribeQuorumResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::security::acl::Operation;

/// Kafka's name of the metadata log.
const METADATA_TOPIC: &str = "__cluster_metadata";

#[derive(Debug)]
pub struct DescribeQuorumApi;

impl Api for DescribeQuorumApi {
    fn key(&self) -> ApiKey {
        ApiKey::DescribeQuorum
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DescribeQuorumRequest = context.decode(body)?;
            let access = context.access();
            if !access.allows_cluster(Operation::Describe) {
                return context.respond(
                    &DescribeQuorumResponse::default()
                        .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED)
                        .with_error_message(access.cluster_denied(Operation::Describe)),
                );
            }
            let asks_metadata = request.topics.iter().any(|t| {
                t.topic_name.0.as_str() == METADATA_TOPIC
                    && t.partitions.iter().any(|p| p.partition_index == 0)
            });
            if !asks_metadata {
                return context.respond(
                    &DescribeQuorumResponse::default()
                        .with_error_code(errors::INVALID_REQUEST)
                        .with_error_message(Some(StrBytes::from_static_str(
                            "only __cluster_metadata partition 0 has a quorum",
                        ))),
                );
            }
            let status = match context.broker.controller.describe_quorum().await {
                Ok(status) => status,
                Err(error) => {
                    return context.respond(
                        &DescribeQuorumResponse::default()
                            .with_error_code(errors::controller_error(&error))
                            .with_error_message(Some(StrBytes::from_string(error.to_string()))),
                    );
                }
            };
            let replica = |id: i32, log_end: Option<u64>| {
                let directory = status
                    .nodes
                    .get(&id)
                    .and_then(|(_, directory)| *directory)
                    .unwrap_or_default();
                ReplicaState::default()
                    .with_replica_id(BrokerId(id))
                    .with_replica_directory_id(directory)
                    .with_log_end_offset(log_end.map_or(-1, |i| i as i64 + 1))
                    .with_last_fetch_timestamp(-1)
                    .with_last_caught_up_timestamp(-1)
            };
            let partition = PartitionData::default()
                .with_partition_index(0)
                .with_leader_id(BrokerId(status.leader_id))
                .with_leader_epoch(i32::try_from(status.term).unwrap_or(i32::MAX))
                .with_high_watermark(status.high_watermark as i64 + 1)
                .with_current_voters(
                    status
                        .voters
                        .iter()
                        .map(|(id, matched)| replica(*id, *matched))
                        .collect(),
                )
                .with_observers(
                    status
                        .observers
                        .iter()
                        .map(|(id, applied)| replica(*id, Some(*applied)))
                        .collect(),
                );
            // v2 lists the voters' controller endpoints.
            let listener_name = super::raft_voters::controller_names(context)
                .into_iter()
                .next()
                .unwrap_or_else(|| "CONTROLLER".to_string());
            let nodes = status
                .nodes
                .iter()
                .filter_map(|(id, (address, _))| {
                    let (host, port) = address.rsplit_once(':')?;
                    Some(
                        Node::default()
                            .with_node_id(BrokerId(*id))
                            .with_listeners(vec![
                                Listener::default()
                                    .with_name(StrBytes::from_string(listener_name.clone()))
                                    .with_host(StrBytes::from_string(host.to_string()))
                                    .with_port(port.parse().ok()?),
                            ]),
                    )
                })
                .collect();
            context.respond(
                &DescribeQuorumResponse::default()
                    .with_topics(vec![
                        TopicData::default()
                            .with_topic_name(TopicName(StrBytes::from_static_str(METADATA_TOPIC)))
                            .with_partitions(vec![partition]),
                    ])
                    .with_nodes(nodes),
            )
        })
    }
}
