//! The NetworkPolicy of a Cluster (`spec.networkPolicy.enabled`, issue 34 point 4): the
//! brokers take connections on their client listeners and metrics port from anywhere, on the
//! replication listener from the Cluster's brokers and the operator only, and on the
//! controller port from the Cluster's brokers only. Anything else is dropped by a network
//! plugin that enforces NetworkPolicies.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::names::{Names, meta};
use super::security;
use crate::crd::ClusterSpec;

/// The label of the operator's pods (the chart's Deployment).
const OPERATOR_POD_LABEL: (&str, &str) = ("app.kubernetes.io/name", "oxbow-operator");

fn ports(numbers: &[i32]) -> Vec<NetworkPolicyPort> {
    numbers
        .iter()
        .map(|port| NetworkPolicyPort {
            port: Some(IntOrString::Int(*port)),
            protocol: Some("TCP".to_string()),
            ..NetworkPolicyPort::default()
        })
        .collect()
}

/// The NetworkPolicy of the Cluster's brokers.
pub fn network_policy(spec: &ClusterSpec, names: &Names, owner: &OwnerReference) -> NetworkPolicy {
    let brokers = NetworkPolicyPeer {
        pod_selector: Some(LabelSelector {
            match_labels: Some(names.selector_labels()),
            ..LabelSelector::default()
        }),
        ..NetworkPolicyPeer::default()
    };
    // The operator may run in any namespace (the chart's release namespace).
    let operator = NetworkPolicyPeer {
        namespace_selector: Some(LabelSelector::default()),
        pod_selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(
                OPERATOR_POD_LABEL.0.to_string(),
                OPERATOR_POD_LABEL.1.to_string(),
            )])),
            ..LabelSelector::default()
        }),
        ..NetworkPolicyPeer::default()
    };
    let listeners = &spec.listeners;
    let mut open = vec![listeners.kafka_port, spec.metrics.port];
    open.extend(listeners.external.iter().map(|e| e.port));
    let mut ingress = vec![NetworkPolicyIngressRule {
        from: None,
        ports: Some(ports(&open)),
    }];
    if security::secured(spec) {
        ingress.push(NetworkPolicyIngressRule {
            from: Some(vec![brokers.clone(), operator]),
            ports: Some(ports(&[listeners.replication_port])),
        });
    }
    ingress.push(NetworkPolicyIngressRule {
        from: Some(vec![brokers]),
        ports: Some(ports(&[listeners.controller_port])),
    });
    NetworkPolicy {
        metadata: meta(names, names.base(), owner),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: Some(names.selector_labels()),
                ..LabelSelector::default()
            }),
            policy_types: Some(vec!["Ingress".to_string()]),
            ingress: Some(ingress),
            egress: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(spec: &str) -> Vec<(Vec<i32>, Vec<String>)> {
        let spec: ClusterSpec = serde_yaml::from_str(spec).unwrap();
        let names = Names::new("ledger", "default");
        let policy = network_policy(&spec, &names, &OwnerReference::default());
        let spec = policy.spec.unwrap();
        assert_eq!(spec.policy_types.unwrap(), vec!["Ingress".to_string()]);
        assert_eq!(
            spec.pod_selector.unwrap().match_labels.unwrap(),
            names.selector_labels()
        );
        spec.ingress
            .unwrap()
            .into_iter()
            .map(|rule| {
                let ports = rule
                    .ports
                    .unwrap()
                    .into_iter()
                    .map(|p| match p.port {
                        Some(IntOrString::Int(n)) => n,
                        _ => 0,
                    })
                    .collect();
                let from = rule
                    .from
                    .unwrap_or_default()
                    .into_iter()
                    .map(|peer| {
                        let labels = peer.pod_selector.unwrap().match_labels.unwrap();
                        let who = labels["app.kubernetes.io/name"].clone();
                        if peer.namespace_selector.is_some() {
                            format!("{who} in any namespace")
                        } else {
                            who
                        }
                    })
                    .collect();
                (ports, from)
            })
            .collect()
    }

    #[test]
    fn clients_reach_the_listeners_brokers_and_the_operator_the_replication_port_brokers_the_quorum()
     {
        assert_eq!(
            rules(
                "replicas: 3\nlisteners: {tls: true, external: {type: LoadBalancer, port: 9094}}"
            ),
            vec![
                (vec![9092, 9644, 9094], vec![]),
                (
                    vec![9091],
                    vec![
                        "oxbow".to_string(),
                        "oxbow-operator in any namespace".to_string()
                    ]
                ),
                (vec![9093], vec!["oxbow".to_string()]),
            ]
        );
        // Unsecured: replication goes over the client listener; the quorum stays closed.
        assert_eq!(
            rules("replicas: 3"),
            vec![
                (vec![9092, 9644], vec![]),
                (vec![9093], vec!["oxbow".to_string()]),
            ]
        );
    }
}
