//! The KIP-848 consumer group protocol (ConsumerGroupHeartbeat) as a state machine.
//!
//! The broker owns the assignment. A heartbeat that changes membership, a member's
//! subscription or the subscribed topics' metadata bumps the **group epoch** and
//! recomputes the **target assignment** with the server-side assignor at once (so the
//! assignment epoch always equals the group epoch here). Each member then reconciles
//! towards its target on its own heartbeats, without any group-wide barrier:
//!
//! ```text
//!   member owns P, target T
//!     P \ T not empty ─▶ answer P ∩ T (same member epoch): "revoke the rest"
//!                        ... member acknowledges by reporting owned ⊆ P ∩ T
//!     then           ─▶ member epoch = assignment epoch, and it gets every partition
//!                        of T that no other member still owns; the others arrive on
//!                        later heartbeats once their previous owners revoked them
//! ```
//!
//! A member may subscribe by name, by a regular expression (`SubscribedTopicRegex`, Kafka's
//! RE2/J dialect, matched against whole topic names), or both: the regex is resolved
//! against the topics that exist on every heartbeat, so a matching topic created later
//! joins the subscription (and bumps the group epoch) like a new partition does.
//!
//! A partition is never owned by two members at once. Members that stop heartbeating
//! are removed after `group.consumer.session.timeout.ms`; a member that does not revoke
//! within its rebalance timeout is removed too.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use uuid::Uuid;

use super::GroupError;
use super::assignor::{self, ASSIGNORS, Assignment, AssignmentSpec};

/// The metadata of existing topics: name → (id, partitions).
pub type TopicsView = BTreeMap<String, (Uuid, i32)>;

/// A ConsumerGroupHeartbeat request, decoded.
#[derive(Debug, Clone, Default)]
pub struct HeartbeatRequest {
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub subscribed_topic_names: Option<Vec<String>>,
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    /// Partitions the member owns now (None: unchanged since the last heartbeat).
    pub owned: Option<Assignment>,
    pub client_id: String,
    pub client_host: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatResponse {
    pub member_id: String,
    pub member_epoch: i32,
    pub heartbeat_interval_ms: i32,
    /// The member's full assignment, when it changed.
    pub assignment: Option<Assignment>,
}

#[derive(Debug, Clone, Default)]
pub struct ConsumerMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub member_epoch: i32,
    previous_epoch: i32,
    pub subscribed_topics: BTreeSet<String>,
    pub subscribed_topic_regex: Option<String>,
    /// The regex compiled (anchored at both ends, as RE2/J's `matches()`).
    compiled_regex: Option<regex::Regex>,
    /// The existing topics the regex matched when last resolved.
    pub regex_topics: BTreeSet<String>,
    pub server_assignor: Option<String>,
    pub rebalance_timeout_ms: i32,
    /// Partitions the member owns (as far as the coordinator knows).
    pub assigned: Assignment,
    last_heartbeat: i64,
    revoking_since: Option<i64>,
    last_sent: Option<(i32, Assignment)>,
}

#[derive(Debug, Clone)]
pub struct ConsumerGroup {
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, ConsumerMember>,
    pub target: BTreeMap<String, Assignment>,
    static_members: HashMap<String, String>,
    subscription_metadata: TopicsView,
    pub empty_since: i64,
    rebalance_started: Option<i64>,
    /// Durations (ms) of rebalances that finished, drained by the coordinator.
    pub rebalances_completed: Vec<i64>,
    pub rebalances: u64,
    pub session_timeout_ms: i32,
    pub heartbeat_interval_ms: i32,
    /// The topic names the members' regexes were last resolved against: they are
    /// resolved again only when these change (or a member's regex does), not on every
    /// heartbeat, which would cost members × topics matches each time.
    regex_resolved_against: Vec<String>,
}

impl ConsumerMember {
    /// Every topic the member subscribes to: by name and through its regex.
    pub fn topics(&self) -> BTreeSet<String> {
        self.subscribed_topics
            .union(&self.regex_topics)
            .cloned()
            .collect()
    }

    /// Re-resolves the regex against `topics`; true when the matched set changed.
    fn resolve_regex(&mut self, topics: &TopicsView) -> bool {
        let matched: BTreeSet<String> = match &self.compiled_regex {
            Some(regex) => topics
                .keys()
                .filter(|name| regex.is_match(name))
                .cloned()
                .collect(),
            None => BTreeSet::new(),
        };
        if matched == self.regex_topics {
            return false;
        }
        self.regex_topics = matched;
        true
    }
}

/// Compiles a subscription regex with Kafka's semantics: the whole topic name must match.
/// The `regex` crate's syntax is RE2's, which RE2/J (Kafka's dialect) follows.
fn compile_regex(pattern: &str) -> Result<regex::Regex, GroupError> {
    regex::Regex::new(&format!("^(?:{pattern})$")).map_err(|error| {
        GroupError::InvalidRegularExpression {
            regex: pattern.to_string(),
            reason: error.to_string(),
        }
    })
}

fn is_subset(a: &Assignment, b: &Assignment) -> bool {
    a.iter()
        .all(|(id, parts)| parts.is_empty() || b.get(id).is_some_and(|bp| parts.is_subset(bp)))
}

fn intersect(a: &Assignment, b: &Assignment) -> Assignment {
    a.iter()
        .filter_map(|(id, parts)| {
            let common: BTreeSet<i32> = b
                .get(id)
                .map(|bp| parts.intersection(bp).copied().collect())
                .unwrap_or_default();
            (!common.is_empty()).then_some((*id, common))
        })
        .collect()
}

fn normalize(a: Assignment) -> Assignment {
    a.into_iter().filter(|(_, p)| !p.is_empty()).collect()
}

impl ConsumerGroup {
    pub fn new(now: i64) -> Self {
        Self {
            group_epoch: 0,
            assignment_epoch: 0,
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            static_members: HashMap::new(),
            subscription_metadata: TopicsView::new(),
            empty_since: now,
            rebalance_started: None,
            rebalances_completed: Vec::new(),
            rebalances: 0,
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            regex_resolved_against: Vec::new(),
        }
    }

    /// Kafka's state names: Empty, Assigning, Reconciling, Stable.
    pub fn state_name(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.assignment_epoch < self.group_epoch {
            "Assigning"
        } else if self.members.values().any(|m| !self.reconciled(m)) {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    fn reconciled(&self, member: &ConsumerMember) -> bool {
        member.member_epoch == self.assignment_epoch
            && normalize(member.assigned.clone())
                == normalize(
                    self.target
                        .get(&member.member_id)
                        .cloned()
                        .unwrap_or_default(),
                )
    }

    pub fn subscribed_topics(&self) -> Vec<String> {
        let topics: BTreeSet<String> = self.members.values().flat_map(|m| m.topics()).collect();
        topics.into_iter().collect()
    }

    /// The assignor in use: the one most members ask for, else `uniform`.
    pub fn assignor_name(&self) -> &'static str {
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for member in self.members.values() {
            if let Some(name) = member.server_assignor.as_deref()
                && let Some(known) = ASSIGNORS.iter().find(|a| **a == name)
            {
                *votes.entry(known).or_default() += 1;
            }
        }
        votes
            .into_iter()
            .max_by_key(|(_, v)| *v)
            .map_or(ASSIGNORS[0], |(name, _)| name)
    }

    fn bump_epoch(&mut self, topics: &TopicsView, now: i64) {
        self.group_epoch += 1;
        self.rebalances += 1;
        if self.rebalance_started.is_none() {
            self.rebalance_started = Some(now);
        }
        let subscribed: BTreeSet<String> = self.subscribed_topics().into_iter().collect();
        self.subscription_metadata = topics
            .iter()
            .filter(|(t, _)| subscribed.contains(*t))
            .map(|(t, v)| (t.clone(), *v))
            .collect();
        let spec = AssignmentSpec {
            members: self
                .members
                .iter()
                .map(|(id, m)| (id.clone(), m.topics()))
                .collect(),
            topics: self.subscription_metadata.clone(),
            previous: self.target.clone(),
        };
        self.target = assignor::assign(self.assignor_name(), &spec);
        self.assignment_epoch = self.group_epoch;
        if self.members.is_empty() {
            self.empty_since = now;
        }
    }

    fn metadata_changed(&self, topics: &TopicsView) -> bool {
        let subscribed: BTreeSet<String> = self.subscribed_topics().into_iter().collect();
        let current: TopicsView = topics
            .iter()
            .filter(|(t, _)| subscribed.contains(*t))
            .map(|(t, v)| (t.clone(), *v))
            .collect();
        current != self.subscription_metadata
    }

    pub fn heartbeat(
        &mut self,
        request: HeartbeatRequest,
        topics: &TopicsView,
        now: i64,
    ) -> Result<HeartbeatResponse, GroupError> {
        if let Some(name) = &request.server_assignor
            && !ASSIGNORS.contains(&name.as_str())
        {
            return Err(GroupError::UnsupportedAssignor);
        }
        if request.member_epoch < 0 {
            return self.leave(request, topics, now);
        }
        // An empty regex clears the member's regex subscription; another is checked
        // before anything about the member changes.
        let new_regex = match request.subscribed_topic_regex.as_deref() {
            None => None,
            Some("") => Some(None),
            Some(pattern) => Some(Some((pattern.to_string(), compile_regex(pattern)?))),
        };
        let member_id = if request.member_id.is_empty() {
            Uuid::new_v4().to_string()
        } else {
            request.member_id.clone()
        };
        let mut changed = false;
        if request.member_epoch == 0 {
            if request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none()
            {
                return Err(GroupError::InvalidRequest(
                    "SubscribedTopicNames must be set when joining",
                ));
            }
            if request.rebalance_timeout_ms <= 0 {
                return Err(GroupError::InvalidRequest(
                    "RebalanceTimeoutMs must be positive when joining",
                ));
            }
            let mut member = ConsumerMember {
                member_id: member_id.clone(),
                ..ConsumerMember::default()
            };
            if let Some(instance) = &request.instance_id
                && let Some(old_id) = self.static_members.get(instance).cloned()
                && let Some(old) = self.members.remove(&old_id)
            {
                // A static member re-joining takes over its previous assignment.
                member.assigned = old.assigned;
                member.subscribed_topics = old.subscribed_topics;
                if let Some(target) = self.target.remove(&old_id) {
                    self.target.insert(member_id.clone(), target);
                }
            } else if let Some(old) = self.members.remove(&member_id) {
                // Re-join of a known member (after an error): it owns nothing now.
                let _ = old;
            }
            if let Some(instance) = &request.instance_id {
                self.static_members
                    .insert(instance.clone(), member_id.clone());
            }
            member.instance_id = request.instance_id.clone();
            member.member_epoch = 0;
            self.members.insert(member_id.clone(), member);
            changed = true;
        }
        let Some(member) = self.members.get_mut(&member_id) else {
            return Err(GroupError::UnknownMemberId);
        };
        if request.member_epoch != 0 && request.member_epoch != member.member_epoch {
            let previous_ok = request.member_epoch == member.previous_epoch
                && request
                    .owned
                    .as_ref()
                    .is_some_and(|owned| is_subset(owned, &member.assigned));
            if !previous_ok {
                return Err(GroupError::FencedMemberEpoch);
            }
        }
        member.last_heartbeat = now;
        member.client_id = request.client_id;
        member.client_host = request.client_host;
        if request.rack_id.is_some() {
            member.rack_id = request.rack_id;
        }
        if request.rebalance_timeout_ms > 0 {
            member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        }
        if request.server_assignor.is_some() && member.server_assignor != request.server_assignor {
            member.server_assignor = request.server_assignor;
            changed = true;
        }
        if let Some(names) = request.subscribed_topic_names {
            let names: BTreeSet<String> = names.into_iter().collect();
            if names != member.subscribed_topics {
                member.subscribed_topics = names;
                changed = true;
            }
        }
        if let Some(regex) = new_regex {
            let pattern = regex.as_ref().map(|(pattern, _)| pattern.clone());
            if member.subscribed_topic_regex != pattern {
                member.subscribed_topic_regex = pattern;
                member.compiled_regex = regex.map(|(_, compiled)| compiled);
                changed |= member.resolve_regex(topics);
            }
        }
        // A topic created or deleted since the regexes were last resolved changes what
        // they subscribe to: every member's regex against the topics as they are now.
        let topics_moved = !self.regex_resolved_against.iter().eq(topics.keys());
        if topics_moved && self.members.values().any(|m| m.compiled_regex.is_some()) {
            for member in self.members.values_mut() {
                changed |= member.resolve_regex(topics);
            }
            self.regex_resolved_against = topics.keys().cloned().collect();
        }
        if changed || self.metadata_changed(topics) {
            self.bump_epoch(topics, now);
        }
        let owned = request.owned.map(normalize);
        let assignment = self.reconcile(&member_id, owned.as_ref(), now);
        self.note_if_stable(now);
        Ok(HeartbeatResponse {
            member_id,
            member_epoch: assignment.0,
            heartbeat_interval_ms: self.heartbeat_interval_ms,
            assignment: assignment.1,
        })
    }

    /// Moves a member towards its target; returns (member epoch, assignment to send).
    fn reconcile(
        &mut self,
        member_id: &str,
        owned: Option<&Assignment>,
        now: i64,
    ) -> (i32, Option<Assignment>) {
        let target = self.target.get(member_id).cloned().unwrap_or_default();
        let owned_by_others: BTreeSet<(Uuid, i32)> = self
            .members
            .iter()
            .filter(|(id, _)| id.as_str() != member_id)
            .flat_map(|(_, m)| {
                m.assigned
                    .iter()
                    .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
            })
            .collect();
        let assignment_epoch = self.assignment_epoch;
        let Some(member) = self.members.get_mut(member_id) else {
            return (-1, None);
        };
        let keep = intersect(&member.assigned, &target);
        let revoking = !is_subset(&member.assigned, &target);
        if revoking {
            let acknowledged = owned.is_some_and(|o| is_subset(o, &keep));
            if !acknowledged {
                member.revoking_since.get_or_insert(now);
                let keep = normalize(keep);
                let send = member.last_sent.as_ref() != Some(&(member.member_epoch, keep.clone()));
                if send {
                    member.last_sent = Some((member.member_epoch, keep.clone()));
                }
                return (member.member_epoch, send.then_some(keep));
            }
            member.assigned = keep;
        }
        member.revoking_since = None;
        for (topic, partitions) in &target {
            for partition in partitions {
                if !owned_by_others.contains(&(*topic, *partition)) {
                    member
                        .assigned
                        .entry(*topic)
                        .or_default()
                        .insert(*partition);
                }
            }
        }
        member.assigned = normalize(std::mem::take(&mut member.assigned));
        if member.member_epoch != assignment_epoch {
            member.previous_epoch = member.member_epoch;
            member.member_epoch = assignment_epoch;
        }
        let current = (member.member_epoch, member.assigned.clone());
        let differs_from_client = owned.is_some_and(|o| *o != member.assigned);
        if member.last_sent.as_ref() != Some(&current) || differs_from_client {
            member.last_sent = Some(current.clone());
            return (current.0, Some(current.1));
        }
        (current.0, None)
    }

    fn note_if_stable(&mut self, now: i64) {
        if let Some(started) = self.rebalance_started
            && self.members.values().all(|m| self.reconciled(m))
        {
            self.rebalances_completed.push(now - started);
            self.rebalance_started = None;
        }
    }

    fn leave(
        &mut self,
        request: HeartbeatRequest,
        topics: &TopicsView,
        now: i64,
    ) -> Result<HeartbeatResponse, GroupError> {
        let member_id = match (&request.instance_id, request.member_id.is_empty()) {
            (Some(instance), true) => self
                .static_members
                .get(instance)
                .cloned()
                .ok_or(GroupError::UnknownMemberId)?,
            _ => request.member_id.clone(),
        };
        if self.members.remove(&member_id).is_none() {
            return Err(GroupError::UnknownMemberId);
        }
        self.target.remove(&member_id);
        if let Some(instance) = &request.instance_id {
            self.static_members.remove(instance);
        }
        self.bump_epoch(topics, now);
        self.note_if_stable(now);
        Ok(HeartbeatResponse {
            member_id,
            member_epoch: request.member_epoch,
            heartbeat_interval_ms: 0,
            assignment: None,
        })
    }

    /// OffsetCommit membership check (member id + member epoch). As in Kafka, a commit
    /// with member epoch -1 comes from the admin client or a consumer that assigns its
    /// partitions itself (which may still send its own member id): it is accepted while
    /// the group has no members; otherwise the member must exist at that epoch.
    pub fn validate_commit(&self, member_id: &str, member_epoch: i32) -> Result<(), GroupError> {
        if member_epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        let member = self
            .members
            .get(member_id)
            .ok_or(GroupError::UnknownMemberId)?;
        if member_epoch != member.member_epoch && member_epoch != member.previous_epoch {
            return Err(GroupError::StaleMemberEpoch);
        }
        Ok(())
    }

    /// Session and revocation timeouts; returns the durations of rebalances that finished.
    pub fn tick(&mut self, now: i64) -> Vec<i64> {
        let session = i64::from(self.session_timeout_ms);
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| {
                now - m.last_heartbeat > session
                    || m.revoking_since
                        .is_some_and(|since| now - since > i64::from(m.rebalance_timeout_ms.max(1)))
            })
            .map(|m| m.member_id.clone())
            .collect();
        if !expired.is_empty() {
            for member_id in &expired {
                tracing::info!(member_id, "Consumer group member expired");
                if let Some(member) = self.members.remove(member_id)
                    && let Some(instance) = member.instance_id
                {
                    self.static_members.remove(&instance);
                }
                self.target.remove(member_id);
            }
            let topics = self.subscription_metadata.clone();
            self.bump_epoch(&topics, now);
            self.note_if_stable(now);
        }
        std::mem::take(&mut self.rebalances_completed)
    }
}

#[cfg(test)]
mod tests;
