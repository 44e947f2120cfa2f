//! Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups tombstones
//! and `offsets.retention.minutes` expiry. Each change is appended to the group's
//! `__consumer_offsets` partition before it is applied in memory.

use super::GroupError;
use super::coordinator::{Group, GroupCoordinator, GroupKind, Groups, PartitionResults, new_group};
use super::records::{OffsetValue, RecordKey, encode_offset_value};
use crate::model::TopicPartition;
use crate::storage::batch_builder::SimpleRecord;

/// One partition's committed offset as OffsetFetch reports it.
#[derive(Debug, Clone)]
pub struct FetchedOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: Option<OffsetValue>,
}

/// Offsets to commit: (partition, offset, leader epoch, metadata).
pub(super) type OffsetsToCommit = Vec<(TopicPartition, i64, i32, Option<String>)>;

/// Every partition of `offsets` refused with `error`.
pub(super) fn fail_all(offsets: OffsetsToCommit, error: &GroupError) -> PartitionResults {
    offsets
        .into_iter()
        .map(|(tp, ..)| (tp, Err(error.clone())))
        .collect()
}

/// What the records of an offset commit came to: the partitions refused already (metadata
/// too large, an encoding error), the records to append, and the offsets they hold.
pub(super) struct OffsetRecords {
    pub results: PartitionResults,
    pub records: Vec<SimpleRecord>,
    pub accepted: Vec<(TopicPartition, OffsetValue)>,
}

impl GroupCoordinator {
    /// The `__consumer_offsets` records of `offsets` for `group_id`, committed at `now`
    /// (OffsetCommit and TxnOffsetCommit write the same records).
    pub(super) fn offset_records(
        &self,
        group_id: &str,
        offsets: OffsetsToCommit,
        now: i64,
    ) -> OffsetRecords {
        let mut built = OffsetRecords {
            results: Vec::with_capacity(offsets.len()),
            records: Vec::new(),
            accepted: Vec::new(),
        };
        for (tp, offset, leader_epoch, metadata) in offsets {
            let metadata = metadata.unwrap_or_default();
            if metadata.len() > self.config.offset_metadata_max_bytes {
                built
                    .results
                    .push((tp, Err(GroupError::OffsetMetadataTooLarge)));
                continue;
            }
            let value = OffsetValue {
                offset,
                leader_epoch,
                metadata,
                commit_timestamp: now,
            };
            let key = RecordKey::Offset {
                group: group_id.to_string(),
                topic: tp.topic.clone(),
                partition: tp.partition,
            };
            match encode_offset_value(&value)
                .map_err(|e| GroupError::EncodeRecord {
                    reason: e.to_string(),
                })
                .and_then(|bytes| self.record(&key, Some(bytes)))
            {
                Ok(record) => {
                    built.records.push(record);
                    built.accepted.push((tp, value));
                }
                Err(error) => built.results.push((tp, Err(error))),
            }
        }
        built
    }

    /// OffsetCommit. `member` is (member id, instance id, generation or member epoch);
    /// `offsets` are (partition, offset, leader epoch, metadata) already checked to exist.
    pub fn commit_offsets(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation_or_epoch: i32,
        offsets: OffsetsToCommit,
    ) -> PartitionResults {
        if group_id.is_empty() {
            return fail_all(offsets, &GroupError::InvalidGroupId);
        }
        if let Err(error) = self.check_coordinator(group_id) {
            return fail_all(offsets, &error);
        }
        let now = self.now();
        let mut state = self.state.lock();
        let delay = self.config.initial_rebalance_delay_ms;
        let group = state
            .groups
            .entry(group_id.to_string())
            .or_insert_with(|| new_group(now, delay));
        let valid = match &mut group.kind {
            GroupKind::Classic(classic) => {
                classic.validate_commit(member_id, instance_id, generation_or_epoch, now)
            }
            GroupKind::Consumer(consumer) => {
                consumer.validate_commit(member_id, generation_or_epoch)
            }
        };
        if let Err(error) = valid {
            return fail_all(offsets, &error);
        }
        let OffsetRecords {
            mut results,
            records,
            accepted,
        } = self.offset_records(group_id, offsets, now);
        match self.append(group_id, &records) {
            Ok(()) => {
                if let Some(group) = state.groups.get_mut(group_id) {
                    for (tp, value) in accepted {
                        group.offsets.insert(tp.clone(), value);
                        results.push((tp, Ok(())));
                    }
                }
            }
            Err(error) => {
                results.extend(accepted.into_iter().map(|(tp, _)| (tp, Err(error.clone()))))
            }
        }
        results
    }

    /// OffsetFetch: `None` partitions = every committed offset of the group.
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        partitions: Option<Vec<TopicPartition>>,
    ) -> Vec<FetchedOffset> {
        let state = self.state.lock();
        let offsets = state.groups.get(group_id).map(|g| &g.offsets);
        match partitions {
            Some(partitions) => partitions
                .into_iter()
                .map(|tp| FetchedOffset {
                    offset: offsets.and_then(|o| o.get(&tp)).cloned(),
                    topic: tp.topic,
                    partition: tp.partition,
                })
                .collect(),
            None => offsets
                .into_iter()
                .flatten()
                .map(|(tp, value)| FetchedOffset {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                    offset: Some(value.clone()),
                })
                .collect(),
        }
    }

    /// The record that deletes one committed offset.
    fn offset_tombstone(
        &self,
        group_id: &str,
        tp: &TopicPartition,
    ) -> Result<SimpleRecord, GroupError> {
        self.record(
            &RecordKey::Offset {
                group: group_id.to_string(),
                topic: tp.topic.clone(),
                partition: tp.partition,
            },
            None,
        )
    }

    pub(super) fn write_tombstones(&self, group_id: &str, group: &Group) -> Result<(), GroupError> {
        let mut records = Vec::new();
        for tp in group.offsets.keys() {
            records.push(self.offset_tombstone(group_id, tp)?);
        }
        records.push(self.record(
            &RecordKey::Group {
                group: group_id.to_string(),
            },
            None,
        )?);
        self.append(group_id, &records)
    }

    /// OffsetDelete: refused per partition while the group subscribes to the topic.
    pub fn delete_offsets(
        &self,
        group_id: &str,
        partitions: Vec<TopicPartition>,
    ) -> Result<PartitionResults, GroupError> {
        self.check_coordinator(group_id)?;
        let mut state = self.state.lock();
        let group = state
            .groups
            .get_mut(group_id)
            .ok_or(GroupError::GroupIdNotFound)?;
        let subscribed = match &group.kind {
            GroupKind::Classic(g) => g.subscribed_topics(),
            GroupKind::Consumer(g) => g.subscribed_topics(),
        };
        let mut results = Vec::new();
        let mut records = Vec::new();
        let mut deleted = Vec::new();
        for tp in partitions {
            if subscribed.contains(&tp.topic) {
                results.push((tp, Err(GroupError::GroupSubscribedToTopic)));
                continue;
            }
            if group.offsets.contains_key(&tp) {
                records.push(self.offset_tombstone(group_id, &tp)?);
                deleted.push(tp.clone());
            }
            results.push((tp, Ok(())));
        }
        self.append(group_id, &records)?;
        for tp in deleted {
            group.offsets.remove(&tp);
        }
        Ok(results)
    }

    /// `offsets.retention.minutes`: an empty group's offsets (and the group) go once the
    /// group has been empty, and uncommitted to, for the retention time.
    pub(super) fn expire_offsets(&self, state: &mut Groups, now: i64) {
        let expired: Vec<String> = state
            .groups
            .iter()
            .filter(|(_, g)| {
                g.is_empty() && now - g.empty_since() >= self.config.offsets_retention_ms
            })
            .map(|(id, _)| id.clone())
            .collect();
        for group_id in expired {
            let Some(group) = state.groups.get(&group_id) else {
                continue;
            };
            match self.write_tombstones(&group_id, group) {
                Ok(()) => {
                    tracing::info!(
                        group = group_id,
                        offsets = group.offsets.len(),
                        "Expired the offsets of an empty group"
                    );
                    state.groups.remove(&group_id);
                    self.metrics.forget_group(&group_id);
                }
                Err(error) => tracing::warn!(group = group_id, %error, "Offset expiry failed"),
            }
        }
    }
}
