//! A `SASL_*` listener's connection before it has authenticated: ApiVersions is served,
//! SaslHandshake and SaslAuthenticate drive the connection's [`SaslAuthenticator`] (after a
//! SaslHandshake v0, raw token frames do), and
//! any other request closes the connection (Kafka: "Unexpected Kafka request of type …
//! during SASL handshake").

use bytes::{Bytes, BytesMut};
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::dispatch::{Response, encode_header};
use super::request::{self, ParsedRequest};
use crate::api::{ApiResponse, Routes};
use crate::security::{HandshakeRefusal, Principal, SaslAuthenticator, SaslFailure, SaslStep};
use crate::state::BrokerState;

/// What to do with a frame that arrived before authentication.
#[derive(Debug)]
pub enum Gated {
    /// Served as usual (ApiVersions, or a frame the dispatcher refuses itself).
    Dispatch(Bytes),
    Respond(Response),
    /// Authentication succeeded: send this, then the connection is the principal.
    Authenticated(Response, Principal),
    /// Send the answer when there is one, then close; the reason is logged.
    Close(Option<Response>, String),
}

pub fn gate(
    frame: Bytes,
    authenticator: &mut SaslAuthenticator,
    state: &BrokerState,
    routes: &Routes,
) -> Gated {
    if authenticator.expects_raw_token() {
        return raw_token(frame, authenticator, state);
    }
    let (api, version, correlation_id, mut body) =
        match request::parse_request(frame.clone(), routes) {
            Ok(ParsedRequest::Request {
                api,
                version,
                header,
                body,
            }) => (api, version, header.correlation_id, body),
            _ => return Gated::Dispatch(frame),
        };
    let respond = |encoded: Result<BytesMut, String>| -> Result<Response, String> {
        let body = encoded?;
        let header = encode_header(correlation_id, api.response_header_version(version))
            .map_err(|e| e.to_string())?;
        Ok(Response {
            header,
            body: ApiResponse::Encoded(body),
        })
    };
    match api {
        ApiKey::ApiVersions => Gated::Dispatch(frame),
        ApiKey::SaslHandshake => {
            let request = match SaslHandshakeRequest::decode(&mut body, version) {
                Ok(request) => request,
                Err(error) => {
                    return Gated::Close(None, format!("cannot decode SaslHandshake: {error}"));
                }
            };
            let mechanisms = authenticator
                .enabled_names()
                .into_iter()
                .map(StrBytes::from_static_str)
                .collect();
            let refusal = authenticator.handshake(&request.mechanism);
            let code = match refusal {
                Ok(()) => 0,
                Err(HandshakeRefusal::Unsupported) => {
                    ResponseError::UnsupportedSaslMechanism.code()
                }
                Err(HandshakeRefusal::IllegalState) => ResponseError::IllegalSaslState.code(),
            };
            let response = SaslHandshakeResponse::default()
                .with_error_code(code)
                .with_mechanisms(mechanisms);
            let answer = match respond(encode(&response, version)) {
                Ok(answer) => answer,
                Err(reason) => return Gated::Close(None, reason),
            };
            match refusal {
                Ok(()) => {
                    if version == 0 {
                        authenticator.use_raw_tokens();
                    }
                    Gated::Respond(answer)
                }
                Err(_) => Gated::Close(
                    Some(answer),
                    format!("SASL mechanism {} is not enabled here", request.mechanism),
                ),
            }
        }
        ApiKey::SaslAuthenticate => {
            let request = match SaslAuthenticateRequest::decode(&mut body, version) {
                Ok(request) => request,
                Err(error) => {
                    return Gated::Close(None, format!("cannot decode SaslAuthenticate: {error}"));
                }
            };
            let image = state.controller.image();
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            let step =
                authenticator.authenticate(&request.auth_bytes, now_ms, |user, mechanism| {
                    image.scram_credential(user, mechanism).cloned()
                });
            let (response, outcome) = match step {
                SaslStep::Challenge(bytes) => (
                    SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(bytes)),
                    None,
                ),
                // v1+: how long the session lasts before the client must re-authenticate.
                SaslStep::Authenticated(bytes, principal) => (
                    SaslAuthenticateResponse::default()
                        .with_auth_bytes(Bytes::from(bytes))
                        .with_session_lifetime_ms(authenticator.session_lifetime_ms()),
                    Some(Ok(principal)),
                ),
                SaslStep::Failed(failure) => {
                    let code = match failure {
                        SaslFailure::IllegalState => ResponseError::IllegalSaslState.code(),
                        _ => ResponseError::SaslAuthenticationFailed.code(),
                    };
                    (
                        SaslAuthenticateResponse::default()
                            .with_error_code(code)
                            .with_error_message(Some(StrBytes::from_string(failure.to_string()))),
                        Some(Err(failure.to_string())),
                    )
                }
            };
            let answer = match respond(encode(&response, version)) {
                Ok(answer) => answer,
                Err(reason) => return Gated::Close(None, reason),
            };
            match outcome {
                None => Gated::Respond(answer),
                Some(Ok(principal)) => Gated::Authenticated(answer, principal),
                Some(Err(reason)) => Gated::Close(Some(answer), reason),
            }
        }
        other => Gated::Close(
            None,
            format!("unexpected {other:?} request before SASL authentication"),
        ),
    }
}

/// A raw SASL token after a SaslHandshake v0: answered with the raw reply (a frame with no
/// Kafka header); a refusal closes the connection without an answer, as Kafka does.
fn raw_token(frame: Bytes, authenticator: &mut SaslAuthenticator, state: &BrokerState) -> Gated {
    let image = state.controller.image();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let raw = |bytes: Vec<u8>| Response {
        header: BytesMut::new(),
        body: ApiResponse::Encoded(BytesMut::from(&bytes[..])),
    };
    match authenticator.authenticate(&frame, now_ms, |user, mechanism| {
        image.scram_credential(user, mechanism).cloned()
    }) {
        SaslStep::Challenge(bytes) => Gated::Respond(raw(bytes)),
        // PLAIN and OAUTHBEARER end with nothing to say: Kafka sends an empty frame.
        SaslStep::Authenticated(bytes, principal) => Gated::Authenticated(raw(bytes), principal),
        SaslStep::Failed(failure) => Gated::Close(None, failure.to_string()),
    }
}

fn encode<T: Encodable>(message: &T, version: i16) -> Result<BytesMut, String> {
    let mut bytes = BytesMut::new();
    message
        .encode(&mut bytes, version)
        .map_err(|error| error.to_string())?;
    Ok(bytes)
}
