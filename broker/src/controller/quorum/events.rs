//! What the quorum does, one line per change: openraft's own logs (a warning per failed
//! call to a stopped voter, several a second) are off by default, and these take their
//! place — the leader and term as they change, and each voter becoming unreachable (its
//! calls failing for [`UNREACHABLE_AFTER`]), a reminder every [`REMINDER`] while it stays
//! so, and its return.

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

/// How long a voter's calls must keep failing before it is called unreachable: a voter
/// that misses a heartbeat or two (a busy, shared machine; a short GC-like stall) and then
/// answers is not news. Two heartbeat rounds short of the election timeout, so the line
/// comes before any election it might cause.
pub const UNREACHABLE_AFTER: Duration = Duration::from_millis(300);

/// Reachability of each voter by Raft calls, shared by every connection to it.
#[derive(Debug, Clone, Default)]
pub struct VoterReachability(Arc<parking_lot::Mutex<HashMap<u64, Unreachable>>>);

#[derive(Debug, Clone, Copy)]
struct Unreachable {
    since: Instant,
    /// When the last line about it was logged; `None` while the run of failures is too
    /// short to mention.
    mentioned: Option<Instant>,
}

impl VoterReachability {
    /// A call to `voter` failed: logged once the failures have lasted [`UNREACHABLE_AFTER`],
    /// and then only as a reminder every [`REMINDER`].
    pub fn failed(&self, voter: u64, address: &str, error: &dyn std::fmt::Display) {
        let now = Instant::now();
        let mut voters = self.0.lock();
        let state = voters.entry(voter).or_insert(Unreachable {
            since: now,
            mentioned: None,
        });
        let failing_for = now.duration_since(state.since);
        match state.mentioned {
            None if failing_for >= UNREACHABLE_AFTER => {
                tracing::warn!(voter, address, for_ms = failing_for.as_millis() as u64, %error, "Voter unreachable");
                state.mentioned = Some(now);
            }
            Some(mentioned) if now.duration_since(mentioned) >= REMINDER => {
                tracing::warn!(voter, address, for_s = failing_for.as_secs(), %error, "Voter still unreachable");
                state.mentioned = Some(now);
            }
            _ => tracing::debug!(voter, address, %error, "A call to a voter failed"),
        }
    }

    /// A call to `voter` was answered.
    pub fn answered(&self, voter: u64) {
        let Some(state) = self.0.lock().remove(&voter) else {
            return;
        };
        if state.mentioned.is_some() {
            tracing::info!(
                voter,
                after_ms = state.since.elapsed().as_millis() as u64,
                "Voter reachable again"
            );
        }
    }

    /// Whether `voter` has been called unreachable (its failures lasted long enough).
    #[cfg(test)]
    fn reported(&self, voter: u64) -> bool {
        self.0
            .lock()
            .get(&voter)
            .is_some_and(|state| state.mentioned.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missed_heartbeat_is_not_an_unreachable_voter() {
        let voters = VoterReachability::default();
        voters.failed(2, "127.0.0.1:1", &"timed out");
        assert!(!voters.reported(2), "one failure is not reported");
        voters.answered(2);
        voters.failed(2, "127.0.0.1:1", &"timed out");
        assert!(
            !voters.reported(2),
            "the run of failures starts again after an answer"
        );
        std::thread::sleep(UNREACHABLE_AFTER);
        voters.failed(2, "127.0.0.1:1", &"timed out");
        assert!(voters.reported(2), "failures lasting UNREACHABLE_AFTER are");
        voters.answered(2);
        assert!(!voters.reported(2));
    }
}
