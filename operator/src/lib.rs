//! Oxbow's Kubernetes operator.
//!
//! The operator turns two custom resources into a running cluster: a `Cluster` becomes
//! a ConfigMap, Services, a StatefulSet and a PodDisruptionBudget; a `Topic` becomes
//! calls to the cluster's Kafka admin API. Decisions that need no Kubernetes client
//! live in pure modules so they can be tested exhaustively.
//!
//! Modules:
//! - [`placement`]: rack-aware replica assignment (pure functions, no I/O).

pub mod placement;
