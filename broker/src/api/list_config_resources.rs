//! ListConfigResources (KIP-1142; v0 was ListClientMetricsResources): the names of the
//! resources that have configs, by type — what `kafka-configs --describe` of a whole entity
//! type (`--entity-type topics|brokers|groups|client-metrics` without a name) lists first.
//!
//! As Kafka: the principal needs DESCRIBE_CONFIGS on the cluster; no types asked means every
//! type this broker lists; a type it does not list is refused with UNSUPPORTED_VERSION, the
//! whole request. v0 knows client metrics only. Oxbow keeps configs for topics and brokers;
//! groups and client-metrics subscriptions are types Kafka lists, of which Oxbow has none
//! (no group configs or client-metrics resources can be set here), so they are listed and
//! empty. Broker loggers (type 8) are not: Oxbow has no per-logger configs to describe.

use bytes::Bytes;
use kafka_protocol::messages::list_config_resources_response::ConfigResource;
use kafka_protocol::messages::{ApiKey, ListConfigResourcesRequest, ListConfigResourcesResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::metadata::image::ClusterImage;
use crate::security::acl::Operation;

const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const CLIENT_METRICS: i8 = 16;
const GROUP: i8 = 32;

#[derive(Debug)]
pub struct ListConfigResourcesApi;

impl Api for ListConfigResourcesApi {
    fn key(&self) -> ApiKey {
        ApiKey::ListConfigResources
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: ListConfigResourcesRequest = context.decode(body)?;
            let access = context.access();
            let response = if access.allows_cluster(Operation::DescribeConfigs) {
                let image = context.broker.controller.image();
                list(&request, context.version, &image, context.listener)
            } else {
                ListConfigResourcesResponse::default()
                    .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED)
            };
            context.respond(&response)
        })
    }
}

/// The types a request at `version` may ask for, and lists when it asks for none.
fn listed_types(version: i16) -> &'static [i8] {
    if version == 0 {
        &[CLIENT_METRICS]
    } else {
        &[TOPIC, BROKER, CLIENT_METRICS, GROUP]
    }
}

/// The answer from `image` for a client on `listener` (brokers are listed by their node id
/// when they are live and have an address on that listener, as Kafka lists them).
fn list(
    request: &ListConfigResourcesRequest,
    version: i16,
    image: &ClusterImage,
    listener: &str,
) -> ListConfigResourcesResponse {
    let listed = listed_types(version);
    let asked: &[i8] = if request.resource_types.is_empty() {
        listed
    } else {
        &request.resource_types
    };
    if let Some(unlisted) = asked.iter().find(|t| !listed.contains(t)) {
        tracing::info!(
            resource_type = unlisted,
            "ListConfigResources refused: a resource type this broker does not list"
        );
        return ListConfigResourcesResponse::default().with_error_code(errors::UNSUPPORTED_VERSION);
    }
    let resource = |name: String, resource_type: i8| {
        ConfigResource::default()
            .with_resource_name(StrBytes::from_string(name))
            .with_resource_type(resource_type)
    };
    let mut resources = Vec::new();
    // Kafka's order: groups, client metrics, broker loggers, brokers, topics.
    if asked.contains(&BROKER) {
        resources.extend(
            image
                .live_brokers()
                .filter(|b| b.endpoint_for(listener).is_some())
                .map(|b| resource(b.node_id.to_string(), BROKER)),
        );
    }
    if asked.contains(&TOPIC) {
        resources.extend(
            image
                .topics
                .keys()
                .map(|name| resource(name.clone(), TOPIC)),
        );
    }
    ListConfigResourcesResponse::default().with_config_resources(resources)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::image::BrokerImage;
    use crate::metadata::records::Endpoint;
    use crate::metadata::testing;

    /// Topics with one partition each on broker 1; brokers 1 and 2 live on PLAINTEXT,
    /// 3 fenced, 4 only on another listener.
    fn image_with(topics: &[&str]) -> ClusterImage {
        let partitions: &[&[i32]] = &[&[1]];
        let named: Vec<(&str, &[&[i32]])> = topics.iter().map(|t| (*t, partitions)).collect();
        let mut image = testing::image(&named);
        let endpoint = Endpoint {
            host: "127.0.0.1".into(),
            port: 9092,
        };
        for (node_id, fenced, listener) in [
            (1, false, "PLAINTEXT"),
            (2, false, "PLAINTEXT"),
            (3, true, "PLAINTEXT"),
            (4, false, "INTERNAL"),
        ] {
            image.brokers.insert(
                node_id,
                BrokerImage {
                    node_id,
                    incarnation: uuid::Uuid::nil(),
                    endpoint: endpoint.clone(),
                    rack: None,
                    fenced,
                    listeners: [(listener.to_string(), endpoint.clone())].into(),
                    supported_features: None,
                },
            );
        }
        image
    }

    fn names(response: &ListConfigResourcesResponse) -> Vec<(String, i8)> {
        response
            .config_resources
            .iter()
            .map(|r| (r.resource_name.to_string(), r.resource_type))
            .collect()
    }

    #[test]
    fn none_asked_lists_brokers_and_topics() {
        let image = image_with(&["orders", "audit"]);
        let response = list(
            &ListConfigResourcesRequest::default(),
            1,
            &image,
            "PLAINTEXT",
        );
        assert_eq!(response.error_code, 0);
        assert_eq!(
            names(&response),
            [
                ("1".to_string(), BROKER),
                ("2".to_string(), BROKER),
                ("audit".to_string(), TOPIC),
                ("orders".to_string(), TOPIC)
            ]
        );
    }

    #[test]
    fn asked_types_only_and_empty_ones_listed_empty() {
        let image = image_with(&["orders"]);
        let topics = ListConfigResourcesRequest::default().with_resource_types(vec![TOPIC]);
        assert_eq!(
            names(&list(&topics, 1, &image, "PLAINTEXT")),
            [("orders".to_string(), TOPIC)]
        );
        let none =
            ListConfigResourcesRequest::default().with_resource_types(vec![GROUP, CLIENT_METRICS]);
        let response = list(&none, 1, &image, "PLAINTEXT");
        assert_eq!((response.error_code, names(&response)), (0, vec![]));
        // v0 (ListClientMetricsResources) knows client metrics only.
        let v0 = list(
            &ListConfigResourcesRequest::default(),
            0,
            &image,
            "PLAINTEXT",
        );
        assert_eq!((v0.error_code, names(&v0)), (0, vec![]));
    }

    #[test]
    fn an_unlisted_type_refuses_the_request() {
        let image = image_with(&["orders"]);
        for types in [vec![8], vec![TOPIC, 8], vec![1], vec![-1]] {
            let request = ListConfigResourcesRequest::default().with_resource_types(types);
            let response = list(&request, 1, &image, "PLAINTEXT");
            assert_eq!(response.error_code, errors::UNSUPPORTED_VERSION);
            assert!(response.config_resources.is_empty());
        }
    }
}
