//! Loading groups from a `__consumer_offsets` partition this broker starts leading (read
//! from its log start offset by the coordinator runtime): later records win, tombstones
//! delete, and records that cannot be decoded are skipped with a warning (never a panic).
//! Offsets a transaction wrote (TxnOffsetCommit) count from its COMMIT marker on, are
//! dropped at its ABORT marker, and are pending while it has neither.

use std::collections::HashMap;

use super::classic::ClassicGroup;
use super::coordinator::Groups;
use super::coordinator::{Group, GroupCoordinator, GroupKind, new_group};
use super::records::{self, RecordKey, RecordValue};
use crate::coordinator::{CoordinatorRecord, RecordKind};
use crate::model::TopicPartition;

/// What a `__consumer_offsets` partition holds, in log order.
#[derive(Debug)]
pub(super) enum Loaded {
    /// A record of its own (OffsetCommit, group metadata).
    Record(RecordKey, Option<RecordValue>),
    /// A record a producer's transaction wrote (TxnOffsetCommit).
    Transactional(i64, RecordKey, Option<RecordValue>),
    /// A transaction marker: producer id, commit.
    Marker(i64, bool),
}

/// What a partition's records say, decoded; a record that cannot be is skipped with a
/// warning.
pub(super) fn decode(tp: &TopicPartition, read: Vec<CoordinatorRecord>) -> Vec<Loaded> {
    let mut out = Vec::with_capacity(read.len());
    for record in read {
        let (key, value) = match record.kind {
            RecordKind::Marker { commit } => {
                out.push(Loaded::Marker(record.producer_id, commit));
                continue;
            }
            RecordKind::Data {
                key: Some(key),
                value,
            } => (key, value),
            RecordKind::Data { key: None, .. } => continue,
        };
        let key = match records::decode_key(key) {
            Ok(key) => key,
            Err(error) => {
                tracing::warn!(topic_partition = %tp, offset = record.offset, %error, "Skipping a __consumer_offsets record");
                continue;
            }
        };
        match records::decode_value(&key, value) {
            Ok(value) => out.push(if record.transactional {
                Loaded::Transactional(record.producer_id, key, value)
            } else {
                Loaded::Record(key, value)
            }),
            Err(error) => {
                tracing::warn!(topic_partition = %tp, offset = record.offset, %error, "Skipping a __consumer_offsets record");
            }
        }
    }
    out
}

impl GroupCoordinator {
    /// Replays one partition's records into `state` (transactions settled by their
    /// markers; undecided ones left pending).
    pub(super) fn replay_partition(&self, state: &mut Groups, loaded: Vec<Loaded>, now: i64) {
        let mut open: HashMap<i64, Vec<(RecordKey, Option<RecordValue>)>> = HashMap::new();
        for item in loaded {
            match item {
                Loaded::Record(key, value) => self.replay(&mut state.groups, key, value, now),
                Loaded::Transactional(producer_id, key, value) => {
                    open.entry(producer_id).or_default().push((key, value));
                }
                Loaded::Marker(producer_id, commit) => {
                    for (key, value) in open.remove(&producer_id).unwrap_or_default() {
                        if commit {
                            self.replay(&mut state.groups, key, value, now);
                        }
                    }
                }
            }
        }
        for (producer_id, records) in open {
            for (key, value) in records {
                if let (
                    RecordKey::Offset {
                        group,
                        topic,
                        partition,
                    },
                    Some(RecordValue::Offset(value)),
                ) = (key, value)
                {
                    state
                        .pending_transactions
                        .entry(producer_id)
                        .or_default()
                        .insert((group, TopicPartition::new(topic, partition)), value);
                }
            }
        }
    }

    pub(super) fn replay(
        &self,
        groups: &mut HashMap<String, Group>,
        key: RecordKey,
        value: Option<RecordValue>,
        now: i64,
    ) {
        let delay = self.config.initial_rebalance_delay_ms;
        match (key, value) {
            (
                RecordKey::Offset {
                    group,
                    topic,
                    partition,
                },
                Some(RecordValue::Offset(value)),
            ) => {
                let entry = groups
                    .entry(group)
                    .or_insert_with(|| new_group(value.commit_timestamp, delay));
                entry
                    .offsets
                    .insert(TopicPartition::new(topic, partition), value);
            }
            (
                RecordKey::Offset {
                    group,
                    topic,
                    partition,
                },
                None,
            ) => {
                if let Some(entry) = groups.get_mut(&group) {
                    entry.offsets.remove(&TopicPartition::new(topic, partition));
                }
            }
            (RecordKey::Group { group }, Some(RecordValue::Group(value))) => {
                let offsets = groups.remove(&group).map(|g| g.offsets).unwrap_or_default();
                groups.insert(
                    group,
                    Group {
                        kind: GroupKind::Classic(ClassicGroup::from_record(value, now, delay)),
                        offsets,
                    },
                );
            }
            (RecordKey::Group { group }, None) => {
                groups.remove(&group);
            }
            (key, _) => tracing::warn!(
                ?key,
                "Skipping a __consumer_offsets record whose value does not match its key"
            ),
        }
    }
}
