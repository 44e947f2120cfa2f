//! The operator's lists of broker and topic config keys against the broker's own
//! (`oxbow_broker::config::KEYS`, `LOG_CONFIG_SYNONYMS`, `storage::TOPIC_CONFIG_KEYS`): the
//! operator must offer exactly the keys the broker accepts (a key the broker refuses makes
//! a Cluster that never starts, or a Topic that never becomes Ready), and render only keys
//! the broker knows. A failure here means one side learned or dropped a key: change the
//! operator's list in `operator/src/cluster/config.rs` to match the broker.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use oxbow_broker::config::{BrokerConfig, KEYS, LOG_CONFIG_SYNONYMS};
use oxbow_broker::storage::TOPIC_CONFIG_KEYS;
use oxbow_operator::cluster::config::{self, BROKER_KEYS, ConfigType, MANAGED_KEYS, TOPIC_KEYS};
use oxbow_operator::cluster::names::Names;
use oxbow_operator::crd::ClusterSpec;

fn broker_keys() -> BTreeSet<&'static str> {
    KEYS.iter().map(|key| key.name).collect()
}

fn names(list: &[(&'static str, ConfigType)]) -> BTreeSet<&'static str> {
    list.iter().map(|(name, _)| *name).collect()
}

fn type_of(list: &[(&'static str, ConfigType)], key: &str) -> Option<ConfigType> {
    list.iter()
        .find(|(name, _)| *name == key)
        .map(|(_, ty)| *ty)
}

#[test]
fn a_cluster_may_override_exactly_the_broker_keys_the_operator_does_not_manage() {
    let managed: BTreeSet<&str> = MANAGED_KEYS.iter().copied().collect();
    let expected: BTreeSet<&str> = broker_keys().difference(&managed).copied().collect();
    let offered = names(BROKER_KEYS);
    let refused_by_broker: Vec<_> = offered.difference(&expected).collect();
    let missing: Vec<_> = expected.difference(&offered).collect();
    assert!(
        refused_by_broker.is_empty() && missing.is_empty(),
        "operator BROKER_KEYS drifted from the broker's KEYS: offered but unknown to the \
         broker (or managed): {refused_by_broker:?}; known to the broker but not offered: \
         {missing:?}"
    );
}

#[test]
fn a_topic_may_set_exactly_the_topic_keys_the_broker_accepts() {
    let accepted: BTreeSet<&str> = TOPIC_CONFIG_KEYS.iter().copied().collect();
    let offered = names(TOPIC_KEYS);
    let refused_by_broker: Vec<_> = offered.difference(&accepted).collect();
    let missing: Vec<_> = accepted.difference(&offered).collect();
    assert!(
        refused_by_broker.is_empty() && missing.is_empty(),
        "operator TOPIC_KEYS drifted from the broker's TOPIC_CONFIG_KEYS: offered but \
         refused by the broker: {refused_by_broker:?}; accepted by the broker but not \
         offered: {missing:?}"
    );
}

#[test]
fn a_topic_key_and_its_broker_default_have_the_same_type() {
    for (topic_key, broker_key) in LOG_CONFIG_SYNONYMS {
        let topic = type_of(TOPIC_KEYS, topic_key)
            .unwrap_or_else(|| panic!("topic key {topic_key} is not offered by the operator"));
        let broker = type_of(BROKER_KEYS, broker_key)
            .unwrap_or_else(|| panic!("broker key {broker_key} is not offered by the operator"));
        assert_eq!(
            topic, broker,
            "{topic_key} and its broker default {broker_key} have different types"
        );
    }
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
