//! The coordinator runtime (Kafka's coordinator-common `CoordinatorRuntime` is the model):
//! what the group and transaction coordinators share. Each keeps its state in the
//! partitions of one internal topic (`__consumer_offsets`, `__transaction_state`) and is a
//! [`CoordinatorShard`] here: the runtime loads a partition's state into it when this
//! broker becomes the partition's leader — replayed from the partition's log through the
//! replica ([`loader`]), never from the log manager — and unloads it when the broker stops
//! leading it. The publisher tells the runtime of leadership changes, in the order the
//! images made them (a channel from the publisher, so the coordinators can be built after
//! the controller they need).

pub mod loader;
pub mod runtime;

pub use loader::{CoordinatorRecord, RecordKind};
pub use runtime::{CoordinatorRuntime, CoordinatorShard, LeadershipChanges};
