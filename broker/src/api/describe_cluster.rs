//! DescribeCluster: the cluster id, the active controller and the brokers (AdminClient's
//! `describeCluster`). Brokers are asked for broker endpoints; controller endpoints are
//! served by controller listeners, as in Kafka.

use bytes::Bytes;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{ApiKey, BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use super::admin::AdminError;
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::security::acl::{CLUSTER_NAME, Operation, ResourceType};

#[derive(Debug)]
pub struct DescribeClusterApi;

/// Kafka's endpoint types.
const ENDPOINT_BROKERS: i8 = 1;

/// Kafka's value for "authorized operations not requested".
const OPERATIONS_NOT_REQUESTED: i32 = i32::MIN;

impl Api for DescribeClusterApi {
    fn key(&self) -> ApiKey {
        ApiKey::DescribeCluster
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DescribeClusterRequest = context.decode(body)?;
            let broker = context.broker;
            let endpoint_type = if context.version >= 1 {
                request.endpoint_type
            } else {
                ENDPOINT_BROKERS
            };
            let response = DescribeClusterResponse::default()
                .with_endpoint_type(endpoint_type)
                .with_cluster_id(StrBytes::from_string(broker.controller.cluster_id()))
                // As Kafka in KRaft mode: the "controller" given to clients is a live
                // broker (this one), which forwards admin requests to the active
                // controller. Naming the active controller would strand admin clients on
                // it after a failover; kafka-metadata-quorum (DescribeQuorum) names it.
                .with_controller_id(BrokerId(broker.config.node_id))
                .with_cluster_authorized_operations(
                    // KIP-430: only for a principal that may describe the cluster.
                    if request.include_cluster_authorized_operations {
                        let access = context.access();
                        if access.sees(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME) {
                            access.operations(ResourceType::Cluster, CLUSTER_NAME)
                        } else {
                            0
                        }
                    } else {
                        OPERATIONS_NOT_REQUESTED
                    },
                );
            if endpoint_type != ENDPOINT_BROKERS {
                let error = AdminError::UnsupportedEndpointType(endpoint_type);
                return context.respond(
                    &response
                        .with_error_code(errors::admin_error(&error))
                        .with_error_message(Some(StrBytes::from_string(error.to_string())))
                        .with_controller_id(BrokerId(-1)),
                );
            }
            let include_fenced = request.include_fenced_brokers;
            let response = response.with_brokers(
                broker
                    .controller
                    .image()
                    .brokers
                    .values()
                    .filter(|b| include_fenced || !b.fenced)
                    .filter_map(|b| {
                        let endpoint = b.endpoint_for(context.listener)?;
                        Some(
                            DescribeClusterBroker::default()
                                .with_broker_id(BrokerId(b.node_id))
                                .with_host(StrBytes::from_string(endpoint.host.clone()))
                                .with_port(i32::from(endpoint.port))
                                .with_rack(b.rack.clone().map(StrBytes::from_string))
                                .with_is_fenced(b.fenced),
                        )
                    })
                    .collect(),
            );
            context.respond(&response)
        })
    }
}
