//! SaslHandshake and SaslAuthenticate when no SASL exchange is due: on a listener that is
//! not `SASL_*`, or after the connection authenticated (a `SASL_*` connection's exchange
//! itself is the server's, before any request reaches here). Kafka answers both with
//! ILLEGAL_SASL_STATE. After a SaslHandshake v0 the tokens come as raw frames (Kafka's
//! pre-KIP-152 exchange, which librdkafka before 2.10 needs listed); the gate serves them.

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::{StrBytes, VersionRange};

use super::{Api, HandlerFuture, RequestContext};

#[derive(Debug)]
pub struct SaslHandshakeApi;

impl Api for SaslHandshakeApi {
    fn key(&self) -> ApiKey {
        ApiKey::SaslHandshake
    }

    fn versions(&self) -> VersionRange {
        VersionRange { min: 0, max: 1 }
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let _request: SaslHandshakeRequest = context.decode(body)?;
            context.respond(
                &SaslHandshakeResponse::default()
                    .with_error_code(ResponseError::IllegalSaslState.code()),
            )
        })
    }
}

#[derive(Debug)]
pub struct SaslAuthenticateApi;

impl Api for SaslAuthenticateApi {
    fn key(&self) -> ApiKey {
        ApiKey::SaslAuthenticate
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let _request: SaslAuthenticateRequest = context.decode(body)?;
            context.respond(
                &SaslAuthenticateResponse::default()
                    .with_error_code(ResponseError::IllegalSaslState.code())
                    .with_error_message(Some(StrBytes::from_static_str(
                        "No SASL exchange is due on this connection",
                    ))),
            )
        })
    }
}
