//! The classic group protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup) as a state
//! machine: each call takes `now` and pushes [`Action`]s; nothing here blocks or reads
//! a clock.
//!
//! ```text
//!            join (first member)              every member re-joined, or the
//!   Empty ─────────────────────▶ Preparing ── rebalance timeout ──▶ Completing
//!     ▲                          Rebalance     (generation + 1,      Rebalance
//!     │ last member leaves /        ▲           leader gets members)    │ leader's
//!     │ expires                     │ join with new metadata,           │ SyncGroup
//!     └─────────────────────────────┤ member leaves or expires          ▼
//!                                   └─────────────────────────────── Stable
//! ```
//!
//! Static members (`group.instance.id`, KIP-345) keep their place across restarts: a
//! re-join with a known instance id and unchanged metadata replaces the old member id
//! without a rebalance. Incremental cooperative rebalancing needs nothing special here:
//! the client-side assignor (cooperative-sticky) runs two ordinary rebalances.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use super::GroupError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassicState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

impl ClassicState {
    /// Kafka's name, as ListGroups and DescribeGroups report it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::PreparingRebalance => "PreparingRebalance",
            Self::CompletingRebalance => "CompletingRebalance",
            Self::Stable => "Stable",
        }
    }
}

/// A JoinGroup request, decoded.
#[derive(Debug, Clone, Default)]
pub struct JoinRequest {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    /// JoinGroup v4+: a member without an id first gets MEMBER_ID_REQUIRED.
    pub require_known_member_id: bool,
}

/// What a JoinGroup answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JoinResponseData {
    pub error: Option<GroupError>,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// (member id, instance id, metadata); only the leader gets them.
    pub members: Vec<(String, Option<String>, Bytes)>,
}

impl JoinResponseData {
    pub fn failed(error: GroupError, member_id: &str) -> Self {
        Self {
            error: Some(error),
            generation_id: -1,
            member_id: member_id.to_string(),
            ..Self::default()
        }
    }
}

/// A call answered at once, or parked until an [`Action`] completes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply<T> {
    Now(T),
    /// The response comes with a later `CompleteJoin`/`CompleteSync` for this member id.
    Wait(String),
}

/// Effects for the coordinator to carry out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    CompleteJoin {
        member_id: String,
        response: JoinResponseData,
    },
    CompleteSync {
        member_id: String,
        result: Result<Bytes, GroupError>,
    },
    /// The group's metadata changed: write a GroupMetadata record.
    Persist,
    /// A rebalance finished (join phase done) after `duration_ms`.
    RebalanceCompleted { duration_ms: i64 },
}

#[derive(Debug, Clone)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocols: Vec<(String, Bytes)>,
    pub assignment: Bytes,
    last_heartbeat: i64,
    awaiting_join: bool,
    awaiting_sync: bool,
}

impl Member {
    fn metadata_for(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, metadata)| metadata.clone())
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone)]
pub struct ClassicGroup {
    pub state: ClassicState,
    pub protocol_type: String,
    pub protocol_name: Option<String>,
    pub generation_id: i32,
    pub leader: Option<String>,
    pub members: BTreeMap<String, Member>,
    static_members: HashMap<String, String>,
    /// Members told MEMBER_ID_REQUIRED, with the deadline to re-join.
    pending_members: HashMap<String, i64>,
    /// When the state last changed (Empty since, for offset expiry).
    pub state_timestamp: i64,
    rebalance_started: i64,
    join_deadline: i64,
    join_not_before: i64,
    sync_deadline: i64,
    initial_delay_ms: i64,
    pub rebalances: u64,
}

impl ClassicGroup {
    pub fn new(now: i64, initial_delay_ms: i64) -> Self {
        Self {
            state: ClassicState::Empty,
            protocol_type: String::new(),
            protocol_name: None,
            generation_id: 0,
            leader: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending_members: HashMap::new(),
            state_timestamp: now,
            rebalance_started: now,
            join_deadline: now,
            join_not_before: now,
            sync_deadline: now,
            initial_delay_ms,
            rebalances: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.pending_members.is_empty()
    }

    /// Protocols every member supports.
    fn candidate_protocols(&self) -> Vec<String> {
        let mut members = self.members.values();
        let Some(first) = members.next() else {
            return Vec::new();
        };
        let mut candidates: Vec<String> = first.protocols.iter().map(|(n, _)| n.clone()).collect();
        for member in members {
            candidates.retain(|c| member.protocols.iter().any(|(n, _)| n == c));
        }
        candidates
    }

    fn supports(&self, request: &JoinRequest) -> bool {
        if request.protocol_type.is_empty() || request.protocols.is_empty() {
            return false;
        }
        if self.members.is_empty() {
            return true;
        }
        if request.protocol_type != self.protocol_type {
            return false;
        }
        let candidates = self.candidate_protocols();
        request
            .protocols
            .iter()
            .any(|(n, _)| candidates.contains(n))
    }

    /// The protocol most members prefer among those all support (Kafka's vote).
    fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for member in self.members.values() {
            if let Some((name, _)) = member
                .protocols
                .iter()
                .find(|(n, _)| candidates.contains(n))
            {
                *votes.entry(name).or_default() += 1;
            }
        }
        let best = votes.values().copied().max()?;
        // Ties go to the first candidate in the first member's preference order.
        candidates
            .iter()
            .find(|c| votes.get(c.as_str()) == Some(&best))
            .cloned()
    }

    fn set_state(&mut self, state: ClassicState, now: i64) {
        self.state = state;
        self.state_timestamp = now;
    }

    pub fn join(
        &mut self,
        request: JoinRequest,
        now: i64,
        actions: &mut Vec<Action>,
    ) -> Reply<JoinResponseData> {
        let member_id = request.member_id.clone();
        if !self.supports(&request) {
            return Reply::Now(JoinResponseData::failed(
                GroupError::InconsistentGroupProtocol,
                &member_id,
            ));
        }
        if member_id.is_empty() {
            let new_id = format!("{}-{}", request.client_id, uuid::Uuid::new_v4());
            if let Some(instance) = request.group_instance_id.clone() {
                if let Some(old_id) = self.static_members.get(&instance).cloned() {
                    return self.replace_static_member(&old_id, new_id, request, now, actions);
                }
                return self.add_member(new_id, request, now, actions);
            }
            if request.require_known_member_id {
                let deadline = now + i64::from(request.session_timeout_ms);
                self.pending_members.insert(new_id.clone(), deadline);
                return Reply::Now(JoinResponseData::failed(
                    GroupError::MemberIdRequired,
                    &new_id,
                ));
            }
            return self.add_member(new_id, request, now, actions);
        }
        if self.pending_members.remove(&member_id).is_some() {
            return self.add_member(member_id, request, now, actions);
        }
        let Some(member) = self.members.get_mut(&member_id) else {
            return Reply::Now(JoinResponseData::failed(
                GroupError::UnknownMemberId,
                &member_id,
            ));
        };
        if let Some(instance) = &request.group_instance_id
            && self.static_members.get(instance) != Some(&member_id)
        {
            return Reply::Now(JoinResponseData::failed(
                GroupError::FencedInstanceId,
                &member_id,
            ));
        }
        let changed = member.protocols != request.protocols;
        member.protocols = request.protocols;
        member.session_timeout_ms = request.session_timeout_ms;
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        member.last_heartbeat = now;
        match self.state {
            ClassicState::PreparingRebalance => {
                if let Some(m) = self.members.get_mut(&member_id) {
                    m.awaiting_join = true;
                }
                self.try_complete_join(now, actions);
                Reply::Wait(member_id)
            }
            ClassicState::CompletingRebalance if !changed => {
                Reply::Now(self.join_response(&member_id))
            }
            ClassicState::Stable if !changed && self.leader.as_deref() != Some(&member_id) => {
                let mut response = self.join_response(&member_id);
                response.members.clear();
                Reply::Now(response)
            }
            _ => self.park_join(member_id, now, actions),
        }
    }

    /// Parks a member's JoinGroup and starts a rebalance (or extends the one under way).
    fn park_join(
        &mut self,
        member_id: String,
        now: i64,
        actions: &mut Vec<Action>,
    ) -> Reply<JoinResponseData> {
        if let Some(m) = self.members.get_mut(&member_id) {
            m.awaiting_join = true;
        }
        self.prepare_rebalance(now, actions);
        self.try_complete_join(now, actions);
        Reply::Wait(member_id)
    }

    fn replace_static_member(
        &mut self,
        old_id: &str,
        new_id: String,
        request: JoinRequest,
        now: i64,
        actions: &mut Vec<Action>,
    ) -> Reply<JoinResponseData> {
        let Some(mut member) = self.members.remove(old_id) else {
            return self.add_member(new_id, request, now, actions);
        };
        if member.awaiting_join {
            actions.push(Action::CompleteJoin {
                member_id: old_id.to_string(),
                response: JoinResponseData::failed(GroupError::FencedInstanceId, old_id),
            });
        }
        if member.awaiting_sync {
            actions.push(Action::CompleteSync {
                member_id: old_id.to_string(),
                result: Err(GroupError::FencedInstanceId),
            });
        }
        let changed = member.protocols != request.protocols;
        member.member_id = new_id.clone();
        member.protocols = request.protocols;
        member.client_id = request.client_id;
        member.client_host = request.client_host;
        member.session_timeout_ms = request.session_timeout_ms;
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        member.last_heartbeat = now;
        member.awaiting_sync = false;
        member.awaiting_join = false;
        if let Some(instance) = &member.group_instance_id {
            self.static_members.insert(instance.clone(), new_id.clone());
        }
        if self.leader.as_deref() == Some(old_id) {
            self.leader = Some(new_id.clone());
        }
        self.members.insert(new_id.clone(), member);
        match self.state {
            ClassicState::Stable if !changed => {
                // KIP-345: same instance, same metadata: no rebalance; the member syncs
                // and gets its stored assignment.
                actions.push(Action::Persist);
                let mut response = self.join_response(&new_id);
                response.members.clear();
                Reply::Now(response)
            }
            _ => self.park_join(new_id, now, actions),
        }
    }

    fn add_member(
        &mut self,
        member_id: String,
        request: JoinRequest,
        now: i64,
        actions: &mut Vec<Action>,
    ) -> Reply<JoinResponseData> {
        if self.members.is_empty() {
            self.protocol_type = request.protocol_type.clone();
        }
        if let Some(instance) = &request.group_instance_id {
            self.static_members
                .insert(instance.clone(), member_id.clone());
        }
        self.members.insert(
            member_id.clone(),
            Member {
                member_id: member_id.clone(),
                group_instance_id: request.group_instance_id,
                client_id: request.client_id,
                client_host: request.client_host,
                session_timeout_ms: request.session_timeout_ms,
                rebalance_timeout_ms: request.rebalance_timeout_ms,
                protocols: request.protocols,
                assignment: Bytes::new(),
                last_heartbeat: now,
                awaiting_join: true,
                awaiting_sync: false,
            },
        );
        self.park_join(member_id, now, actions)
    }

    fn prepare_rebalance(&mut self, now: i64, actions: &mut Vec<Action>) {
        if self.state == ClassicState::PreparingRebalance {
            let timeout = self.max_rebalance_timeout();
            self.join_deadline = self.join_deadline.max(self.rebalance_started + timeout);
            return;
        }
        if self.state == ClassicState::CompletingRebalance {
            for member in self.members.values_mut() {
                member.assignment = Bytes::new();
                if member.awaiting_sync {
                    member.awaiting_sync = false;
                    actions.push(Action::CompleteSync {
                        member_id: member.member_id.clone(),
                        result: Err(GroupError::RebalanceInProgress),
                    });
                }
            }
        }
        let delay = if self.state == ClassicState::Empty {
            self.initial_delay_ms
        } else {
            0
        };
        self.set_state(ClassicState::PreparingRebalance, now);
        self.rebalances += 1;
        self.rebalance_started = now;
        self.join_deadline = now + self.max_rebalance_timeout();
        self.join_not_before = (now + delay).min(self.join_deadline);
    }

    fn max_rebalance_timeout(&self) -> i64 {
        self.members
            .values()
            .map(|m| i64::from(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    fn try_complete_join(&mut self, now: i64, actions: &mut Vec<Action>) {
        if self.state != ClassicState::PreparingRebalance || now < self.join_not_before {
            return;
        }
        let all_joined =
            self.members.values().all(|m| m.awaiting_join) && self.pending_members.is_empty();
        if all_joined {
            self.complete_join(now, actions);
        }
    }

    /// Ends the join phase: members that did not re-join are dropped, the generation
    /// advances and every joined member gets its response (the leader with the members).
    fn complete_join(&mut self, now: i64, actions: &mut Vec<Action>) {
        let missing: Vec<String> = self
            .members
            .values()
            .filter(|m| !m.awaiting_join)
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in missing {
            self.remove(&member_id);
        }
        self.pending_members.clear();
        self.generation_id += 1;
        actions.push(Action::RebalanceCompleted {
            duration_ms: now - self.rebalance_started,
        });
        if self.members.is_empty() {
            self.set_state(ClassicState::Empty, now);
            self.protocol_name = None;
            self.leader = None;
            actions.push(Action::Persist);
            return;
        }
        self.protocol_name = self.select_protocol();
        if self
            .leader
            .as_ref()
            .is_none_or(|l| !self.members.contains_key(l))
        {
            self.leader = self.members.keys().next().cloned();
        }
        self.set_state(ClassicState::CompletingRebalance, now);
        self.sync_deadline = now + self.max_rebalance_timeout();
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for member_id in ids {
            let response = self.join_response(&member_id);
            if let Some(member) = self.members.get_mut(&member_id) {
                member.awaiting_join = false;
                member.last_heartbeat = now;
            }
            actions.push(Action::CompleteJoin {
                member_id,
                response,
            });
        }
    }

    fn join_response(&self, member_id: &str) -> JoinResponseData {
        let leader = self.leader.clone().unwrap_or_default();
        let protocol = self.protocol_name.clone().unwrap_or_default();
        let members = if leader == member_id {
            self.members
                .values()
                .map(|m| {
                    (
                        m.member_id.clone(),
                        m.group_instance_id.clone(),
                        m.metadata_for(&protocol),
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        JoinResponseData {
            error: None,
            generation_id: self.generation_id,
            protocol_type: Some(self.protocol_type.clone()),
            protocol_name: self.protocol_name.clone(),
            leader,
            member_id: member_id.to_string(),
            members,
        }
    }

    fn remove(&mut self, member_id: &str) -> Option<Member> {
        let member = self.members.remove(member_id)?;
        if let Some(instance) = &member.group_instance_id
            && self.static_members.get(instance).map(String::as_str) == Some(member_id)
        {
            self.static_members.remove(instance);
        }
        Some(member)
    }

    /// Checks a member's identity and generation (Heartbeat, SyncGroup, OffsetCommit).
    fn check_member(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
        generation_id: i32,
    ) -> Result<&Member, GroupError> {
        let member = self
            .members
            .get(member_id)
            .ok_or(GroupError::UnknownMemberId)?;
        if let Some(instance) = instance_id
            && self.static_members.get(instance).map(String::as_str) != Some(member_id)
        {
            return Err(GroupError::FencedInstanceId);
        }
        if generation_id != self.generation_id {
            return Err(GroupError::IllegalGeneration);
        }
        Ok(member)
    }

    fn remove_and_rebalance(
        &mut self,
        member_id: &str,
        error: GroupError,
        now: i64,
        actions: &mut Vec<Action>,
    ) {
        let Some(member) = self.remove(member_id) else {
            return;
        };
        if member.awaiting_join {
            actions.push(Action::CompleteJoin {
                member_id: member_id.to_string(),
                response: JoinResponseData::failed(error.clone(), member_id),
            });
        }
        if member.awaiting_sync {
            actions.push(Action::CompleteSync {
                member_id: member_id.to_string(),
                result: Err(error),
            });
        }
        match self.state {
            ClassicState::Stable | ClassicState::CompletingRebalance => {
                self.prepare_rebalance(now, actions);
                self.try_complete_join(now, actions);
            }
            ClassicState::PreparingRebalance => self.try_complete_join(now, actions),
            ClassicState::Empty => {}
        }
    }

    /// Timers: session timeouts, the rebalance timeout, the sync timeout, pending members.
    pub fn tick(&mut self, now: i64, actions: &mut Vec<Action>) {
        let before = self.pending_members.len();
        self.pending_members.retain(|_, deadline| *deadline > now);
        if self.pending_members.len() != before {
            self.try_complete_join(now, actions);
        }
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| {
                // Kafka keeps parked members alive: their connection is busy with the
                // JoinGroup/SyncGroup, and the rebalance and sync timeouts bound the wait.
                !m.awaiting_join
                    && !m.awaiting_sync
                    && now - m.last_heartbeat > i64::from(m.session_timeout_ms)
            })
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in expired {
            tracing::info!(member_id, "Group member session expired");
            self.remove_and_rebalance(&member_id, GroupError::UnknownMemberId, now, actions);
        }
        match self.state {
            ClassicState::PreparingRebalance if now >= self.join_deadline => {
                self.complete_join(now, actions)
            }
            ClassicState::PreparingRebalance => self.try_complete_join(now, actions),
            ClassicState::CompletingRebalance if now >= self.sync_deadline => {
                // The leader never sent its assignment: start over without the members
                // that did not sync.
                let missing: Vec<String> = self
                    .members
                    .values()
                    .filter(|m| !m.awaiting_sync)
                    .map(|m| m.member_id.clone())
                    .collect();
                for member_id in missing {
                    self.remove_and_rebalance(
                        &member_id,
                        GroupError::UnknownMemberId,
                        now,
                        actions,
                    );
                }
            }
            _ => {}
        }
    }
}

mod members;
mod persist;

#[cfg(test)]
mod tests;
