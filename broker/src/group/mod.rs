//! Consumer groups: the coordinator, committed offsets in `__consumer_offsets`, and both
//! rebalance protocols.
//!
//! ```text
//!   api (JoinGroup, SyncGroup, …, ConsumerGroupHeartbeat)
//!     │  requests become events, with `now` from the injected clock
//!     ▼
//!   GroupCoordinator  ── one mutex over every group this broker coordinates
//!     │   ClassicGroup   (Empty → PreparingRebalance → CompletingRebalance → Stable)
//!     │   ConsumerGroup  (KIP-848: group epoch, server-side target assignment,
//!     │                   per-member reconciliation through revocation)
//!     │  state machines return actions: complete a parked join/sync, persist
//!     ▼
//!   storage: the `__consumer_offsets` partition of the group (records.rs)
//! ```
//!
//! The state machines are plain data: they take the current time as an argument and
//! never read a clock, spawn or block, so every rebalance replays in a unit test. The
//! coordinator owns the parked JoinGroup/SyncGroup responses (oneshot channels), the
//! writes to `__consumer_offsets` and the timer tick that drives session timeouts,
//! rebalance timeouts and offset expiry.
//!
//! Modules: [`records`] (the on-disk key/value schemas), [`classic`] (the classic
//! protocol), [`consumer`] (KIP-848), [`assignor`] (server-side `uniform` and `range`),
//! [`coordinator`] (the shared state, persistence, timers), `load` (start-up),
//! [`offsets`] (commits, fetches, deletes, expiry), [`metrics`].

pub mod assignor;
pub mod classic;
pub mod consumer;
pub mod coordinator;
mod load;
pub mod metrics;
pub mod offsets;
pub mod records;
#[cfg(test)]
mod tests;
mod transactions;

pub use coordinator::GroupCoordinator;
pub use transactions::TxnMember;

/// The offsets topic.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Why a group request was refused; `api::errors` maps each to a Kafka error code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    #[error("invalid group id")]
    InvalidGroupId,
    /// Decided by the API layer's authorizer, never by the coordinator.
    #[error("not authorized to access the group")]
    GroupAuthorizationFailed,
    #[error("unknown member id")]
    UnknownMemberId,
    #[error("a member id is required to join; re-join with the one given")]
    MemberIdRequired,
    #[error("stale generation")]
    IllegalGeneration,
    #[error("the group is rebalancing")]
    RebalanceInProgress,
    #[error("protocol type or protocols do not match the group's")]
    InconsistentGroupProtocol,
    #[error("session timeout outside the broker's allowed range")]
    InvalidSessionTimeout,
    #[error("another member registered with this group.instance.id")]
    FencedInstanceId,
    #[error("the group still has members")]
    NonEmptyGroup,
    #[error("the group does not exist")]
    GroupIdNotFound,
    #[error("the coordinator is not available")]
    CoordinatorNotAvailable,
    #[error("this broker does not lead the group's __consumer_offsets partition")]
    NotCoordinator,
    #[error("the group's __consumer_offsets partition is still being loaded")]
    CoordinatorLoadInProgress,
    #[error("the group is actively subscribed to the topic")]
    GroupSubscribedToTopic,
    #[error("the member epoch is fenced")]
    FencedMemberEpoch,
    #[error("the instance id is still used by another member")]
    UnreleasedInstanceId,
    #[error("the server-side assignor is not supported")]
    UnsupportedAssignor,
    #[error("invalid regular expression `{regex}`: {reason}")]
    InvalidRegularExpression { regex: String, reason: String },
    #[error("the member epoch is stale")]
    StaleMemberEpoch,
    #[error("invalid request: {0}")]
    InvalidRequest(&'static str),
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    #[error("offset metadata too large")]
    OffsetMetadataTooLarge,
    // The storage steps keep their cause as text: a group error is cloned into every
    // partition's result and compared in responses, and the causes are neither.
    #[error("cannot encode a __consumer_offsets record: {reason}")]
    EncodeRecord { reason: String },
    #[error("cannot build a record batch for {partition}: {reason}")]
    BuildBatch {
        partition: crate::storage::TopicPartition,
        reason: String,
    },
    #[error("appending to {partition} failed: {reason}")]
    Append {
        partition: crate::storage::TopicPartition,
        reason: String,
    },
}
