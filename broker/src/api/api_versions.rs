//! ApiVersions: the versions of every API in the route table.
//!
//! A request newer than the broker knows is answered as Kafka does: with
//! UNSUPPORTED_VERSION in the v0 format, listing the supported ranges, so the client
//! can retry with a version both sides speak.

use bytes::Bytes;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

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

impl Api for ApiVersionsApi {
    fn key(&self) -> ApiKey {
        ApiKey::ApiVersions
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, _body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            // The body carries only the client's name and version (v3+); nothing to act on.
            context.respond(&supported_versions(0))
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
