//! ApiVersions: the versions of every API in the route table.
//!
//! A request newer than the broker knows is answered as Kafka does: with
//! UNSUPPORTED_VERSION in the v0 format, listing the supported ranges, so the client
//! can retry with a version both sides speak.
//!
//! v3+ also carries the features: the levels this binary runs and the levels the metadata
//! log finalized (`metadata::features`), with the log index of their last change as the
//! epoch. Kafka 4 clients use transaction version 2 (KIP-890 part 2) only when it is
//! finalized at 2; below it the transactional APIs' version 2 requests (EndTxn v5,
//! AddPartitionsToTxn v5, TxnOffsetCommit v5) are not offered.
//!
//! v5 (KIP-1242) carries the cluster id and node id the client means to reach, both or
//! neither: one without the other is INVALID_REQUEST, and ids that are not this node's
//! REBOOTSTRAP_REQUIRED (its metadata is stale: the address now belongs to another node or
//! cluster), as Kafka 4.4 answers.

use bytes::Bytes;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, ApiError, HandlerFuture, RequestContext, errors};
use crate::metadata::features::{self, FinalizedFeatures};

#[derive(Debug)]
pub struct ApiVersionsApi;

/// The response body listing every route's versions.
pub fn supported_versions(error_code: i16) -> ApiVersionsResponse {
    // Only the version ranges are read: no fetch session slots needed.
    let routes = super::routes(0);
    ApiVersionsResponse::default()
        .with_error_code(error_code)
        .with_api_keys(
            routes
                .version_ranges()
                .into_iter()
                .map(|(key, min, max)| {
                    ApiVersion::default()
                        .with_api_key(key)
                        .with_min_version(min)
                        .with_max_version(max)
                })
                .collect(),
        )
}

/// ApiVersions for a client at `version`, with the cluster's finalized feature levels.
pub fn response(version: i16, finalized: &FinalizedFeatures) -> ApiVersionsResponse {
    let mut response = supported_versions(0);
    let transaction_version = finalized.level(features::TRANSACTION_VERSION);
    let capped = |api: &ApiVersion| -> Option<i16> {
        let key = ApiKey::try_from(api.api_key).ok()?;
        match key {
            ApiKey::EndTxn | ApiKey::AddPartitionsToTxn | ApiKey::TxnOffsetCommit
                if transaction_version < crate::txn::metadata::TV2 =>
            {
                Some(4)
            }
            _ => None,
        }
    };
    for api in &mut response.api_keys {
        if let Some(max) = capped(api) {
            api.max_version = api.max_version.min(max);
        }
    }
    // Without group.version 1 the consumer group protocol is off, and its APIs are not
    // listed (as Kafka leaves them out), so clients keep to the classic protocol.
    if finalized.level(features::GROUP_VERSION) < 1 {
        response.api_keys.retain(|api| {
            api.api_key != ApiKey::ConsumerGroupHeartbeat as i16
                && api.api_key != ApiKey::ConsumerGroupDescribe as i16
        });
    }
    // Before v4 a feature whose lowest supported level is 0 is left out (the schema's
    // rule, which Kafka follows).
    response.supported_features = features::supported()
        .into_iter()
        .filter(|(_, (min, _))| version >= 4 || *min > 0)
        .map(|(name, (min, max))| {
            SupportedFeatureKey::default()
                .with_name(StrBytes::from_string(name))
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect();
    response.finalized_features_epoch = finalized.epoch;
    response.finalized_features = finalized
        .levels
        .iter()
        .filter(|(_, level)| **level > 0)
        .map(|(name, level)| {
            FinalizedFeatureKey::default()
                .with_name(StrBytes::from_string(name.clone()))
                .with_min_version_level(*level)
                .with_max_version_level(*level)
        })
        .collect();
    response
}

impl Api for ApiVersionsApi {
    fn key(&self) -> ApiKey {
        ApiKey::ApiVersions
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: ApiVersionsRequest = context.decode(body)?;
            let broker = context.broker;
            if let Some(code) = refusal(
                &request,
                context.version,
                &broker.controller.cluster_id(),
                broker.config.node_id,
            ) {
                tracing::info!(
                    cluster_id = ?request.cluster_id,
                    node_id = request.node_id,
                    code,
                    "ApiVersions refused: the ids the client names are not this node's"
                );
                return context.respond(&ApiVersionsResponse::default().with_error_code(code));
            }
            context.respond(&response(
                context.version,
                &broker
                    .controller
                    .image()
                    .features
                    .or_bootstrap(broker.config.transactions.version),
            ))
        })
    }
}

/// Why a v5+ request naming the cluster and node it means to reach is refused, if it is.
fn refusal(
    request: &ApiVersionsRequest,
    version: i16,
    cluster_id: &str,
    node_id: i32,
) -> Option<i16> {
    if version < 5 {
        return None;
    }
    match &request.cluster_id {
        None if request.node_id == -1 => None,
        Some(_) if request.node_id == -1 => Some(errors::INVALID_REQUEST),
        None => Some(errors::INVALID_REQUEST),
        Some(asked) if asked.as_str() != cluster_id || request.node_id != node_id => {
            Some(kafka_protocol::ResponseError::RebootstrapRequired.code())
        }
        Some(_) => None,
    }
}

/// The v0-format answer to an ApiVersions request of an unknown, newer version.
pub fn unsupported_version_response() -> Result<bytes::BytesMut, ApiError> {
    let mut bytes = bytes::BytesMut::new();
    kafka_protocol::protocol::Encodable::encode(
        &supported_versions(errors::UNSUPPORTED_VERSION),
        &mut bytes,
        0,
    )
    .map_err(|error| ApiError::Encode {
        api: ApiKey::ApiVersions,
        version: 0,
        reason: error.to_string(),
    })?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {

    use super::*;

    fn naming(cluster_id: Option<&str>, node_id: i32) -> ApiVersionsRequest {
        ApiVersionsRequest::default()
            .with_cluster_id(cluster_id.map(|c| StrBytes::from_string(c.to_string())))
            .with_node_id(node_id)
    }

    #[test]
    fn v5_refuses_another_nodes_ids_and_half_of_them() {
        let check = |request: &ApiVersionsRequest| refusal(request, 5, "oxbow-cluster", 2);
        assert_eq!(check(&naming(None, -1)), None, "naming neither is fine");
        assert_eq!(check(&naming(Some("oxbow-cluster"), 2)), None);
        let rebootstrap = kafka_protocol::ResponseError::RebootstrapRequired.code();
        assert_eq!(check(&naming(Some("oxbow-cluster"), 3)), Some(rebootstrap));
        assert_eq!(check(&naming(Some("another"), 2)), Some(rebootstrap));
        assert_eq!(
            check(&naming(Some("oxbow-cluster"), -1)),
            Some(errors::INVALID_REQUEST)
        );
        assert_eq!(check(&naming(None, 2)), Some(errors::INVALID_REQUEST));
        // Before v5 the fields do not exist on the wire: nothing to check.
        assert_eq!(
            refusal(&naming(Some("another"), 3), 4, "oxbow-cluster", 2),
            None
        );
    }
}
