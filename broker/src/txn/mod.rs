//! Transactions: the coordinator of transactional ids (their state replicated in
//! `__transaction_state`), and the markers it writes to decide a transaction in every
//! partition it touched. The partitions' side (open transactions, the last stable
//! offset, aborted transactions) lives in storage behind the replica manager.
//!
//! Modules: [`metadata`] (an id's state and its transitions, pure), [`records`] (the
//! `__transaction_state` record layout), [`coordinator`] (requests, persistence,
//! loading through the coordinator runtime, timeouts), [`markers`] (writing markers here
//! and at other leaders). A partition leader's check with the coordinator before a
//! transactional write (KIP-890) is the API's: `api/txn_verification.rs`.

pub mod coordinator;
pub mod markers;
pub mod metadata;
pub mod metrics;
pub mod records;

pub use coordinator::TransactionCoordinator;
pub use metadata::{TxnError, TxnState};
pub use metrics::TransactionMetrics;

/// The transaction coordinators' topic.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";
