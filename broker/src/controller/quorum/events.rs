//! What the quorum does, one line per change: openraft's own logs (a warning per failed
//! call to a stopped voter, several a second) are off by default, and these take their
//! place — the leader and term as they change, and each voter becoming unreachable, a
//! reminder every [`REMINDER`] while it stays so, and its return.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::{Raft, known_leader};

/// How often a voter that stays unreachable is mentioned again.
pub const REMINDER: Duration = Duration::from_secs(30);

/// Logs every change of the quorum's leader or term as this voter sees it.
pub async fn log_leadership(raft: Raft, node_id: i32, mut shutdown: watch::Receiver<bool>) {
    let mut metrics = raft.metrics();
    let mut last = (None, 0);
    loop {
        let (leader, term) = {
            let current = metrics.borrow_and_update();
            (known_leader(&current, node_id as u64), current.current_term)
        };
        if (leader, term) != last {
            match leader {
                Some(leader) => tracing::info!(
                    leader,
                    term,
                    this_node_leads = leader == node_id as u64,
                    "Metadata quorum leader"
                ),
                None => tracing::info!(term, "Metadata quorum has no leader; electing"),
            }
            last = (leader, term);
        }
        tokio::select! {
            changed = metrics.changed() => if changed.is_err() { return },
            _ = shutdown.changed() => return,
        }
    }
}

/// Reachability of each voter by Raft calls, shared by every connection to it.
#[derive(Debug, Clone, Default)]
pub struct VoterReachability(Arc<parking_lot::Mutex<HashMap<u64, Unreachable>>>);

#[derive(Debug, Clone, Copy)]
struct Unreachable {
    since: Instant,
    mentioned: Instant,
}

impl VoterReachability {
    /// A call to `voter` failed: logged when it starts a run of failures, and then only as
    /// a reminder every [`REMINDER`].
    pub fn failed(&self, voter: u64, address: &str, error: &dyn std::fmt::Display) {
        let now = Instant::now();
        let mut voters = self.0.lock();
        match voters.get_mut(&voter) {
            None => {
                tracing::warn!(voter, address, %error, "Voter unreachable");
                voters.insert(
                    voter,
                    Unreachable {
                        since: now,
                        mentioned: now,
                    },
                );
            }
            Some(state) if now.duration_since(state.mentioned) >= REMINDER => {
                tracing::warn!(voter, address, for_s = now.duration_since(state.since).as_secs(), %error, "Voter still unreachable");
                state.mentioned = now;
            }
            Some(_) => {}
        }
    }

    /// A call to `voter` was answered.
    pub fn answered(&self, voter: u64) {
        if let Some(state) = self.0.lock().remove(&voter) {
            tracing::info!(
                voter,
                after_ms = state.since.elapsed().as_millis() as u64,
                "Voter reachable again"
            );
        }
    }
}
