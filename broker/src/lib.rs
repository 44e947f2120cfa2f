//! Oxbow's broker: a Kafka-compatible streaming server.
//!
//! Requests flow one way through the layers, each knowing only the ones below it:
//!
//! ```text
//!   server  (sockets, framing, ordering, back-pressure, sendfile)
//!     -> api  (one module per Kafka API, one route table)
//!       -> group  (consumer-group coordinator, offsets in __consumer_offsets)
//!       -> controller  (topics, configs, producer ids: the metadata log)
//!         -> storage  (partition logs on disk, Kafka's format)
//! ```
//!
//! Modules:
//! - [`storage`]: segmented partition logs, sparse mmap indexes, recovery, retention,
//!   compaction, idempotent-producer state and the [`storage::LogManager`].
//! - [`controller`]: the metadata log and the cluster image built from it.
//! - [`group`]: the consumer-group coordinator (classic and KIP-848 protocols) and
//!   committed offsets in `__consumer_offsets`.
//! - [`api`]: the Kafka APIs and the route table; [`api::errors`] maps failures to codes.
//! - [`server`]: the tokio network pipeline.
//! - [`metrics`]: Prometheus metrics and `/metrics`, `/healthz`, `/readyz`.
//! - [`config`]: the typed configuration; [`state`]: what handlers share.

pub mod api;
pub mod config;
pub mod controller;
pub mod group;
pub mod metrics;
pub mod replication;
pub mod server;
pub mod state;
pub mod storage;
