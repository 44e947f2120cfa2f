//! The active controller: on every voter, and acting while that voter leads the quorum.
//!
//! Decisions run one at a time under `decide_lock`: the image is read after the quorum
//! confirms this node still leads and has applied everything committed before
//! (`ensure_linearizable`), the decision's records are committed, and only then may the
//! next decision read the image. Broker sessions (last heartbeat times) live here in
//! memory, as in Kafka. A new active controller gives every broker two heartbeat
//! intervals to find it, and the voter that led before it one (Kafka gives a whole
//! session): the broker that does not is most likely the dead node whose loss elected
//! this controller. A broker's heartbeat connection closing ends its session at once.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;
use uuid::Uuid;

use super::decisions::{ControllerCommand, ControllerError, DecisionInputs, decide};
use super::feed::MetadataFeed;
use super::quorum::Raft;
use super::quorum::network::PeersDown;
use super::rpc::CommandReply;
use crate::metadata::records::MetadataBatch;
use crate::storage::LogConfig;

/// How long a decision may wait for the quorum before the caller is told it timed out.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(5);
/// How often sessions are checked and the cluster id is stamped.
const TICK: Duration = Duration::from_millis(100);
/// How long Raft traffic must find a voter's process gone before its session ends
/// (a few Raft heartbeats: one reset connection is not a death).
const PEER_GONE_FOR: Duration = Duration::from_millis(250);
/// Pause before fencing an expired broker again when the last attempt did not commit.
const FENCE_RETRY: Duration = Duration::from_secs(1);

/// Kafka's automatic leader balance (`auto.leader.rebalance.enable`): every
/// `leader.imbalance.check.interval.seconds`, leadership goes back to the preferred
/// replicas of each broker leading fewer than `100 - leader.imbalance.per.broker.percentage`
/// % of the partitions it prefers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderBalance {
    pub check_interval: Duration,
    pub imbalance_percent: u32,
}

/// The active controller's timing, from the broker config.
#[derive(Debug, Clone, Copy)]
pub struct ActiveSettings {
    pub session_timeout: Duration,
    pub heartbeat_interval: Duration,
    pub leader_balance: Option<LeaderBalance>,
}

#[derive(Debug, Default)]
struct Sessions {
    last_heartbeat: HashMap<i32, Instant>,
    /// The log index each broker had applied at its last heartbeat.
    applied_index: HashMap<i32, u64>,
    /// Log index of each broker's registration: it is unfenced once it has applied it.
    registered_at: HashMap<i32, u64>,
    /// The term these sessions belong to; a new term starts them afresh.
    term: Option<u64>,
    /// Brokers (by incarnation) in controlled shutdown: their heartbeats never unfence
    /// them again.
    shutting_down: HashMap<i32, Uuid>,
}

#[derive(Debug)]
pub struct ActiveController {
    node_id: i32,
    raft: Raft,
    feed: Arc<MetadataFeed>,
    log_defaults: LogConfig,
    session_timeout: Duration,
    /// How often brokers heartbeat: a newly elected controller gives them two intervals
    /// to find it, and the voter that led before it one.
    heartbeat_interval: Duration,
    /// The last other voter seen leading the quorum (most likely dead or cut off when
    /// this voter is elected).
    previous_leader: std::sync::atomic::AtomicI32,
    /// Voters whose process Raft traffic found gone.
    peers_down: PeersDown,
    decide_lock: tokio::sync::Mutex<()>,
    sessions: Mutex<Sessions>,
    leader_balance: Option<LeaderBalance>,
}

impl ActiveController {
    pub fn new(
        node_id: i32,
        raft: Raft,
        feed: Arc<MetadataFeed>,
        log_defaults: LogConfig,
        settings: ActiveSettings,
        peers_down: PeersDown,
    ) -> Self {
        Self {
            node_id,
            raft,
            feed,
            log_defaults,
            session_timeout: settings.session_timeout,
            heartbeat_interval: settings.heartbeat_interval.min(settings.session_timeout),
            previous_leader: std::sync::atomic::AtomicI32::new(-1),
            peers_down,
            decide_lock: tokio::sync::Mutex::new(()),
            sessions: Mutex::new(Sessions::default()),
            leader_balance: settings.leader_balance,
        }
    }

    /// The active controller's node id as this voter knows it.
    pub fn leader(&self) -> Option<i32> {
        super::quorum::known_leader(&self.raft.metrics().borrow(), self.node_id as u64)
            .and_then(|id| i32::try_from(id).ok())
    }

    pub fn is_leader(&self) -> bool {
        self.leader() == Some(self.node_id)
    }

    /// Decides and commits `command`, if this voter leads the quorum.
    pub async fn execute(
        &self,
        command: ControllerCommand,
    ) -> Result<CommandReply, ControllerError> {
        match tokio::time::timeout(COMMIT_TIMEOUT, self.execute_now(command)).await {
            Ok(result) => result,
            Err(_) => Err(ControllerError::Timeout(format!(
                "no quorum within {COMMIT_TIMEOUT:?}"
            ))),
        }
    }

    async fn execute_now(
        &self,
        command: ControllerCommand,
    ) -> Result<CommandReply, ControllerError> {
        let _decision = self.decide_lock.lock().await;
        self.raft
            .ensure_linearizable()
            .await
            .map_err(|error| match error.forward_to_leader() {
                Some(forward) => not_controller(forward),
                // Not enough voters answer: the change may succeed once they do.
                None if matches!(
                    error,
                    openraft::error::RaftError::APIError(
                        openraft::error::CheckIsLeaderError::QuorumNotEnough(_)
                    )
                ) =>
                {
                    ControllerError::Timeout(error.to_string())
                }
                None => ControllerError::Quorum(error.to_string()),
            })?;
        let view = self.feed.current();
        let term = self.raft.metrics().borrow().current_term;
        self.start_term(term, &view.image);
        let now = Instant::now();
        let (live_sessions, caught_up_index) = {
            let mut sessions = self.sessions.lock();
            if let ControllerCommand::BrokerHeartbeat {
                node_id,
                applied_index,
                ..
            } = &command
            {
                sessions.last_heartbeat.insert(*node_id, now);
                sessions.applied_index.insert(*node_id, *applied_index);
            }
            let live: BTreeSet<i32> = sessions
                .last_heartbeat
                .iter()
                .filter(|(_, at)| now.duration_since(**at) < self.session_timeout)
                .map(|(node, _)| *node)
                .collect();
            let caught_up = match &command {
                ControllerCommand::BrokerHeartbeat {
                    node_id,
                    incarnation,
                    ..
                } if sessions.shutting_down.get(node_id) == Some(incarnation) => u64::MAX,
                ControllerCommand::BrokerHeartbeat { node_id, .. } => {
                    sessions.registered_at.get(node_id).copied().unwrap_or(0)
                }
                _ => 0,
            };
            (live, caught_up)
        };
        let inputs = DecisionInputs {
            log_defaults: &self.log_defaults,
            live_sessions: &live_sessions,
            placement_start: rand::random::<u32>() as usize,
            new_topic_id: Uuid::new_v4(),
            caught_up_index,
        };
        let (records, outcome) = decide(&view.image, &command, &inputs)?;
        check_records_allowed(&records, view.image.features.metadata_version())?;
        if let ControllerCommand::ControlledShutdown {
            node_id,
            incarnation,
        } = &command
        {
            self.sessions
                .lock()
                .shutting_down
                .insert(*node_id, *incarnation);
        }
        if records.is_empty() {
            return Ok(CommandReply {
                outcome,
                index: view.applied_index,
            });
        }
        tracing::debug!(
            ?command,
            records = records.len(),
            "Committing a controller decision"
        );
        let written = self
            .raft
            .client_write(MetadataBatch { records })
            .await
            .map_err(|error| match error.forward_to_leader() {
                Some(forward) => not_controller(forward),
                None => ControllerError::Quorum(error.to_string()),
            })?;
        let index = written.log_id.index;
        if let ControllerCommand::RegisterBroker { node_id, .. } = &command {
            let mut sessions = self.sessions.lock();
            sessions.last_heartbeat.insert(*node_id, Instant::now());
            sessions.registered_at.insert(*node_id, index);
        }
        Ok(CommandReply { outcome, index })
    }

    /// A broker's heartbeat connection closed (its process died, or it gave up on a call):
    /// its session ends one heartbeat interval from now instead of a whole timeout. A live
    /// broker heartbeats again before that (it retries a failed heartbeat at once).
    pub fn connection_lost(&self, node_id: i32, incarnation: Uuid) {
        let current = self
            .feed
            .current()
            .image
            .brokers
            .get(&node_id)
            .is_some_and(|b| b.incarnation == incarnation && !b.fenced);
        if !current || !self.is_leader() {
            return;
        }
        let mut sessions = self.sessions.lock();
        if let Some(at) = sessions.last_heartbeat.get_mut(&node_id) {
            // One heartbeat interval left: a live broker that only dropped the connection
            // (a timed-out call) heartbeats again at once; a dead one is fenced.
            let left = self.heartbeat_interval;
            tracing::info!(
                node_id,
                ?left,
                "A broker's heartbeat connection closed; shortening its session"
            );
            let shortened = Instant::now()
                .checked_sub(self.session_timeout.saturating_sub(left))
                .unwrap_or(*at);
            *at = shortened.min(*at);
        }
    }

    /// The quorum as this voter sees it, if it leads.
    pub fn quorum_status(&self) -> Option<super::rpc::QuorumStatus> {
        let metrics = self.raft.metrics().borrow().clone();
        if super::quorum::known_leader(&metrics, self.node_id as u64) != Some(self.node_id as u64) {
            return None;
        }
        let voters: Vec<(i32, Option<u64>)> = metrics
            .membership_config
            .voter_ids()
            .map(|id| {
                let matched = if id == self.node_id as u64 {
                    metrics.last_log_index
                } else {
                    metrics
                        .replication
                        .as_ref()
                        .and_then(|r| r.get(&id).copied().flatten())
                        .map(|log_id| log_id.index)
                };
                (id as i32, matched)
            })
            .collect();
        let sessions = self.sessions.lock();
        let image = self.feed.current().image.clone();
        let observers = image
            .brokers
            .keys()
            .filter(|id| !voters.iter().any(|(v, _)| v == *id))
            .map(|id| (*id, sessions.applied_index.get(id).copied().unwrap_or(0)))
            .collect();
        let membership = metrics.membership_config.membership();
        let nodes = membership
            .voter_ids()
            .filter_map(|id| {
                let node = membership.get_node(&id)?;
                Some((
                    i32::try_from(id).ok()?,
                    (node.addr.clone(), node.directory_id),
                ))
            })
            .collect();
        Some(super::rpc::QuorumStatus {
            nodes,
            leader_id: self.node_id,
            term: metrics.current_term,
            high_watermark: metrics.last_applied.map_or(0, |l| l.index),
            voters,
            observers,
        })
    }

    /// A new active controller (a new term) starts every broker's session afresh.
    fn start_term(&self, term: u64, image: &crate::metadata::image::ClusterImage) {
        let mut sessions = self.sessions.lock();
        if sessions.term != Some(term) {
            let now = Instant::now();
            sessions.term = Some(term);
            // A live broker finds the new controller within a heartbeat or two; one that
            // does not is most likely the node whose death made this term, above all the
            // voter that led before. They get that grace, not a whole session, so their
            // partitions move sooner (fencing a live broker costs only a leader move).
            let grant = |grace: Duration| {
                now.checked_sub(self.session_timeout.saturating_sub(grace))
                    .unwrap_or(now)
            };
            let previous = self
                .previous_leader
                .load(std::sync::atomic::Ordering::Relaxed);
            sessions.last_heartbeat = image
                .brokers
                .keys()
                .map(|id| {
                    let grace = if *id == previous {
                        self.heartbeat_interval
                    } else {
                        self.heartbeat_interval * 2
                    };
                    (*id, grant(grace))
                })
                .collect();
            sessions.registered_at.clear();
        }
    }

    /// Fences brokers whose sessions expired and stamps the cluster id, while leading.
    /// Returns when shutting down, or with an error when a static quorum's voters are not
    /// the configured ones (a node must not serve with a voter list the quorum disagrees
    /// with; a dynamic quorum's voters live in its log).
    pub async fn run_timers(
        self: Arc<Self>,
        static_voters: Option<BTreeMap<i32, String>>,
        cluster_id: String,
        bootstrap_features: BTreeMap<String, i16>,
        mut shutdown: watch::Receiver<bool>,
    ) -> Result<(), ControllerError> {
        let mut ticker = tokio::time::interval(TICK);
        let mut fence_attempts: HashMap<i32, Instant> = HashMap::new();
        let mut last_balance = Instant::now();
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = shutdown.changed() => return Ok(()),
            }
            let metrics = self.raft.metrics().borrow().clone();
            if let Err(fatal) = &metrics.running_state {
                return Err(ControllerError::Quorum(format!(
                    "the Raft core stopped: {fatal}"
                )));
            }
            let quorum: BTreeSet<i32> = metrics
                .membership_config
                .voter_ids()
                .filter_map(|id| i32::try_from(id).ok())
                .collect();
            let configured: Option<BTreeSet<i32>> = static_voters
                .as_ref()
                .map(|voters| voters.keys().copied().collect());
            if let Some(configured) = configured
                && !quorum.is_empty()
                && quorum != configured
            {
                return Err(ControllerError::Quorum(format!(
                    "controller.quorum.voters names {configured:?} but the quorum's voters are {quorum:?}"
                )));
            }
            let leader = super::quorum::known_leader(&metrics, self.node_id as u64);
            if leader != Some(self.node_id as u64) {
                self.sessions.lock().term = None;
                if let Some(leader) = leader.and_then(|l| i32::try_from(l).ok()) {
                    self.previous_leader
                        .store(leader, std::sync::atomic::Ordering::Relaxed);
                }
                continue;
            }
            let image = self.feed.current().image.clone();
            self.start_term(metrics.current_term, &image);
            if image.cluster_id.is_none() || !image.features.is_set() {
                if image.cluster_id.is_some() {
                    tracing::info!(
                        levels = ?bootstrap_features,
                        "The metadata log has no feature levels (written by a release before them): finalizing the levels that release ran at"
                    );
                }
                let command = ControllerCommand::IdentifyCluster {
                    cluster_id: cluster_id.clone(),
                    features: bootstrap_features.clone(),
                };
                if let Err(error) = self.execute(command).await {
                    tracing::warn!(%error, "Cannot record the cluster id yet");
                }
                continue;
            }
            let expired: Vec<i32> = {
                let sessions = self.sessions.lock();
                let now = Instant::now();
                image
                    .live_brokers()
                    .filter(|b| {
                        let last = sessions.last_heartbeat.get(&b.node_id);
                        // A voter whose process refused or dropped Raft traffic after its
                        // last heartbeat, with nothing answering for a few Raft heartbeats,
                        // is gone: no need to wait out its session. Only a voter: a learner
                        // (a removed voter now running as a broker only, whose controller
                        // port is closed) refuses Raft traffic while its broker is alive.
                        let gone = quorum.contains(&b.node_id)
                            && self.peers_down.failures(b.node_id).is_some_and(
                                |(first, latest)| {
                                    let since = last.map_or(first, |at| first.max(*at));
                                    last.is_none_or(|at| latest > *at)
                                        && now.duration_since(since) >= PEER_GONE_FOR
                                },
                            );
                        gone || last
                            .is_none_or(|at| now.duration_since(*at) >= self.session_timeout)
                    })
                    .map(|b| b.node_id)
                    .collect()
            };
            let now = Instant::now();
            if let Some(balance) = self.leader_balance
                && now.duration_since(last_balance) >= balance.check_interval
            {
                last_balance = now;
                let command = ControllerCommand::BalanceLeaders {
                    imbalance_percent: balance.imbalance_percent,
                };
                if let Err(error) = self.execute(command).await {
                    tracing::warn!(%error, "Cannot balance partition leaders");
                }
            }
            fence_attempts.retain(|node, at: &mut Instant| {
                expired.contains(node) && now.duration_since(*at) < FENCE_RETRY
            });
            for node_id in expired {
                if fence_attempts.contains_key(&node_id) {
                    // Tried within FENCE_RETRY; the quorum has not taken it yet.
                    continue;
                }
                fence_attempts.insert(node_id, now);
                tracing::warn!(node_id, timeout = ?self.session_timeout, "Broker session expired; fencing it");
                match self
                    .execute(ControllerCommand::FenceBroker { node_id })
                    .await
                {
                    Ok(_) => {}
                    Err(error) => tracing::warn!(node_id, %error, "Fencing failed"),
                }
            }
        }
    }
}

/// openraft's "not the leader" as the controller's refusal.
fn not_controller(
    forward: &openraft::error::ForwardToLeader<u64, super::quorum::VoterNode>,
) -> ControllerError {
    ControllerError::NotController(
        forward
            .leader_id
            .map(|id| format!("node {id} leads the quorum")),
    )
}

/// Refuses a decision whose records the finalized `metadata.version` does not allow yet
/// (a level finalized earlier in the same batch counts): a node that runs that level must
/// be able to read every record written at it.
fn check_records_allowed(
    records: &[crate::metadata::records::MetadataRecord],
    mut metadata_version: i16,
) -> Result<(), ControllerError> {
    use crate::metadata::record_format::{allowed_at, record_type};
    use crate::metadata::records::MetadataRecord;
    for record in records {
        if let MetadataRecord::FeatureLevel { name, level } = record
            && name == crate::metadata::features::METADATA_VERSION
        {
            metadata_version = *level;
        }
        if !allowed_at(record, metadata_version) {
            let kind = record_type(record);
            return Err(ControllerError::UnsupportedVersion(format!(
                "{} records need metadata.version {} or later; the cluster is at {}",
                kind.name,
                crate::metadata::features::metadata_version_name(kind.since_metadata_version),
                crate::metadata::features::metadata_version_name(metadata_version)
            )));
        }
    }
    Ok(())
}
