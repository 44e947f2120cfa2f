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
//! Modules (all private to the crate; each keeps its own door with `pub use`):
//! - `model`: the types the layers share (`TopicPartition`, SASL mechanisms, access control
//!   entries, client-quota values).
//! - `storage`: segmented partition logs, sparse mmap indexes, recovery, retention,
//!   compaction, idempotent-producer state and the [`LogManager`].
//! - `metadata`: the metadata records, the cluster image built from them, dynamic configs.
//! - `controller`: the metadata quorum (openraft), the active controller's decisions, and
//!   each broker's registration, heartbeats and image publishing.
//! - `replication`: partition replicas, ISR, followers' fetchers, and every read and write
//!   of partition data the API makes.
//! - `peers`: the one client to other brokers (TLS, SASL, a pool of idle connections):
//!   fetchers, transaction markers and verification use it.
//! - `coordinator`: the coordinator runtime — the publisher tells it which partitions of
//!   the internal topics this broker starts or stops leading; it reads a partition back
//!   through its replica and loads it into its coordinator, or unloads it.
//! - `group`: the consumer-group coordinator (classic and KIP-848 protocols) and
//!   committed offsets in `__consumer_offsets`.
//! - `txn`: the transaction coordinator (`__transaction_state`) and its markers.
//! - `api`: the Kafka APIs and the route table; `api::errors` maps failures to codes.
//! - `server`: the tokio network pipeline.
//! - `security`: TLS on `SSL` listeners and the principal a connection proves; ACLs.
//! - `quota`: client quotas (byte rates, request time) and their throttles.
//! - `metrics`: Prometheus metrics and `/metrics`, `/healthz`, `/readyz`.
//! - `config`: the typed configuration; `state`: what handlers share.
//! - `node`: a process assembled from its configuration (`node::Broker::build`) and
//!   served until a signal; `main.rs` only parses arguments and calls [`run`].
//!
//! The public surface is the `pub use` list below, and only what code outside the library
//! needs: the `oxbow` binary ([`BrokerConfig`], [`run`]; `oxbow dev`'s lock wait and first
//! SCRAM user) and the operator's test of the configuration keys; the criterion benches,
//! integration tests and e2e tools (a partition [`Log`], the [`LogManager`], their indexes,
//! produce validation, [`batch_builder`]); the fuzz targets ([`decode_stream`] over the
//! [`routes`], the [`SaslAuthenticator`]). Everything else is the crate's own; a test that
//! needs more belongs in the crate as a unit test.

mod api;
mod config;
mod controller;
mod coordinator;
mod group;
mod metadata;
mod metrics;
mod model;
mod node;
mod peers;
mod quota;
mod replication;
mod security;
mod server;
mod state;
mod storage;
mod txn;

// The binary: `main.rs` loads the configuration and runs a node; `oxbow dev` waits on log
// directory locks and, with `--secure`, creates the first SCRAM user through the quorum.
// The operator's `config_keys` test loads a configuration the way the broker does.
pub use config::{
    BrokerConfig, ClientAuth, KeyStore, SecurityProtocol, SslConfig, TlsVersion, TrustStore,
};
pub use controller::set_scram_password;
pub use node::run;
pub use security::ServerTls;
pub use storage::log_dir_lock_holder;

// Benches, integration tests and e2e tools: partition logs, the log manager, their indexes
// and produce validation, and the batches to write into them.
pub use storage::batch_builder;
pub use storage::offset_index::OffsetIndex;
pub use storage::time_index::TimeIndex;
pub use storage::validator::{RecordRules, validate_records};
pub use storage::{
    BatchHeader, Clock, Log, LogConfig, LogDirHealth, LogManager, LogManagerError, ManualClock,
    ReadLimit, StartupReport, SystemClock, TopicPartition,
};

// Fuzz targets and their proptest drivers: the request decoder over the route table, and a
// connection's SASL authenticator.
pub use api::{Routes, routes};
pub use model::ScramMechanism;
pub use security::{
    JwksSettings, JwksValidator, SaslAuthenticator, SaslListener, SaslMechanism, TokenValidator,
    credential_from_password,
};
pub use server::request::decode_stream;
