//! The controller listener: serves Raft RPCs between voters and the active controller's
//! RPCs to brokers.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::io::BufReader;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::active::ActiveController;
use super::decisions::{ControllerCommand, ControllerError};
use super::feed::MetadataFeed;
use super::quorum::Raft;
use super::rpc::codec::{self, Refusal};
use super::rpc::versions::Versions;
use super::rpc::{FrameError, RpcBody, RpcReply, RpcRequest, read_frame, write_frame};
use super::voters::{NotLeader, VoterChanges, voter_addresses};

/// Longest long poll an observer may ask for.
const MAX_FETCH_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct ControllerService {
    pub raft: Raft,
    pub voter_changes: Option<Arc<VoterChanges>>,
    pub active: Arc<ActiveController>,
    pub feed: Arc<MetadataFeed>,
    pub cluster_id: Arc<RwLock<Option<String>>>,
    /// The messages and versions this node serves.
    pub versions: Versions,
}

impl ControllerService {
    async fn handle(&self, request: RpcRequest) -> RpcReply {
        let ours = self.cluster_id.read().clone();
        if let (Some(ours), Some(theirs)) = (&ours, &request.cluster_id)
            && ours != theirs
        {
            tracing::warn!(from_node = request.from_node, their_cluster = %theirs, our_cluster = %ours, "Refusing a node of another cluster");
            return RpcReply::Refused {
                reason: format!("this is cluster {ours}, not {theirs}"),
            };
        }
        match request.body {
            RpcBody::Versions(_) => RpcReply::Versions(self.versions.clone()),
            RpcBody::AppendEntries(rpc) => {
                RpcReply::AppendEntries(self.raft.append_entries(rpc).await)
            }
            RpcBody::Vote(rpc) => RpcReply::Vote(self.raft.vote(rpc).await),
            RpcBody::InstallSnapshot(rpc) => {
                RpcReply::InstallSnapshot(self.raft.install_snapshot(rpc).await)
            }
            RpcBody::Command(command) => {
                if !self.active.is_leader() {
                    return RpcReply::NotController {
                        leader: self.active.leader(),
                    };
                }
                match self.active.execute(command).await {
                    Err(ControllerError::NotController(_)) => RpcReply::NotController {
                        leader: self.active.leader(),
                    },
                    result => RpcReply::Command(result),
                }
            }
            RpcBody::DescribeQuorum => match self.active.quorum_status() {
                Some(status) => RpcReply::Quorum(status),
                None => RpcReply::NotController {
                    leader: self.active.leader(),
                },
            },
            RpcBody::FetchMetadata {
                from_index,
                max_wait_ms,
            } => {
                let wait = Duration::from_millis(max_wait_ms).min(MAX_FETCH_WAIT);
                let mut views = self.feed.subscribe();
                let _ = tokio::time::timeout(
                    wait,
                    views.wait_for(|view| view.applied_index > from_index),
                )
                .await;
                let voters =
                    voter_addresses(self.raft.metrics().borrow().membership_config.membership());
                RpcReply::Metadata {
                    update: self.feed.since(from_index),
                    controller_id: self.active.leader(),
                    voters,
                }
            }
            RpcBody::Voters(request) => {
                let Some(changes) = &self.voter_changes else {
                    return RpcReply::NotController {
                        leader: self.active.leader(),
                    };
                };
                match changes.handle(request).await {
                    Ok(outcome) => RpcReply::VoterChange(outcome),
                    Err(NotLeader(leader)) => RpcReply::NotController { leader },
                }
            }
        }
    }
}

/// Accepts controller connections until shutdown.
pub async fn serve(
    listener: TcpListener,
    service: Arc<ControllerService>,
    tls: super::rpc::ControllerTls,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.changed() => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                let _ = stream.set_nodelay(true);
                let service = Arc::clone(&service);
                let shutdown = shutdown.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    let served = match &tls {
                        None => connection(stream, peer, &service, shutdown).await,
                        // Mutual TLS: a peer without a certificate from the trusted CA is
                        // turned away before it can say anything.
                        Some(tls) => match tls.accept(stream).await {
                            Ok((stream, principal)) => {
                                tracing::debug!(%peer, %principal, "Controller connection over TLS");
                                connection(stream, peer, &service, shutdown).await
                            }
                            // A peer whose call timed out drops the connection mid-handshake
                            // (after a restart or a SIGSTOP): not a refusal.
                            Err(crate::security::HandshakeError::Failed(error))
                                if error.kind() == std::io::ErrorKind::UnexpectedEof =>
                            {
                                tracing::debug!(%peer, %error, "A controller connection closed during its TLS handshake");
                                return;
                            }
                            Err(error) => {
                                tracing::warn!(%peer, %error, "Refused a controller connection: TLS handshake failed");
                                return;
                            }
                        },
                    };
                    if let Err(error) = served {
                        tracing::warn!(%peer, %error, "Closing a controller connection");
                    }
                });
            }
            Err(error) => {
                tracing::warn!(%error, "Accepting a controller connection failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn connection<S: super::rpc::RpcStream>(
    stream: S,
    peer: std::net::SocketAddr,
    service: &ControllerService,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), FrameError> {
    let mut stream = BufReader::new(stream);
    // The broker whose heartbeats this connection carries: when it closes, the broker's
    // process is most likely gone.
    let mut heartbeats_of = None;
    // The active controller whose replication stream this connection is. A confirmation
    // of leadership (every controller decision) comes on a connection of its own that
    // carries one request and closes: only a connection that carried more is the stream.
    let mut entries_from = None;
    let mut appends = 0u32;
    let result = loop {
        let frame = tokio::select! {
            frame = read_frame(&mut stream) => match frame {
                Ok(Some(frame)) => frame,
                Ok(None) => break Ok(()),
                Err(error) => break Err(error),
            },
            _ = shutdown.changed() => return Ok(()),
        };
        let incoming = match codec::decode_request(&frame, &service.versions) {
            Ok(incoming) => incoming,
            Err(reason) => break Err(FrameError::Decode(reason)),
        };
        let request: RpcRequest = match incoming.request {
            Ok(request) => request,
            Err(refusal) => {
                let reply = match refusal {
                    Refusal::Unsupported(reason) => {
                        tracing::info!(%peer, %reason, "A peer asked for a message this node does not speak");
                        RpcReply::Unsupported { reason }
                    }
                    Refusal::Malformed(reason) => {
                        tracing::warn!(%peer, %reason, "Refusing an undecodable controller request");
                        RpcReply::Refused { reason }
                    }
                };
                let answer = codec::encode_reply(incoming.key, incoming.version, &reply);
                if let Err(error) = write_frame(stream.get_mut(), &answer).await {
                    break Err(error);
                }
                continue;
            }
        };
        let heartbeat = match &request.body {
            RpcBody::Command(ControllerCommand::BrokerHeartbeat {
                node_id,
                incarnation,
                ..
            }) => Some((*node_id, *incarnation)),
            _ => None,
        };
        if let RpcBody::AppendEntries(rpc) = &request.body
            && rpc.vote.is_committed()
            && rpc.vote.leader_id().voted_for() == u64::try_from(request.from_node).ok()
        {
            appends = appends.saturating_add(1);
            entries_from = (appends > 1).then_some(request.from_node);
        }
        let reply = service.handle(request).await;
        if heartbeat.is_some() && matches!(reply, RpcReply::Command(Ok(_))) {
            heartbeats_of = heartbeat;
        }
        let answer = codec::encode_reply(incoming.key, incoming.version, &reply);
        if let Err(error) = write_frame(stream.get_mut(), &answer).await {
            break Err(error);
        }
    };
    if let Some((node_id, incarnation)) = heartbeats_of {
        service.active.connection_lost(node_id, incarnation);
    }
    if let Some(leader) = entries_from {
        let raft = service.raft.clone();
        tokio::spawn(async move { elect_if_leader_gone(&raft, leader).await });
    }
    result
}

/// How long a refused connection may take to be refused.
const PROBE_TIMEOUT: Duration = Duration::from_millis(250);
/// Pauses between probes: a killed process's connections and listening socket close one by
/// one, so the first probe may still be accepted by the kernel.
const PROBE_PAUSES: [Duration; 3] = [
    Duration::from_millis(20),
    Duration::from_millis(30),
    Duration::from_millis(50),
];

/// Called when the active controller's connection closed: if its controller port now
/// refuses connections, its process is gone, and this voter stands for election at once
/// instead of waiting out the leader's lease and an election timeout (1.1-1.4 s). A
/// leader that is only slow or cut off (its port does not answer at all) is left to the
/// timeouts, as Raft intends.
async fn elect_if_leader_gone(raft: &Raft, leader: i32) {
    let Ok(leader_id) = u64::try_from(leader) else {
        return;
    };
    let address = {
        let metrics = raft.metrics();
        let metrics = metrics.borrow();
        if metrics.current_leader != Some(leader_id) {
            tracing::debug!(controller = leader, current = ?metrics.current_leader, "A former controller's connection closed");
            return;
        }
        match metrics.membership_config.membership().get_node(&leader_id) {
            Some(node) => node.addr.clone(),
            None => return,
        }
    };
    let mut refused = false;
    for pause in std::iter::once(Duration::ZERO).chain(PROBE_PAUSES) {
        tokio::time::sleep(pause).await;
        match tokio::time::timeout(PROBE_TIMEOUT, TcpStream::connect(&address)).await {
            Ok(Err(error)) if error.kind() == std::io::ErrorKind::ConnectionRefused => {
                refused = true;
                break;
            }
            Ok(Ok(_)) => continue,
            // Not answering at all (a partition, a stopped process): Raft's timeouts decide.
            Ok(Err(_)) | Err(_) => return,
        }
    }
    if !refused || raft.metrics().borrow().current_leader != Some(leader_id) {
        tracing::debug!(controller = leader, %address, refused, "The active controller's connection closed; its port answers");
        return;
    }
    tracing::info!(
        controller = leader,
        %address,
        "The active controller's connection closed and its port refuses connections; standing for election"
    );
    if let Err(error) = raft.trigger().elect().await {
        tracing::warn!(%error, "Cannot start an election");
    }
}
