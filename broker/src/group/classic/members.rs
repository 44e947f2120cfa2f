//! SyncGroup, Heartbeat, LeaveGroup and the OffsetCommit membership check of a classic
//! group.

use std::collections::HashMap;

use bytes::Bytes;

use super::{Action, ClassicGroup, ClassicState, Reply};
use crate::group::GroupError;

impl ClassicGroup {
    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation_id: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, Bytes)>,
        now: i64,
        actions: &mut Vec<Action>,
    ) -> Reply<Result<Bytes, GroupError>> {
        if let Err(error) = self.check_member(member_id, instance_id, generation_id) {
            return Reply::Now(Err(error));
        }
        if protocol_type.is_some_and(|t| t != self.protocol_type)
            || protocol_name.is_some_and(|n| Some(n) != self.protocol_name.as_deref())
        {
            return Reply::Now(Err(GroupError::InconsistentGroupProtocol));
        }
        match self.state {
            ClassicState::Empty => Reply::Now(Err(GroupError::UnknownMemberId)),
            ClassicState::PreparingRebalance => Reply::Now(Err(GroupError::RebalanceInProgress)),
            ClassicState::Stable => Reply::Now(Ok(self
                .members
                .get(member_id)
                .map(|m| m.assignment.clone())
                .unwrap_or_default())),
            ClassicState::CompletingRebalance => {
                if let Some(member) = self.members.get_mut(member_id) {
                    member.awaiting_sync = true;
                    member.last_heartbeat = now;
                }
                if self.leader.as_deref() == Some(member_id) {
                    let mut assignments: HashMap<String, Bytes> = assignments.into_iter().collect();
                    for member in self.members.values_mut() {
                        member.assignment =
                            assignments.remove(&member.member_id).unwrap_or_default();
                    }
                    self.set_state(ClassicState::Stable, now);
                    actions.push(Action::Persist);
                    for member in self.members.values_mut() {
                        if member.awaiting_sync {
                            member.awaiting_sync = false;
                            actions.push(Action::CompleteSync {
                                member_id: member.member_id.clone(),
                                result: Ok(member.assignment.clone()),
                            });
                        }
                    }
                }
                Reply::Wait(member_id.to_string())
            }
        }
    }

    pub fn heartbeat(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation_id: i32,
        now: i64,
    ) -> Result<(), GroupError> {
        if self.state == ClassicState::Empty {
            return Err(GroupError::UnknownMemberId);
        }
        self.check_member(member_id, instance_id, generation_id)?;
        if let Some(member) = self.members.get_mut(member_id) {
            member.last_heartbeat = now;
        }
        if self.state == ClassicState::PreparingRebalance {
            return Err(GroupError::RebalanceInProgress);
        }
        Ok(())
    }

    /// LeaveGroup of one member, named by member id or (static members) instance id.
    pub fn leave(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        now: i64,
        actions: &mut Vec<Action>,
    ) -> Result<(), GroupError> {
        let id = match (member_id.is_empty(), instance_id) {
            (true, Some(instance)) => self
                .static_members
                .get(instance)
                .cloned()
                .ok_or(GroupError::UnknownMemberId)?,
            _ => member_id.to_string(),
        };
        if self.pending_members.remove(&id).is_some() {
            self.try_complete_join(now, actions);
            return Ok(());
        }
        if !self.members.contains_key(&id) {
            return Err(GroupError::UnknownMemberId);
        }
        if let Some(instance) = instance_id
            && self.static_members.get(instance) != Some(&id)
        {
            return Err(GroupError::FencedInstanceId);
        }
        self.remove_and_rebalance(&id, GroupError::UnknownMemberId, now, actions);
        Ok(())
    }

    /// OffsetCommit's membership check. A commit with generation -1 is a standalone
    /// consumer's or the admin client's, accepted while the group has no members, whatever
    /// member id it carries (a KIP-848 client assigning its own partitions sends the id it
    /// chose), as in Kafka.
    pub fn validate_commit(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation_id: i32,
        now: i64,
    ) -> Result<(), GroupError> {
        if generation_id < 0 && self.members.is_empty() {
            return Ok(());
        }
        self.check_member(member_id, instance_id, generation_id)?;
        if self.state == ClassicState::CompletingRebalance {
            return Err(GroupError::RebalanceInProgress);
        }
        if let Some(member) = self.members.get_mut(member_id) {
            member.last_heartbeat = now;
        }
        Ok(())
    }
}
