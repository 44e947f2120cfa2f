//! The group coordinator: every group whose `__consumer_offsets` partition this broker
//! leads, the parked JoinGroup/SyncGroup responses, persistence and loading.
//!
//! One mutex guards all groups; it is held only while a state machine runs and its
//! records are appended (a few microseconds), never across an `.await`. A parked
//! JoinGroup waits on a oneshot channel that an [`Action`] later completes.
//!
//! Write path: a change is appended to the group's offsets partition first and applied
//! in memory after the append succeeded, so what a client was told is on disk.
//! Load path: the coordinator runtime reads an offsets partition this broker starts
//! leading from its log start offset ([`crate::coordinator::loader`]); later records win,
//! tombstones delete; undecodable records are skipped with a warning.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::records::Compression;
use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::classic::{Action, ClassicGroup, JoinRequest, JoinResponseData, Reply};
use super::consumer::ConsumerGroup;
use super::load::Loaded;
use super::metrics::{GroupMetrics, GroupSnapshot, PartitionPosition};
use super::records::{
    self, GroupMetadataValue, OffsetValue, RecordKey, encode_group_value, encode_key,
};
use super::{GroupError, OFFSETS_TOPIC};
use crate::config::GroupConfig;
use crate::coordinator::{CoordinatorRecord, CoordinatorShard};
use crate::replication::ReplicaManager;
use crate::storage::batch_builder::{
    ProducerFields, SimpleRecord, build_batch, build_transactional_batch,
};
use crate::storage::{Clock, TopicPartition, Verification};

/// A group's protocol and state.
#[derive(Debug)]
pub enum GroupKind {
    Classic(ClassicGroup),
    Consumer(ConsumerGroup),
}

/// A group: its membership and its committed offsets.
#[derive(Debug)]
pub struct Group {
    pub kind: GroupKind,
    pub offsets: BTreeMap<TopicPartition, OffsetValue>,
}

impl Group {
    pub fn is_empty(&self) -> bool {
        match &self.kind {
            GroupKind::Classic(g) => g.is_empty(),
            GroupKind::Consumer(g) => g.members.is_empty(),
        }
    }

    /// (protocol type, state name, group type) as ListGroups reports them.
    pub fn summary(&self) -> (String, &'static str, &'static str) {
        match &self.kind {
            GroupKind::Classic(g) => (g.protocol_type.clone(), g.state.name(), "classic"),
            GroupKind::Consumer(g) => ("consumer".to_string(), g.state_name(), "consumer"),
        }
    }

    /// Since when the group has had no members (for offset expiry).
    pub(super) fn empty_since(&self) -> i64 {
        let state = match &self.kind {
            GroupKind::Classic(g) => g.state_timestamp,
            GroupKind::Consumer(g) => g.empty_since,
        };
        let newest_commit = self
            .offsets
            .values()
            .map(|o| o.commit_timestamp)
            .max()
            .unwrap_or(0);
        state.max(newest_commit)
    }
}

/// A result per partition (OffsetCommit, OffsetDelete).
pub type PartitionResults = Vec<(TopicPartition, Result<(), GroupError>)>;

/// Parked responses by (group id, member id).
type Waiters<T> = HashMap<(String, String), oneshot::Sender<T>>;

#[derive(Debug, Default)]
pub(super) struct Groups {
    pub(super) groups: HashMap<String, Group>,
    pub(super) join_waiters: Waiters<JoinResponseData>,
    pub(super) sync_waiters: Waiters<Result<Bytes, GroupError>>,
    pub(super) last_expiry_check: i64,
    /// Offsets of transactions not decided yet, by producer id (TxnOffsetCommit).
    pub(super) pending_transactions: HashMap<i64, HashMap<(String, TopicPartition), OffsetValue>>,
}

/// The coordinator of every group on this broker.
#[derive(Debug)]
pub struct GroupCoordinator {
    pub config: GroupConfig,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) state: Mutex<Groups>,
    pub metrics: GroupMetrics,
    /// Appends go through the replica of the group's partition, and only where this
    /// broker leads it.
    pub(super) replicas: Arc<ReplicaManager>,
    /// Offsets partitions whose groups are loaded (the ones led here).
    loaded: Mutex<std::collections::BTreeSet<i32>>,
}

impl GroupCoordinator {
    /// A coordinator of the groups of the `__consumer_offsets` partitions `replicas`
    /// leads: the coordinator runtime loads each when this broker becomes its leader.
    pub fn new(
        config: GroupConfig,
        replicas: Arc<ReplicaManager>,
        clock: Arc<dyn Clock>,
        metrics: GroupMetrics,
    ) -> Self {
        Self {
            config,
            clock,
            state: Mutex::new(Groups::default()),
            metrics,
            replicas,
            loaded: Mutex::new(Default::default()),
        }
    }

    /// This broker became leader of offsets partition `partition` (`loaded`: what its log
    /// holds): its groups are loaded afresh (it may hold commits made at the previous
    /// leader); or it stopped leading it (`None`): its groups are dropped (another broker
    /// coordinates them).
    fn changed_hands(&self, partition: i32, loaded: Option<Vec<Loaded>>) {
        let leading = loaded.is_some();
        let loaded = loaded.unwrap_or_default();
        let partitions = self.config.offsets_partitions;
        let now = self.clock.now_ms();
        let mut state = self.state.lock();
        if leading {
            self.loaded.lock().insert(partition);
        } else {
            self.loaded.lock().remove(&partition);
        }
        state
            .groups
            .retain(|id, _| records::partition_for(id, partitions) != partition);
        // The parked JoinGroup/SyncGroup answers of the groups just dropped would never be
        // sent (a client waits out its request timeout, max.poll.interval.ms: minutes): as
        // Kafka does when a coordinator resigns, they are answered NOT_COORDINATOR and the
        // member finds the coordinator again.
        let here =
            |(group, _): &(String, String)| records::partition_for(group, partitions) == partition;
        for ((_, member), waiter) in state.join_waiters.extract_if(|key, _| here(key)) {
            let _ = waiter.send(JoinResponseData::failed(
                GroupError::NotCoordinator,
                &member,
            ));
        }
        for (_, waiter) in state.sync_waiters.extract_if(|key, _| here(key)) {
            let _ = waiter.send(Err(GroupError::NotCoordinator));
        }
        state.pending_transactions.retain(|_, offsets| {
            offsets.retain(|(group, _), _| records::partition_for(group, partitions) != partition);
            !offsets.is_empty()
        });
        self.replay_partition(&mut state, loaded, now);
        state.groups.retain(|_, g| {
            !(g.is_empty()
                && g.offsets.is_empty()
                && matches!(&g.kind, GroupKind::Classic(c) if c.generation_id == 0))
        });
        tracing::info!(
            partition,
            leading,
            groups = state.groups.len(),
            "Consumer-group partition changed hands"
        );
    }

    /// NOT_COORDINATOR unless this broker leads the group's `__consumer_offsets`
    /// partition and has loaded it (clients then ask FindCoordinator again): a group
    /// must never start here from nothing while its committed state lives elsewhere.
    pub fn check_coordinator(&self, group_id: &str) -> Result<(), GroupError> {
        let partition = records::partition_for(group_id, self.config.offsets_partitions);
        match self
            .replicas
            .partition(&TopicPartition::new(OFFSETS_TOPIC, partition))
        {
            Some(replica) if replica.is_leader() => {
                if self.loaded.lock().contains(&partition) {
                    Ok(())
                } else {
                    Err(GroupError::CoordinatorLoadInProgress)
                }
            }
            _ => Err(GroupError::NotCoordinator),
        }
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Appends `records` to the group's offsets partition.
    pub(super) fn append(&self, group: &str, records: &[SimpleRecord]) -> Result<(), GroupError> {
        self.append_batch(group, records, None, Verification::Unchecked)
    }

    /// Appends `records` to the group's offsets partition, as a transactional batch of
    /// `producer` (id, epoch) when given (TxnOffsetCommit, checked with its transaction
    /// coordinator as `verification` says).
    pub(super) fn append_batch(
        &self,
        group: &str,
        records: &[SimpleRecord],
        producer: Option<(i64, i16)>,
        verification: Verification,
    ) -> Result<(), GroupError> {
        if records.is_empty() {
            return Ok(());
        }
        let partition = records::partition_for(group, self.config.offsets_partitions);
        let tp = TopicPartition::new(OFFSETS_TOPIC, partition);
        let built = match producer {
            None => build_batch(records, Compression::None, ProducerFields::default()),
            Some((producer_id, producer_epoch)) => build_transactional_batch(
                records,
                Compression::None,
                ProducerFields {
                    producer_id,
                    producer_epoch,
                    base_sequence: -1,
                },
            ),
        };
        let batch = built.map_err(|e| GroupError::BuildBatch {
            partition: tp.clone(),
            reason: e.to_string(),
        })?;
        let replica = self
            .replicas
            .partition(&tp)
            .filter(|p| p.is_leader())
            .ok_or(GroupError::NotCoordinator)?;
        replica
            .append_as_leader_verified(&batch, 1, verification)
            .map(|_| ())
            .map_err(|error| {
                tracing::warn!(topic_partition = %tp, %error, "Appending to __consumer_offsets failed");
                match error {
                    crate::replication::AppendError::NotLeader(_) => GroupError::NotCoordinator,
                    other => GroupError::Append {
                        partition: tp.clone(),
                        reason: other.to_string(),
                    },
                }
            })
    }

    pub(super) fn record(
        &self,
        key: &RecordKey,
        value: Option<Bytes>,
    ) -> Result<SimpleRecord, GroupError> {
        Ok(SimpleRecord {
            key: Some(encode_key(key).map_err(|e| GroupError::EncodeRecord {
                reason: e.to_string(),
            })?),
            value,
            timestamp: self.now(),
            headers: Vec::new(),
        })
    }

    fn persist_group_metadata(&self, group_id: &str, value: &GroupMetadataValue) {
        let result = encode_group_value(value)
            .map_err(|e| GroupError::EncodeRecord {
                reason: e.to_string(),
            })
            .and_then(|bytes| {
                self.record(
                    &RecordKey::Group {
                        group: group_id.to_string(),
                    },
                    Some(bytes),
                )
            })
            .and_then(|record| self.append(group_id, &[record]));
        if let Err(error) = result {
            tracing::warn!(group = group_id, %error, "Group metadata not persisted");
        }
    }

    /// Carries out a classic group's actions: completes parked responses, persists.
    fn run_actions(&self, state: &mut Groups, group_id: &str, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::CompleteJoin {
                    member_id,
                    response,
                } => {
                    if let Some(waiter) = state
                        .join_waiters
                        .remove(&(group_id.to_string(), member_id))
                    {
                        let _ = waiter.send(response);
                    }
                }
                Action::CompleteSync { member_id, result } => {
                    if let Some(waiter) = state
                        .sync_waiters
                        .remove(&(group_id.to_string(), member_id))
                    {
                        let _ = waiter.send(result);
                    }
                }
                Action::Persist => {
                    if let Some(Group {
                        kind: GroupKind::Classic(group),
                        ..
                    }) = state.groups.get(group_id)
                    {
                        let record = group.to_record();
                        self.persist_group_metadata(group_id, &record);
                    }
                }
                Action::RebalanceCompleted { duration_ms } => {
                    self.metrics
                        .rebalance_completed(group_id, "classic", duration_ms);
                }
            }
        }
    }

    /// Carries out a classic call's actions. A parked reply gets its waiter first, because
    /// the same actions may already complete it; `Err` is the receiver to await.
    fn settle<T>(
        &self,
        state: &mut Groups,
        group_id: &str,
        reply: Reply<T>,
        actions: Vec<Action>,
        waiters: fn(&mut Groups) -> &mut Waiters<T>,
    ) -> Result<T, oneshot::Receiver<T>> {
        let settled = match reply {
            Reply::Now(value) => Ok(value),
            Reply::Wait(member_id) => {
                let (sender, receiver) = oneshot::channel();
                waiters(state).insert((group_id.to_string(), member_id), sender);
                Err(receiver)
            }
        };
        self.run_actions(state, group_id, actions);
        settled
    }

    fn check_session_timeout(&self, timeout: i32) -> Result<(), GroupError> {
        if timeout < self.config.min_session_timeout_ms
            || timeout > self.config.max_session_timeout_ms
        {
            return Err(GroupError::InvalidSessionTimeout);
        }
        Ok(())
    }

    /// JoinGroup; resolves when the join phase of the rebalance completes.
    pub async fn join(&self, group_id: &str, request: JoinRequest) -> JoinResponseData {
        let member_id = request.member_id.clone();
        if group_id.is_empty() {
            return JoinResponseData::failed(GroupError::InvalidGroupId, &member_id);
        }
        if let Err(error) = self
            .check_coordinator(group_id)
            .and_then(|()| self.check_session_timeout(request.session_timeout_ms))
        {
            return JoinResponseData::failed(error, &member_id);
        }
        let receiver = {
            let now = self.now();
            let mut state = self.state.lock();
            let delay = self.config.initial_rebalance_delay_ms;
            let group = state
                .groups
                .entry(group_id.to_string())
                .or_insert_with(|| new_group(now, delay));
            if let GroupKind::Consumer(consumer) = &group.kind {
                if !consumer.members.is_empty() {
                    return JoinResponseData::failed(
                        GroupError::InconsistentGroupProtocol,
                        &member_id,
                    );
                }
                group.kind = GroupKind::Classic(ClassicGroup::new(now, delay));
            }
            let GroupKind::Classic(classic) = &mut group.kind else {
                return JoinResponseData::failed(GroupError::CoordinatorNotAvailable, &member_id);
            };
            let mut actions = Vec::new();
            let reply = classic.join(request, now, &mut actions);
            tracing::debug!(
                group = group_id,
                member_id,
                state = classic.state.name(),
                ?reply,
                ?actions,
                "JoinGroup handled"
            );
            match self.settle(&mut state, group_id, reply, actions, |s| {
                &mut s.join_waiters
            }) {
                Ok(response) => return response,
                Err(receiver) => receiver,
            }
        };
        receiver.await.unwrap_or_else(|_| {
            JoinResponseData::failed(GroupError::RebalanceInProgress, &member_id)
        })
    }

    /// SyncGroup; resolves when the leader's assignment arrives.
    #[allow(clippy::too_many_arguments)]
    pub async fn sync(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation_id: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, Bytes)>,
    ) -> Result<Bytes, GroupError> {
        self.check_coordinator(group_id)?;
        let receiver = {
            let now = self.now();
            let mut state = self.state.lock();
            let Some(Group {
                kind: GroupKind::Classic(group),
                ..
            }) = state.groups.get_mut(group_id)
            else {
                return Err(GroupError::UnknownMemberId);
            };
            let mut actions = Vec::new();
            let reply = group.sync(
                member_id,
                instance_id,
                generation_id,
                protocol_type,
                protocol_name,
                assignments,
                now,
                &mut actions,
            );
            tracing::debug!(
                group = group_id,
                member_id,
                generation_id,
                state = group.state.name(),
                ?reply,
                ?actions,
                "SyncGroup handled"
            );
            match self.settle(&mut state, group_id, reply, actions, |s| {
                &mut s.sync_waiters
            }) {
                Ok(result) => return result,
                Err(receiver) => receiver,
            }
        };
        receiver
            .await
            .unwrap_or(Err(GroupError::RebalanceInProgress))
    }

    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation_id: i32,
    ) -> Result<(), GroupError> {
        self.check_coordinator(group_id)?;
        let now = self.now();
        let mut state = self.state.lock();
        match state.groups.get_mut(group_id) {
            Some(Group {
                kind: GroupKind::Classic(group),
                ..
            }) => {
                let result = group.heartbeat(member_id, instance_id, generation_id, now);
                tracing::debug!(
                    group = group_id,
                    member_id,
                    generation_id,
                    state = group.state.name(),
                    ?result,
                    "Heartbeat"
                );
                result
            }
            _ => Err(GroupError::UnknownMemberId),
        }
    }

    /// LeaveGroup: one result per (member id, instance id).
    pub fn leave(
        &self,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<Result<(), GroupError>>, GroupError> {
        self.check_coordinator(group_id)?;
        let now = self.now();
        let mut state = self.state.lock();
        let Some(Group {
            kind: GroupKind::Classic(group),
            ..
        }) = state.groups.get_mut(group_id)
        else {
            return Err(GroupError::UnknownMemberId);
        };
        let mut actions = Vec::new();
        let results = members
            .iter()
            .map(|(member_id, instance)| {
                group.leave(member_id, instance.as_deref(), now, &mut actions)
            })
            .collect();
        tracing::debug!(group = group_id, ?members, ?results, ?actions, "LeaveGroup");
        self.run_actions(&mut state, group_id, actions);
        Ok(results)
    }

    /// ListGroups: (group id, protocol type, state, group type).
    pub fn list(&self) -> Vec<(String, String, &'static str, &'static str)> {
        let state = self.state.lock();
        let mut groups: Vec<_> = state
            .groups
            .iter()
            .map(|(id, group)| {
                let (protocol_type, state, kind) = group.summary();
                (id.clone(), protocol_type, state, kind)
            })
            .collect();
        groups.sort();
        groups
    }

    /// Runs `f` on a group, if it exists (DescribeGroups, ConsumerGroupDescribe).
    pub fn with_group<T>(&self, group_id: &str, f: impl FnOnce(&Group) -> T) -> Option<T> {
        self.state.lock().groups.get(group_id).map(f)
    }

    /// DeleteGroups: only empty groups; their offsets and metadata get tombstones.
    pub fn delete_group(&self, group_id: &str) -> Result<(), GroupError> {
        self.check_coordinator(group_id)?;
        let mut state = self.state.lock();
        let group = state
            .groups
            .get(group_id)
            .ok_or(GroupError::GroupIdNotFound)?;
        if !group.is_empty() {
            return Err(GroupError::NonEmptyGroup);
        }
        self.write_tombstones(group_id, group)?;
        state.groups.remove(group_id);
        self.metrics.forget_group(group_id);
        Ok(())
    }

    /// Timers of every group, and offset expiry; called every ~100 ms.
    pub fn tick(&self) {
        let now = self.now();
        let mut state = self.state.lock();
        let ids: Vec<String> = state.groups.keys().cloned().collect();
        for group_id in ids {
            let mut actions = Vec::new();
            match state.groups.get_mut(&group_id).map(|g| &mut g.kind) {
                Some(GroupKind::Classic(group)) => {
                    group.tick(now, &mut actions);
                    if !actions.is_empty() {
                        tracing::debug!(
                            group = group_id,
                            state = group.state.name(),
                            ?actions,
                            "Group timers"
                        );
                    }
                }
                Some(GroupKind::Consumer(group)) => {
                    for duration_ms in group.tick(now) {
                        self.metrics
                            .rebalance_completed(&group_id, "consumer", duration_ms);
                    }
                }
                None => {}
            }
            self.run_actions(&mut state, &group_id, actions);
        }
        if now - state.last_expiry_check >= self.config.retention_check_interval_ms {
            state.last_expiry_check = now;
            self.expire_offsets(&mut state, now);
        }
    }

    /// Runs a KIP-848 group call under the lock, creating the group when `create`.
    pub fn with_consumer_group<T>(
        &self,
        group_id: &str,
        create: bool,
        f: impl FnOnce(&mut ConsumerGroup, i64) -> Result<T, GroupError>,
    ) -> Result<T, GroupError> {
        self.check_coordinator(group_id)?;
        let now = self.now();
        let mut state = self.state.lock();
        if !state.groups.contains_key(group_id) {
            if !create {
                return Err(GroupError::GroupIdNotFound);
            }
            state.groups.insert(
                group_id.to_string(),
                Group {
                    kind: GroupKind::Consumer(ConsumerGroup::new(now)),
                    offsets: BTreeMap::new(),
                },
            );
        }
        let group = state
            .groups
            .get_mut(group_id)
            .ok_or(GroupError::GroupIdNotFound)?;
        if let GroupKind::Classic(classic) = &group.kind {
            if !classic.is_empty() || !create {
                return Err(GroupError::GroupIdNotFound);
            }
            group.kind = GroupKind::Consumer(ConsumerGroup::new(now));
        }
        let GroupKind::Consumer(consumer) = &mut group.kind else {
            return Err(GroupError::GroupIdNotFound);
        };
        consumer.session_timeout_ms = self.config.consumer_session_timeout_ms;
        consumer.heartbeat_interval_ms = self.config.consumer_heartbeat_interval_ms;
        let result = f(consumer, now);
        for duration_ms in std::mem::take(&mut consumer.rebalances_completed) {
            self.metrics
                .rebalance_completed(group_id, "consumer", duration_ms);
        }
        result
    }

    /// Refreshes the per-group gauges (called when /metrics is scraped).
    pub fn refresh_metrics(&self) {
        let state = self.state.lock();
        let snapshots = state.groups.iter().map(|(group_id, group)| {
            let (_, state, _) = group.summary();
            let members = match &group.kind {
                GroupKind::Classic(g) => g.members.len(),
                GroupKind::Consumer(g) => g.members.len(),
            };
            let partitions = group
                .offsets
                .iter()
                .map(|(tp, value)| PartitionPosition {
                    topic_partition: tp,
                    committed_offset: value.offset,
                    lag: self.replicas.partition(tp).map(|replica| {
                        let high_watermark =
                            i64::try_from(replica.high_watermark()).unwrap_or(i64::MAX);
                        (high_watermark - value.offset).max(0)
                    }),
                })
                .collect();
            GroupSnapshot {
                group_id,
                state,
                members,
                partitions,
            }
        });
        self.metrics.refresh(snapshots);
    }
}

pub(super) fn new_group(now: i64, initial_delay_ms: i64) -> Group {
    Group {
        kind: GroupKind::Classic(ClassicGroup::new(now, initial_delay_ms)),
        offsets: BTreeMap::new(),
    }
}

impl CoordinatorShard for GroupCoordinator {
    fn topic(&self) -> &'static str {
        OFFSETS_TOPIC
    }

    fn load(&self, partition: i32, _leader_epoch: i32, records: Vec<CoordinatorRecord>) {
        let tp = TopicPartition::new(OFFSETS_TOPIC, partition);
        self.changed_hands(partition, Some(super::load::decode(&tp, records)));
    }

    fn unload(&self, partition: i32) {
        self.changed_hands(partition, None);
    }

    fn tick(&self) {
        GroupCoordinator::tick(self);
    }
}
