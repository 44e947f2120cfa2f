//! The operator's config keys against the broker: both read one catalog
//! (`oxbow-config-keys`), so what is checked here is what a catalog cannot say by itself —
//! that every key the operator manages is a broker key (a renamed key would otherwise
//! become a user override), that a Cluster overriding any key it may override renders a
//! configuration the broker loads, and that the rendered files load for every listener
//! shape.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use oxbow_broker::BrokerConfig;
use oxbow_operator::cluster::config::{self, BROKER_KEYS, MANAGED_KEYS, TOPIC_KEYS};
use oxbow_operator::cluster::names::Names;
use oxbow_operator::crd::ClusterSpec;

#[test]
fn every_managed_key_is_a_broker_key_and_refused_as_an_override() {
    for key in MANAGED_KEYS {
        // broker.id and log.dir are Kafka's older spellings, which the broker refuses.
        if !matches!(*key, "broker.id" | "log.dir") {
            assert!(
                oxbow_config_keys::broker_key(key).is_some(),
                "managed key {key} is no broker key"
            );
        }
        let config = BTreeMap::from([(key.to_string(), IntOrString::String("x".into()))]);
        let refused = config::validate_config(&config, BROKER_KEYS, "broker", MANAGED_KEYS);
        assert!(
            refused.is_err_and(|errors| errors
                .iter()
                .any(|e| matches!(e, config::ConfigError::Managed { .. }))),
            "{key}"
        );
    }
}

#[test]
fn a_cluster_overriding_every_key_it_may_renders_a_config_the_broker_loads() {
    // Every static broker key the operator does not manage, set to a value of its type
    // (its default where it has one), in one Cluster: the operator accepts each, and the
    // broker loads the shared file it renders.
    let mut overrides = BTreeMap::new();
    for key in oxbow_config_keys::static_broker_keys() {
        if MANAGED_KEYS.contains(&key.name) {
            continue;
        }
        let value = match key.default {
            "" if key.name == "log.retention.minutes" => "10080",
            "" => continue,
            default => default,
        };
        overrides.insert(key.name.to_string(), IntOrString::String(value.to_string()));
    }
    assert!(overrides.len() > 60, "{} keys", overrides.len());
    let accepted = config::validate_config(&overrides, BROKER_KEYS, "broker", MANAGED_KEYS)
        .unwrap_or_else(|errors| panic!("refused: {errors:?}"));
    assert_eq!(accepted.len(), overrides.len());
    let spec: ClusterSpec =
        serde_yaml::from_str("replicas: 3\ncontrollerVoters: 3\nlisteners: {}").unwrap();
    let names = Names::new("events", "streams");
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("broker.yaml");
    let rendered = config::shared_config(&spec, &names, &accepted, 3);
    for key in accepted.keys() {
        let line = format!("{key}: ");
        assert!(
            rendered.lines().any(|l| l.starts_with(&line)),
            "{key} not rendered"
        );
    }
    std::fs::write(&shared, rendered).unwrap();
    let own = dir.path().join("events-0.yaml");
    std::fs::write(&own, config::broker_config(&spec, &names, 0)).unwrap();
    let env = [("POD_IP".to_string(), "10.200.1.7".to_string())];
    BrokerConfig::load(&[shared, own], env, &[]).unwrap_or_else(|e| panic!("{e}"));
    // A value outside a key's choices or its range, and a topic key on a broker, are
    // refused (the broker would not start with the first two).
    let bad = BTreeMap::from([
        (
            "compression.type".to_string(),
            IntOrString::String("brotli".into()),
        ),
        ("retention.ms".to_string(), IntOrString::Int(5)),
        ("num.partitions".to_string(), IntOrString::Int(0)),
    ]);
    let errors = config::validate_config(&bad, BROKER_KEYS, "broker", MANAGED_KEYS).unwrap_err();
    assert_eq!(errors.len(), 3, "{errors:?}");
    // The broker agrees: the range is the one it loads with.
    let refused = BrokerConfig::load(
        &[],
        [("OXBOW_NUM_PARTITIONS".to_string(), "0".to_string())],
        &[],
    );
    assert!(refused.is_err(), "the broker takes num.partitions=0");
    let topic = BTreeMap::from([(
        "cleanup.policy".to_string(),
        IntOrString::String("compact".into()),
    )]);
    assert!(config::validate_config(&topic, TOPIC_KEYS, "topic", &[]).is_ok());
}

#[test]
fn every_rendered_config_loads_in_the_broker() {
    // Each listener shape the CRD offers, loaded as the pod would load it: the shared file,
    // the broker's own file, and the kubelet's POD_IP / HOST_IP in the environment.
    for listeners in [
        "{}",
        "{advertise: PodIP}",
        "{external: {type: NodePort, nodePortBase: 31000}}",
        "{external: {type: NodePort, nodePortBase: 31000, advertisedHost: kafka.example.com}}",
        "{advertise: PodIP, external: {type: LoadBalancer}}",
    ] {
        let spec: ClusterSpec = serde_yaml::from_str(&format!(
            "replicas: 3\ncontrollerVoters: 3\nlisteners: {listeners}"
        ))
        .unwrap();
        let names = Names::new("events", "streams");
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("broker.yaml");
        std::fs::write(
            &shared,
            // Formed with one voter, grown to three: broker 1 joins as a controller.
            config::shared_config(&spec, &names, &Default::default(), 1),
        )
        .unwrap();
        // The rack-init container writes the rack file (`operator/src/rack.rs`).
        let rack = dir.path().join("rack.yaml");
        std::fs::write(&rack, "broker.rack: zone-a\n").unwrap();
        let env = [
            ("POD_IP".to_string(), "10.200.1.7".to_string()),
            ("HOST_IP".to_string(), "10.200.0.3".to_string()),
        ];
        for ordinal in [0, 1] {
            let own = dir.path().join(format!("events-{ordinal}.yaml"));
            let rendered = config::broker_config(&spec, &names, ordinal);
            std::fs::write(&own, &rendered).unwrap();
            let files = [shared.clone(), own, rack.clone()];
            let loaded = BrokerConfig::load(&files, env.clone(), &[])
                .unwrap_or_else(|e| panic!("{listeners}, broker {ordinal}: {e}\n{rendered}"));
            assert_eq!(loaded.node_id, ordinal);
            let advertised: Vec<String> = loaded
                .client_listeners
                .iter()
                .map(|l| format!("{}://{}:{}", l.name, l.advertised_host, l.advertised_port))
                .collect();
            let external = match listeners {
                l if l.contains("advertisedHost") => {
                    Some(format!("EXTERNAL://kafka.example.com:{}", 31000 + ordinal))
                }
                l if l.contains("NodePort") => {
                    Some(format!("EXTERNAL://10.200.0.3:{}", 31000 + ordinal))
                }
                l if l.contains("LoadBalancer") => Some(format!(
                    "EXTERNAL://{}:9094",
                    names.external_service_dns(ordinal)
                )),
                _ => None,
            };
            let internal = if listeners.contains("PodIP") {
                "PLAINTEXT://10.200.1.7:9092".to_string()
            } else {
                format!("PLAINTEXT://{}:9092", names.pod_dns(ordinal))
            };
            let expected: Vec<String> = std::iter::once(internal).chain(external).collect();
            assert_eq!(advertised, expected, "{listeners}, broker {ordinal}");
            assert!(
                !format!("{loaded:?}").contains("${"),
                "{listeners}: a variable left unresolved"
            );
        }
    }
}

#[test]
fn every_secured_listener_shape_loads_in_the_broker() {
    // The security the CRD offers, rendered and loaded as the pod loads it: the broker must
    // accept the listeners, stores and SASL keys, and serve each listener as asked.
    use oxbow_broker::{ClientAuth, SecurityProtocol};
    for (listeners, authorization, internal, external) in [
        ("{tls: true}", "", SecurityProtocol::Ssl, None),
        (
            "{authentication: scram-sha-512}",
            "",
            SecurityProtocol::SaslPlaintext,
            None,
        ),
        (
            "{tls: true, authentication: tls, external: {type: LoadBalancer, tls: true, authentication: scram-sha-256}}",
            "authorization: {type: simple, superUsers: ['User:admin']}",
            SecurityProtocol::Ssl,
            Some(SecurityProtocol::SaslSsl),
        ),
        (
            "{tls: true, authentication: oauth, oauth: {jwks: {name: idp, key: jwks.json}}}",
            "authorization: {type: simple}",
            SecurityProtocol::SaslSsl,
            None,
        ),
        (
            "{external: {type: NodePort, nodePortBase: 31000}}",
            "authorization: {type: simple}",
            SecurityProtocol::Plaintext,
            Some(SecurityProtocol::Plaintext),
        ),
    ] {
        let spec: ClusterSpec = serde_yaml::from_str(&format!(
            "replicas: 3\ncontrollerVoters: 3\nlisteners: {listeners}\n{authorization}"
        ))
        .unwrap();
        let names = Names::new("events", "streams");
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("broker.yaml");
        std::fs::write(
            &shared,
            config::shared_config(&spec, &names, &Default::default(), 3),
        )
        .unwrap();
        let own = dir.path().join("events-0.yaml");
        let rendered = config::broker_config(&spec, &names, 0);
        std::fs::write(&own, &rendered).unwrap();
        let env = [("HOST_IP".to_string(), "10.200.0.3".to_string())];
        let loaded = BrokerConfig::load(&[shared, own], env, &[])
            .unwrap_or_else(|e| panic!("{listeners}: {e}\n{rendered}"));
        let protocol = |name: &str| {
            loaded
                .client_listeners
                .iter()
                .find(|l| l.name == name)
                .map(|l| l.protocol)
        };
        assert_eq!(protocol("INTERNAL"), Some(internal), "{listeners}");
        assert_eq!(protocol("EXTERNAL"), external, "{listeners}");
        // Followers and the operator: mutual TLS with the cluster CA.
        assert_eq!(protocol("REPLICATION"), Some(SecurityProtocol::Ssl));
        assert_eq!(loaded.inter_broker_listener, "REPLICATION");
        assert!(loaded.controller_tls, "{listeners}");
        let ssl = loaded.ssl.as_ref().unwrap();
        assert_eq!(ssl.client_auth, ClientAuth::Required);
        if listeners.contains("authentication: tls") {
            assert_eq!(
                loaded.listener_ssl["INTERNAL"].client_auth,
                ClientAuth::Required
            );
        }
        assert_eq!(loaded.authorizer.is_some(), !authorization.is_empty());
    }
}
