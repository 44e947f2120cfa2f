//! From a request frame to a response: header decoding, version negotiation, the route
//! table, metrics. Garbage closes the connection (with a log line), never panics.

use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};
use tracing::Instrument;

use crate::api::{ApiResponse, RequestContext, Routes};
use crate::state::BrokerState;

/// A response ready to write: the encoded response header and the handler's answer.
#[derive(Debug)]
pub struct Response {
    pub header: BytesMut,
    pub body: ApiResponse,
}

/// Smallest request: api key, version, correlation id.
const MIN_REQUEST_BYTES: usize = 8;

/// `Ok(None)`: nothing to send (acks=0). `Err`: close the connection, with the reason.
pub async fn dispatch(
    frame: Bytes,
    state: &Arc<BrokerState>,
    routes: &Routes,
) -> Result<Option<Response>, String> {
    if frame.len() < MIN_REQUEST_BYTES {
        return Err(format!(
            "request frame of {} bytes is too short for a header",
            frame.len()
        ));
    }
    let mut peek = frame.clone();
    let api_key = peek.get_i16();
    let version = peek.get_i16();
    let correlation_id = peek.get_i32();
    let Some(api) = routes.get(api_key) else {
        return Err(format!("unknown or unsupported API key {api_key}"));
    };
    let key = api.key();
    let versions = api.versions();
    if version < versions.min || version > versions.max {
        if key == ApiKey::ApiVersions {
            // Answer in the v0 format so the client can negotiate down.
            let body = crate::api::api_versions::unsupported_version_response()
                .map_err(|e| e.to_string())?;
            let header = encode_header(correlation_id, 0)?;
            return Ok(Some(Response {
                header,
                body: ApiResponse::Encoded(body),
            }));
        }
        state
            .metrics
            .request_errors
            .with_label_values(&[key.as_metric_label(), "35"])
            .inc();
        return Err(format!(
            "{key:?} v{version} is not supported (supported {}..={})",
            versions.min, versions.max
        ));
    }
    let mut body = frame;
    let header = RequestHeader::decode(&mut body, key.request_header_version(version))
        .map_err(|error| format!("cannot decode {key:?} v{version} request header: {error}"))?;
    let started = Instant::now();
    let context = RequestContext {
        broker: state,
        header: &header,
        api: key,
        version,
    };
    let span = tracing::debug_span!(
        "request",
        api = key.as_metric_label(),
        version,
        correlation_id
    );
    let answer = api
        .handle(&context, body)
        .instrument(span)
        .await
        .map_err(|error| error.to_string())?;
    let label = key.as_metric_label();
    state.metrics.requests.with_label_values(&[label]).inc();
    state
        .metrics
        .request_latency
        .with_label_values(&[label])
        .observe(started.elapsed().as_secs_f64());
    if matches!(answer, ApiResponse::None) {
        return Ok(None);
    }
    let header = encode_header(correlation_id, key.response_header_version(version))?;
    Ok(Some(Response {
        header,
        body: answer,
    }))
}

fn encode_header(correlation_id: i32, header_version: i16) -> Result<BytesMut, String> {
    let mut header = BytesMut::new();
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut header, header_version)
        .map_err(|error| format!("cannot encode response header: {error}"))?;
    Ok(header)
}

/// A closed set of metric label values: the API's name.
pub trait MetricLabel {
    fn as_metric_label(&self) -> &'static str;
}

impl MetricLabel for ApiKey {
    fn as_metric_label(&self) -> &'static str {
        crate::api::api_name(*self)
    }
}
