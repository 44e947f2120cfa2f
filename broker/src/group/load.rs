//! Loading groups from `__consumer_offsets` at start-up: every partition is read from
//! its log start offset; later records win, tombstones delete, and records that cannot
//! be decoded are skipped with a warning (never a panic).

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::records::RecordBatchDecoder;

use super::OFFSETS_TOPIC;
use super::classic::ClassicGroup;
use super::coordinator::{Group, GroupCoordinator, GroupKind, new_group};
use super::records::{self, RecordKey, RecordValue};
use crate::storage::ReadLimit;
use crate::storage::TopicPartition;

impl GroupCoordinator {
    pub(super) fn read_partition(&self, partition: i32) -> Vec<(RecordKey, Option<RecordValue>)> {
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
                    continue;
                }
                let Some(key) = record.key else { continue };
                let key = match records::decode_key(key) {
                    Ok(key) => key,
                    Err(error) => {
                        tracing::warn!(topic_partition = %tp, offset = record.offset, %error, "Skipping a __consumer_offsets record");
                        continue;
                    }
                };
                match records::decode_value(&key, record.value) {
                    Ok(value) => out.push((key, value)),
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
