//! Value types every layer shares — a partition's name, SASL and SCRAM mechanisms, access
//! control entries, client quotas — below all of them, so the configuration, security,
//! metadata and storage layers name them without naming each other.

pub mod acl;
pub mod quota;
mod sasl;
mod topic_partition;

pub use sasl::{SaslMechanism, ScramMechanism};
pub use topic_partition::TopicPartition;
