//! A classic group's persisted form (GroupMetadataValue) and what its members'
//! subscriptions say.

use super::{ClassicGroup, ClassicState, Member};
use crate::group::records::{GroupMetadataValue, MemberMetadata};

impl ClassicGroup {
    /// The persisted form.
    pub fn to_record(&self) -> GroupMetadataValue {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        GroupMetadataValue {
            protocol_type: self.protocol_type.clone(),
            generation: self.generation_id,
            protocol: self.protocol_name.clone(),
            leader: self.leader.clone(),
            current_state_timestamp: self.state_timestamp,
            members: self
                .members
                .values()
                .map(|m| MemberMetadata {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout: m.rebalance_timeout_ms,
                    session_timeout: m.session_timeout_ms,
                    subscription: m.metadata_for(&protocol),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    /// A group loaded from `__consumer_offsets`: Stable with its members (who must
    /// heartbeat within their session timeout from `now`), or Empty.
    pub fn from_record(record: GroupMetadataValue, now: i64, initial_delay_ms: i64) -> Self {
        let mut group = Self::new(record.current_state_timestamp, initial_delay_ms);
        group.protocol_type = record.protocol_type;
        group.generation_id = record.generation;
        group.protocol_name = record.protocol.clone();
        group.leader = record.leader;
        let protocol = record.protocol.unwrap_or_default();
        for m in record.members {
            if let Some(instance) = &m.group_instance_id {
                group
                    .static_members
                    .insert(instance.clone(), m.member_id.clone());
            }
            group.members.insert(
                m.member_id.clone(),
                Member {
                    member_id: m.member_id,
                    group_instance_id: m.group_instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    session_timeout_ms: m.session_timeout,
                    rebalance_timeout_ms: m.rebalance_timeout,
                    protocols: vec![(protocol.clone(), m.subscription)],
                    assignment: m.assignment,
                    last_heartbeat: now,
                    awaiting_join: false,
                    awaiting_sync: false,
                },
            );
        }
        if !group.members.is_empty() {
            group.state = ClassicState::Stable;
        }
        group
    }

    /// Topics the members subscribe to (consumer protocol), for OffsetDelete.
    pub fn subscribed_topics(&self) -> Vec<String> {
        use kafka_protocol::messages::ConsumerProtocolSubscription;
        use kafka_protocol::protocol::Decodable;
        if self.protocol_type != "consumer" {
            return Vec::new();
        }
        let protocol = self.protocol_name.clone().unwrap_or_default();
        let mut topics = Vec::new();
        for member in self.members.values() {
            let mut metadata = member.metadata_for(&protocol);
            if metadata.len() < 2 {
                continue;
            }
            let version = bytes::Buf::get_i16(&mut metadata);
            if let Ok(subscription) =
                ConsumerProtocolSubscription::decode(&mut metadata, version.clamp(0, 3))
            {
                topics.extend(subscription.topics.iter().map(|t| t.to_string()));
            }
        }
        topics.sort();
        topics.dedup();
        topics
    }
}
