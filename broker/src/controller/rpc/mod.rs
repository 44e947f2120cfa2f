//! The controller RPC: what voters say to each other (Raft) and what brokers say to the
//! active controller (registration, heartbeats, forwarded metadata changes, metadata
//! fetches), over the controller listener.
//!
//! Every message has an api key and a version ([`versions`]); the first request on a
//! connection exchanges both ends' supported ranges, and each request then goes at the
//! highest version both speak, so nodes of two releases talk during a rolling upgrade.
//! Bodies are explicit binary schemas ([`codec`], [`raft_format`], [`command_format`]),
//! never a serialization of Rust types. A frame larger than [`MAX_FRAME_BYTES`], or one
//! that is not ours, closes the connection with a log line naming the peer; a message or
//! version this node does not speak is answered as such. One request is in flight per
//! connection; callers open one connection per peer and reconnect (resolving the host name
//! again, as a pod's address may change) after any failure.
//!
//! Kafka's own inter-node messages (BrokerRegistration, BrokerHeartbeat, Envelope, KRaft's
//! Vote and Fetch) are not used: the quorum is openraft, whose messages carry what it needs
//! (committed votes, log ids naming the leader, chunked snapshots) rather than KRaft's, and a
//! broker forwards a decided command, not the client's request (with Envelope the controller
//! would parse and authorize client requests). One negotiated schema in Kafka's conventions
//! keeps one encoder and one set of fixtures for all of it.
//!
//! With the controller listener mapped to `SSL`, every connection is mutual TLS: a node
//! presents its certificate and checks the other's against the trust store (the
//! [`ControllerTls`] each connection and the service are given), so a process without a
//! certificate from that CA can neither vote, replicate the log, register as a broker nor
//! change metadata.

pub(crate) mod codec;
pub(crate) mod command_format;
pub(crate) mod raft_format;
pub mod versions;

use std::collections::BTreeMap;
use std::time::Duration;

use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use self::versions::Versions;

use super::decisions::{CommandOutcome, ControllerCommand, ControllerError};
use super::feed::MetadataUpdate;
use super::quorum::MetadataRaft;

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
#[derive(Debug)]
pub struct RpcRequest {
    /// The sender's cluster id, when it knows one: a node of another cluster is refused.
    pub cluster_id: Option<String>,
    pub from_node: i32,
    pub body: RpcBody,
}

#[derive(Debug)]
pub enum RpcBody {
    /// The handshake: the sender's supported versions.
    Versions(Versions),
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
#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
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

#[derive(Debug)]
pub enum RpcReply {
    Versions(Versions),
    AppendEntries(Result<AppendEntriesResponse<u64>, RaftError<u64>>),
    Vote(Result<VoteResponse<u64>, RaftError<u64>>),
    InstallSnapshot(Result<InstallSnapshotResponse<u64>, RaftError<u64, InstallSnapshotError>>),
    Command(Result<CommandReply, ControllerError>),
    Metadata {
        update: MetadataUpdate,
        controller_id: Option<i32>,
        /// The quorum's voters (id → controller address), for the observer's client.
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
    /// The message or its version is not one this node speaks.
    Unsupported {
        reason: String,
    },
}

/// The metadata quorum as its leader sees it (Kafka's DescribeQuorum answer).
#[derive(Debug, Clone, PartialEq)]
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
    pub nodes: BTreeMap<i32, (String, Option<uuid::Uuid>)>,
}

/// A command's outcome and the log index that carries it (the caller waits for its own
/// image to reach that index before answering, so it reads its own writes).
#[derive(Debug, Clone, PartialEq)]
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
    /// The peer speaks no version of the message this node could send; nothing was sent.
    #[error("controller {address} cannot be asked this: {reason}")]
    Unsupported { address: String, reason: String },
}

/// Reads one frame's bytes (after the length); `None` at a clean end of stream.
pub async fn read_frame(
    stream: &mut (impl AsyncReadExt + Unpin),
) -> Result<Option<Vec<u8>>, FrameError> {
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
    Ok(Some(body))
}

/// Writes one frame: the length, then `body`.
pub async fn write_frame(
    stream: &mut (impl AsyncWriteExt + Unpin),
    body: &[u8],
) -> Result<(), FrameError> {
    if body.len() > MAX_FRAME_BYTES {
        return Err(FrameError::Size(body.len()));
    }
    let mut frame = Vec::with_capacity(body.len() + 4);
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(body);
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
    #[error("{0}")]
    Decode(String),
}

/// One connection to a controller, opened on first use and again after a failure.
pub struct RpcConnection {
    address: String,
    tls: ControllerTls,
    stream: Option<BufReader<Box<dyn RpcStream>>>,
    /// What this node speaks.
    ours: Versions,
    /// What the peer at the other end of `stream` speaks (learnt when it connected).
    theirs: Versions,
}

impl std::fmt::Debug for RpcConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcConnection")
            .field("address", &self.address)
            .field("connected", &self.stream.is_some())
            .field("theirs", &self.theirs)
            .finish()
    }
}

impl RpcConnection {
    pub fn new(address: impl Into<String>, tls: ControllerTls) -> Self {
        Self {
            address: address.into(),
            tls,
            stream: None,
            ours: Versions::this_release(),
            theirs: Versions(BTreeMap::new()),
        }
    }

    /// A connection that claims `ours` instead of this release's versions (tests of two
    /// releases side by side).
    #[cfg(test)]
    pub fn speaking(mut self, ours: Versions) -> Self {
        self.ours = ours;
        self
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
            let hello = RpcRequest {
                cluster_id: request.cluster_id.clone(),
                from_node: request.from_node,
                body: RpcBody::Versions(self.ours.clone()),
            };
            self.theirs = match self.send(&hello, 0).await? {
                RpcReply::Versions(theirs) => theirs,
                // Another cluster's node, say: the caller hears why, and asks again anew.
                refused @ (RpcReply::Refused { .. } | RpcReply::Unsupported { .. }) => {
                    self.stream = None;
                    return Ok(refused);
                }
                other => return Err(self.frame_error(format!("answered {other:?} to Versions"))),
            };
        }
        let key = codec::key_of(&request.body);
        let version =
            self.ours
                .choose(key, &self.theirs)
                .map_err(|reason| RpcError::Unsupported {
                    address: self.address.clone(),
                    reason,
                })?;
        self.send(request, version).await
    }

    fn frame_error(&self, reason: String) -> RpcError {
        RpcError::Frame {
            address: self.address.clone(),
            reason,
        }
    }

    /// One request at `version` and its answer, on the open stream.
    async fn send(&mut self, request: &RpcRequest, version: u16) -> Result<RpcReply, RpcError> {
        let address = self.address.clone();
        let key = codec::key_of(&request.body);
        let frame = codec::encode_request(request, version);
        if frame.len() > MAX_FRAME_BYTES {
            return Err(RpcError::TooLarge {
                address,
                bytes: frame.len(),
            });
        }
        let io_error = |error: FrameError| match error {
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
        write_frame(stream.get_mut(), &frame)
            .await
            .map_err(io_error)?;
        let answer = read_frame(stream)
            .await
            .map_err(io_error)?
            .ok_or_else(|| RpcError::Io {
                address: address.clone(),
                source: std::io::ErrorKind::UnexpectedEof.into(),
            })?;
        codec::decode_reply(&answer, key, version).map_err(|reason| self.frame_error(reason))
    }
}

#[cfg(test)]
mod tests {
    use super::versions::ApiKey;
    use super::*;
    use openraft::raft::{VoteRequest, VoteResponse};
    use tokio::net::TcpListener;

    /// A peer of another release: serves only what `speaks` lists, answering a vote at the
    /// version it was asked in, and records every (message, version) it was sent.
    async fn peer(speaks: Versions) -> (String, tokio::sync::mpsc::UnboundedReceiver<(u16, u16)>) {
        peer_claiming(speaks.clone(), speaks).await
    }

    /// A peer whose handshake claims `claims` but which reads only `speaks`.
    async fn peer_claiming(
        claims: Versions,
        speaks: Versions,
    ) -> (String, tokio::sync::mpsc::UnboundedReceiver<(u16, u16)>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let (seen, heard) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let mut stream = BufReader::new(stream);
            while let Ok(Some(frame)) = read_frame(&mut stream).await {
                let incoming = codec::decode_request(&frame, &speaks).unwrap();
                let _ = seen.send((incoming.key, incoming.version));
                let reply = match incoming.request {
                    Ok(RpcRequest {
                        body: RpcBody::Versions(_),
                        ..
                    }) => RpcReply::Versions(claims.clone()),
                    Ok(RpcRequest {
                        body: RpcBody::Vote(rpc),
                        ..
                    }) => RpcReply::Vote(Ok(VoteResponse {
                        vote: rpc.vote,
                        vote_granted: true,
                        last_log_id: None,
                    })),
                    Ok(other) => panic!("unexpected {other:?}"),
                    Err(codec::Refusal::Unsupported(reason)) => RpcReply::Unsupported { reason },
                    Err(codec::Refusal::Malformed(reason)) => RpcReply::Refused { reason },
                };
                let answer = codec::encode_reply(incoming.key, incoming.version, &reply);
                write_frame(stream.get_mut(), &answer).await.unwrap();
            }
        });
        (address, heard)
    }

    fn with(key: ApiKey, min: u16, max: u16) -> Versions {
        let mut versions = Versions::this_release();
        versions.0.insert(key.code(), (min, max));
        versions
    }

    fn vote() -> RpcRequest {
        RpcRequest {
            cluster_id: None,
            from_node: 1,
            body: RpcBody::Vote(VoteRequest {
                vote: openraft::Vote::new(2, 1),
                last_log_id: None,
            }),
        }
    }

    #[tokio::test]
    async fn a_newer_node_talks_to_an_older_one_at_the_older_version() {
        // The newer side knows Vote up to v3; the older up to v0.
        let (address, mut heard) = peer(Versions::this_release()).await;
        let mut newer = RpcConnection::new(address, None).speaking(with(ApiKey::Vote, 0, 3));
        let answer = newer.call(&vote(), Duration::from_secs(5)).await.unwrap();
        assert!(
            matches!(&answer, RpcReply::Vote(Ok(v)) if v.vote_granted),
            "{answer:?}"
        );
        assert_eq!(heard.recv().await, Some((ApiKey::Versions.code(), 0)));
        assert_eq!(heard.recv().await, Some((ApiKey::Vote.code(), 0)));
    }

    #[tokio::test]
    async fn nothing_is_sent_that_the_peer_cannot_read() {
        // The older peer lacks the message altogether: the caller is told, nothing is sent.
        let mut older = Versions::this_release();
        older.0.remove(&ApiKey::Vote.code());
        let (address, mut heard) = peer(older).await;
        let mut newer = RpcConnection::new(address, None);
        let error = newer
            .call(&vote(), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, RpcError::Unsupported { reason, .. } if reason.contains("does not speak Vote")),
            "{error}"
        );
        // The failed call closed the connection, so the peer has heard all it will hear.
        let mut all = Vec::new();
        while let Some(message) = heard.recv().await {
            all.push(message);
        }
        assert_eq!(
            all,
            [(ApiKey::Versions.code(), 0)],
            "only the handshake; the vote was not sent"
        );
    }

    #[tokio::test]
    async fn a_peer_that_is_asked_a_version_it_lacks_answers_so() {
        // A peer that claims v1 of Vote but reads only v0 (a bug of its release): the
        // answer says so, and the connection goes on.
        let (address, mut heard) =
            peer_claiming(with(ApiKey::Vote, 0, 1), with(ApiKey::Vote, 0, 0)).await;
        let mut newer = RpcConnection::new(address, None).speaking(with(ApiKey::Vote, 1, 1));
        for _ in 0..2 {
            let answer = newer.call(&vote(), Duration::from_secs(5)).await.unwrap();
            assert!(
                matches!(&answer, RpcReply::Unsupported { reason } if reason.contains("Vote v1 is not spoken here")),
                "{answer:?}"
            );
        }
        assert_eq!(heard.recv().await, Some((ApiKey::Versions.code(), 0)));
        assert_eq!(heard.recv().await, Some((ApiKey::Vote.code(), 1)));
        assert_eq!(heard.recv().await, Some((ApiKey::Vote.code(), 1)));
    }
}
