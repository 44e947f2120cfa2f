//! openraft's network over the controller RPC: one [`RpcConnection`] per peer voter.

use std::collections::HashMap;
use std::sync::Arc;
use tokio::time::Instant;

use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError,
    Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};

use super::{MetadataRaft, VoterNode};
use crate::controller::rpc::{
    MAX_FRAME_BYTES, RpcBody, RpcConnection, RpcError, RpcReply, RpcRequest,
};

/// Who this node says it is in every request.
#[derive(Debug, Clone)]
pub struct Sender {
    pub node_id: i32,
    pub cluster_id: Arc<parking_lot::RwLock<Option<String>>>,
    pub peers_down: PeersDown,
    pub reachability: super::events::VoterReachability,
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
            RpcError::Timeout { .. }
            | RpcError::Frame { .. }
            | RpcError::TooLarge { .. }
            | RpcError::Unsupported { .. } => false,
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
    pub tls: super::super::rpc::ControllerTls,
}

impl RaftNetworkFactory<MetadataRaft> for NetworkFactory {
    type Network = PeerNetwork;

    async fn new_client(&mut self, target: u64, node: &VoterNode) -> PeerNetwork {
        PeerNetwork {
            target,
            connection: RpcConnection::new(node.addr.clone(), self.tls.clone()),
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

type Failure<E> = RPCError<u64, VoterNode, RaftError<u64, E>>;

impl PeerNetwork {
    async fn call(&mut self, body: RpcBody, option: &RPCOption) -> Result<RpcReply, RpcError> {
        let request = RpcRequest {
            cluster_id: self.sender.cluster_id.read().clone(),
            from_node: self.sender.node_id,
            body,
        };
        let result = self.connection.call(&request, option.hard_ttl()).await;
        match &result {
            Ok(_) => {
                self.sender.peers_down.answered(self.target);
                self.sender.reachability.answered(self.target);
            }
            Err(error) => {
                self.sender.peers_down.record(self.target, error);
                self.sender
                    .reachability
                    .failed(self.target, self.connection.address(), error);
            }
        }
        result
    }

    async fn send<E: std::error::Error>(
        &mut self,
        body: RpcBody,
        option: &RPCOption,
    ) -> Result<RpcReply, Failure<E>> {
        self.call(body, option).await.map_err(failure)
    }

    fn unexpected<E: std::error::Error>(&self, reply: RpcReply) -> Failure<E> {
        let reason = match reply {
            RpcReply::Refused { reason } | RpcReply::Unsupported { reason } => reason,
            other => format!("unexpected reply {other:?}"),
        };
        tracing::warn!(peer = self.target, address = self.connection.address(), %reason, "Voter refused a Raft request");
        RPCError::Network(NetworkError::new(&std::io::Error::other(reason)))
    }
}

/// openraft's view of a failed call.
fn failure<E: std::error::Error>(error: RpcError) -> Failure<E> {
    match error {
        // Unreachable makes openraft back off before retrying this peer.
        error @ (RpcError::Connect { .. } | RpcError::Timeout { .. }) => {
            RPCError::Unreachable(Unreachable::new(&error))
        }
        error => RPCError::Network(NetworkError::new(&error)),
    }
}

/// How many of `entries` entries that made a request of `bytes` bytes fit in half a frame
/// (entries differ in size, so aim well under the limit); at least one.
fn entries_that_fit(entries: u64, bytes: usize) -> u64 {
    let half_frame = (MAX_FRAME_BYTES / 2) as u128;
    let fit = u128::from(entries) * half_frame / (bytes.max(1) as u128);
    u64::try_from(fit)
        .unwrap_or(u64::MAX)
        .clamp(1, entries.saturating_sub(1).max(1))
}

impl RaftNetwork<MetadataRaft> for PeerNetwork {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<MetadataRaft>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, VoterNode, RaftError<u64>>> {
        let entries = rpc.entries.len() as u64;
        match self.call(RpcBody::AppendEntries(rpc), &option).await {
            Ok(RpcReply::AppendEntries(result)) => {
                result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            Ok(other) => Err(self.unexpected(other)),
            // openraft sends up to 300 entries per request: when they do not fit in a frame
            // it retries at once with at most the hinted number (one entry always goes; an
            // entry is at most one command's records, which commands keep well under a frame).
            Err(RpcError::TooLarge { bytes, .. }) if entries > 1 => {
                let fit = entries_that_fit(entries, bytes);
                tracing::info!(
                    peer = self.target,
                    entries,
                    bytes,
                    fit,
                    "Raft entries too large for one request; sending fewer"
                );
                Err(RPCError::PayloadTooLarge(
                    PayloadTooLarge::new_entries_hint(fit),
                ))
            }
            Err(error) => Err(failure(error)),
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
    ) -> Result<VoteResponse<u64>, RPCError<u64, VoterNode, RaftError<u64>>> {
        match self.send(RpcBody::Vote(rpc), &option).await? {
            RpcReply::Vote(result) => {
                result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            other => Err(self.unexpected(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_many_entries_are_cut_to_what_fits_in_half_a_frame() {
        // 300 entries of 1 MiB: 32 fit in half of a 64 MiB frame.
        assert_eq!(entries_that_fit(300, 300 << 20), 32);
        // Barely over: about half.
        assert_eq!(entries_that_fit(10, MAX_FRAME_BYTES + 1), 4);
        // Always fewer than sent, never none.
        assert_eq!(entries_that_fit(2, usize::MAX), 1);
        assert_eq!(entries_that_fit(5, 1), 4);
    }
}
