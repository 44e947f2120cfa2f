//! ApiVersions: the versions of every API in the route table.
//!
//! A request newer than the broker knows is answered as Kafka does: with
//! UNSUPPORTED_VERSION in the v0 format, listing the supported ranges, so the client
//! can retry with a version both sides speak.
//!
//! v3+ also carries the features: `transaction.version` supported 0–2 and finalized at
//! the broker's `transaction.version`. Kafka 4 clients use transaction version 2
//! (KIP-890 part 2) only when it is finalized at 2; below it the transactional APIs'
//! version 2 requests (EndTxn v5, AddPartitionsToTxn v5, TxnOffsetCommit v5) are not
//! offered.

use std::sync::LazyLock;

use bytes::Bytes;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, ApiError, HandlerFuture, RequestContext, errors};

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

/// Kafka's name of the transaction protocol feature.
pub const TRANSACTION_VERSION_FEATURE: &str = "transaction.version";

/// The epoch of the finalized features: when this broker process started, so a client
/// that saw a broker restarted with another `transaction.version` takes the newer answer
/// (clients keep the features of the highest epoch they were told).
static FINALIZED_FEATURES_EPOCH: LazyLock<i64> = LazyLock::new(|| {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
});

/// ApiVersions for a client at `version`, with the cluster's `transaction_version`.
pub fn response(version: i16, transaction_version: i16) -> ApiVersionsResponse {
    let mut response = supported_versions(0);
    if transaction_version < crate::txn::metadata::TV2 {
        for api in &mut response.api_keys {
            if [
                ApiKey::EndTxn as i16,
                ApiKey::AddPartitionsToTxn as i16,
                ApiKey::TxnOffsetCommit as i16,
            ]
            .contains(&api.api_key)
            {
                api.max_version = api.max_version.min(4);
            }
        }
    }
    // Before v4 a feature whose lowest supported level is 0 is left out (the schema's
    // rule, which Kafka follows).
    if version >= 4 {
        response.supported_features = vec![
            SupportedFeatureKey::default()
                .with_name(StrBytes::from_static_str(TRANSACTION_VERSION_FEATURE))
                .with_min_version(0)
                .with_max_version(crate::txn::metadata::TV2),
        ];
    }
    response.finalized_features_epoch = *FINALIZED_FEATURES_EPOCH;
    if transaction_version > 0 {
        response.finalized_features = vec![
            FinalizedFeatureKey::default()
                .with_name(StrBytes::from_static_str(TRANSACTION_VERSION_FEATURE))
                .with_min_version_level(transaction_version)
                .with_max_version_level(transaction_version),
        ];
    }
    response
}

impl Api for ApiVersionsApi {
    fn key(&self) -> ApiKey {
        ApiKey::ApiVersions
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, _body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            // The body carries only the client's name and version (v3+); nothing to act on.
            context.respond(&response(
                context.version,
                context.broker.transactions.version(),
            ))
        })
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
