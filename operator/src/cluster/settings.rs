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

/// Broker image of Clusters that name none, unless the deployment says otherwise: the name
/// the chart uses (`broker.image.repository`) tagged with the crate version, which is the
/// chart's appVersion and the tag `e2e/images/build` gives the image.
/// `operator/tests/chart_images.rs` fails when the chart and these drift apart.
pub const DEFAULT_BROKER_IMAGE: &str =
    concat!("ghcr.io/oxbow-dev/oxbow:", env!("CARGO_PKG_VERSION"));

/// The operator's own image (runs `rack-init`), named and tagged as [`DEFAULT_BROKER_IMAGE`].
pub const DEFAULT_OPERATOR_IMAGE: &str = concat!(
    "ghcr.io/oxbow-dev/oxbow-operator:",
    env!("CARGO_PKG_VERSION")
);
