//! The Cluster reconciler: ConfigMap, Services, StatefulSet, PodDisruptionBudget and
//! optional ServiceMonitor from a `Cluster`, then status.
//!
//! ```text
//!   fetch ─▶ validate + build (pure, build.rs) ─▶ apply (SSA, ConfigMap before StatefulSet)
//!         ─▶ delete orphans ─▶ roll outdated brokers one at a time ─▶ status conditions
//! ```

pub mod build;
pub mod certificate_secrets;
pub mod certificates;
pub mod config;
pub mod names;
pub mod network_policy;
pub mod quorum;
pub mod reconcile;
pub mod roll;
pub mod scale;
pub mod security;
pub mod settings;
mod statefulset;
pub mod status;
pub mod storage;

#[cfg(test)]
mod tests;
