//! One partition replica on this broker: its role from the metadata image (leader or
//! follower, leader epoch, ISR), the followers' progress as the leader sees it, and the
//! high watermark. The log below knows nothing of roles; everything that depends on them
//! is decided here.
//!
//! The high watermark is the smallest log end offset across the ISR (plus any replica
//! whose joining the ISR is in flight: it may become leader the moment the controller
//! accepts it, so it must already hold everything committed).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use kafka_protocol::ResponseError;
use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;

use crate::metadata::records::PartitionState;
use crate::storage::validator::{RecordRules, Validated, ValidationError, validate_records};
use crate::storage::{AppendInfo, Log, LogError, TopicPartition, Verification};

/// Pause after a refused ISR proposal.
const PROPOSAL_BACKOFF_MS: i64 = 500;

/// The partition's role, as the last applied image gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    pub leader: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub replicas: Vec<i32>,
    pub in_sync_replicas: Vec<i32>,
    /// An ISR this leader proposed to the controller and has not seen applied yet.
    pub pending_isr: Option<Vec<i32>>,
    /// After a refused proposal, no new one before this time (ms): the controller's
    /// reasons (a replica still fenced, a newer epoch on its way) take a moment to pass.
    pub propose_after_ms: i64,
}

/// What the leader knows of one follower.
#[derive(Debug, Clone, Copy, Default)]
struct FollowerProgress {
    /// The follower's log end offset (its last fetch offset); unknown after a leader
    /// change until it fetches.
    log_end_offset: Option<u64>,
    /// Last time the follower had everything the leader had.
    last_caught_up_ms: i64,
    last_fetch_ms: i64,
    /// The leader's log end offset at the follower's previous fetch.
    leader_end_at_last_fetch: u64,
}

/// A change of the ISR that the leader wants the controller to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrProposal {
    pub topic_partition: TopicPartition,
    pub leader: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub in_sync_replicas: Vec<i32>,
}

/// Why a follower did not apply what its leader sent.
#[derive(Debug, thiserror::Error)]
pub enum FollowerError {
    #[error("this replica no longer follows in that leader epoch")]
    RoleChanged,
    #[error(transparent)]
    Log(#[from] LogError),
}

/// Why a wait for the in-sync replicas ended without them having the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitWait {
    /// The leadership moved (or the broker is stopping) first.
    LeadershipLost,
    TimedOut,
    /// The ISR has the records but is now below `min.insync.replicas`.
    NotEnoughReplicasAfterAppend,
}

/// How an image changed this replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    Unchanged,
    /// Leads in a new epoch; `was_leader` when it led the previous epoch too.
    BecameLeader {
        epoch: i32,
        was_leader: bool,
    },
    BecameFollower {
        leader: i32,
        epoch: i32,
    },
}

/// Why the leader did not append a produce request's records.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error("this broker does not lead {0}")]
    NotLeader(TopicPartition),
    #[error(
        "{topic_partition} has {in_sync} in-sync replica(s); min.insync.replicas is {required}"
    )]
    NotEnoughReplicas {
        topic_partition: TopicPartition,
        in_sync: usize,
        required: usize,
    },
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error(transparent)]
    Log(#[from] LogError),
}

#[derive(Debug)]
pub struct Partition {
    topic_partition: TopicPartition,
    node_id: i32,
    log: Arc<Log>,
    role: RwLock<Role>,
    followers: Mutex<HashMap<i32, FollowerProgress>>,
    /// Moves with the high watermark and on every role change: consumers' parked
    /// fetches and `acks=all` produces wait on it.
    high_watermark: watch::Sender<u64>,
    /// Moves with the log end offset and on every role change: followers' parked fetches
    /// wait on it.
    log_end: watch::Sender<u64>,
    /// The leader's high watermark as this follower last heard it (its lag, for
    /// DescribeLogDirs).
    leader_high_watermark: AtomicU64,
}

impl Partition {
    pub fn new(topic_partition: TopicPartition, node_id: i32, log: Arc<Log>) -> Self {
        // Replication owns the high watermark from here on.
        log.set_high_watermark(log.high_watermark());
        let high_watermark = watch::channel(log.high_watermark()).0;
        let log_end = watch::channel(log.log_end_offset()).0;
        Self {
            topic_partition,
            node_id,
            log,
            role: RwLock::new(Role {
                leader: -1,
                leader_epoch: -1,
                partition_epoch: -1,
                replicas: Vec::new(),
                in_sync_replicas: Vec::new(),
                pending_isr: None,
                propose_after_ms: 0,
            }),
            followers: Mutex::new(HashMap::new()),
            high_watermark,
            log_end,
            leader_high_watermark: AtomicU64::new(0),
        }
    }

    pub fn topic_partition(&self) -> &TopicPartition {
        &self.topic_partition
    }

    /// Replication's own access to the log; the API asks the partition or the replica
    /// manager instead.
    pub(in crate::replication) fn log(&self) -> &Arc<Log> {
        &self.log
    }

    pub fn role(&self) -> Role {
        self.role.read().clone()
    }

    pub fn log_start_offset(&self) -> u64 {
        self.log.log_start_offset()
    }

    pub fn high_watermark(&self) -> u64 {
        self.log.high_watermark()
    }

    /// Whole batches from `offset` up to the log end (at most `max_bytes`, at least one
    /// batch). A coordinator loading its state reads this way: its own partition, to the
    /// end, as its new leader.
    pub fn read_to_log_end(
        &self,
        offset: u64,
        max_bytes: u32,
    ) -> Result<crate::storage::ReadResult, LogError> {
        self.log.read_with_limit(
            offset,
            u64::from(max_bytes),
            crate::storage::ReadLimit::LogEnd,
        )
    }

    pub fn is_leader(&self) -> bool {
        self.role.read().leader == self.node_id
    }

    pub fn subscribe_high_watermark(&self) -> watch::Receiver<u64> {
        self.high_watermark.subscribe()
    }

    pub fn subscribe_log_end(&self) -> watch::Receiver<u64> {
        self.log_end.subscribe()
    }

    /// Applies the partition's state from a new image.
    pub fn apply(&self, state: &PartitionState, now_ms: i64) -> Result<Transition, LogError> {
        let mut role = self.role.write();
        let was_leader = role.leader == self.node_id;
        let new_epoch = role.leader_epoch != state.leader_epoch;
        let is_leader = state.leader == self.node_id;
        if is_leader && (!was_leader || new_epoch) {
            self.log.assign_leader_epoch(state.leader_epoch)?;
            // A new leader knows nothing of its followers' logs yet; those in sync get a
            // whole lag window to show up.
            let mut followers = self.followers.lock();
            followers.clear();
            for replica in state.replicas.iter().filter(|r| **r != self.node_id) {
                let in_sync = state.in_sync_replicas.contains(replica);
                followers.insert(
                    *replica,
                    FollowerProgress {
                        last_caught_up_ms: if in_sync { now_ms } else { 0 },
                        ..FollowerProgress::default()
                    },
                );
            }
        } else if is_leader {
            let mut followers = self.followers.lock();
            followers.retain(|replica, _| state.replicas.contains(replica));
            for replica in state.replicas.iter().filter(|r| **r != self.node_id) {
                followers.entry(*replica).or_default();
            }
        }
        if role.partition_epoch != state.partition_epoch || new_epoch {
            role.pending_isr = None;
        }
        role.leader = state.leader;
        role.leader_epoch = state.leader_epoch;
        role.partition_epoch = state.partition_epoch;
        role.replicas = state.replicas.clone();
        role.in_sync_replicas = state.in_sync_replicas.clone();
        drop(role);
        if is_leader {
            self.maybe_advance_high_watermark();
        }
        // Wake every parked request: it re-checks leadership and epochs.
        self.high_watermark.send_modify(|_| {});
        self.log_end.send_modify(|_| {});
        Ok(match (is_leader, was_leader && !new_epoch) {
            (true, false) => Transition::BecameLeader {
                epoch: state.leader_epoch,
                was_leader,
            },
            (false, _) if (was_leader || new_epoch) && state.leader >= 0 => {
                Transition::BecameFollower {
                    leader: state.leader,
                    epoch: state.leader_epoch,
                }
            }
            _ => Transition::Unchanged,
        })
    }

    /// The leader epoch, if this broker leads the partition in the client's epoch
    /// (`-1`: the client did not say). Kafka's errors otherwise.
    pub fn check_leader(&self, current_leader_epoch: i32) -> Result<i32, i16> {
        let role = self.role.read();
        check_epoch(&role, current_leader_epoch)?;
        if role.leader != self.node_id {
            return Err(ResponseError::NotLeaderOrFollower.code());
        }
        Ok(role.leader_epoch)
    }

    /// The leader's append of a produce request (Kafka's `appendRecordsToLeader`): `acks=all`
    /// with fewer in-sync replicas than `min.insync.replicas` is refused before anything
    /// else; then the records are validated against the topic's rules (re-encoded where
    /// they ask for it) and appended.
    pub fn append_records(&self, records: &[u8], acks: i16) -> Result<AppendInfo, AppendError> {
        self.append_checked(records, acks, true, Verification::Unchecked)
    }

    /// [`Partition::append_records`] of a request whose transactional batches were
    /// checked with their coordinator (KIP-890 part 1, [`crate::txn::verification`]).
    pub fn append_records_verified(
        &self,
        records: &[u8],
        acks: i16,
        verification: Verification,
    ) -> Result<AppendInfo, AppendError> {
        self.append_checked(records, acks, true, verification)
    }

    /// Starts verifying `producer_id`'s transaction here: `None` when it is open
    /// already, else the guard the verified append must carry.
    pub fn start_verification(&self, producer_id: i64, epoch: i16) -> Option<u64> {
        self.log.start_verification(producer_id, epoch)
    }

    /// The leader's append of records this broker wrote itself (the group coordinator's):
    /// the same leader and min.insync.replicas checks, no client validation.
    pub fn append_as_leader(&self, records: &[u8], acks: i16) -> Result<AppendInfo, AppendError> {
        self.append_checked(records, acks, false, Verification::Unchecked)
    }

    /// [`Partition::append_as_leader`] of a transactional write checked with its
    /// transaction coordinator (the group coordinator's TxnOffsetCommit).
    pub fn append_as_leader_verified(
        &self,
        records: &[u8],
        acks: i16,
        verification: Verification,
    ) -> Result<AppendInfo, AppendError> {
        self.append_checked(records, acks, false, verification)
    }

    /// Writes a transaction marker (WriteTxnMarkers): a COMMIT or ABORT control batch of
    /// `producer_id`'s transaction, as the leader. A marker of an epoch older than the
    /// producer's is refused (INVALID_PRODUCER_EPOCH).
    pub fn append_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        coordinator_epoch: i32,
    ) -> Result<AppendInfo, AppendError> {
        let marker = crate::storage::batch_builder::build_marker(
            producer_id,
            producer_epoch,
            commit,
            coordinator_epoch,
            self.log.now_ms(),
        )
        .map_err(|error| {
            AppendError::Log(LogError::Decode {
                topic_partition: self.topic_partition.clone(),
                offset: self.log.log_end_offset(),
                reason: error.to_string(),
            })
        })?;
        self.append_checked(&marker, -1, false, Verification::Unchecked)
    }

    fn append_checked(
        &self,
        records: &[u8],
        acks: i16,
        validate: bool,
        verification: Verification,
    ) -> Result<AppendInfo, AppendError> {
        let role = self.role.read();
        if role.leader != self.node_id {
            return Err(AppendError::NotLeader(self.topic_partition.clone()));
        }
        let config = self.log.config();
        let min_isr = config.min_insync_replicas.max(1) as usize;
        if acks == -1 && role.in_sync_replicas.len() < min_isr {
            return Err(AppendError::NotEnoughReplicas {
                topic_partition: self.topic_partition.clone(),
                in_sync: role.in_sync_replicas.len(),
                required: min_isr,
            });
        }
        // Batches kept as produced are appended straight from the request's buffer.
        let re_encoded;
        let stored: &[u8] = if validate {
            let rules = RecordRules::new(&config, &self.topic_partition, self.log.now_ms());
            match validate_records(records, &rules)? {
                Validated::AsProduced => records,
                Validated::ReEncoded(bytes) => {
                    re_encoded = bytes;
                    &re_encoded
                }
            }
        } else {
            records
        };
        let info = self
            .log
            .append_verified(stored, role.leader_epoch, verification)?;
        drop(role);
        if !info.duplicate {
            self.log_end.send_replace(self.log.log_end_offset());
            self.maybe_advance_high_watermark();
        }
        Ok(info)
    }

    /// Whether the ISR is (still) at least `min.insync.replicas`; checked when an
    /// `acks=all` write completes (NOT_ENOUGH_REPLICAS_AFTER_APPEND otherwise).
    pub fn enough_in_sync(&self) -> bool {
        let min_isr = self.log.config().min_insync_replicas.max(1) as usize;
        self.role.read().in_sync_replicas.len() >= min_isr
    }

    /// Waits until the high watermark reaches `required` (every in-sync replica has the
    /// records below it) while this broker still leads in `leader_epoch`.
    pub async fn wait_committed(
        &self,
        required: u64,
        leader_epoch: i32,
        deadline: tokio::time::Instant,
        mut shutdown: watch::Receiver<bool>,
    ) -> Result<(), CommitWait> {
        let mut signal = self.high_watermark.subscribe();
        loop {
            {
                let role = self.role.read();
                if role.leader != self.node_id || role.leader_epoch != leader_epoch {
                    return Err(CommitWait::LeadershipLost);
                }
            }
            if self.log.high_watermark() >= required {
                return if self.enough_in_sync() {
                    Ok(())
                } else {
                    Err(CommitWait::NotEnoughReplicasAfterAppend)
                };
            }
            tokio::select! {
                changed = signal.changed() => if changed.is_err() {
                    return Err(CommitWait::LeadershipLost);
                },
                () = tokio::time::sleep_until(deadline) => return Err(CommitWait::TimedOut),
                _ = shutdown.changed() => return Err(CommitWait::LeadershipLost),
            }
        }
    }

    /// The leader epoch, if this broker holds a replica of the partition (leader or
    /// follower) in the client's epoch: consumers may read from followers (KIP-392).
    pub fn check_replica(&self, current_leader_epoch: i32) -> Result<i32, i16> {
        let role = self.role.read();
        check_epoch(&role, current_leader_epoch)?;
        if role.leader < 0 || !role.replicas.contains(&self.node_id) {
            return Err(ResponseError::NotLeaderOrFollower.code());
        }
        Ok(role.leader_epoch)
    }

    /// The in-sync followers that already hold `fetch_offset`, with their log end
    /// offsets: where the leader may send a consumer (KIP-392). Empty on a follower.
    pub fn read_replica_candidates(&self, fetch_offset: u64) -> Vec<(i32, u64)> {
        let role = self.role.read();
        if role.leader != self.node_id {
            return Vec::new();
        }
        let followers = self.followers.lock();
        role.in_sync_replicas
            .iter()
            .filter(|id| **id != self.node_id)
            .filter_map(|id| {
                let end = followers.get(id)?.log_end_offset?;
                (end >= fetch_offset).then_some((*id, end))
            })
            .collect()
    }

    /// How many committed offsets this replica lacks: 0 on the leader; on a follower, the
    /// leader's high watermark (as last heard) past this log's end.
    pub fn offset_lag(&self) -> u64 {
        if self.is_leader() {
            return 0;
        }
        self.leader_high_watermark
            .load(Ordering::Acquire)
            .saturating_sub(self.log.log_end_offset())
    }

    /// Whether the high watermark waits for `replica`: it is in the ISR, or in an ISR this
    /// leader proposed (a joining replica must already hold everything committed).
    pub fn holds_high_watermark(&self, replica: i32) -> bool {
        let role = self.role.read();
        role.in_sync_replicas.contains(&replica)
            || role
                .pending_isr
                .as_ref()
                .is_some_and(|pending| pending.contains(&replica))
    }

    /// Moves the high watermark to the smallest log end offset across the ISR.
    pub fn maybe_advance_high_watermark(&self) {
        let role = self.role.read();
        if role.leader != self.node_id {
            return;
        }
        let current = self.log.high_watermark();
        let mut candidate = self.log.log_end_offset();
        let followers = self.followers.lock();
        let pending = role.pending_isr.iter().flatten();
        for replica in role.in_sync_replicas.iter().chain(pending) {
            if *replica == self.node_id {
                continue;
            }
            let end = followers
                .get(replica)
                .and_then(|f| f.log_end_offset)
                .unwrap_or(current);
            candidate = candidate.min(end);
        }
        drop(followers);
        if candidate > current {
            self.log.set_high_watermark(candidate);
            self.high_watermark.send_replace(candidate);
        }
    }

    /// A follower fetched from `fetch_offset` (its log end offset): records its progress,
    /// moves the high watermark, and returns an ISR expansion when it has caught up.
    pub fn record_follower_fetch(
        &self,
        replica: i32,
        fetch_offset: u64,
        now_ms: i64,
    ) -> Result<Option<IsrProposal>, i16> {
        {
            let role = self.role.read();
            if role.leader != self.node_id {
                return Err(ResponseError::NotLeaderOrFollower.code());
            }
            if !role.replicas.contains(&replica) || replica == self.node_id {
                return Err(ResponseError::NotLeaderOrFollower.code());
            }
        }
        let leader_end = self.log.log_end_offset();
        {
            let mut followers = self.followers.lock();
            let progress = followers.entry(replica).or_default();
            if fetch_offset >= leader_end {
                progress.last_caught_up_ms = progress.last_caught_up_ms.max(now_ms);
            } else if fetch_offset >= progress.leader_end_at_last_fetch {
                progress.last_caught_up_ms = progress.last_caught_up_ms.max(progress.last_fetch_ms);
            }
            progress.leader_end_at_last_fetch = leader_end;
            progress.last_fetch_ms = now_ms;
            progress.log_end_offset = Some(fetch_offset.min(leader_end));
        }
        self.maybe_advance_high_watermark();
        let mut role = self.role.write();
        let epoch_start = self
            .log
            .end_offset_for_epoch(role.leader_epoch.saturating_sub(1))
            .map_or(0, |(_, end)| end);
        let joins = role.leader == self.node_id
            && role.pending_isr.is_none()
            && now_ms >= role.propose_after_ms
            && !role.in_sync_replicas.contains(&replica)
            && fetch_offset >= self.log.high_watermark()
            && fetch_offset >= epoch_start;
        if !joins {
            return Ok(None);
        }
        let mut isr = role.in_sync_replicas.clone();
        isr.push(replica);
        Ok(Some(self.propose(&mut role, isr)))
    }

    /// Followers that have not caught up within `lag_max_ms` leave the ISR.
    pub fn check_lagging(&self, now_ms: i64, lag_max_ms: i64) -> Option<IsrProposal> {
        let mut role = self.role.write();
        if role.leader != self.node_id
            || role.pending_isr.is_some()
            || now_ms < role.propose_after_ms
        {
            return None;
        }
        let followers = self.followers.lock();
        let lagging: Vec<i32> = role
            .in_sync_replicas
            .iter()
            .copied()
            .filter(|r| *r != self.node_id)
            .filter(|r| {
                followers
                    .get(r)
                    .is_none_or(|f| now_ms - f.last_caught_up_ms > lag_max_ms)
            })
            .collect();
        drop(followers);
        if lagging.is_empty() {
            return None;
        }
        let isr: Vec<i32> = role
            .in_sync_replicas
            .iter()
            .copied()
            .filter(|r| !lagging.contains(r))
            .collect();
        tracing::info!(topic_partition = %self.topic_partition, ?lagging, lag_max_ms, "Followers fell behind; shrinking the ISR");
        Some(self.propose(&mut role, isr))
    }

    fn propose(&self, role: &mut Role, isr: Vec<i32>) -> IsrProposal {
        role.pending_isr = Some(isr.clone());
        IsrProposal {
            topic_partition: self.topic_partition.clone(),
            leader: self.node_id,
            leader_epoch: role.leader_epoch,
            partition_epoch: role.partition_epoch,
            in_sync_replicas: isr,
        }
    }

    /// The controller refused or lost a proposal: a new one may follow after a pause.
    pub fn proposal_failed(&self, partition_epoch: i32, now_ms: i64) {
        let mut role = self.role.write();
        if role.partition_epoch == partition_epoch {
            role.pending_isr = None;
            role.propose_after_ms = now_ms + PROPOSAL_BACKOFF_MS;
        }
    }

    /// Followers' lag behind the leader's log end, for metrics (leader only).
    pub fn follower_lags(&self) -> Vec<(i32, u64)> {
        if !self.is_leader() {
            return Vec::new();
        }
        let end = self.log.log_end_offset();
        self.followers
            .lock()
            .iter()
            .map(|(id, f)| (*id, end.saturating_sub(f.log_end_offset.unwrap_or(0))))
            .collect()
    }

    /// A follower's append of what its leader sent, then the leader's high watermark
    /// and log start offset as far as this log reaches — only while this replica still
    /// follows in `leader_epoch`. The role lock is held throughout: a fetch response that
    /// arrives as this replica becomes leader must not land in the new leader's log (its
    /// epoch cache would no longer describe its batches).
    pub fn append_as_follower(
        &self,
        leader_epoch: i32,
        records: &[u8],
        leader_high_watermark: u64,
        leader_log_start: u64,
    ) -> Result<AppendInfo, FollowerError> {
        let _role = self.following(leader_epoch)?;
        let info = if records.is_empty() {
            None
        } else {
            Some(self.log.append_replicated(records)?)
        };
        self.follow_offsets(leader_high_watermark, leader_log_start);
        if info.as_ref().is_some_and(|i| i.record_count > 0) {
            self.log_end.send_replace(self.log.log_end_offset());
        }
        Ok(info.unwrap_or(AppendInfo {
            base_offset: self.log.log_end_offset(),
            last_offset: self.log.log_end_offset().saturating_sub(1),
            log_append_time: None,
            log_start_offset: self.log.log_start_offset(),
            record_count: 0,
            duplicate: false,
        }))
    }

    fn follow_offsets(&self, leader_high_watermark: u64, leader_log_start: u64) {
        self.leader_high_watermark
            .store(leader_high_watermark, Ordering::Release);
        let high_watermark = leader_high_watermark.min(self.log.log_end_offset());
        if high_watermark != self.log.high_watermark() {
            self.log.set_high_watermark(high_watermark);
            self.high_watermark.send_replace(high_watermark);
        }
        if leader_log_start > self.log.log_start_offset() {
            let target = leader_log_start.min(high_watermark);
            if target > self.log.log_start_offset()
                && let Err(error) = self.log.advance_log_start_offset(target)
            {
                tracing::warn!(topic_partition = %self.topic_partition, %error, "Cannot follow the leader's log start offset");
            }
        }
    }

    /// The role, read-locked, if this replica follows in `leader_epoch`.
    fn following(
        &self,
        leader_epoch: i32,
    ) -> Result<parking_lot::RwLockReadGuard<'_, Role>, FollowerError> {
        let role = self.role.read();
        if role.leader == self.node_id || role.leader < 0 || role.leader_epoch != leader_epoch {
            return Err(FollowerError::RoleChanged);
        }
        Ok(role)
    }

    /// Removes this replica's divergent suffix (from `offset` on), while it follows in
    /// `leader_epoch`.
    pub fn truncate_as_follower(
        &self,
        leader_epoch: i32,
        offset: u64,
    ) -> Result<u64, FollowerError> {
        let _role = self.following(leader_epoch)?;
        Ok(self.truncate_to(offset)?)
    }

    /// Restarts this replica's log at `offset` (the leader's log start is past
    /// everything here), while it follows in `leader_epoch`.
    pub fn restart_as_follower(&self, leader_epoch: i32, offset: u64) -> Result<(), FollowerError> {
        let _role = self.following(leader_epoch)?;
        self.log.reset_to(offset)?;
        self.log_end.send_replace(self.log.log_end_offset());
        Ok(())
    }

    /// Removes this replica's divergent suffix (from `offset` on).
    pub fn truncate_to(&self, offset: u64) -> Result<u64, LogError> {
        let end = self.log.truncate_to(offset)?;
        self.high_watermark.send_replace(self.log.high_watermark());
        self.log_end.send_replace(end);
        Ok(end)
    }

    /// Sets the high watermark a restart found in the checkpoint.
    pub fn restore_high_watermark(&self, offset: u64) {
        self.log.set_high_watermark(offset);
        self.high_watermark.send_replace(self.log.high_watermark());
    }
}

/// Kafka's epoch fencing of a client's `current_leader_epoch`.
fn check_epoch(role: &Role, current_leader_epoch: i32) -> Result<(), i16> {
    if current_leader_epoch >= 0 && current_leader_epoch > role.leader_epoch {
        return Err(ResponseError::UnknownLeaderEpoch.code());
    }
    if current_leader_epoch >= 0 && current_leader_epoch < role.leader_epoch {
        return Err(ResponseError::FencedLeaderEpoch.code());
    }
    Ok(())
}

pub mod offsets;
#[cfg(test)]
mod tests;
