//! openraft's network over the controller RPC: one [`RpcConnection`] per peer voter.

use std::collections::HashMap;
use std::sync::Arc;
use tokio::time::Instant;

use openraft::BasicNode;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};

use super::MetadataRaft;
use crate::controller::rpc::{RpcBody, RpcConnection, RpcError, RpcReply, RpcRequest};

/// Who this node says it is in every request.
#[derive(Debug, Clone)]
pub struct Sender {
    pub node_id: i32,
    pub cluster_id: Arc<parking_lot::RwLock<Option<String>>>,
    pub peers_down: PeersDown,
}

/// Voters whose process is gone as far as Raft traffic can tell: the connection was
/// refused or closed by the peer (not a timeout, which a network partition also gives).
/// Per voter: when this run of failures began and the latest one; cleared by an answer.
#[derive(Debug, Clone, Default)]
pub struct PeersDown(Arc<parking_lot::Mutex<HashMap<i32, (Instant, Instant)>>>);

impl PeersDown {
    fn record(&self, peer: u64, error: &RpcError) {
        let gone = match error {
            RpcError::Connect { source, .. } => {
                source.kind() == std::io::ErrorKind::ConnectionRefused
            }
            RpcError::Io { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::BrokenPipe
            ),
            RpcError::Timeout { .. } | RpcError::Frame { .. } => false,
        };
        if let (true, Ok(peer)) = (gone, i32::try_from(peer)) {
            let now = Instant::now();
            self.0
                .lock()
                .entry(peer)
                .and_modify(|(_, latest)| *latest = now)
                .or_insert((now, now));
        }
    }

    fn answered(&self, peer: u64) {
        if let Ok(peer) = i32::try_from(peer) {
            self.0.lock().remove(&peer);
        }
    }

    /// (first, latest) failure of the current run of failures to reach `peer`'s process.
    pub fn failures(&self, peer: i32) -> Option<(Instant, Instant)> {
        self.0.lock().get(&peer).copied()
    }
}

#[derive(Debug, Clone)]
pub struct NetworkFactory {
    pub sender: Sender,
}

impl RaftNetworkFactory<MetadataRaft> for NetworkFactory {
    type Network = PeerNetwork;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> PeerNetwork {
        PeerNetwork {
            target,
            connection: RpcConnection::new(node.addr.clone()),
            sender: self.sender.clone(),
        }
    }
}

#[derive(Debug)]
pub struct PeerNetwork {
    target: u64,
    connection: RpcConnection,
    sender: Sender,
}

type Failure<E> = RPCError<u64, BasicNode, RaftError<u64, E>>;

impl PeerNetwork {
    async fn send<E: std::error::Error>(
        &mut self,
        body: RpcBody,
        option: &RPCOption,
    ) -> Result<RpcReply, Failure<E>> {
        let request = RpcRequest {
            cluster_id: self.sender.cluster_id.read().clone(),
            from_node: self.sender.node_id,
            body,
        };
        let result = self.connection.call(&request, option.hard_ttl()).await;
        match &result {
            Ok(_) => self.sender.peers_down.answered(self.target),
            Err(error) => self.sender.peers_down.record(self.target, error),
        }
        match result {
            Ok(reply) => Ok(reply),
            // Unreachable makes openraft back off before retrying this peer.
            Err(error @ (RpcError::Connect { .. } | RpcError::Timeout { .. })) => {
                Err(RPCError::Unreachable(Unreachable::new(&error)))
            }
            Err(error) => Err(RPCError::Network(NetworkError::new(&error))),
        }
    }

    fn unexpected<E: std::error::Error>(&self, reply: RpcReply) -> Failure<E> {
        let reason = match reply {
            RpcReply::Refused { reason } => reason,
            other => format!("unexpected reply {other:?}"),
        };
        tracing::warn!(peer = self.target, address = self.connection.address(), %reason, "Voter refused a Raft request");
        RPCError::Network(NetworkError::new(&std::io::Error::other(reason)))
    }
}

impl RaftNetwork<MetadataRaft> for PeerNetwork {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<MetadataRaft>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        match self.send(RpcBody::AppendEntries(rpc), &option).await? {
            RpcReply::AppendEntries(result) => {
                result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            other => Err(self.unexpected(other)),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<MetadataRaft>,
        option: RPCOption,
    ) -> Result<InstallSnapshotResponse<u64>, Failure<InstallSnapshotError>> {
        match self.send(RpcBody::InstallSnapshot(rpc), &option).await? {
            RpcReply::InstallSnapshot(result) => {
                result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            other => Err(self.unexpected(other)),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        match self.send(RpcBody::Vote(rpc), &option).await? {
            RpcReply::Vote(result) => {
                result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            other => Err(self.unexpected(other)),
        }
    }
}
