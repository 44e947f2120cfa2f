//! Loading groups from `__consumer_offsets` at start-up: every partition is read from
//! its log start offset; later records win, tombstones delete, and records that cannot
//! be decoded are skipped with a warning (never a panic). Offsets a transaction wrote
//! (TxnOffsetCommit) count from its COMMIT marker on, are dropped at its ABORT marker,
//! and are pending while it has neither.

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::records::RecordBatchDecoder;

use super::OFFSETS_TOPIC;
use super::classic::ClassicGroup;
use super::coordinator::Groups;
use super::coordinator::{Group, GroupCoordinator, GroupKind, new_group};
use super::records::{self, RecordKey, RecordValue};
use crate::storage::ReadLimit;
use crate::storage::TopicPartition;

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

    pub(super) fn read_partition(&self, partition: i32) -> Vec<Loaded> {
        let tp = TopicPartition::new(OFFSETS_TOPIC, partition);
        let mut out = Vec::new();
        let Some(log) = self.logs.get(&tp) else {
            return out;
        };
        let mut offset = log.log_start_offset();
        loop {
            let read = match log.read_with_limit(offset, 1 << 20, ReadLimit::LogEnd) {
                Ok(read) => read,
                Err(error) => {
                    tracing::error!(topic_partition = %tp, offset, %error, "Cannot read __consumer_offsets; the rest of the partition is not loaded");
                    break;
                }
            };
            if read.regions.is_empty() || read.next_offset <= offset {
                break;
            }
            offset = read.next_offset;
            let bytes = match read.read_to_vec() {
                Ok(bytes) => bytes,
                Err(error) => {
                    tracing::error!(topic_partition = %tp, %error, "Cannot read __consumer_offsets");
                    break;
                }
            };
            let mut buffer = Bytes::from(bytes);
            let records = match RecordBatchDecoder::decode_all(&mut buffer) {
                Ok(sets) => sets.into_iter().flat_map(|set| set.records),
                Err(error) => {
                    tracing::warn!(topic_partition = %tp, %error, "Skipping undecodable __consumer_offsets batches");
                    continue;
                }
            };
            for record in records {
                if record.control {
                    // An end-transaction marker's key: version i16, type i16 (1 COMMIT).
                    if let Some(key) = &record.key
                        && record.transactional
                        && let (Some(high), Some(low)) = (key.get(2), key.get(3))
                    {
                        let kind = i16::from_be_bytes([*high, *low]);
                        if kind == 0 || kind == 1 {
                            out.push(Loaded::Marker(record.producer_id, kind == 1));
                        }
                    }
                    continue;
                }
                let transactional = record.transactional.then_some(record.producer_id);
                let Some(key) = record.key else { continue };
                let key = match records::decode_key(key) {
                    Ok(key) => key,
                    Err(error) => {
                        tracing::warn!(topic_partition = %tp, offset = record.offset, %error, "Skipping a __consumer_offsets record");
                        continue;
                    }
                };
                match records::decode_value(&key, record.value) {
                    Ok(value) => out.push(match transactional {
                        Some(producer_id) => Loaded::Transactional(producer_id, key, value),
                        None => Loaded::Record(key, value),
                    }),
                    Err(error) => {
                        tracing::warn!(topic_partition = %tp, offset = record.offset, %error, "Skipping a __consumer_offsets record");
                    }
                }
            }
        }
        out
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
