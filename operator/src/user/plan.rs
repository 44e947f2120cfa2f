//! What a `User` asks of its cluster, worked out without a client: the Kafka ACLs its rules
//! expand to (checked against the operations Kafka allows on each resource type), the quota
//! changes, the SCRAM mechanism, and the text of its Secret.

use std::collections::{BTreeMap, BTreeSet};

use crate::admin::users::{Acl, QUOTA_KEYS, SCRAM_SHA_256, SCRAM_SHA_512};
use crate::crd::{
    AclPatternType, AclPermission, AclResourceType, AclRule, ClusterSpec, ListenerAuthentication,
    UserAuthenticationType, UserQuotas, UserSpec,
};

/// The name of the cluster resource in Kafka's ACLs.
const CLUSTER_RESOURCE: &str = "kafka-cluster";

/// Kafka's operation codes by name, and the resource types each applies to (Kafka's
/// `AclEntry.supportedOperations`; `All` applies to every type).
const OPERATIONS: [(&str, i8, &[AclResourceType]); 12] = {
    use AclResourceType::{Cluster, Group, Topic, TransactionalId};
    [
        ("All", 2, &[Topic, Group, Cluster, TransactionalId]),
        ("Read", 3, &[Topic, Group]),
        ("Write", 4, &[Topic, TransactionalId]),
        ("Create", 5, &[Topic, Cluster]),
        ("Delete", 6, &[Topic, Group]),
        ("Alter", 7, &[Topic, Cluster]),
        ("Describe", 8, &[Topic, Group, Cluster, TransactionalId]),
        ("ClusterAction", 9, &[Cluster]),
        ("DescribeConfigs", 10, &[Topic, Group, Cluster]),
        ("AlterConfigs", 11, &[Topic, Group, Cluster]),
        ("IdempotentWrite", 12, &[Cluster]),
        ("TwoPhaseCommit", 15, &[TransactionalId]),
    ]
};

fn resource_code(resource: AclResourceType) -> i8 {
    match resource {
        AclResourceType::Topic => 2,
        AclResourceType::Group => 3,
        AclResourceType::Cluster => 4,
        AclResourceType::TransactionalId => 5,
    }
}

fn resource_word(resource: AclResourceType) -> &'static str {
    match resource {
        AclResourceType::Topic => "topic",
        AclResourceType::Group => "group",
        AclResourceType::Cluster => "cluster",
        AclResourceType::TransactionalId => "transactionalId",
    }
}

/// An operation named as Kafka names it, in any case, with or without underscores
/// (`DescribeConfigs`, `DESCRIBE_CONFIGS`, `describeconfigs`).
fn operation(name: &str) -> Option<(&'static str, i8, &'static [AclResourceType])> {
    let wanted: String = name
        .chars()
        .filter(|c| *c != '_')
        .collect::<String>()
        .to_ascii_lowercase();
    OPERATIONS
        .iter()
        .find(|(known, _, _)| known.to_ascii_lowercase() == wanted)
        .copied()
}

/// The Kafka ACLs of `rules`, or why they cannot be (every problem, one per line).
pub fn acls(rules: &[AclRule]) -> Result<BTreeSet<Acl>, String> {
    let mut acls = BTreeSet::new();
    let mut problems = Vec::new();
    for (index, rule) in rules.iter().enumerate() {
        let resource = rule.resource.type_;
        let name = match resource {
            AclResourceType::Cluster => CLUSTER_RESOURCE.to_string(),
            _ => match &rule.resource.name {
                Some(name) => name.clone(),
                None => {
                    problems.push(format!(
                        "acls[{index}]: a {} rule needs a name ('*' for all)",
                        resource_word(resource)
                    ));
                    continue;
                }
            },
        };
        let pattern_type = match (rule.resource.pattern_type, name.as_str()) {
            (AclPatternType::Prefix, "*") => {
                problems.push(format!(
                    "acls[{index}]: '*' is not a prefix: use patternType literal for every {}",
                    resource_word(resource)
                ));
                continue;
            }
            (AclPatternType::Prefix, _) if resource == AclResourceType::Cluster => {
                problems.push(format!("acls[{index}]: a cluster rule cannot be a prefix"));
                continue;
            }
            (AclPatternType::Literal, _) => 3,
            (AclPatternType::Prefix, _) => 4,
        };
        for requested in &rule.operations {
            match operation(requested) {
                None => problems.push(format!(
                    "acls[{index}]: unknown operation {requested:?} (Kafka's operations: {})",
                    OPERATIONS
                        .iter()
                        .map(|(n, _, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                Some((known, _, types)) if !types.contains(&resource) => {
                    problems.push(format!(
                        "acls[{index}]: operation {known} does not apply to a {} (it applies to: {})",
                        resource_word(resource),
                        types
                            .iter()
                            .map(|t| resource_word(*t))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                Some((_, code, _)) => {
                    acls.insert(Acl {
                        resource_type: resource_code(resource),
                        resource_name: name.clone(),
                        pattern_type,
                        host: rule.host.clone(),
                        operation: code,
                        permission: match rule.type_ {
                            AclPermission::Allow => 3,
                            AclPermission::Deny => 2,
                        },
                    });
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(acls)
    } else {
        Err(problems.join("; "))
    }
}

/// The quotas to set and the ones to remove, given what the cluster has.
pub fn quota_changes(
    wanted: Option<&UserQuotas>,
    existing: &BTreeMap<String, f64>,
) -> (BTreeMap<String, f64>, Vec<String>) {
    let wanted = wanted_quotas(wanted);
    let set = wanted
        .iter()
        .filter(|(key, value)| existing.get(*key) != Some(*value))
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    let remove = QUOTA_KEYS
        .iter()
        .filter(|key| existing.contains_key(**key) && !wanted.contains_key(**key))
        .map(ToString::to_string)
        .collect();
    (set, remove)
}

/// The quotas a User's spec asks for, by Kafka's key.
pub fn wanted_quotas(wanted: Option<&UserQuotas>) -> BTreeMap<String, f64> {
    wanted
        .map(|q| {
            [
                ("producer_byte_rate", q.producer_byte_rate),
                ("consumer_byte_rate", q.consumer_byte_rate),
                ("request_percentage", q.request_percentage),
            ]
            .into_iter()
            .filter_map(|(key, value)| Some((key.to_string(), value? as f64)))
            .collect()
        })
        .unwrap_or_default()
}

/// Among a user's quotas, those a User manages (others set by hand are left alone).
pub fn managed_quotas(mut quotas: BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    quotas.retain(|key, _| QUOTA_KEYS.contains(&key.as_str()));
    quotas
}

/// Kafka's mechanism number of a SCRAM user.
pub fn scram_mechanism(kind: UserAuthenticationType) -> Option<i8> {
    match kind {
        UserAuthenticationType::ScramSha512 => Some(SCRAM_SHA_512),
        UserAuthenticationType::ScramSha256 => Some(SCRAM_SHA_256),
        UserAuthenticationType::Tls => None,
    }
}

fn mechanism_name(kind: UserAuthenticationType) -> &'static str {
    match kind {
        UserAuthenticationType::ScramSha512 => "SCRAM-SHA-512",
        UserAuthenticationType::ScramSha256 => "SCRAM-SHA-256",
        UserAuthenticationType::Tls => "tls",
    }
}

/// What the Cluster lacks for the User to be of use, in a sentence: a listener that
/// authenticates the way the User does, authorization when it has ACLs.
pub fn cluster_requirements(user: &UserSpec, cluster: &ClusterSpec) -> Result<(), String> {
    let mut listeners = vec![cluster.listeners.authentication];
    listeners.extend(cluster.listeners.external.iter().map(|e| e.authentication));
    if let Some(authentication) = &user.authentication {
        let needed = match authentication.type_ {
            UserAuthenticationType::ScramSha512 => ListenerAuthentication::ScramSha512,
            UserAuthenticationType::ScramSha256 => ListenerAuthentication::ScramSha256,
            UserAuthenticationType::Tls => ListenerAuthentication::Tls,
        };
        if !listeners.contains(&needed) {
            return Err(format!(
                "Cluster {} has no listener with authentication {}: set spec.listeners.authentication (or the external listener's)",
                user.cluster,
                match needed {
                    ListenerAuthentication::ScramSha512 => "scram-sha-512",
                    ListenerAuthentication::ScramSha256 => "scram-sha-256",
                    _ => "tls",
                }
            ));
        }
    }
    let has_acls = user
        .authorization
        .as_ref()
        .is_some_and(|a| !a.acls.is_empty());
    if has_acls && cluster.authorization.is_none() {
        return Err(format!(
            "Cluster {} has no authorization, so ACLs would not be checked: set spec.authorization.type simple",
            user.cluster
        ));
    }
    Ok(())
}

/// A password of 32 letters and digits from `random` bytes (~190 bits).
pub fn password_from(random: &[u8; 32]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    random
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

/// The keys of a SCRAM User's Secret: what Kafka clients are configured with.
pub fn scram_secret(
    user: &str,
    kind: UserAuthenticationType,
    password: &str,
    cluster_ca: Option<&str>,
) -> BTreeMap<String, String> {
    let escaped = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut data = BTreeMap::from([
        ("username".to_string(), user.to_string()),
        ("password".to_string(), password.to_string()),
        (
            "sasl.mechanism".to_string(),
            mechanism_name(kind).to_string(),
        ),
        (
            "sasl.jaas.config".to_string(),
            format!(
                "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{}\" password=\"{}\";",
                escaped(user),
                escaped(password)
            ),
        ),
    ]);
    if let Some(ca) = cluster_ca {
        data.insert("ca.crt".to_string(), ca.to_string());
    }
    data
}

/// The keys of a `tls` User's Secret.
pub fn tls_secret(
    user: &str,
    certificate_pem: &str,
    key_pem: &str,
    cluster_ca: &str,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("username".to_string(), user.to_string()),
        ("ca.crt".to_string(), cluster_ca.to_string()),
        ("user.crt".to_string(), certificate_pem.to_string()),
        ("user.key".to_string(), key_pem.to_string()),
        // Key and certificate in one file, for clients that take a PEM key store
        // (Java: ssl.keystore.type=PEM).
        (
            "user.pem".to_string(),
            format!("{key_pem}{certificate_pem}"),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(yaml: &str) -> Vec<AclRule> {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn rules_expand_to_one_acl_per_operation() {
        let acls = acls(&rules(
            "- {resource: {type: topic, name: orders}, operations: [Write, describe]}\n\
             - {resource: {type: group, name: app-, patternType: prefix}, operations: [READ], type: deny, host: 10.0.0.1}\n\
             - {resource: {type: cluster}, operations: [IDEMPOTENT_WRITE]}",
        ))
        .unwrap();
        let summary: Vec<_> = acls
            .iter()
            .map(|a| {
                (
                    a.resource_type,
                    a.resource_name.as_str(),
                    a.pattern_type,
                    a.host.as_str(),
                    a.operation,
                    a.permission,
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (2, "orders", 3, "*", 4, 3),
                (2, "orders", 3, "*", 8, 3),
                (3, "app-", 4, "10.0.0.1", 3, 2),
                (4, "kafka-cluster", 3, "*", 12, 3),
            ]
        );
    }

    #[test]
    fn unknown_and_misplaced_operations_are_refused_all_at_once() {
        let error = acls(&rules(
            "- {resource: {type: topic, name: t}, operations: [Read, Frobnicate]}\n\
             - {resource: {type: group, name: g}, operations: [Write]}\n\
             - {resource: {type: topic, name: '*', patternType: prefix}, operations: [Read]}\n\
             - {resource: {type: topic}, operations: [Read]}",
        ))
        .unwrap_err();
        assert!(
            error.contains("acls[0]: unknown operation \"Frobnicate\""),
            "{error}"
        );
        assert!(
            error.contains("acls[1]: operation Write does not apply to a group"),
            "{error}"
        );
        assert!(error.contains("acls[2]: '*' is not a prefix"), "{error}");
        assert!(
            error.contains("acls[3]: a topic rule needs a name"),
            "{error}"
        );
    }

    #[test]
    fn quotas_set_what_differs_and_remove_what_the_spec_dropped() {
        let existing = BTreeMap::from([
            ("producer_byte_rate".to_string(), 1024.0),
            ("request_percentage".to_string(), 50.0),
            ("someone_elses".to_string(), 1.0),
        ]);
        let wanted = UserQuotas {
            producer_byte_rate: Some(2048),
            consumer_byte_rate: Some(4096),
            request_percentage: None,
        };
        let (set, remove) = quota_changes(Some(&wanted), &existing);
        assert_eq!(
            set,
            BTreeMap::from([
                ("consumer_byte_rate".to_string(), 4096.0),
                ("producer_byte_rate".to_string(), 2048.0)
            ])
        );
        assert_eq!(remove, vec!["request_percentage".to_string()]);
        let (set, remove) = quota_changes(None, &BTreeMap::new());
        assert!(set.is_empty() && remove.is_empty());
    }

    #[test]
    fn a_user_needs_a_listener_of_its_kind_and_authorization_for_acls() {
        let cluster: ClusterSpec = serde_yaml::from_str(
            "replicas: 1\nlisteners: {tls: true, authentication: scram-sha-512}",
        )
        .unwrap();
        let user = |yaml: &str| -> UserSpec { serde_yaml::from_str(yaml).unwrap() };
        assert!(
            cluster_requirements(
                &user("cluster: c\nauthentication: {type: scram-sha-512}"),
                &cluster
            )
            .is_ok()
        );
        let error =
            cluster_requirements(&user("cluster: c\nauthentication: {type: tls}"), &cluster)
                .unwrap_err();
        assert!(error.contains("authentication tls"), "{error}");
        let error = cluster_requirements(
            &user("cluster: c\nauthorization: {acls: [{resource: {type: cluster}, operations: [Describe]}]}"),
            &cluster,
        )
        .unwrap_err();
        assert!(error.contains("no authorization"), "{error}");
    }

    #[test]
    fn secrets_hold_what_clients_are_configured_with() {
        let data = scram_secret(
            "alice",
            UserAuthenticationType::ScramSha512,
            "pa\"ss",
            Some("CA"),
        );
        assert_eq!(
            data["sasl.jaas.config"],
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"pa\\\"ss\";"
        );
        assert_eq!(data["sasl.mechanism"], "SCRAM-SHA-512");
        assert_eq!(data["ca.crt"], "CA");
        let password = password_from(&[255; 32]);
        assert_eq!(password.len(), 32);
        assert!(password.chars().all(|c| c.is_ascii_alphanumeric()));
    }
}
