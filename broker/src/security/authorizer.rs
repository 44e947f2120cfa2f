//! Deciding whether a principal may do something, with Kafka's `StandardAuthorizer` rules:
//!
//! ```text
//!   super.users holds the principal ─────────────────────────────► allowed
//!   entries covering the resource (literal name, literal `*`, prefixes of the name):
//!     one for this principal (or User:*) and host (or *) that DENIES the op ──► denied
//!     one that ALLOWS the op (or an op implying it: READ ⇒ DESCRIBE, …) ──────► allowed
//!     none at all for the resource ─► allow.everyone.if.no.acl.found
//!     otherwise ────────────────────────────────────────────────────────────► denied
//! ```
//!
//! The entries themselves live in the metadata log (`AclCreated` / `AclRemoved`).

use std::collections::BTreeSet;

use super::acl::{AclBinding, Operation, PatternType, Permission, ResourceType, WILDCARD};

/// The broker's authorizer settings (`authorizer.class.name` set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorizer {
    /// `super.users`: principals (`User:admin`) every check allows.
    pub super_users: BTreeSet<String>,
    /// `allow.everyone.if.no.acl.found`.
    pub allow_if_no_acl: bool,
}

/// Kafka's name for the authorizer Oxbow implements; configs written for Kafka name it.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

impl Authorizer {
    /// `super.users` as Kafka writes it: `User:alice;User:bob`.
    pub fn parse_super_users(text: &str) -> Result<BTreeSet<String>, String> {
        text.split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| super::acl::parse_principal(p).map(|_| p.to_string()))
            .collect()
    }

    /// Whether `principal` connected from `host` may do `operation` on the resource.
    pub fn authorize(
        &self,
        acls: &BTreeSet<AclBinding>,
        principal: &str,
        host: &str,
        operation: Operation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        if self.super_users.contains(principal) {
            return true;
        }
        let mut covered = false;
        let mut allowed = false;
        for acl in acls.iter().filter(|acl| acl.covers(resource_type, name)) {
            covered = true;
            if !applies_to(acl, principal, host) {
                continue;
            }
            match acl.permission {
                Permission::Deny
                    if acl.operation == Operation::All || acl.operation == operation =>
                {
                    return false;
                }
                Permission::Allow if acl.operation.allow_implies(operation) => allowed = true,
                _ => {}
            }
        }
        allowed || (!covered && self.allow_if_no_acl)
    }

    /// KIP-430's bit field: bit `code` set for each operation of the resource type allowed.
    pub fn authorized_operations(
        &self,
        acls: &BTreeSet<AclBinding>,
        principal: &str,
        host: &str,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        resource_type
            .operations()
            .iter()
            .filter(|op| self.authorize(acls, principal, host, **op, resource_type, name))
            .fold(0, |bits, op| bits | (1 << op.code()))
    }

    /// Whether the principal may do `operation` on at least one resource of the type
    /// (Kafka's `authorizeByResourceType`: an idempotent producer needs WRITE on some topic).
    pub fn authorize_any(
        &self,
        acls: &BTreeSet<AclBinding>,
        principal: &str,
        host: &str,
        operation: Operation,
        resource_type: ResourceType,
    ) -> bool {
        // A name no entry names: super users, `*` allows, and an empty ACL set with
        // allow.everyone.if.no.acl.found are decided by it (Kafka checks "hardcode").
        if self.authorize(acls, principal, host, operation, resource_type, "hardcode") {
            return true;
        }
        acls.iter()
            .filter(|acl| {
                acl.resource_type == resource_type
                    && acl.permission == Permission::Allow
                    && acl.operation.allow_implies(operation)
                    && applies_to(acl, principal, host)
            })
            .any(|allow| {
                // The allowed pattern's own name, unless a deny covers it.
                let name = &allow.resource_name;
                !acls.iter().any(|deny| {
                    deny.permission == Permission::Deny
                        && deny.resource_type == resource_type
                        && (deny.operation == Operation::All || deny.operation == operation)
                        && applies_to(deny, principal, host)
                        && match deny.pattern_type {
                            PatternType::Literal => {
                                deny.resource_name == WILDCARD
                                    || (allow.pattern_type == PatternType::Literal
                                        && deny.resource_name == *name)
                            }
                            PatternType::Prefixed => name.starts_with(&deny.resource_name),
                            PatternType::Any | PatternType::Match => false,
                        }
                })
            })
    }
}

fn applies_to(acl: &AclBinding, principal: &str, host: &str) -> bool {
    (acl.principal == principal || acl.principal == "User:*")
        && (acl.host == WILDCARD || acl.host == host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(
        name: &str,
        pattern: PatternType,
        principal: &str,
        operation: Operation,
        permission: Permission,
    ) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            resource_name: name.into(),
            pattern_type: pattern,
            principal: principal.into(),
            host: "*".into(),
            operation,
            permission,
        }
    }

    fn authorizer(allow_if_no_acl: bool) -> Authorizer {
        Authorizer {
            super_users: Authorizer::parse_super_users("User:admin; User:CN=broker").unwrap(),
            allow_if_no_acl,
        }
    }

    #[test]
    fn deny_wins_allow_implies_describe_and_super_users_pass() {
        use Operation::*;
        use PatternType::*;
        use Permission::*;
        let acls: BTreeSet<AclBinding> = [
            acl("orders", Literal, "User:alice", Read, Allow),
            acl("ord", Prefixed, "User:alice", Write, Deny),
            acl("*", Literal, "User:*", Describe, Allow),
            acl("secret", Literal, "User:alice", All, Deny),
        ]
        .into_iter()
        .collect();
        let strict = authorizer(false);
        let can = |principal: &str, op: Operation, name: &str| {
            strict.authorize(&acls, principal, "10.0.0.1", op, ResourceType::Topic, name)
        };
        assert!(can("User:alice", Read, "orders"));
        assert!(
            can("User:alice", Describe, "orders"),
            "READ implies DESCRIBE"
        );
        assert!(
            !can("User:alice", Write, "orders"),
            "the prefixed deny wins"
        );
        assert!(!can("User:alice", Read, "payments"), "not granted");
        assert!(can("User:bob", Describe, "payments"), "User:* on *");
        assert!(
            !can("User:alice", Describe, "secret"),
            "deny ALL wins over *"
        );
        assert!(can("User:admin", Write, "secret"), "super user");
        assert!(can("User:CN=broker", Write, "orders"), "super user");
        assert!(!strict.authorize(&acls, "User:bob", "h", Read, ResourceType::Group, "g"));
        assert!(authorizer(true).authorize(&acls, "User:bob", "h", Read, ResourceType::Group, "g"));
        assert!(
            !authorizer(true).authorize(
                &acls,
                "User:bob",
                "h",
                Read,
                ResourceType::Topic,
                "orders"
            ),
            "the topic has entries, none for bob"
        );
    }

    #[test]
    fn hosts_restrict_entries_and_operations_form_a_bit_field() {
        let mut only_from = acl(
            "orders",
            PatternType::Literal,
            "User:alice",
            Operation::Write,
            Permission::Allow,
        );
        only_from.host = "10.0.0.1".into();
        let acls: BTreeSet<AclBinding> = [only_from].into_iter().collect();
        let auth = authorizer(false);
        let topic = ResourceType::Topic;
        assert!(auth.authorize(
            &acls,
            "User:alice",
            "10.0.0.1",
            Operation::Write,
            topic,
            "orders"
        ));
        assert!(!auth.authorize(
            &acls,
            "User:alice",
            "10.0.0.2",
            Operation::Write,
            topic,
            "orders"
        ));
        let bits = auth.authorized_operations(&acls, "User:alice", "10.0.0.1", topic, "orders");
        assert_eq!(
            bits,
            (1 << 4) | (1 << 8),
            "WRITE and the DESCRIBE it implies"
        );
    }

    #[test]
    fn any_resource_of_a_type_unless_denied() {
        use Operation::*;
        use PatternType::*;
        use Permission::*;
        let auth = authorizer(false);
        let allows: BTreeSet<AclBinding> = [acl("logs", Prefixed, "User:alice", Write, Allow)]
            .into_iter()
            .collect();
        let topic = ResourceType::Topic;
        assert!(auth.authorize_any(&allows, "User:alice", "h", Write, topic));
        assert!(!auth.authorize_any(&allows, "User:bob", "h", Write, topic));
        let mut denied = allows.clone();
        denied.insert(acl("lo", Prefixed, "User:alice", Write, Deny));
        assert!(!auth.authorize_any(&denied, "User:alice", "h", Write, topic));
        assert!(auth.authorize_any(&BTreeSet::new(), "User:admin", "h", Write, topic));
        assert!(authorizer(true).authorize_any(&BTreeSet::new(), "User:bob", "h", Write, topic));
    }
}
