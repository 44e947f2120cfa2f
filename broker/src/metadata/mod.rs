//! The cluster's metadata as every layer sees it: the records the controller writes to
//! the metadata log, the image they build, the dynamic configs in it, and which part of a
//! new image changed. Below the controller (which writes it) and replication (which
//! follows it), as Redpanda keeps its model below both `cluster/` and `raft/`.

pub mod dynamic_configs;
pub mod features;
pub mod image;
pub mod record_format;
pub mod records;
pub mod scope;
#[cfg(test)]
pub(crate) mod testing;
pub mod wire;
