//! Oxbow's broker: a Kafka-compatible streaming server.
//!
//! Requests flow one way through the layers, each knowing only the ones below it:
//!
//! ```text
//!   node  (assembles the parts below in dependency order, serves, stops in order)
//!   server  (sockets, framing, ordering, back-pressure, sendfile)
//!     -> security  (TLS handshakes, principals)
//!     -> api  (one module per Kafka API, one route table)
//!       -> coordinator  (the runtime: loads and unloads the coordinators' partitions)
//!         -> group, txn  (the group and transaction coordinators, its shards)
//!       -> controller  (the metadata quorum: topics, configs, producer ids, brokers)
//!         -> replication  (ISR, fetchers; the only door to partition data)
//!           -> metadata  (records, the cluster image, dynamic configs, change scope)
//!           -> storage  (partition logs on disk, Kafka's format)
//! ```
//!
//! Modules:
//! - [`storage`]: segmented partition logs, sparse mmap indexes, recovery, retention,
//!   compaction, idempotent-producer state and the [`storage::LogManager`].
//! - [`metadata`]: the metadata records, the cluster image built from them, dynamic configs.
//! - [`controller`]: the metadata quorum (openraft), the active controller's decisions, and
//!   each broker's registration, heartbeats and image publishing.
//! - [`replication`]: partition replicas, ISR, followers' fetchers, and every read and write
//!   of partition data the API makes.
//! - [`peers`]: the one client to other brokers (TLS, SASL, a pool of idle connections):
//!   fetchers, transaction markers and verification use it.
//! - [`coordinator`]: the coordinator runtime — the publisher tells it which partitions of
//!   the internal topics this broker starts or stops leading; it reads a partition back
//!   through its replica and loads it into its coordinator, or unloads it.
//! - [`group`]: the consumer-group coordinator (classic and KIP-848 protocols) and
//!   committed offsets in `__consumer_offsets`.
//! - [`txn`]: the transaction coordinator (`__transaction_state`) and its markers.
//! - [`api`]: the Kafka APIs and the route table; [`api::errors`] maps failures to codes.
//! - [`server`]: the tokio network pipeline.
//! - [`security`]: TLS on `SSL` listeners and the principal a connection proves; ACLs.
//! - [`quota`]: client quotas (byte rates, request time) and their throttles.
//! - [`metrics`]: Prometheus metrics and `/metrics`, `/healthz`, `/readyz`.
//! - [`config`]: the typed configuration; [`state`]: what handlers share.
//! - [`node`]: a process assembled from its configuration ([`node::Broker::build`]) and
//!   served until a signal; `main.rs` only parses arguments and calls [`node::run`].

pub mod api;
pub mod config;
pub mod controller;
pub mod coordinator;
pub mod group;
pub mod metadata;
pub mod metrics;
pub mod model;
pub mod node;
pub mod peers;
pub mod quota;
pub mod replication;
pub mod security;
pub mod server;
pub mod state;
pub mod storage;
pub mod txn;
