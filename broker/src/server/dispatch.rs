//! From a request frame to a response: header decoding, version negotiation, the route
//! table (header parsing in [`super::request`]), metrics. Garbage closes the connection
//! (with a log line), never panics.

use std::sync::Arc;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ResponseHeader};
use kafka_protocol::protocol::Encodable;
use tracing::Instrument;

use super::request::{self, ParsedRequest, RequestError};
use crate::api::{ApiError, ApiResponse, RequestContext, Routes, errors};
use crate::state::BrokerState;

/// Why a request gets no answer: the connection is closed with this as the log line.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error(transparent)]
    Request(RequestError),
    #[error("{api:?} has no route")]
    NoRoute { api: ApiKey },
    #[error(transparent)]
    Handler(ApiError),
    #[error("cannot encode the response header: {reason}")]
    EncodeHeader { reason: String },
}

/// A response ready to write: the encoded response header and the handler's answer.
#[derive(Debug)]
pub struct Response {
    pub header: BytesMut,
    pub body: ApiResponse,
}

/// What a request led to: the answer (none for acks=0) and how long the connection is then
/// left unread because its client went over a quota.
#[derive(Debug)]
pub struct Dispatched {
    pub response: Option<Response>,
    pub mute: std::time::Duration,
}

/// `response: None`: nothing to send (acks=0). `Err`: close the connection, with the reason.
/// Boxed: the connection's task holds the answer only while writing it.
pub async fn dispatch(
    frame: Bytes,
    listener: &str,
    principal: &crate::security::Principal,
    client_address: std::net::IpAddr,
    state: &Arc<BrokerState>,
    routes: &Routes,
) -> Result<Box<Dispatched>, DispatchError> {
    let (key, version, header, body) = match request::parse_request(frame, routes) {
        Ok(ParsedRequest::Request {
            api,
            version,
            header,
            body,
        }) => (api, version, header, body),
        Ok(ParsedRequest::ApiVersionsUnsupported { correlation_id }) => {
            // Answer in the v0 format so the client can negotiate down.
            let body = crate::api::api_versions::unsupported_version_response()
                .map_err(DispatchError::Handler)?;
            let header = encode_header(correlation_id, 0)?;
            return Ok(Box::new(Dispatched {
                response: Some(Response {
                    header,
                    body: ApiResponse::Encoded(body),
                }),
                mute: std::time::Duration::ZERO,
            }));
        }
        Err(error) => {
            if let RequestError::UnsupportedVersion { api, .. } = &error {
                state
                    .metrics
                    .request_errors
                    .with_label_values(&[
                        api.as_metric_label(),
                        errors::error_name(errors::UNSUPPORTED_VERSION),
                    ])
                    .inc();
            }
            return Err(DispatchError::Request(error));
        }
    };
    let api = routes
        .get(key as i16)
        .ok_or(DispatchError::NoRoute { api: key })?;
    let correlation_id = header.correlation_id;
    let started = Instant::now();
    let context = RequestContext {
        broker: state,
        header: &header,
        api: key,
        version,
        listener,
        principal,
        client_address,
        throttle_ms: std::sync::atomic::AtomicU64::new(0),
        parked_us: std::sync::atomic::AtomicU64::new(0),
    };
    let span = tracing::debug_span!(
        "request",
        api = key.as_metric_label(),
        version,
        correlation_id,
        client_id = header.client_id.as_deref().unwrap_or("")
    );
    let answer = api
        .handle(&context, body)
        .instrument(span.clone())
        .await
        .map_err(DispatchError::Handler)?;
    // One line per answered request at trace level: enough to follow a client's
    // conversation when debugging interoperability.
    span.in_scope(|| {
        tracing::trace!(
            elapsed_us = started.elapsed().as_micros() as u64,
            "Answered"
        )
    });
    let label = key.as_metric_label();
    let worked = started.elapsed().saturating_sub(context.parked());
    // request_percentage: the handler's time as a percentage of a second, per second.
    let request_throttle = context.quota_throttle(
        crate::quota::QuotaKey::RequestPercentage,
        worked.as_secs_f64() * 100.0,
    );
    let mute = std::time::Duration::from_millis(
        context
            .throttled_ms()
            .max(u64::try_from(request_throttle).unwrap_or(0)),
    );
    state.metrics.requests.with_label_values(&[label]).inc();
    state
        .metrics
        .request_latency
        .with_label_values(&[label])
        .observe(
            started
                .elapsed()
                .saturating_sub(context.parked())
                .as_secs_f64(),
        );
    if matches!(answer, ApiResponse::None) {
        return Ok(Box::new(Dispatched {
            response: None,
            mute,
        }));
    }
    let header = encode_header(correlation_id, key.response_header_version(version))?;
    Ok(Box::new(Dispatched {
        response: Some(Response {
            header,
            body: answer,
        }),
        mute,
    }))
}

pub(super) fn encode_header(
    correlation_id: i32,
    header_version: i16,
) -> Result<BytesMut, DispatchError> {
    let mut header = BytesMut::new();
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut header, header_version)
        .map_err(|error| DispatchError::EncodeHeader {
            reason: error.to_string(),
        })?;
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
