//! Names, labels and DNS addresses of the objects a Cluster owns.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

/// Value of `app.kubernetes.io/managed-by` on everything the operator creates.
pub const MANAGER: &str = "oxbow-operator";
/// Field manager name for server-side apply.
pub const FIELD_MANAGER: &str = "oxbow-operator";

/// Every name derived from one Cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    pub cluster: String,
    pub namespace: String,
}

impl Names {
    pub fn new(cluster: &str, namespace: &str) -> Self {
        Self {
            cluster: cluster.to_string(),
            namespace: namespace.to_string(),
        }
    }

    /// StatefulSet, ConfigMap and PodDisruptionBudget name.
    pub fn base(&self) -> String {
        self.cluster.clone()
    }

    /// Headless Service giving each broker a stable DNS name.
    pub fn headless_service(&self) -> String {
        format!("{}-headless", self.cluster)
    }

    /// ClusterIP Service for client bootstrap.
    pub fn bootstrap_service(&self) -> String {
        format!("{}-bootstrap", self.cluster)
    }

    /// ServiceAccount of the broker pods (the rack init container reads its node with it).
    pub fn service_account(&self) -> String {
        format!("{}-broker", self.cluster)
    }

    /// Cluster-scoped binding of the node-reader ClusterRole to the broker ServiceAccount.
    pub fn rack_binding(&self) -> String {
        format!("oxbow-rack-{}-{}", self.namespace, self.cluster)
    }

    /// Per-broker Service of the external listener.
    pub fn external_service(&self, ordinal: i32) -> String {
        format!("{}-{ordinal}-external", self.cluster)
    }

    /// Pod name of broker `ordinal`.
    pub fn pod(&self, ordinal: i32) -> String {
        format!("{}-{ordinal}", self.cluster)
    }

    /// Stable DNS name of broker `ordinal` (through the headless Service).
    pub fn pod_dns(&self, ordinal: i32) -> String {
        format!(
            "{}.{}.{}.svc",
            self.pod(ordinal),
            self.headless_service(),
            self.namespace
        )
    }

    pub fn external_service_dns(&self, ordinal: i32) -> String {
        format!("{}.{}.svc", self.external_service(ordinal), self.namespace)
    }

    /// Bootstrap address for clients in the Kubernetes cluster.
    pub fn bootstrap(&self, kafka_port: i32) -> String {
        format!(
            "{}.{}.svc:{kafka_port}",
            self.bootstrap_service(),
            self.namespace
        )
    }

    /// Labels selecting the broker pods (the StatefulSet selector; never changes).
    pub fn selector_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("app.kubernetes.io/name".to_string(), "oxbow".to_string()),
            (
                "app.kubernetes.io/instance".to_string(),
                self.cluster.clone(),
            ),
            (
                "app.kubernetes.io/component".to_string(),
                "broker".to_string(),
            ),
        ])
    }

    /// The selector as a string, for `status.selector` (scale subresource).
    pub fn selector_string(&self) -> String {
        self.selector_labels()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Labels on every owned object: the selector plus `managed-by`.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.selector_labels();
        labels.insert(
            "app.kubernetes.io/managed-by".to_string(),
            MANAGER.to_string(),
        );
        labels
    }

    /// Label selector listing everything this cluster's operator created (orphan search).
    pub fn owned_selector(&self) -> String {
        format!(
            "app.kubernetes.io/instance={},app.kubernetes.io/managed-by={MANAGER}",
            self.cluster
        )
    }
}

/// Metadata of an object the Cluster owns: name, namespace, the cluster's labels, owner.
pub(super) fn meta(names: &Names, name: String, owner: &OwnerReference) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(names.namespace.clone()),
        labels: Some(names.labels()),
        owner_references: Some(vec![owner.clone()]),
        ..ObjectMeta::default()
    }
}
