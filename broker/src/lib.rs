//! Oxbow's broker: a Kafka-compatible streaming server.
//!
//! Requests flow one way through the layers, each knowing only the ones below it:
//!
//! ```text
//!   server  (sockets, framing, back-pressure)
//!     -> api  (one module per Kafka API)
//!       -> group / replication / controller
//!         -> storage  (partition logs on disk, Kafka's format)
//! ```
//!
//! Modules:
//! - [`storage`]: segmented partition logs in Kafka's on-disk format, sparse mmap
//!   indexes, recovery, retention, compaction, and the [`storage::LogManager`].

pub mod storage;
