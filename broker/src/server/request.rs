//! Request framing and header parsing: the pure first steps from network bytes to a
//! routed request, shared by the connection tasks and the fuzz target (`fuzz/`).
//!
//! ```text
//!   [size: i32] ─► frame_size: negative or above socket.request.max.bytes? close
//!   [api_key i16][version i16][correlation_id i32][client_id][tagged fields (v2)] body…
//!        └► parse_request: unknown key? close · version outside the route's range? close
//!                          (ApiVersions: answer UNSUPPORTED_VERSION in v0) · header decode
//! ```
//!
//! Nothing here panics or allocates more than the frame, whatever the bytes.

use bytes::{Buf, Bytes};
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind};
use kafka_protocol::protocol::Decodable;

use crate::api::Routes;

/// Smallest request: api key, version, correlation id.
pub const MIN_REQUEST_BYTES: usize = 8;

/// Why a frame cannot be served; the connection is closed with this as the log line.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("request frame size {size} is negative or above socket.request.max.bytes = {max}")]
    FrameSize { size: i32, max: usize },
    #[error("request frame of {size} bytes is too short for a header")]
    TooShort { size: usize },
    #[error("unknown or unsupported API key {api_key}")]
    UnknownApi { api_key: i16 },
    #[error("{api:?} v{version} is not supported (supported {min}..={max})")]
    UnsupportedVersion {
        api: ApiKey,
        version: i16,
        min: i16,
        max: i16,
    },
    #[error("cannot decode {api:?} v{version} request header: {reason}")]
    Header {
        api: ApiKey,
        version: i16,
        reason: String,
    },
}

/// A frame's request, routed.
#[derive(Debug)]
pub enum ParsedRequest {
    /// A request the route table serves at this version; `body` follows the header.
    Request {
        api: ApiKey,
        version: i16,
        header: RequestHeader,
        body: Bytes,
    },
    /// ApiVersions of a version the broker does not know: answered in the v0 format with
    /// UNSUPPORTED_VERSION so the client can negotiate down (as Kafka does).
    ApiVersionsUnsupported { correlation_id: i32 },
}

/// The length of the frame announced by a 4-byte size prefix, checked against
/// `socket.request.max.bytes`.
pub fn frame_size(prefix: [u8; 4], max_frame: usize) -> Result<usize, RequestError> {
    let size = i32::from_be_bytes(prefix);
    match usize::try_from(size) {
        Ok(bytes) if bytes <= max_frame => Ok(bytes),
        _ => Err(RequestError::FrameSize {
            size,
            max: max_frame,
        }),
    }
}

/// Decodes a frame's request header and routes it.
pub fn parse_request(frame: Bytes, routes: &Routes) -> Result<ParsedRequest, RequestError> {
    if frame.len() < MIN_REQUEST_BYTES {
        return Err(RequestError::TooShort { size: frame.len() });
    }
    let mut peek = frame.clone();
    let api_key = peek.get_i16();
    let version = peek.get_i16();
    let correlation_id = peek.get_i32();
    let Some(route) = routes.get(api_key) else {
        return Err(RequestError::UnknownApi { api_key });
    };
    let api = route.key();
    let versions = route.advertised_versions();
    if version < versions.min || version > versions.max {
        if api == ApiKey::ApiVersions {
            return Ok(ParsedRequest::ApiVersionsUnsupported { correlation_id });
        }
        return Err(RequestError::UnsupportedVersion {
            api,
            version,
            min: versions.min,
            max: versions.max,
        });
    }
    let mut body = frame;
    let header =
        RequestHeader::decode(&mut body, api.request_header_version(version)).map_err(|error| {
            RequestError::Header {
                api,
                version,
                reason: error.to_string(),
            }
        })?;
    Ok(ParsedRequest::Request {
        api,
        version,
        header,
        body,
    })
}

/// What a connection does with a byte stream, minus the handler: split it into frames,
/// parse and route each header, decode the body with the request decoder of its API and
/// version. Returns how many requests decoded. The fuzz target (`fuzz/`) and its stable
/// proptest driver (`tests/server_request_decode.rs`) feed it arbitrary bytes.
pub fn decode_stream(routes: &Routes, data: &[u8], max_frame: usize) -> usize {
    let mut decoded = 0;
    let mut rest = Bytes::copy_from_slice(data);
    while rest.remaining() >= 4 {
        let mut prefix = [0u8; 4];
        rest.copy_to_slice(&mut prefix);
        let Ok(size) = frame_size(prefix, max_frame) else {
            break;
        };
        if rest.remaining() < size {
            break;
        }
        let frame = rest.split_to(size);
        if let Ok(ParsedRequest::Request {
            api,
            version,
            mut body,
            ..
        }) = parse_request(frame, routes)
            && RequestKind::decode(api, &mut body, version).is_ok()
        {
            decoded += 1;
        }
    }
    decoded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(bytes: &[u8]) -> Bytes {
        Bytes::copy_from_slice(bytes)
    }

    #[test]
    fn frame_sizes_outside_the_limit_are_refused() {
        assert_eq!(frame_size(100i32.to_be_bytes(), 100).ok(), Some(100));
        assert!(frame_size(101i32.to_be_bytes(), 100).is_err());
        assert!(frame_size((-1i32).to_be_bytes(), 100).is_err());
    }

    #[test]
    fn short_unknown_and_unsupported_requests_are_errors() {
        let routes = crate::api::routes(1000);
        assert!(matches!(
            parse_request(frame(&[0, 18, 0]), &routes),
            Err(RequestError::TooShort { size: 3 })
        ));
        assert!(matches!(
            parse_request(frame(&[0x27, 0x0f, 0, 0, 0, 0, 0, 1]), &routes),
            Err(RequestError::UnknownApi { api_key: 9999 })
        ));
        assert!(matches!(
            parse_request(frame(&[0, 0, 0, 99, 0, 0, 0, 1, 0xff, 0xff]), &routes),
            Err(RequestError::UnsupportedVersion { version: 99, .. })
        ));
        assert!(matches!(
            parse_request(frame(&[0, 18, 0, 99, 0, 0, 0, 7]), &routes),
            Ok(ParsedRequest::ApiVersionsUnsupported { correlation_id: 7 })
        ));
    }

    #[test]
    fn a_truncated_header_is_an_error() {
        let routes = crate::api::routes(1000);
        // Metadata v1 (header v1): the client id claims 300 bytes, 2 follow.
        let bytes = [0, 3, 0, 1, 0, 0, 0, 1, 0x01, 0x2c, b'a', b'b'];
        assert!(matches!(
            parse_request(frame(&bytes), &routes),
            Err(RequestError::Header { .. })
        ));
    }
}
