//! Oxbow's Kubernetes operator.
//!
//! The operator turns two custom resources into a running cluster: a `Cluster` becomes
//! a ConfigMap, Services, a StatefulSet and a PodDisruptionBudget; a `Topic` becomes
//! calls to the cluster's Kafka admin API. Decisions that need no Kubernetes client
//! live in pure modules so they can be tested exhaustively.
//!
//! ```text
//!   Cluster ──▶ cluster::reconcile ──▶ validate ─▶ build (pure) ─▶ apply (SSA) ─▶ status
//!   Topic   ──▶ topic::reconcile   ──▶ validate ─▶ admin (Kafka) ─▶ plan (pure) ─▶ status
//!   User    ──▶ user::reconcile    ──▶ validate ─▶ Secret ─▶ admin (SCRAM, ACLs, quotas) ─▶ status
//! ```
//!
//! Modules:
//! - [`crd`]: the `Cluster` and `Topic` types, status conditions, generated CRD YAML.
//! - [`cluster`]: the Cluster reconciler, its object builders, broker config rendering and
//!   the data moves of a scale (`cluster::scale`).
//! - [`admin`]: the Kafka admin client the reconcilers use.
//! - [`bootstrap`]: which addresses reach a Cluster's brokers.
//! - [`context`]: what reconciles share: client, settings, events, back-off.
//! - [`controller`]: the one reconcile entry point and error policy of every kind.
//! - [`leader`]: leader election with a Lease.
//! - [`rack`]: the `rack-init` step of a broker pod (node zone → `broker.rack`).
//! - [`metrics`]: operator metrics and the `/metrics`, `/healthz`, `/readyz` server.
//! - [`topic`]: the Topic reconciler and its pure plan.
//! - [`user`]: the User reconciler (credentials, ACLs, quotas) and its pure plan.
//!
//! Replica placement (new topics, drain and balance plans) is the `oxbow-placement` crate,
//! the same code the controller places new partitions with.

pub mod admin;
pub mod bootstrap;
pub mod cluster;
pub mod context;
pub mod controller;
pub mod crd;
mod events;
pub mod leader;
pub mod metrics;
pub mod rack;
pub mod topic;
pub mod user;
