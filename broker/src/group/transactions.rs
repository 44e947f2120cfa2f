//! Offsets a transaction commits (TxnOffsetCommit, KIP-98/447): written to the group's
//! `__consumer_offsets` partition in a transactional batch of the producer, and pending
//! until the transaction's marker reaches that partition: COMMIT makes them the group's
//! committed offsets, ABORT drops them. OffsetFetch with `require_stable` is told to
//! retry (UNSTABLE_OFFSET_COMMIT) while a partition's offset is pending.

use super::GroupError;
use super::coordinator::{GroupCoordinator, GroupKind, PartitionResults, new_group};
use super::offsets::{OffsetRecords, OffsetsToCommit, fail_all};
use super::records::{self, OffsetValue};
use crate::storage::{TopicPartition, Verification};

/// A member as TxnOffsetCommit v3+ names it (empty / -1 from older clients: unchecked).
#[derive(Debug, Clone, Copy)]
pub struct TxnMember<'a> {
    pub member_id: &'a str,
    pub instance_id: Option<&'a str>,
    pub generation_id: i32,
}

impl GroupCoordinator {
    /// The group's offsets partition, if this broker leads it, and the guard of a
    /// verification of `producer_id`'s transaction there (`None`: the transaction is open
    /// there already), for [`GroupCoordinator::txn_commit_offsets`].
    pub fn start_txn_verification(
        &self,
        group_id: &str,
        producer_id: i64,
        epoch: i16,
    ) -> Option<(TopicPartition, Option<u64>)> {
        let partition = records::partition_for(group_id, self.config.offsets_partitions);
        let tp = TopicPartition::new(super::OFFSETS_TOPIC, partition);
        let replica = self.replicas.partition(&tp).filter(|p| p.is_leader())?;
        Some((tp, replica.start_verification(producer_id, epoch)))
    }

    /// TxnOffsetCommit: `offsets` are (partition, offset, leader epoch, metadata);
    /// `verification` what the producer's transaction coordinator said of the group's
    /// offsets partition.
    pub fn txn_commit_offsets(
        &self,
        group_id: &str,
        producer: (i64, i16),
        member: TxnMember<'_>,
        offsets: OffsetsToCommit,
        verification: Verification,
    ) -> PartitionResults {
        if group_id.is_empty() {
            return fail_all(offsets, &GroupError::InvalidGroupId);
        }
        if let Err(error) = self.check_coordinator(group_id) {
            return fail_all(offsets, &error);
        }
        let now = self.now();
        let mut state = self.state.lock();
        // A member of the group (a consumer's group metadata) is checked like an
        // OffsetCommit's, so a zombie of an older generation cannot commit (KIP-447).
        if !member.member_id.is_empty()
            && let Some(group) = state.groups.get_mut(group_id)
        {
            let valid = match &mut group.kind {
                GroupKind::Classic(classic) => classic.validate_commit(
                    member.member_id,
                    member.instance_id,
                    member.generation_id,
                    now,
                ),
                GroupKind::Consumer(consumer) => {
                    consumer.validate_commit(member.member_id, member.generation_id)
                }
            };
            if let Err(error) = valid {
                return fail_all(offsets, &error);
            }
        }
        let OffsetRecords {
            mut results,
            records: written,
            accepted,
        } = self.offset_records(group_id, offsets, now);
        match self.append_batch(group_id, &written, Some(producer), verification) {
            Ok(()) => {
                let pending = state.pending_transactions.entry(producer.0).or_default();
                for (tp, value) in accepted {
                    pending.insert((group_id.to_string(), tp.clone()), value);
                    results.push((tp, Ok(())));
                }
            }
            Err(error) => {
                results.extend(accepted.into_iter().map(|(tp, _)| (tp, Err(error.clone()))));
            }
        }
        results
    }

    /// A transaction marker of `producer_id` reached offsets partition `partition`: its
    /// pending offsets there become committed (or are dropped).
    pub fn complete_transaction(&self, partition: i32, producer_id: i64, commit: bool) {
        let partitions = self.config.offsets_partitions;
        let now = self.now();
        let delay = self.config.initial_rebalance_delay_ms;
        let mut state = self.state.lock();
        let Some(pending) = state.pending_transactions.get_mut(&producer_id) else {
            return;
        };
        let settled: Vec<((String, TopicPartition), OffsetValue)> = pending
            .extract_if(|(group, _), _| records::partition_for(group, partitions) == partition)
            .collect();
        if pending.is_empty() {
            state.pending_transactions.remove(&producer_id);
        }
        if !commit {
            return;
        }
        for ((group_id, tp), value) in settled {
            state
                .groups
                .entry(group_id)
                .or_insert_with(|| new_group(now, delay))
                .offsets
                .insert(tp, value);
        }
    }

    /// Whether a transaction has an offset of `tp` pending for the group.
    pub fn has_pending_offset(&self, group_id: &str, tp: &TopicPartition) -> bool {
        let key = (group_id.to_string(), tp.clone());
        self.state
            .lock()
            .pending_transactions
            .values()
            .any(|pending| pending.contains_key(&key))
    }
}
