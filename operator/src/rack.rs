//! `oxbow-operator rack-init`: run as an init container of each broker pod, it reads the
//! pod's node with the pod's ServiceAccount and writes `broker.rack: <zone>` to a file the
//! broker loads as its last `--config`.
//!
//! A node without the label gets an empty file (no rack) and a log line: a cluster
//! without zones still starts.

use std::path::Path;

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::Api;

/// Failed rack lookup.
#[derive(Debug, thiserror::Error)]
pub enum RackError {
    #[error("connecting to the Kubernetes API failed: {0}")]
    Client(#[source] kube::Error),
    #[error("reading node {node} failed: {source}")]
    ReadNode { node: String, source: kube::Error },
    #[error("writing {path} failed: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// The rack file's contents for a label value.
pub fn rack_file(rack: Option<&str>) -> String {
    match rack {
        Some(rack) => format!(
            "broker.rack: {}\n",
            serde_json::Value::String(rack.to_string())
        ),
        None => "# the node has no rack label: no broker.rack\n{}\n".to_string(),
    }
}

/// Reads `node`'s `topology_key` label and writes the rack file to `out`.
pub async fn run(node: &str, topology_key: &str, out: &Path) -> Result<Option<String>, RackError> {
    let client = Client::try_default().await.map_err(RackError::Client)?;
    let nodes: Api<Node> = Api::all(client);
    let node_object = nodes
        .get(node)
        .await
        .map_err(|source| RackError::ReadNode {
            node: node.to_string(),
            source,
        })?;
    let rack = node_object
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(topology_key))
        .cloned();
    if rack.is_none() {
        tracing::warn!(
            node,
            topology_key,
            "Node has no rack label; broker starts without broker.rack"
        );
    }
    std::fs::write(out, rack_file(rack.as_deref())).map_err(|source| RackError::Write {
        path: out.display().to_string(),
        source,
    })?;
    Ok(rack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rack_file_is_flat_yaml() {
        let parsed: std::collections::BTreeMap<String, String> =
            serde_yaml::from_str(&rack_file(Some("zone-a"))).unwrap();
        assert_eq!(
            parsed.get("broker.rack").map(String::as_str),
            Some("zone-a")
        );
        let empty: std::collections::BTreeMap<String, String> =
            serde_yaml::from_str(&rack_file(None)).unwrap();
        assert!(empty.is_empty());
    }
}
