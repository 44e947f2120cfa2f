//! The broker keys of a secured Cluster (issue 34, point 1): a Cluster is secured when a
//! listener uses TLS or authentication, or authorization is on. Its brokers then run
//!
//! ```text
//!   INTERNAL     kafkaPort         the internal listener: PLAINTEXT, SSL, SASL_PLAINTEXT or
//!                                  SASL_SSL from `tls` and `authentication`
//!   EXTERNAL     external.port     likewise, from the external listener's own settings
//!   REPLICATION  replicationPort   SSL, client certificates of the cluster CA required:
//!                                  followers, and the operator's admin connections
//!   CONTROLLER   controllerPort    SSL, the same mutual TLS: the quorum
//! ```
//!
//! with the stores of the `certs` volume (the cluster CA, the clients CA, the broker's own
//! key store). A client certificate's principal is its CN when the clients CA issued it
//! (`ssl.principal.mapping.rules`), so a `tls` User `alice` is `User:alice` like a SCRAM
//! User; a certificate of the cluster CA keeps its whole subject
//! (`User:CN=<cluster>-broker,O=oxbow.dev cluster`), which no User can take.
//! An unsecured Cluster renders exactly what it did before (one PLAINTEXT listener).

use std::collections::BTreeMap;

use super::certificates::{CLIENTS_ORGANIZATION, CLUSTER_ORGANIZATION};
use super::names::Names;
use crate::crd::{AdvertiseMode, ClusterSpec, ExternalType, ListenerAuthentication};

/// Mount path of the certificates volume in the broker container (beside the config
/// volume, not inside it: a mount point inside a read-only ConfigMap volume cannot be made).
pub const CERTS_DIR: &str = "/etc/oxbow-certs";
/// The cluster CA's certificate in the volume.
pub const CLUSTER_CA_FILE: &str = "cluster-ca.crt";
/// Mount path of an `oauth` listener's JSON Web Key Set (the `listeners.oauth.jwks` Secret).
pub const OAUTH_DIR: &str = "/etc/oxbow-oauth";
/// The clients CA's certificate in the volume.
pub const CLIENTS_CA_FILE: &str = "clients-ca.crt";

const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// Whether the Cluster's brokers run with the security listeners.
pub fn secured(spec: &ClusterSpec) -> bool {
    let listener = |tls: bool, authentication: ListenerAuthentication| {
        tls || authentication != ListenerAuthentication::None
    };
    listener(spec.listeners.tls, spec.listeners.authentication)
        || spec
            .listeners
            .external
            .as_ref()
            .is_some_and(|e| listener(e.tls, e.authentication))
        || spec.authorization.is_some()
}

/// The CN of every broker's certificate (one principal for all brokers).
pub fn broker_cn(names: &Names) -> String {
    format!("{}-broker", names.cluster)
}

/// The CN of the operator's client certificate.
pub fn operator_cn(names: &Names) -> String {
    format!("{}-operator", names.cluster)
}

/// The principal a certificate of the cluster CA with `cn` maps to.
pub fn cluster_principal(cn: &str) -> String {
    format!("User:CN={cn},O={CLUSTER_ORGANIZATION}")
}

/// A client listener of a secured Cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientListener {
    pub name: &'static str,
    pub tls: bool,
    pub authentication: ListenerAuthentication,
}

impl ClientListener {
    /// Kafka's security protocol of the listener.
    pub fn protocol(&self) -> &'static str {
        match (self.tls, self.authentication) {
            (false, ListenerAuthentication::None) => "PLAINTEXT",
            (true, ListenerAuthentication::None | ListenerAuthentication::Tls) => "SSL",
            // Refused by the CRD (tls authentication needs TLS); TLS is the safe reading.
            (false, ListenerAuthentication::Tls) => "SSL",
            (false, _) => "SASL_PLAINTEXT",
            (true, _) => "SASL_SSL",
        }
    }

    fn mechanism(&self) -> Option<&'static str> {
        match self.authentication {
            ListenerAuthentication::ScramSha512 => Some("SCRAM-SHA-512"),
            ListenerAuthentication::ScramSha256 => Some("SCRAM-SHA-256"),
            ListenerAuthentication::Oauth => Some("OAUTHBEARER"),
            _ => None,
        }
    }
}

/// INTERNAL, then EXTERNAL when there is one.
pub fn client_listeners(spec: &ClusterSpec) -> Vec<ClientListener> {
    let mut listeners = vec![ClientListener {
        name: "INTERNAL",
        tls: spec.listeners.tls,
        authentication: spec.listeners.authentication,
    }];
    if let Some(external) = &spec.listeners.external {
        listeners.push(ClientListener {
            name: "EXTERNAL",
            tls: external.tls,
            authentication: external.authentication,
        });
    }
    listeners
}

/// The shared keys of a secured Cluster (broker.yaml).
pub fn shared_entries(spec: &ClusterSpec, names: &Names) -> BTreeMap<String, String> {
    let mut entries = BTreeMap::new();
    let mut set = |key: &str, value: String| {
        entries.insert(key.to_string(), value);
    };
    let listeners = client_listeners(spec);
    let map: Vec<String> = listeners
        .iter()
        .map(|l| format!("{}:{}", l.name, l.protocol()))
        .chain(["REPLICATION:SSL".to_string(), "CONTROLLER:SSL".to_string()])
        .collect();
    set("listener.security.protocol.map", map.join(","));
    set("inter.broker.listener.name", "REPLICATION".into());
    // The broker-wide stores serve REPLICATION and CONTROLLER: mutual TLS, cluster CA.
    set(
        "ssl.truststore.location",
        format!("{CERTS_DIR}/{CLUSTER_CA_FILE}"),
    );
    set("ssl.client.auth", "required".into());
    set(
        "ssl.principal.mapping.rules",
        format!("RULE:^CN=([^,]+),O={CLIENTS_ORGANIZATION}$/$1/,DEFAULT"),
    );
    for listener in &listeners {
        let prefix = format!("listener.name.{}.", listener.name.to_ascii_lowercase());
        if listener.tls {
            let clients = listener.authentication == ListenerAuthentication::Tls;
            set(
                &format!("{prefix}ssl.client.auth"),
                if clients { "required" } else { "none" }.into(),
            );
            if clients {
                set(
                    &format!("{prefix}ssl.truststore.location"),
                    format!("{CERTS_DIR}/{CLIENTS_CA_FILE}"),
                );
            }
        }
        if let Some(mechanism) = listener.mechanism() {
            set(
                &format!("{prefix}sasl.enabled.mechanisms"),
                mechanism.into(),
            );
        }
    }
    if let Some(oauth) = &spec.listeners.oauth
        && listeners
            .iter()
            .any(|l| l.authentication == ListenerAuthentication::Oauth)
    {
        set(
            "sasl.oauthbearer.jwks.endpoint.url",
            format!("file:{OAUTH_DIR}/{}", oauth.jwks.key),
        );
    }
    if let Some(authorization) = &spec.authorization {
        set("authorizer.class.name", STANDARD_AUTHORIZER.into());
        let super_users: Vec<String> = [
            cluster_principal(&broker_cn(names)),
            cluster_principal(&operator_cn(names)),
        ]
        .into_iter()
        .chain(authorization.super_users.iter().cloned())
        .collect();
        set("super.users", super_users.join(";"));
    }
    entries
}

/// The per-broker keys of a secured Cluster: the broker's key store.
pub fn broker_entries(names: &Names, ordinal: i32) -> BTreeMap<String, String> {
    BTreeMap::from([(
        "ssl.keystore.location".to_string(),
        format!("{CERTS_DIR}/{}.pem", names.pod(ordinal)),
    )])
}

/// What a secured spec cannot have, said in a sentence (the `InvalidConfig` condition):
/// the brokers' certificates name DNS names, so a TLS listener must be reached by one.
pub fn validate(spec: &ClusterSpec) -> Result<(), String> {
    if !secured(spec) {
        return Ok(());
    }
    let oauth = client_listeners(spec)
        .iter()
        .any(|l| l.authentication == ListenerAuthentication::Oauth);
    if oauth && spec.listeners.oauth.is_none() {
        return Err("authentication oauth needs listeners.oauth.jwks: the Secret key holding the identity provider's JSON Web Key Set".into());
    }
    if spec.listeners.advertise == AdvertiseMode::PodIp {
        return Err("a secured Cluster advertises its brokers' DNS names (their certificates name them): listeners.advertise PodIP is not available with TLS, authentication or authorization".into());
    }
    if let Some(external) = &spec.listeners.external
        && external.tls
        && external.type_ == ExternalType::NodePort
        && external.advertised_host.is_none()
    {
        return Err("a TLS NodePort listener needs listeners.external.advertisedHost: the brokers' certificates must name the address clients dial, and a node's address is not known in advance".into());
    }
    let ports = [
        ("kafkaPort", spec.listeners.kafka_port),
        ("controllerPort", spec.listeners.controller_port),
        ("metrics.port", spec.metrics.port),
    ];
    if let Some((name, _)) = ports
        .iter()
        .find(|(_, port)| *port == spec.listeners.replication_port)
    {
        return Err(format!(
            "listeners.replicationPort {} is also {name}",
            spec.listeners.replication_port
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(listeners: &str) -> ClusterSpec {
        serde_yaml::from_str(&format!("replicas: 3\nlisteners: {listeners}")).unwrap()
    }

    #[test]
    fn secured_specs_that_certificates_cannot_cover_are_refused() {
        assert!(
            validate(&spec("{advertise: PodIP}")).is_ok(),
            "unsecured: as before"
        );
        assert!(
            validate(&spec("{tls: true, advertise: PodIP}"))
                .unwrap_err()
                .contains("PodIP")
        );
        assert!(
            validate(&spec(
                "{external: {type: NodePort, nodePortBase: 31000, tls: true}}"
            ))
            .unwrap_err()
            .contains("advertisedHost")
        );
        assert!(
            validate(&spec(
                "{external: {type: NodePort, nodePortBase: 31000, tls: true, advertisedHost: k.example.com}}"
            ))
            .is_ok()
        );
        assert!(
            validate(&spec("{tls: true, replicationPort: 9092}"))
                .unwrap_err()
                .contains("kafkaPort")
        );
        // Credentials and ACLs come from User resources.
        assert!(validate(&spec("{tls: true, authentication: tls}")).is_ok());
        assert!(
            validate(&spec(
                "{external: {type: LoadBalancer, authentication: scram-sha-512}}"
            ))
            .is_ok()
        );
        let authorized: ClusterSpec = serde_yaml::from_str(
            "replicas: 1\nlisteners: {tls: true}\nauthorization: {type: simple}",
        )
        .unwrap();
        assert!(validate(&authorized).is_ok());
        assert!(
            validate(&spec(
                "{tls: true, external: {type: LoadBalancer, tls: true}}"
            ))
            .is_ok()
        );
    }

    #[test]
    fn an_unsecured_cluster_is_not_secured_and_any_security_setting_secures_it() {
        assert!(!secured(&spec("{}")));
        assert!(secured(&spec("{tls: true}")));
        assert!(secured(&spec("{authentication: scram-sha-256}")));
        assert!(secured(&spec(
            "{external: {type: LoadBalancer, authentication: scram-sha-512}}"
        )));
        let authorized: ClusterSpec =
            serde_yaml::from_str("replicas: 1\nauthorization: {type: simple}").unwrap();
        assert!(secured(&authorized));
    }
}
