//! A controller node's membership of the quorum: the voters every client asks, following
//! the membership as it changes, voter changes, and the quorum's state.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::watch;

use super::commands::{COMMAND_TIMEOUT, RETRY_PAUSE};
use super::decisions::ControllerError;
use super::quorum::Raft;
use super::{Controller, rpc, voters};

/// How often a controller that is not a member asks the leader to replicate to it.
const FOLLOW_RETRY: Duration = Duration::from_secs(2);
/// An observer whose controller port refuses connections this long is no longer
/// replicated to (it asks again when it comes back).
const OBSERVER_GONE_FOR: Duration = Duration::from_secs(60);

impl Controller {
    /// The quorum's voters changed (or were learned): every way to the active controller
    /// asks them from now on.
    pub fn update_voters(&self, voters: &BTreeMap<i32, String>) {
        for client in [
            &self.command_client,
            &self.heartbeat_client,
            &self.fetch_client,
        ] {
            client.set_voters(voters);
        }
    }

    /// Follows the quorum's membership on a controller node: keeps the clients' voters
    /// current and, in a dynamic quorum, asks the leader to replicate to this controller
    /// while it is not a member (or the quorum does not know its directory yet).
    pub(super) async fn follow_membership(&self, raft: Raft, mut shutdown: watch::Receiver<bool>) {
        let dynamic = !self.settings.bootstrap_servers.is_empty();
        let mut metrics = raft.metrics();
        let mut asked_at: Option<tokio::time::Instant> = None;
        let mut pruned_at: Option<tokio::time::Instant> = None;
        let mut last_voters = BTreeMap::new();
        loop {
            let (voters, needs_follow) = {
                let current = metrics.borrow_and_update();
                let membership = current.membership_config.membership();
                (
                    voters::voter_addresses(membership),
                    voters::asks_to_follow(membership, self.settings.node_id),
                )
            };
            if voters != last_voters {
                self.update_voters(&voters);
                last_voters = voters;
            }
            if let Some(changes) = &self.voter_changes
                && pruned_at.is_none_or(|at| at.elapsed() >= FOLLOW_RETRY)
            {
                pruned_at = Some(tokio::time::Instant::now());
                changes.prune_learners(OBSERVER_GONE_FOR).await;
            }
            let due = asked_at.is_none_or(|at| at.elapsed() >= FOLLOW_RETRY);
            if dynamic
                && needs_follow
                && due
                && let Some(address) = self.settings.advertised_controller.clone()
            {
                asked_at = Some(tokio::time::Instant::now());
                let request = rpc::VoterRequest::Follow {
                    node_id: self.settings.node_id,
                    directory_id: self.settings.directory_id,
                    address,
                };
                match self.voter_change(request, FOLLOW_RETRY).await {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => {
                        tracing::warn!(%error, "The active controller did not take this controller in")
                    }
                    Err(error) => tracing::debug!(%error, "Cannot reach the active controller yet"),
                }
            }
            tokio::select! {
                changed = metrics.changed() => if changed.is_err() { return },
                _ = tokio::time::sleep(FOLLOW_RETRY) => {}
                _ = shutdown.changed() => return,
            }
        }
    }

    /// A change of the quorum's voters, made by the active controller (here or forwarded).
    pub async fn voter_change(
        &self,
        request: rpc::VoterRequest,
        timeout: Duration,
    ) -> Result<Result<(), rpc::VoterChangeError>, ControllerError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(changes) = &self.voter_changes
                && let Ok(outcome) = changes.handle(request.clone()).await
            {
                return Ok(outcome);
            }
            if let Some(leader) = self.active.as_ref().and_then(|a| a.leader())
                && leader != self.settings.node_id
            {
                self.command_client.set_leader_hint(Some(leader));
            }
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            let result = if self.command_client.has_voters() {
                self.command_client.voter_change(&request, remaining).await
            } else {
                Err(ControllerError::NotController(Some(
                    "this node is the only voter and has not been elected yet".into(),
                )))
            };
            match result {
                Err(ControllerError::NotController(_))
                    if tokio::time::Instant::now() + RETRY_PAUSE < deadline =>
                {
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                other => return other,
            }
        }
    }

    /// The metadata quorum's state, from the active controller.
    pub async fn describe_quorum(&self) -> Result<rpc::QuorumStatus, ControllerError> {
        if let Some(status) = self.active.as_ref().and_then(|a| a.quorum_status()) {
            return Ok(status);
        }
        self.command_client.describe_quorum(COMMAND_TIMEOUT).await
    }
}
