//! An async connection to a broker's Kafka listener.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::messages::api_versions_request::ApiVersionsRequest;
use kafka_protocol::messages::api_versions_response::ApiVersionsResponse;
use kafka_protocol::protocol::{Request, StrBytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;

use crate::WireError;
use crate::frame::{decode_response, encode_request};

/// Largest response frame accepted unless the caller says otherwise.
const DEFAULT_MAX_RESPONSE: usize = 128 * 1024 * 1024;
/// UNSUPPORTED_VERSION: a broker answers ApiVersions of a version it does not know with it.
const UNSUPPORTED_VERSION: i16 = 35;

/// The versions range of each API a broker serves (ApiVersions).
pub type Versions = BTreeMap<i16, (i16, i16)>;

/// What a connection runs over: a TCP socket, or TLS on one.
trait Transport: AsyncRead + AsyncWrite + Unpin + Send + Sync + std::fmt::Debug {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync + std::fmt::Debug> Transport for T {}

/// One connection; requests go one at a time, each with the next correlation id.
#[derive(Debug)]
pub struct Connection {
    address: String,
    stream: BufReader<Box<dyn Transport>>,
    correlation_id: i32,
    client_id: StrBytes,
    max_response: usize,
    versions: Versions,
}

impl Connection {
    /// Connects to `address` (`host:port`), giving up after `timeout`.
    pub async fn connect(
        address: &str,
        client_id: &str,
        timeout: Duration,
    ) -> Result<Self, WireError> {
        let stream = Self::tcp(address, timeout).await?;
        Ok(Self::over(address, client_id, Box::new(stream)))
    }

    /// Connects to an `SSL` listener at `address`: TCP, then the TLS handshake with
    /// `connector` for `server_name`, both within `timeout`.
    pub async fn connect_tls(
        address: &str,
        client_id: &str,
        timeout: Duration,
        connector: &TlsConnector,
        server_name: ServerName<'static>,
    ) -> Result<Self, WireError> {
        let stream = Self::tcp(address, timeout).await?;
        let stream = tokio::time::timeout(timeout, connector.connect(server_name, stream))
            .await
            .map_err(|_| WireError::ConnectTimeout {
                address: address.to_string(),
            })?
            .map_err(|source| WireError::Tls {
                address: address.to_string(),
                source,
            })?;
        Ok(Self::over(address, client_id, Box::new(stream)))
    }

    fn over(address: &str, client_id: &str, stream: Box<dyn Transport>) -> Self {
        Self {
            address: address.to_string(),
            stream: BufReader::new(stream),
            correlation_id: 0,
            client_id: StrBytes::from_string(client_id.to_string()),
            max_response: DEFAULT_MAX_RESPONSE,
            versions: Versions::new(),
        }
    }

    async fn tcp(address: &str, timeout: Duration) -> Result<TcpStream, WireError> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(address))
            .await
            .map_err(|_| WireError::ConnectTimeout {
                address: address.to_string(),
            })?
            .map_err(|source| WireError::Connect {
                address: address.to_string(),
                source,
            })?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    /// Refuses responses larger than `bytes` (a bad frame rather than a huge allocation).
    #[must_use]
    pub fn with_max_response(mut self, bytes: usize) -> Self {
        self.max_response = bytes;
        self
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Asks the broker which versions it serves (ApiVersions v3, or v0 for a broker that
    /// does not know v3), so that [`Self::call`] can choose; `software` is the client's
    /// name and version (KIP-511).
    pub async fn negotiate(
        &mut self,
        software: (&'static str, &'static str),
        timeout: Duration,
    ) -> Result<&Versions, WireError> {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str(software.0))
            .with_client_software_version(StrBytes::from_static_str(software.1));
        let response: ApiVersionsResponse = match self.call_version(&request, 3, timeout).await {
            Ok(response) => response,
            Err(WireError::Codec { .. }) => self.call_version(&request, 0, timeout).await?,
            Err(other) => return Err(other),
        };
        if response.error_code != 0 && response.error_code != UNSUPPORTED_VERSION {
            return Err(WireError::Codec {
                api: ApiKey::ApiVersions as i16,
                address: self.address.clone(),
                reason: format!("ApiVersions answered error code {}", response.error_code),
            });
        }
        self.versions = response
            .api_keys
            .iter()
            .map(|k| (k.api_key, (k.min_version, k.max_version)))
            .collect();
        Ok(&self.versions)
    }

    /// The highest version of `R` both sides speak (after [`Self::negotiate`]).
    pub fn version_for<R: Request>(&self) -> Result<i16, WireError> {
        let unsupported = || WireError::Unsupported {
            api: R::KEY,
            address: self.address.clone(),
        };
        let (min, max) = self
            .versions
            .get(&R::KEY)
            .copied()
            .ok_or_else(unsupported)?;
        let version = max.min(R::VERSIONS.max);
        if version < min.max(R::VERSIONS.min) {
            return Err(unsupported());
        }
        Ok(version)
    }

    /// `request` at the highest version both sides speak.
    pub async fn call<R: Request>(
        &mut self,
        request: &R,
        timeout: Duration,
    ) -> Result<R::Response, WireError> {
        let version = self.version_for::<R>()?;
        self.call_version(request, version, timeout).await
    }

    /// Sends `request` at `version` and reads its response, within `timeout`. After an
    /// error the connection may be out of step: drop it.
    pub async fn call_version<R: Request>(
        &mut self,
        request: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, WireError> {
        match tokio::time::timeout(timeout, self.exchange(request, version)).await {
            Ok(result) => result,
            Err(_) => Err(WireError::Timeout {
                api: R::KEY,
                address: self.address.clone(),
            }),
        }
    }

    async fn exchange<R: Request>(
        &mut self,
        request: &R,
        version: i16,
    ) -> Result<R::Response, WireError> {
        let codec = |reason: String| WireError::Codec {
            api: R::KEY,
            address: self.address.clone(),
            reason,
        };
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let body = encode_request(
            request,
            version,
            self.correlation_id,
            Some(self.client_id.clone()),
        )
        .map_err(codec)?;
        let size = i32::try_from(body.len()).map_err(|_| codec("request too large".into()))?;
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(size);
        frame.extend_from_slice(&body);
        let io = |source| WireError::Io {
            api: R::KEY,
            address: self.address.clone(),
            source,
        };
        self.stream.get_mut().write_all(&frame).await.map_err(io)?;
        // Over TLS the end of the request may sit in the encryption buffer until flushed.
        self.stream.get_mut().flush().await.map_err(io)?;
        let size = self.stream.read_i32().await.map_err(io)?;
        let Some(length) = usize::try_from(size)
            .ok()
            .filter(|s| *s >= 4 && *s <= self.max_response)
        else {
            return Err(WireError::BadFrame {
                api: R::KEY,
                address: self.address.clone(),
                size: i64::from(size),
            });
        };
        let mut buffer = vec![0_u8; length];
        self.stream.read_exact(&mut buffer).await.map_err(io)?;
        decode_response::<R>(Bytes::from(buffer), version, self.correlation_id).map_err(codec)
    }
}
