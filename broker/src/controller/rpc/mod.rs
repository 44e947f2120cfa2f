//! The controller RPC: what voters say to each other (Raft) and what brokers say to the
//! active controller (registration, heartbeats, forwarded metadata changes, metadata
//! fetches), over the controller listener.
//!
//! Framing: `[u32 big-endian length of the rest][u8 protocol version][JSON message]`.
//! A frame larger than [`MAX_FRAME_BYTES`] or of another version closes the connection
//! with a log line naming the peer; garbage on the port does the same. One request is
//! in flight per connection; callers open one connection per peer and reconnect (resolving
//! the host name again, as a pod's address may change) after any failure.
//!
//! With the controller listener mapped to `SSL`, every connection is mutual TLS: a node
//! presents its certificate and checks the other's against the trust store (the
//! [`ControllerTls`] each connection and the service are given), so a process without a
//! certificate from that CA can neither vote, replicate the log, register as a broker nor
//! change metadata.

pub mod command_format;

use std::collections::BTreeMap;
use std::time::Duration;

use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::decisions::{CommandOutcome, ControllerCommand, ControllerError};
use super::feed::MetadataUpdate;
use super::quorum::MetadataRaft;

pub const PROTOCOL_VERSION: u8 = 1;
/// Bounds a frame: snapshots travel in chunks well below this.
pub const MAX_FRAME_BYTES: usize = 64 << 20;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The node's TLS identity on the controller listener when it is `SSL` (client
/// authentication `required`): every controller connection is then mutual TLS.
pub type ControllerTls = Option<std::sync::Arc<crate::security::ServerTls>>;

/// A controller connection's byte stream: TCP, or TLS over it.
pub trait RpcStream: AsyncRead + AsyncWrite + Unpin + Send + Sync {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> RpcStream for T {}

/// A request and who sends it.
#[derive(Debug, Serialize, Deserialize)]
pub struct RpcRequest {
    /// The sender's cluster id, when it knows one: a node of another cluster is refused.
    pub cluster_id: Option<String>,
    pub from_node: i32,
    pub body: RpcBody,
}

#[derive(Debug, Serialize, Deserialize)]
pub enum RpcBody {
    AppendEntries(AppendEntriesRequest<MetadataRaft>),
    Vote(VoteRequest<u64>),
    InstallSnapshot(InstallSnapshotRequest<MetadataRaft>),
    Command(ControllerCommand),
    /// An observer's long poll for the records after `from_index`.
    FetchMetadata {
        from_index: u64,
        max_wait_ms: u64,
    },
    /// The quorum's state as the active controller sees it (DescribeQuorum).
    DescribeQuorum,
    /// A change of the quorum's voters, or a controller asking to follow the quorum.
    Voters(VoterRequest),
}

/// What may be asked of the quorum's membership (KIP-853).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum VoterRequest {
    /// AddRaftVoter: `node_id` becomes a voter once it has caught up with the log.
    Add {
        node_id: i32,
        directory_id: Option<uuid::Uuid>,
        address: String,
        timeout_ms: u64,
    },
    /// RemoveRaftVoter: `node_id` stops voting (it keeps following the log).
    Remove {
        node_id: i32,
        directory_id: Option<uuid::Uuid>,
    },
    /// A controller that is not a member (or whose directory id the quorum does not know
    /// yet) asks to be replicated to: Kafka's observer fetching from the leader.
    Follow {
        node_id: i32,
        directory_id: uuid::Uuid,
        address: String,
    },
}

/// Why a change of the voters was refused; each is one of Kafka's error codes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
pub enum VoterChangeError {
    /// DUPLICATE_VOTER
    #[error("{0}")]
    Duplicate(String),
    /// VOTER_NOT_FOUND
    #[error("{0}")]
    NotFound(String),
    /// REQUEST_TIMED_OUT: another change in flight, or the new voter did not catch up.
    #[error("{0}")]
    TimedOut(String),
    /// INVALID_REQUEST
    #[error("{0}")]
    Invalid(String),
    /// UNSUPPORTED_VERSION: a static quorum (Kafka's kraft.version 0).
    #[error("{0}")]
    Static(String),
}

#[derive(Debug, Serialize, Deserialize)]
pub enum RpcReply {
    AppendEntries(Result<AppendEntriesResponse<u64>, RaftError<u64>>),
    Vote(Result<VoteResponse<u64>, RaftError<u64>>),
    InstallSnapshot(Result<InstallSnapshotResponse<u64>, RaftError<u64, InstallSnapshotError>>),
    Command(Result<CommandReply, ControllerError>),
    Metadata {
        update: MetadataUpdate,
        controller_id: Option<i32>,
        /// The quorum's voters (id → controller address), for the observer's client.
        #[serde(default)]
        voters: BTreeMap<i32, String>,
    },
    Quorum(QuorumStatus),
    VoterChange(Result<(), VoterChangeError>),
    /// This node is not the active controller; `leader` is, if known.
    NotController {
        leader: Option<i32>,
    },
    /// The request cannot be served here (another cluster, not a voter, bad message).
    Refused {
        reason: String,
    },
}

/// The metadata quorum as its leader sees it (Kafka's DescribeQuorum answer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuorumStatus {
    pub leader_id: i32,
    /// The Raft term: Kafka's leader epoch of the metadata log.
    pub term: u64,
    /// The last committed (and applied) index: the metadata log's high watermark.
    pub high_watermark: u64,
    /// Voters: (node id, last index known replicated to it).
    pub voters: Vec<(i32, Option<u64>)>,
    /// Observers (broker-only nodes): (node id, index applied at its last heartbeat).
    pub observers: Vec<(i32, u64)>,
    /// Every voter's controller address and metadata directory id (when known).
    #[serde(default)]
    pub nodes: BTreeMap<i32, (String, Option<uuid::Uuid>)>,
}

/// A command's outcome and the log index that carries it (the caller waits for its own
/// image to reach that index before answering, so it reads its own writes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandReply {
    pub outcome: CommandOutcome,
    pub index: u64,
}

/// Why an RPC failed in transport.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    #[error("cannot connect to controller {address}: {source}")]
    Connect {
        address: String,
        source: std::io::Error,
    },
    #[error("connection to controller {address} failed: {source}")]
    Io {
        address: String,
        source: std::io::Error,
    },
    #[error("controller {address} did not answer within {timeout:?}")]
    Timeout { address: String, timeout: Duration },
    #[error("bad frame from {address}: {reason}")]
    Frame { address: String, reason: String },
    /// The request would be a frame over [`MAX_FRAME_BYTES`]; nothing was sent.
    #[error("a request of {bytes} bytes to controller {address} is over the frame limit")]
    TooLarge { address: String, bytes: usize },
}

/// Reads one frame's message; `None` at a clean end of stream.
pub async fn read_frame<T: for<'de> Deserialize<'de>>(
    stream: &mut (impl AsyncReadExt + Unpin),
) -> Result<Option<T>, FrameError> {
    let mut length = [0u8; 4];
    match stream.read_exact(&mut length).await {
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(FrameError::Io(error)),
    }
    let length = u32::from_be_bytes(length) as usize;
    if length == 0 || length > MAX_FRAME_BYTES {
        return Err(FrameError::Size(length));
    }
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.map_err(FrameError::Io)?;
    let (version, message) = body.split_first().ok_or(FrameError::Size(0))?;
    if *version != PROTOCOL_VERSION {
        return Err(FrameError::Version(*version));
    }
    serde_json::from_slice(message)
        .map(Some)
        .map_err(|e| FrameError::Decode(e.to_string()))
}

/// Writes one frame.
pub async fn write_frame<T: Serialize>(
    stream: &mut (impl AsyncWriteExt + Unpin),
    message: &T,
) -> Result<(), FrameError> {
    let json = serde_json::to_vec(message).map_err(|e| FrameError::Decode(e.to_string()))?;
    if json.len() + 1 > MAX_FRAME_BYTES {
        return Err(FrameError::Size(json.len() + 1));
    }
    let mut frame = Vec::with_capacity(json.len() + 5);
    frame.extend_from_slice(&((json.len() + 1) as u32).to_be_bytes());
    frame.push(PROTOCOL_VERSION);
    frame.extend_from_slice(&json);
    stream.write_all(&frame).await.map_err(FrameError::Io)?;
    stream.flush().await.map_err(FrameError::Io)
}

/// A frame that cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("{0}")]
    Io(std::io::Error),
    #[error("frame of {0} bytes is outside 1..={MAX_FRAME_BYTES}")]
    Size(usize),
    #[error("protocol version {0} is not {PROTOCOL_VERSION}")]
    Version(u8),
    #[error("undecodable message: {0}")]
    Decode(String),
}

/// One connection to a controller, opened on first use and again after a failure.
pub struct RpcConnection {
    address: String,
    tls: ControllerTls,
    stream: Option<BufReader<Box<dyn RpcStream>>>,
}

impl std::fmt::Debug for RpcConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcConnection")
            .field("address", &self.address)
            .field("connected", &self.stream.is_some())
            .finish()
    }
}

impl RpcConnection {
    pub fn new(address: impl Into<String>, tls: ControllerTls) -> Self {
        Self {
            address: address.into(),
            tls,
            stream: None,
        }
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Sends `request` and waits up to `timeout` for the reply.
    pub async fn call(
        &mut self,
        request: &RpcRequest,
        timeout: Duration,
    ) -> Result<RpcReply, RpcError> {
        let result = tokio::time::timeout(timeout, self.exchange(request)).await;
        let result = match result {
            Ok(result) => result,
            Err(_) => Err(RpcError::Timeout {
                address: self.address.clone(),
                timeout,
            }),
        };
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    /// The client side of mutual TLS: this node's certificate, the controller's checked
    /// against the trust store (and its address, under endpoint identification).
    async fn tls_handshake(
        &self,
        tls: &crate::security::ServerTls,
        stream: TcpStream,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, RpcError> {
        let failed = |reason: String| RpcError::Connect {
            address: self.address.clone(),
            source: std::io::Error::other(reason),
        };
        let host = self
            .address
            .rsplit_once(':')
            .map_or(self.address.as_str(), |(host, _)| host)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let (connector, name) = tls
            .connector(host)
            .map_err(|error| failed(error.to_string()))?
            .ok_or_else(|| failed("no client TLS configuration".into()))?;
        tokio::time::timeout(CONNECT_TIMEOUT, connector.connect(name, stream))
            .await
            .map_err(|_| failed("TLS handshake timed out".into()))?
            .map_err(|error| failed(format!("TLS handshake failed: {error}")))
    }

    async fn exchange(&mut self, request: &RpcRequest) -> Result<RpcReply, RpcError> {
        if self.stream.is_none() {
            let connect = TcpStream::connect(self.address.as_str());
            let stream = tokio::time::timeout(CONNECT_TIMEOUT, connect)
                .await
                .map_err(|_| RpcError::Connect {
                    address: self.address.clone(),
                    source: std::io::ErrorKind::TimedOut.into(),
                })?
                .map_err(|source| RpcError::Connect {
                    address: self.address.clone(),
                    source,
                })?;
            let _ = stream.set_nodelay(true);
            let stream: Box<dyn RpcStream> = match &self.tls {
                None => Box::new(stream),
                Some(tls) => Box::new(self.tls_handshake(tls, stream).await?),
            };
            self.stream = Some(BufReader::new(stream));
        }
        let address = self.address.clone();
        let frame_error = |error: FrameError| match error {
            FrameError::Io(source) => RpcError::Io {
                address: address.clone(),
                source,
            },
            other => RpcError::Frame {
                address: address.clone(),
                reason: other.to_string(),
            },
        };
        let Some(stream) = self.stream.as_mut() else {
            return Err(RpcError::Io {
                address,
                source: std::io::ErrorKind::NotConnected.into(),
            });
        };
        write_frame(stream.get_mut(), request)
            .await
            .map_err(|error| match error {
                FrameError::Size(bytes) => RpcError::TooLarge {
                    address: address.clone(),
                    bytes,
                },
                other => frame_error(other),
            })?;
        read_frame(stream)
            .await
            .map_err(frame_error)?
            .ok_or_else(|| RpcError::Io {
                address: self.address.clone(),
                source: std::io::ErrorKind::UnexpectedEof.into(),
            })
    }
}
