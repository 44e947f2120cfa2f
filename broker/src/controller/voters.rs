//! Changing the quorum's voters (KIP-853) on openraft's membership changes.
//!
//! ```text
//!   controller N starts, not a voter --Follow--> leader: add_learner(N)  (Kafka: observer)
//!   AddRaftVoter(N)    --> leader: N caught up? --> change_membership(+N)  (joint consensus)
//!   RemoveRaftVoter(N) --> leader: change_membership(-N), N stays a learner (an observer)
//! ```
//!
//! Only a dynamic quorum (one whose nodes name `controller.quorum.bootstrap.servers`, Kafka's
//! kraft.version 1) changes; a static one refuses, as Kafka does. One change at a time: a
//! second one while the first is in flight times out with Kafka's message. openraft moves
//! through a joint configuration, so a leader removing itself keeps leading until the new
//! configuration is committed, then steps down and the rest elect a leader.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use openraft::ChangeMembers;
use openraft::error::{ChangeMembershipError, ClientWriteError, RaftError};
use tokio::time::Instant;
use uuid::Uuid;

use super::quorum::network::PeersDown;
use super::quorum::{Raft, VoterNode, known_leader};
use super::rpc::{VoterChangeError, VoterRequest};
use crate::storage::encode_uuid;

/// How often a waiting AddRaftVoter looks whether the new voter has caught up.
const CATCH_UP_POLL: Duration = Duration::from_millis(50);
/// A failure to reach an observer this recent means the leader is still trying.
const STILL_FAILING: Duration = Duration::from_secs(10);
/// An AddRaftVoter without a usable timeout waits this long for the voter to catch up.
const DEFAULT_CATCH_UP: Duration = Duration::from_secs(30);

/// The leader's side of voter changes.
#[derive(Debug)]
pub struct VoterChanges {
    raft: Raft,
    node_id: i32,
    dynamic: bool,
    peers_down: PeersDown,
    in_flight: tokio::sync::Mutex<()>,
}

/// The answer when this node does not lead the quorum: who does, if known.
#[derive(Debug)]
pub struct NotLeader(pub Option<i32>);

impl VoterChanges {
    pub fn new(raft: Raft, node_id: i32, dynamic: bool, peers_down: PeersDown) -> Self {
        Self {
            raft,
            node_id,
            dynamic,
            peers_down,
            in_flight: tokio::sync::Mutex::new(()),
        }
    }

    /// Stops replicating to observers (learners) whose controller port has refused
    /// connections for `gone_for`: a removed voter that was restarted without the
    /// controller role, or a controller that is gone. One that comes back asks to follow
    /// again. Only the leader prunes, and never while another change is in flight.
    pub async fn prune_learners(&self, gone_for: Duration) {
        let metrics = self.raft.metrics().borrow().clone();
        if !self.dynamic || known_leader(&metrics, self.node_id as u64) != Some(self.node_id as u64)
        {
            return;
        }
        let membership = metrics.membership_config.membership();
        let now = std::time::Instant::now();
        // Still failing now, not only long ago: a record left from before the observer was
        // pruned and asked to follow again is no reason to prune it again.
        let gone: BTreeSet<u64> = membership
            .learner_ids()
            .filter(|id| {
                i32::try_from(*id)
                    .ok()
                    .and_then(|id| self.peers_down.failures(id))
                    .is_some_and(|(first, latest)| {
                        now.duration_since(first.into_std()) >= gone_for
                            && now.duration_since(latest.into_std()) <= STILL_FAILING
                    })
            })
            .collect();
        if gone.is_empty() {
            return;
        }
        let Ok(_one_at_a_time) = self.in_flight.try_lock() else {
            return;
        };
        tracing::info!(learners = ?gone, ?gone_for, "Observers' controller ports refuse connections; no longer replicating the metadata log to them");
        if let Err(ChangeFailure::Refused(error)) =
            self.change(ChangeMembers::RemoveNodes(gone)).await
        {
            tracing::warn!(%error, "Cannot remove gone observers");
        }
    }

    /// Carries out `request`, if this node leads the quorum.
    pub async fn handle(
        &self,
        request: VoterRequest,
    ) -> Result<Result<(), VoterChangeError>, NotLeader> {
        let leader = known_leader(&self.raft.metrics().borrow(), self.node_id as u64);
        if leader != Some(self.node_id as u64) {
            return Err(NotLeader(leader.and_then(|l| i32::try_from(l).ok())));
        }
        if !self.dynamic {
            return Ok(Err(VoterChangeError::Static(
                "the quorum's voters are fixed by controller.quorum.voters (a static quorum, Kafka's kraft.version 0); controllers started with controller.quorum.bootstrap.servers form a quorum whose voters can change".into(),
            )));
        }
        let Ok(_one_at_a_time) = self.in_flight.try_lock() else {
            return Ok(Err(VoterChangeError::TimedOut(
                "Request timed out waiting for leader to handle previous voter change request"
                    .into(),
            )));
        };
        let outcome = match request {
            VoterRequest::Add {
                node_id,
                directory_id,
                address,
                timeout_ms,
            } => {
                let timeout = match timeout_ms {
                    0 => DEFAULT_CATCH_UP,
                    ms => Duration::from_millis(ms),
                };
                self.add(node_id, directory_id, address, timeout).await
            }
            VoterRequest::Remove {
                node_id,
                directory_id,
            } => self.remove(node_id, directory_id).await,
            VoterRequest::Follow {
                node_id,
                directory_id,
                address,
            } => self.follow(node_id, directory_id, address).await,
        };
        match outcome {
            Err(ChangeFailure::NotLeader(leader)) => Err(NotLeader(leader)),
            Err(ChangeFailure::Refused(error)) => Ok(Err(error)),
            Ok(()) => Ok(Ok(())),
        }
    }

    fn membership(&self) -> openraft::Membership<u64, VoterNode> {
        self.raft
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .clone()
    }

    async fn add(
        &self,
        node_id: i32,
        directory_id: Option<Uuid>,
        address: String,
        timeout: Duration,
    ) -> Result<(), ChangeFailure> {
        let id = raft_id(node_id)?;
        let membership = self.membership();
        let voters: BTreeSet<u64> = membership.voter_ids().collect();
        if voters.contains(&id) {
            return Err(refused(VoterChangeError::Duplicate(format!(
                "The voter id for node {node_id} is already part of the set of voters {voters:?}."
            ))));
        }
        // A request without a directory id keeps the one the observer told the leader.
        let directory_id =
            directory_id.or_else(|| membership.get_node(&id).and_then(|n| n.directory_id));
        let wanted = VoterNode {
            addr: address.clone(),
            directory_id,
        };
        match membership.get_node(&id) {
            None => {
                tracing::info!(node_id, %address, "Adding a controller as an observer before it votes");
                self.change(ChangeMembers::AddNodes(BTreeMap::from([(id, wanted)])))
                    .await?;
            }
            Some(known) if *known != wanted => {
                // A learner (not a voter) whose address or directory changed: safe to update.
                tracing::info!(node_id, %address, previous = %known.addr, "Updating an observer's address before it votes");
                self.change(ChangeMembers::SetNodes(BTreeMap::from([(id, wanted)])))
                    .await?;
            }
            Some(_) => {}
        }
        let deadline = Instant::now() + timeout;
        let target = self.raft.metrics().borrow().last_log_index.unwrap_or(0);
        loop {
            let matched = {
                let metrics = self.raft.metrics();
                let metrics = metrics.borrow();
                let leader = known_leader(&metrics, self.node_id as u64);
                if leader != Some(self.node_id as u64) {
                    return Err(ChangeFailure::NotLeader(
                        leader.and_then(|l| i32::try_from(l).ok()),
                    ));
                }
                metrics
                    .replication
                    .as_ref()
                    .and_then(|r| r.get(&id).copied().flatten())
                    .map(|log_id| log_id.index)
            };
            if matched.is_some_and(|index| index >= target) {
                break;
            }
            if Instant::now() >= deadline {
                return Err(refused(VoterChangeError::TimedOut(format!(
                    "Aborted add voter operation for node {node_id} since it is lagging behind: it has {} of {target} metadata entries after {timeout:?} (is its controller listener {address} reachable from the leader?)",
                    matched.map_or(0, |m| m + 1)
                ))));
            }
            tokio::time::sleep(CATCH_UP_POLL).await;
        }
        self.change(ChangeMembers::AddVoterIds(BTreeSet::from([id])))
            .await?;
        tracing::info!(node_id, %address, voters = ?self.membership().voter_ids().collect::<Vec<_>>(), "Added a voter to the metadata quorum");
        Ok(())
    }

    async fn remove(&self, node_id: i32, directory_id: Option<Uuid>) -> Result<(), ChangeFailure> {
        let id = raft_id(node_id)?;
        let membership = self.membership();
        let voters: BTreeSet<u64> = membership.voter_ids().collect();
        let not_found = |detail: String| {
            refused(VoterChangeError::NotFound(format!(
                "Cannot remove voter {node_id} from the set of voters {voters:?}: {detail}"
            )))
        };
        if !voters.contains(&id) {
            return Err(not_found("it is not a voter".into()));
        }
        let recorded = membership.get_node(&id).and_then(|n| n.directory_id);
        if let (Some(asked), Some(recorded)) = (directory_id.filter(|d| !d.is_nil()), recorded)
            && asked != recorded
        {
            return Err(not_found(format!(
                "its directory id is {}, not {}",
                encode_uuid(recorded),
                encode_uuid(asked)
            )));
        }
        if voters.len() == 1 {
            return Err(not_found("a quorum needs at least one voter".into()));
        }
        // A removed voter is kept as a learner: it goes on following the log, as an observer.
        // Not the leader itself: openraft lets a learner lead, so a leader kept as one would
        // never step down. It leaves the membership, steps down once the configuration
        // without it commits, and asks the new leader to follow again like any controller.
        let retain = id != self.node_id as u64;
        settle(
            self.raft
                .change_membership(ChangeMembers::RemoveVoters(BTreeSet::from([id])), retain)
                .await,
        )?;
        tracing::info!(node_id, voters = ?self.membership().voter_ids().collect::<Vec<_>>(), "Removed a voter from the metadata quorum");
        Ok(())
    }

    async fn follow(
        &self,
        node_id: i32,
        directory_id: Uuid,
        address: String,
    ) -> Result<(), ChangeFailure> {
        let id = raft_id(node_id)?;
        let membership = self.membership();
        match membership.get_node(&id) {
            // A leader that removed itself steps down once out of the membership, then asks
            // the next leader to follow.
            None if node_id == self.node_id => Ok(()),
            None => {
                tracing::info!(node_id, %address, "A controller asks to follow the quorum; replicating to it as an observer");
                let node = VoterNode {
                    addr: address,
                    directory_id: Some(directory_id),
                };
                self.change(ChangeMembers::AddNodes(BTreeMap::from([(id, node)])))
                    .await
            }
            Some(known) if known.directory_id.is_none() => {
                // A voter from controller.quorum.voters: the quorum learns its directory.
                let node = VoterNode {
                    addr: known.addr.clone(),
                    directory_id: Some(directory_id),
                };
                self.change(ChangeMembers::SetNodes(BTreeMap::from([(id, node)])))
                    .await
            }
            Some(known) if !membership.voter_ids().any(|v| v == id) && known.addr != address => {
                let node = VoterNode {
                    addr: address,
                    directory_id: Some(directory_id),
                };
                self.change(ChangeMembers::SetNodes(BTreeMap::from([(id, node)])))
                    .await
            }
            Some(_) => Ok(()),
        }
    }

    async fn change(&self, change: ChangeMembers<u64, VoterNode>) -> Result<(), ChangeFailure> {
        settle(self.raft.change_membership(change, false).await)
    }
}

#[derive(Debug)]
enum ChangeFailure {
    NotLeader(Option<i32>),
    Refused(VoterChangeError),
}

fn refused(error: VoterChangeError) -> ChangeFailure {
    ChangeFailure::Refused(error)
}

fn raft_id(node_id: i32) -> Result<u64, ChangeFailure> {
    u64::try_from(node_id).map_err(|_| {
        refused(VoterChangeError::Invalid(format!(
            "{node_id} is not a node id"
        )))
    })
}

fn settle<T>(
    result: Result<T, RaftError<u64, ClientWriteError<u64, VoterNode>>>,
) -> Result<(), ChangeFailure> {
    match result {
        Ok(_) => Ok(()),
        Err(RaftError::APIError(ClientWriteError::ForwardToLeader(forward))) => Err(
            ChangeFailure::NotLeader(forward.leader_id.and_then(|l| i32::try_from(l).ok())),
        ),
        Err(RaftError::APIError(ClientWriteError::ChangeMembershipError(
            ChangeMembershipError::InProgress(in_progress),
        ))) => Err(refused(VoterChangeError::TimedOut(format!(
            "Request timed out waiting for voters to commit the latest voter change ({in_progress})"
        )))),
        Err(RaftError::APIError(ClientWriteError::ChangeMembershipError(other))) => {
            Err(refused(VoterChangeError::Invalid(other.to_string())))
        }
        Err(RaftError::Fatal(fatal)) => Err(refused(VoterChangeError::TimedOut(format!(
            "the quorum stopped: {fatal}"
        )))),
    }
}

/// Whether a controller of a dynamic quorum should ask the leader to replicate to it
/// (`VoterRequest::Follow`), going by the membership in its own log.
///
/// Every controller that is not a voter asks, again and again, not only one missing from
/// its log: the log of a controller that was down can still list it as a learner after the
/// leader stopped replicating to it (`prune_learners`), and nothing else would bring it
/// back. The leader answers a known learner's request without a change. A voter asks once
/// more only while the quorum does not know its directory yet.
pub fn asks_to_follow(membership: &openraft::Membership<u64, VoterNode>, node_id: i32) -> bool {
    let Ok(id) = u64::try_from(node_id) else {
        return false;
    };
    let voter = membership.voter_ids().any(|v| v == id);
    let directory_known = membership
        .get_node(&id)
        .is_some_and(|n| n.directory_id.is_some());
    !(voter && directory_known)
}

/// The voters' controller addresses in `membership`, for the clients that look for the
/// active controller.
pub fn voter_addresses(membership: &openraft::Membership<u64, VoterNode>) -> BTreeMap<i32, String> {
    membership
        .voter_ids()
        .filter_map(|id| {
            let node = membership.get_node(&id)?;
            Some((i32::try_from(id).ok()?, node.addr.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(directory: bool) -> VoterNode {
        VoterNode {
            addr: "c:9093".into(),
            directory_id: directory.then(Uuid::new_v4),
        }
    }

    fn membership(voters: &[u64], nodes: &[(u64, bool)]) -> openraft::Membership<u64, VoterNode> {
        let nodes: BTreeMap<u64, VoterNode> =
            nodes.iter().map(|(id, dir)| (*id, node(*dir))).collect();
        openraft::Membership::new(vec![voters.iter().copied().collect()], nodes)
    }

    #[test]
    fn only_a_voter_with_a_known_directory_stops_asking_to_follow() {
        let all = membership(&[1, 2], &[(1, true), (2, false), (3, true)]);
        assert!(!asks_to_follow(&all, 1), "a voter the quorum knows fully");
        assert!(
            asks_to_follow(&all, 2),
            "a voter whose directory is not known yet"
        );
        // A learner in this node's own log may have been pruned by the leader since.
        assert!(asks_to_follow(&all, 3), "a learner keeps asking");
        assert!(asks_to_follow(&all, 4), "a controller missing from the log");
        assert!(!asks_to_follow(&all, -1), "not a node id");
    }
}
