//! The Cluster reconciler: ConfigMap, Services, StatefulSet, PodDisruptionBudget and
//! optional ServiceMonitor from a `Cluster`, then status.
//!
//! ```text
//!   validate (pure, build.rs) ─▶ observe (observe.rs: StatefulSet, the scale's step, pods,
//!     roll gate) ─▶ plan (pure, plan.rs: objects built once, roll, voters) ─▶ act (act.rs:
//!     certificates, SSA with ConfigMap before StatefulSet, orphans, one restart, one voter
//!     step, claims, feature levels) ─▶ status conditions (status.rs)
//! ```
//!
//! Upgrades (`upgrade.rs`): `spec.version` names the release and the broker image; a change
//! rolls behind the same gate, then the feature levels are finalized.

mod act;
pub mod build;
pub mod certificate_secrets;
pub mod certificates;
pub mod config;
mod error;
pub mod names;
pub mod network_policy;
mod observe;
mod plan;
pub mod quorum;
pub mod reconcile;
pub mod roll;
pub mod scale;
pub mod security;
pub mod settings;
mod statefulset;
pub mod status;
pub mod storage;
pub mod upgrade;
mod voters;

#[cfg(test)]
mod tests;
