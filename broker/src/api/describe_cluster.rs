//! DescribeCluster: the cluster id, the active controller and the brokers (AdminClient's
//! `describeCluster`). Brokers are asked for broker endpoints; controller endpoints are
//! served by controller listeners, as in Kafka.

use bytes::Bytes;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{ApiKey, BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use super::admin::{AdminError, CLUSTER_OPERATIONS};
use super::{Api, HandlerFuture, RequestContext, errors};

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
            let config = &broker.config;
            let endpoint_type = if context.version >= 1 {
                request.endpoint_type
            } else {
                ENDPOINT_BROKERS
            };
            let response = DescribeClusterResponse::default()
                .with_endpoint_type(endpoint_type)
                .with_cluster_id(StrBytes::from_string(broker.controller.cluster_id()))
                .with_controller_id(BrokerId(config.node_id))
                .with_cluster_authorized_operations(
                    if request.include_cluster_authorized_operations {
                        CLUSTER_OPERATIONS
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
            let response = response.with_brokers(vec![
                DescribeClusterBroker::default()
                    .with_broker_id(BrokerId(config.node_id))
                    .with_host(StrBytes::from_string(config.advertised_host.clone()))
                    .with_port(i32::from(config.advertised_port))
                    .with_rack(config.rack.clone().map(StrBytes::from_string))
                    .with_is_fenced(false),
            ]);
            context.respond(&response)
        })
    }
}
