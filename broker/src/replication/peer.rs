//! A connection to another broker's Kafka listener, for followers' fetches: framing
//! (4-byte size prefix), correlation ids, one request at a time. Versions are fixed by
//! the caller (every Oxbow broker serves them), so no ApiVersions round trip.

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Largest response frame accepted from a leader.
const MAX_RESPONSE_BYTES: usize = 128 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("connecting to {address} failed: {source}")]
    Connect {
        address: String,
        source: std::io::Error,
    },
    #[error("connecting to {0} timed out")]
    ConnectTimeout(String),
    #[error("I/O with {address}: {source}")]
    Io {
        address: String,
        source: std::io::Error,
    },
    #[error("{0} did not answer in time")]
    Timeout(String),
    #[error("cannot encode or decode a message with {address}: {reason}")]
    Codec { address: String, reason: String },
}

#[derive(Debug)]
pub struct PeerConnection {
    address: String,
    stream: BufReader<TcpStream>,
    correlation_id: i32,
    client_id: StrBytes,
}

impl PeerConnection {
    pub async fn connect(
        host: &str,
        port: u16,
        client_id: String,
        timeout: Duration,
    ) -> Result<Self, PeerError> {
        let address = format!("{host}:{port}");
        let stream = tokio::time::timeout(timeout, TcpStream::connect((host, port)))
            .await
            .map_err(|_| PeerError::ConnectTimeout(address.clone()))?
            .map_err(|source| PeerError::Connect {
                address: address.clone(),
                source,
            })?;
        let _ = stream.set_nodelay(true);
        Ok(Self {
            address,
            stream: BufReader::new(stream),
            correlation_id: 0,
            client_id: StrBytes::from_string(client_id),
        })
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Sends `request` at `version` and reads its response, within `timeout`.
    pub async fn call<R>(
        &mut self,
        request: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, PeerError>
    where
        R: Request + Encodable,
        R::Response: Decodable + HeaderVersion,
    {
        let address = self.address.clone();
        match tokio::time::timeout(timeout, self.call_now(request, version)).await {
            Ok(result) => result,
            Err(_) => Err(PeerError::Timeout(address)),
        }
    }

    async fn call_now<R>(&mut self, request: &R, version: i16) -> Result<R::Response, PeerError>
    where
        R: Request + Encodable,
        R::Response: Decodable + HeaderVersion,
    {
        let codec = |reason: String| PeerError::Codec {
            address: self.address.clone(),
            reason,
        };
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(self.client_id.clone()));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, R::header_version(version))
            .map_err(|e| codec(e.to_string()))?;
        request
            .encode(&mut body, version)
            .map_err(|e| codec(e.to_string()))?;
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_u32(body.len() as u32);
        frame.extend_from_slice(&body);
        let io = |source| PeerError::Io {
            address: self.address.clone(),
            source,
        };
        self.stream.get_mut().write_all(&frame).await.map_err(io)?;
        let length = self.stream.read_u32().await.map_err(io)? as usize;
        if length > MAX_RESPONSE_BYTES {
            return Err(codec(format!("response of {length} bytes is too large")));
        }
        let mut buffer = vec![0u8; length];
        self.stream.read_exact(&mut buffer).await.map_err(io)?;
        let mut bytes = Bytes::from(buffer);
        let response_header =
            ResponseHeader::decode(&mut bytes, R::Response::header_version(version))
                .map_err(|e| codec(e.to_string()))?;
        if response_header.correlation_id != self.correlation_id {
            return Err(codec(format!(
                "correlation id {} where {} was expected",
                response_header.correlation_id, self.correlation_id
            )));
        }
        let response =
            R::Response::decode(&mut bytes, version).map_err(|e| codec(e.to_string()))?;
        if bytes.has_remaining() {
            tracing::debug!(address = %self.address, left = bytes.remaining(), "Trailing bytes after a response");
        }
        Ok(response)
    }
}
