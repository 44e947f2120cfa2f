//! Settings of the operator deployment that shape the objects it builds (`build.rs`,
//! `statefulset.rs`).

/// Settings of the operator deployment that shape what it builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildSettings {
    /// Broker image when a Cluster names none.
    pub broker_image: String,
    /// The operator's own image: runs the `rack-init` init container.
    pub operator_image: String,
    /// ClusterRole allowing `get` on nodes, bound to each cluster's broker ServiceAccount.
    pub rack_cluster_role: String,
}
