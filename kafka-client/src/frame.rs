//! Request and response frames, without the 4-byte size prefix: pure functions, so a
//! blocking test client and the async [`crate::Connection`] share them.

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};

/// Header and body of `request` at `version` with `correlation_id`.
pub fn encode_request<R: Request>(
    request: &R,
    version: i16,
    correlation_id: i32,
    client_id: Option<StrBytes>,
) -> Result<BytesMut, String> {
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(client_id);
    let mut body = BytesMut::new();
    header
        .encode(&mut body, R::header_version(version))
        .map_err(|e| e.to_string())?;
    request
        .encode(&mut body, version)
        .map_err(|e| e.to_string())?;
    Ok(body)
}

/// The response to the request of `R` at `version` sent with `correlation_id`; `frame` is
/// what followed the size prefix. Bytes left over after the body are logged, not refused
/// (a newer broker may add fields a version does not have).
pub fn decode_response<R: Request>(
    frame: Bytes,
    version: i16,
    correlation_id: i32,
) -> Result<R::Response, String> {
    let (response, left) = decode_response_and_rest::<R>(frame, version, correlation_id)?;
    if left > 0 {
        tracing::debug!(api = R::KEY, left, "Trailing bytes after a response");
    }
    Ok(response)
}

/// [`decode_response`], and how many bytes the body left unread (a test of a broker wants
/// none; a client tolerates them).
pub fn decode_response_and_rest<R: Request>(
    mut frame: Bytes,
    version: i16,
    correlation_id: i32,
) -> Result<(R::Response, usize), String> {
    let header = ResponseHeader::decode(&mut frame, R::Response::header_version(version))
        .map_err(|e| e.to_string())?;
    if header.correlation_id != correlation_id {
        return Err(format!(
            "correlation id {} where {correlation_id} was expected",
            header.correlation_id
        ));
    }
    let response = R::Response::decode(&mut frame, version).map_err(|e| e.to_string())?;
    Ok((response, frame.remaining()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;
    use kafka_protocol::messages::metadata_request::MetadataRequest;
    use kafka_protocol::messages::metadata_response::MetadataResponse;
    use kafka_protocol::messages::{ApiKey, ResponseHeader};

    fn response_frame(correlation_id: i32, version: i16, extra: &[u8]) -> Bytes {
        let mut out = BytesMut::new();
        ResponseHeader::default()
            .with_correlation_id(correlation_id)
            .encode(&mut out, MetadataResponse::header_version(version))
            .unwrap();
        MetadataResponse::default()
            .with_throttle_time_ms(7)
            .encode(&mut out, version)
            .unwrap();
        out.put_slice(extra);
        out.freeze()
    }

    #[test]
    fn a_request_carries_its_key_version_and_correlation_id() {
        let body = encode_request(&MetadataRequest::default(), 12, 41, None).unwrap();
        let mut bytes = body.freeze();
        assert_eq!(bytes.get_i16(), ApiKey::Metadata as i16);
        assert_eq!(bytes.get_i16(), 12);
        assert_eq!(bytes.get_i32(), 41);
    }

    #[test]
    fn a_response_must_answer_the_request_sent() {
        let ok = decode_response::<MetadataRequest>(response_frame(5, 12, b""), 12, 5);
        assert_eq!(ok.map(|r| r.throttle_time_ms), Ok(7));
        let trailing = decode_response::<MetadataRequest>(response_frame(5, 12, b"xx"), 12, 5);
        assert!(trailing.is_ok());
        let rest = decode_response_and_rest::<MetadataRequest>(response_frame(5, 12, b"xx"), 12, 5);
        assert_eq!(rest.map(|(_, left)| left), Ok(2));
        let other = decode_response::<MetadataRequest>(response_frame(6, 12, b""), 12, 5);
        assert!(other.is_err_and(|e| e.contains("correlation id 6")));
        let short = decode_response::<MetadataRequest>(Bytes::from_static(&[0, 0]), 12, 5);
        assert!(short.is_err());
    }
}
