//! A broker's way to the active controller: tries the voter it last heard leads, follows
//! "not the controller, node N is" answers, and walks the voters otherwise, until the
//! deadline. Host names are resolved on every (re)connect.
//!
//! The voters change (KIP-853): the client starts from the configured voters or bootstrap
//! servers and is told the quorum's current voters whenever this node learns them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use parking_lot::RwLock;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::decisions::{ControllerCommand, ControllerError};
use super::feed::MetadataUpdate;
use super::rpc::{
    CommandReply, ControllerTls, QuorumStatus, RpcBody, RpcConnection, RpcReply, RpcRequest,
    VoterChangeError, VoterRequest,
};

/// Pause after every voter failed once, before trying them again.
const ROUND_BACKOFF: Duration = Duration::from_millis(100);
/// Longest wait for one voter's answer beyond the request's own wait.
const CALL_TIMEOUT: Duration = Duration::from_secs(6);

#[derive(Debug)]
pub struct ControllerClient {
    node_id: i32,
    /// This node, when it is a voter: its own active controller is asked directly.
    skip: Option<i32>,
    cluster_id: Arc<RwLock<Option<String>>>,
    voters: RwLock<BTreeMap<i32, Arc<Mutex<RpcConnection>>>>,
    leader_hint: AtomicI32,
    tls: ControllerTls,
}

impl ControllerClient {
    /// A client of `voters` (id → host:port); `skip` is left out (this node itself, when
    /// it is a voter and asks its own active controller directly).
    pub fn new(
        node_id: i32,
        voters: &BTreeMap<i32, String>,
        skip: Option<i32>,
        cluster_id: Arc<RwLock<Option<String>>>,
        tls: ControllerTls,
    ) -> Self {
        let client = Self {
            node_id,
            skip,
            cluster_id,
            tls,
            voters: RwLock::new(BTreeMap::new()),
            leader_hint: AtomicI32::new(-1),
        };
        client.set_voters(voters);
        client
    }

    /// Bootstrap servers, whose node ids are not known yet, stand in under negative ids
    /// until the quorum's voters are learned.
    pub fn bootstrap_ids(servers: &[String]) -> BTreeMap<i32, String> {
        servers
            .iter()
            .enumerate()
            .map(|(i, address)| (-1 - i as i32, address.clone()))
            .collect()
    }

    /// The quorum's voters now; connections to voters whose address is unchanged are kept.
    /// An empty set (nothing learned) leaves the client as it is.
    pub fn set_voters(&self, voters: &BTreeMap<i32, String>) {
        if voters.is_empty() {
            return;
        }
        let mut current = self.voters.write();
        let mut next = BTreeMap::new();
        // A leader that removed itself leads until the configuration without it commits
        // and it steps down: its connection stays until another leader is named, so the
        // heartbeats it receives do not stop (a closed heartbeat connection fences).
        if let Some(leader) = self.leader_hint()
            && !voters.contains_key(&leader)
            && let Some(connection) = current.remove(&leader)
        {
            next.insert(leader, connection);
        }
        for (id, address) in voters.iter().filter(|(id, _)| Some(**id) != self.skip) {
            let kept = current.remove(id).filter(|connection| {
                connection
                    .try_lock()
                    .map_or(true, |c| c.address() == address)
            });
            next.insert(
                *id,
                kept.unwrap_or_else(|| {
                    Arc::new(Mutex::new(RpcConnection::new(
                        address.clone(),
                        self.tls.clone(),
                    )))
                }),
            );
        }
        *current = next;
    }

    /// Other voters to ask (none: this node is the only voter).
    pub fn has_voters(&self) -> bool {
        !self.voters.read().is_empty()
    }

    pub fn leader_hint(&self) -> Option<i32> {
        Some(self.leader_hint.load(Ordering::Relaxed)).filter(|id| *id >= 0)
    }

    pub fn set_leader_hint(&self, leader: Option<i32>) {
        self.leader_hint
            .store(leader.unwrap_or(-1), Ordering::Relaxed);
    }

    /// Sends a command to the active controller.
    pub async fn command(
        &self,
        command: &ControllerCommand,
        timeout: Duration,
    ) -> Result<CommandReply, ControllerError> {
        let reply = self
            .send(
                || RpcBody::Command(command.clone()),
                timeout,
                Duration::ZERO,
            )
            .await?;
        match reply {
            RpcReply::Command(result) => result,
            other => Err(ControllerError::Quorum(format!(
                "unexpected reply {other:?}"
            ))),
        }
    }

    /// The quorum's state from the active controller.
    pub async fn describe_quorum(
        &self,
        timeout: Duration,
    ) -> Result<QuorumStatus, ControllerError> {
        match self
            .send(|| RpcBody::DescribeQuorum, timeout, Duration::ZERO)
            .await?
        {
            RpcReply::Quorum(status) => Ok(status),
            other => Err(ControllerError::Quorum(format!(
                "unexpected reply {other:?}"
            ))),
        }
    }

    /// A change of the quorum's voters at the active controller.
    pub async fn voter_change(
        &self,
        request: &VoterRequest,
        timeout: Duration,
    ) -> Result<Result<(), VoterChangeError>, ControllerError> {
        match self
            .send(|| RpcBody::Voters(request.clone()), timeout, Duration::ZERO)
            .await?
        {
            RpcReply::VoterChange(outcome) => Ok(outcome),
            other => Err(ControllerError::Quorum(format!(
                "unexpected reply {other:?}"
            ))),
        }
    }

    /// Long-polls a voter for the metadata after `from_index`.
    pub async fn fetch_metadata(
        &self,
        from_index: u64,
        max_wait: Duration,
    ) -> Result<(MetadataUpdate, Option<i32>, BTreeMap<i32, String>), ControllerError> {
        let body = || RpcBody::FetchMetadata {
            from_index,
            max_wait_ms: max_wait.as_millis() as u64,
        };
        match self.send(body, max_wait + CALL_TIMEOUT, max_wait).await? {
            RpcReply::Metadata {
                update,
                controller_id,
                voters,
            } => Ok((update, controller_id, voters)),
            other => Err(ControllerError::Quorum(format!(
                "unexpected reply {other:?}"
            ))),
        }
    }

    async fn send(
        &self,
        body: impl Fn() -> RpcBody,
        timeout: Duration,
        server_wait: Duration,
    ) -> Result<RpcReply, ControllerError> {
        let deadline = Instant::now() + timeout;
        let mut last_error = String::from("no controller voters configured");
        loop {
            let mut order: Vec<(i32, Arc<Mutex<RpcConnection>>)> = self
                .voters
                .read()
                .iter()
                .map(|(id, connection)| (*id, Arc::clone(connection)))
                .collect();
            if let Some(hint) = self.leader_hint()
                && let Some(position) = order.iter().position(|(id, _)| *id == hint)
            {
                order.rotate_left(position);
            }
            let others_left = order.len() > 1;
            for (voter, connection) in order {
                let remaining = deadline.saturating_duration_since(Instant::now());
                if remaining.is_zero() {
                    return Err(ControllerError::NotController(Some(last_error)));
                }
                let request = RpcRequest {
                    cluster_id: self.cluster_id.read().clone(),
                    from_node: self.node_id,
                    body: body(),
                };
                // With other voters left to try, one silent voter may not use up the
                // whole budget (a stopped leader must not starve the heartbeat).
                let share = if others_left && server_wait.is_zero() {
                    remaining / 2
                } else {
                    remaining
                };
                let per_call = share.min(CALL_TIMEOUT + server_wait);
                let reply = connection.lock().await.call(&request, per_call).await;
                match reply {
                    Ok(RpcReply::NotController { leader })
                        if leader.is_some() && leader == self.skip =>
                    {
                        // This node leads now: the caller asks its own active controller.
                        return Err(ControllerError::NotController(Some(
                            "this node has become the active controller".into(),
                        )));
                    }
                    Ok(RpcReply::NotController { leader }) => {
                        last_error = format!("voter {voter} is not the active controller");
                        if let Some(leader) = leader.filter(|l| *l != voter) {
                            self.set_leader_hint(Some(leader));
                            // Go straight to the leader it named.
                            break;
                        }
                    }
                    Ok(RpcReply::Command(Err(ControllerError::NotController(detail)))) => {
                        last_error =
                            detail.unwrap_or_else(|| format!("voter {voter} lost leadership"));
                    }
                    Ok(RpcReply::Refused { reason }) => {
                        return Err(ControllerError::Refused(format!("voter {voter}: {reason}")));
                    }
                    // A voter of another release that speaks no version of this message:
                    // another voter may (the active controller is what matters).
                    Ok(RpcReply::Unsupported { reason }) => {
                        last_error = format!("voter {voter}: {reason}");
                    }
                    Ok(reply) => {
                        if matches!(
                            reply,
                            RpcReply::Command(_) | RpcReply::Quorum(_) | RpcReply::VoterChange(_)
                        ) {
                            self.set_leader_hint(Some(voter));
                        }
                        return Ok(reply);
                    }
                    Err(error) => {
                        // A voter that does not answer is no leader to go back to first.
                        if self.leader_hint() == Some(voter) {
                            self.set_leader_hint(None);
                        }
                        last_error = error.to_string();
                    }
                }
            }
            if Instant::now() + ROUND_BACKOFF >= deadline {
                return Err(ControllerError::NotController(Some(last_error)));
            }
            tokio::time::sleep(ROUND_BACKOFF).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addresses(client: &ControllerClient) -> BTreeMap<i32, String> {
        client
            .voters
            .read()
            .iter()
            .map(|(id, c)| (*id, c.try_lock().unwrap().address().to_string()))
            .collect()
    }

    #[test]
    fn learned_voters_replace_the_bootstrap_servers_and_the_leader_stays_until_named() {
        let bootstrap = ControllerClient::bootstrap_ids(&["a:1".into(), "b:1".into()]);
        let client = ControllerClient::new(7, &bootstrap, None, Default::default(), None);
        assert_eq!(
            addresses(&client),
            BTreeMap::from([(-2, "b:1".into()), (-1, "a:1".into())])
        );
        client.set_voters(&BTreeMap::from([(1, "a:1".into()), (2, "c:1".into())]));
        assert_eq!(
            addresses(&client),
            BTreeMap::from([(1, "a:1".into()), (2, "c:1".into())])
        );
        // Nothing learned: nothing forgotten.
        client.set_voters(&BTreeMap::new());
        assert_eq!(addresses(&client).len(), 2);
        // The leader removed itself: it stays reachable until another leader is named.
        client.set_leader_hint(Some(1));
        client.set_voters(&BTreeMap::from([(2, "c:1".into()), (3, "d:1".into())]));
        assert_eq!(
            addresses(&client).keys().copied().collect::<Vec<_>>(),
            [1, 2, 3]
        );
        client.set_leader_hint(Some(2));
        client.set_voters(&BTreeMap::from([(2, "c:1".into()), (3, "d:1".into())]));
        assert_eq!(
            addresses(&client).keys().copied().collect::<Vec<_>>(),
            [2, 3]
        );
        // This node itself is never asked over the network.
        let voter = ControllerClient::new(2, &BTreeMap::new(), Some(2), Default::default(), None);
        voter.set_voters(&BTreeMap::from([(2, "c:1".into())]));
        assert!(!voter.has_voters());
    }
}
