//! How the operator reaches a Cluster's brokers for Kafka admin requests.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use crate::admin::{AdminClient, AdminError};
use crate::cluster::names::Names;
use crate::context::Context;
use crate::crd::Cluster;

/// Addresses the operator tries, in order, to reach `cluster`'s brokers: an override
/// (`--bootstrap-override`), then the pod IPs of its running brokers (reachable from the
/// operator's pod in any cluster, and without cluster DNS), then the bootstrap Service.
pub async fn addresses(ctx: &Context, cluster: &Cluster, namespace: &str) -> Vec<String> {
    let name = cluster.name_any();
    if let Some(address) = ctx.bootstrap_overrides.get(&format!("{namespace}/{name}")) {
        return vec![address.clone()];
    }
    let names = Names::new(&name, namespace);
    let port = cluster.spec.listeners.kafka_port;
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let mut out: Vec<String> = match pods
        .list(&ListParams::default().labels(&names.selector_string()))
        .await
    {
        Ok(list) => list
            .items
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
            .map(|ip| format!("{ip}:{port}"))
            .collect(),
        Err(error) => {
            tracing::debug!(%error, "Listing broker pods failed; using the bootstrap Service");
            Vec::new()
        }
    };
    out.push(names.bootstrap(port));
    out
}

/// Connects to the first address that answers.
pub async fn connect(addresses: &[String]) -> Result<(AdminClient, String), AdminError> {
    let mut last = None;
    for address in addresses {
        match AdminClient::connect(address).await {
            Ok(client) => return Ok((client, address.clone())),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or(AdminError::Timeout {
        api: "Connect",
        address: String::new(),
    }))
}
