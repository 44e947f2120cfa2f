//! The one set of Rust test helpers of Oxbow, shared by the broker's integration tests
//! (`broker/tests/*.rs`) and the e2e crate's tests (`e2e/tests/*.rs`): real `oxbow`
//! processes on loopback and a raw Kafka client that sends exact requests.
//!
//! - [`process`]: a free loopback port, where the `oxbow` binary is, one broker process
//!   (start, SIGKILL, SIGTERM, restart on the same ports and data, its log).
//! - [`cluster`]: voters and broker-only observers as real processes, each with its own
//!   ports and data, and the waits on their agreement (`/readyz`, `/metadata`).
//! - [`client`]: a raw client of any API and version, one request at a time, and the
//!   request builders the tests share (topics, produce batches).
//! - [`known_records`]: a broker that stores three known records at start, and the check
//!   that it still serves them intact (the `server_*` bad-input tests).
//!
//! Test code: it panics with the broker's log when something is off, instead of
//! returning errors a test would unwrap anyway. Waits poll a condition, never a time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod client;
pub mod cluster;
pub mod known_records;
pub mod process;

pub use client::RawClient;
pub use cluster::Cluster;
pub use process::{BrokerProcess, free_port, http_get, oxbow_binary};
