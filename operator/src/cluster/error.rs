//! The failed steps of the Cluster pipeline.

use kube::runtime::finalizer;

/// A failed step of the Cluster pipeline.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the Cluster has no namespace")]
    NoNamespace,
    #[error("applying {kind} {name} failed: {source}")]
    Apply {
        kind: &'static str,
        name: String,
        source: kube::Error,
    },
    #[error("reading {what} failed: {source}")]
    Fetch {
        what: &'static str,
        source: kube::Error,
    },
    #[error("deleting {kind} {name} failed: {source}")]
    Delete {
        kind: &'static str,
        name: String,
        source: kube::Error,
    },
    #[error("writing the status of Cluster {name} failed: {source}")]
    Status { name: String, source: kube::Error },
    #[error("finalizer step failed: {0}")]
    Finalizer(#[source] Box<finalizer::Error<Error>>),
}

impl Error {
    /// Bounded label for the errors metric.
    pub fn category(&self) -> &'static str {
        match self {
            Error::NoNamespace => "invalid",
            Error::Apply { .. } => "apply",
            Error::Fetch { .. } => "fetch",
            Error::Delete { .. } => "delete",
            Error::Status { .. } => "status",
            Error::Finalizer(inner) => match inner.as_ref() {
                finalizer::Error::ApplyFailed(e) | finalizer::Error::CleanupFailed(e) => {
                    e.category()
                }
                _ => "finalizer",
            },
        }
    }
}
