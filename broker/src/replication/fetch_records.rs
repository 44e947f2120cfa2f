//! The replica side of Fetch (Kafka's `ReplicaManager.fetchMessages` /
//! `Partition.fetchRecords`): what one partition answers a follower or a consumer.
//!
//! ```text
//!   last fetched epoch diverges from this log? ──► the epoch and end to truncate to, no records
//!   a consumer better served by a replica in its rack? ──► that replica, no records
//!   a follower: its fetch offset moves the high watermark and may add it to the ISR
//!   throttled follower over the leader's budget? ──► offsets, no records
//!   read up to the log end (followers), the high watermark (read_uncommitted consumers)
//!   or the last stable offset (read_committed consumers, told the aborted transactions
//!   of what they read)
//! ```

use kafka_protocol::ResponseError;

use super::{Partition, Refusal, ReplicaManager};
use crate::storage::{AbortedTransaction, LogError, ReadLimit, ReadResult};

/// One partition of a Fetch request, as the replica manager needs it.
#[derive(Debug, Clone, Copy)]
pub struct FetchParams {
    /// The fetching follower's broker id, or negative for a consumer.
    pub replica_id: i32,
    pub fetch_offset: i64,
    /// The epoch of the fetcher's last record (KIP-320), negative when unknown.
    pub last_fetched_epoch: i32,
    /// The partition's own byte limit.
    pub partition_max_bytes: i32,
    /// What is left of the response's byte budget.
    pub remaining: u64,
    /// A consumer's isolation level is `read_committed` (Fetch v4+).
    pub read_committed: bool,
}

/// What one partition answers.
#[derive(Debug)]
pub struct FetchedRecords {
    /// The records read (file regions), or why not.
    pub outcome: Result<ReadResult, Refusal>,
    /// The fetcher's log diverges from this one: the epoch and offset to truncate to
    /// (KIP-320/595); no records.
    pub diverging: Option<(i32, i64)>,
    /// A follower out of range: the leader's high watermark and log start offset.
    pub realign: Option<(i64, i64)>,
    /// The replica this consumer should read from instead (KIP-392); no records.
    pub preferred_read_replica: Option<i32>,
    /// For a `read_committed` consumer: the aborted transactions of the range read.
    pub aborted_transactions: Vec<AbortedTransaction>,
}

impl FetchedRecords {
    fn outcome(outcome: Result<ReadResult, Refusal>) -> Self {
        Self {
            outcome,
            diverging: None,
            realign: None,
            preferred_read_replica: None,
            aborted_transactions: Vec::new(),
        }
    }
}

impl ReplicaManager {
    /// Reads `partition` for a fetcher. `redirect` names the replica a consumer in another
    /// rack should read from (asked only of consumers, once the epochs agree).
    pub fn fetch_records(
        &self,
        partition: &Partition,
        params: &FetchParams,
        redirect: impl FnOnce(u64) -> Option<i32>,
    ) -> FetchedRecords {
        let tp = partition.topic_partition();
        let log = partition.log();
        let replica_id = params.replica_id;
        let follower = replica_id >= 0;
        let Ok(fetch_offset) = u64::try_from(params.fetch_offset) else {
            return FetchedRecords::outcome(Err(Refusal::Code(
                ResponseError::OffsetOutOfRange.code(),
            )));
        };
        let offsets_only = || ReadResult {
            next_offset: fetch_offset,
            high_watermark: log.high_watermark(),
            last_stable_offset: log.last_stable_offset(),
            log_start_offset: log.log_start_offset(),
            log_end_offset: log.log_end_offset(),
            ..ReadResult::default()
        };
        if params.last_fetched_epoch >= 0 {
            let diverged = match log.end_offset_for_epoch(params.last_fetched_epoch) {
                Some((epoch, end)) if epoch < params.last_fetched_epoch || end < fetch_offset => {
                    Some((epoch, end as i64))
                }
                Some(_) => None,
                None => Some((-1, log.log_start_offset() as i64)),
            };
            if diverged.is_some() {
                return FetchedRecords {
                    diverging: diverged,
                    ..FetchedRecords::outcome(Ok(offsets_only()))
                };
            }
        }
        if !follower && let Some(preferred) = redirect(fetch_offset) {
            return FetchedRecords {
                preferred_read_replica: Some(preferred),
                ..FetchedRecords::outcome(Ok(offsets_only()))
            };
        }
        if follower {
            match partition.record_follower_fetch(replica_id, fetch_offset, self.now_ms()) {
                Ok(Some(proposal)) => self.propose(proposal),
                Ok(None) => {}
                Err(code) => {
                    tracing::info!(topic_partition = %tp, replica_id, "Refusing a fetch from a broker that is not a replica");
                    return FetchedRecords::outcome(Err(Refusal::Code(code)));
                }
            }
        }
        let limit_kind = if follower {
            ReadLimit::LogEnd
        } else if params.read_committed {
            ReadLimit::LastStable
        } else {
            ReadLimit::HighWatermark
        };
        // As in Kafka: a follower outside the ISR of a partition whose leader replica (here)
        // is named in `leader.replication.throttled.replicas` gets offsets but no records
        // while the leader's budget is spent. Never one the high watermark waits for (in the
        // ISR or joining it): holding it back would hold back acks=all.
        let throttled = follower
            && log
                .config()
                .leader_throttled_replicas
                .contains(tp.partition, self.node_id())
            && !partition.holds_high_watermark(replica_id);
        let held = throttled && self.throttles.leader.exceeded();
        let limit = (params.partition_max_bytes.max(0) as u64).min(params.remaining);
        let result = if held || (limit == 0 && params.remaining == 0) {
            // Response budget spent: report offsets, no records.
            log.read_with_limit(
                log.high_watermark()
                    .min(fetch_offset.max(log.log_start_offset())),
                0,
                limit_kind,
            )
        } else {
            log.read_with_limit(fetch_offset, limit.max(1), limit_kind)
        };
        if throttled && let Ok(read) = &result {
            self.throttles.leader.record(read.bytes());
        }
        let aborted_transactions = match &result {
            Ok(read) if params.read_committed && !follower && read.next_offset > fetch_offset => {
                log.aborted_transactions(fetch_offset, read.next_offset)
            }
            _ => Vec::new(),
        };
        let mut realign = None;
        let outcome = result.map_err(|error| {
            if follower && matches!(error, LogError::OffsetOutOfRange { .. }) {
                // The follower realigns from the leader's log start and high watermark.
                tracing::info!(topic_partition = %tp, replica_id, fetch_offset, "A follower fetched out of range");
                realign = Some((log.high_watermark() as i64, log.log_start_offset() as i64));
            }
            Refusal::Log(error)
        });
        FetchedRecords {
            realign,
            aborted_transactions,
            ..FetchedRecords::outcome(outcome)
        }
    }
}
