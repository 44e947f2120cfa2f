//! Access control entries as Kafka defines them (`AclBinding`, `AclBindingFilter`): what a
//! binding names, Kafka's type codes, the checks CreateAcls makes, and how DescribeAcls /
//! DeleteAcls filters select bindings. Deciding a request is [`super::authorizer`]'s.

use serde::{Deserialize, Serialize};

/// The one name a `Cluster` resource has.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// A literal resource name, principal or host that matches every other.
pub const WILDCARD: &str = "*";

macro_rules! coded_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $code:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($variant),*
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            pub fn code(self) -> i8 {
                match self {
                    $($name::$variant => $code),*
                }
            }

            /// The name as a metric label (a closed set).
            pub fn label(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($variant)),*
                }
            }

            pub fn from_code(code: i8) -> Option<Self> {
                match code {
                    $($code => Some($name::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

coded_enum!(
    /// Kafka's `ResourceType` (1, ANY, appears only in filters).
    ResourceType {
        Any = 1,
        Topic = 2,
        Group = 3,
        Cluster = 4,
        TransactionalId = 5,
        DelegationToken = 6,
        User = 7,
    }
);

coded_enum!(
    /// Kafka's `PatternType` (ANY and MATCH appear only in filters).
    PatternType {
        Any = 1,
        Match = 2,
        Literal = 3,
        Prefixed = 4,
    }
);

coded_enum!(
    /// Kafka's `AclOperation` (ANY appears only in filters).
    Operation {
        Any = 1,
        All = 2,
        Read = 3,
        Write = 4,
        Create = 5,
        Delete = 6,
        Alter = 7,
        Describe = 8,
        ClusterAction = 9,
        DescribeConfigs = 10,
        AlterConfigs = 11,
        IdempotentWrite = 12,
        CreateTokens = 13,
        DescribeTokens = 14,
        TwoPhaseCommit = 15,
    }
);

coded_enum!(
    /// Kafka's `AclPermissionType` (ANY appears only in filters).
    Permission {
        Any = 1,
        Deny = 2,
        Allow = 3,
    }
);

impl Operation {
    /// The operations an ALLOW entry for `self` also grants: READ, WRITE, DELETE and ALTER
    /// imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS (Kafka's rule; DENY entries
    /// imply nothing).
    pub fn allow_implies(self, wanted: Operation) -> bool {
        self == wanted
            || self == Operation::All
            || (wanted == Operation::Describe
                && matches!(
                    self,
                    Operation::Read | Operation::Write | Operation::Delete | Operation::Alter
                ))
            || (wanted == Operation::DescribeConfigs && self == Operation::AlterConfigs)
    }
}

impl ResourceType {
    /// The operations KIP-430's authorized-operations fields report for this resource type.
    pub fn operations(self) -> &'static [Operation] {
        use Operation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Describe, Delete],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write, TwoPhaseCommit],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
            ResourceType::Any => &[],
        }
    }
}

/// One access control entry: who (`User:alice`, or `User:*`), from where (an IP address,
/// or `*`), may or may not do what to which resources.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct AclBinding {
    pub resource_type: ResourceType,
    pub resource_name: String,
    pub pattern_type: PatternType,
    pub principal: String,
    pub host: String,
    pub operation: Operation,
    pub permission: Permission,
}

impl AclBinding {
    /// The binding from a CreateAcls creation's codes, or why Kafka refuses it
    /// (INVALID_REQUEST with this message).
    pub fn from_request(
        resource_type: i8,
        resource_name: &str,
        pattern_type: i8,
        principal: &str,
        host: &str,
        operation: i8,
        permission: i8,
    ) -> Result<Self, String> {
        let resource_type = ResourceType::from_code(resource_type)
            .filter(|t| *t != ResourceType::Any)
            .ok_or_else(|| format!("Invalid resourceType {resource_type}"))?;
        let pattern_type = PatternType::from_code(pattern_type)
            .filter(|p| matches!(p, PatternType::Literal | PatternType::Prefixed))
            .ok_or_else(|| format!("Invalid patternType {pattern_type}"))?;
        let operation = Operation::from_code(operation)
            .filter(|o| *o != Operation::Any)
            .ok_or_else(|| format!("Invalid operation {operation}"))?;
        let permission = Permission::from_code(permission)
            .filter(|p| *p != Permission::Any)
            .ok_or_else(|| format!("Invalid permissionType {permission}"))?;
        if resource_name.is_empty() {
            return Err("Resource name should not be empty".into());
        }
        if resource_type == ResourceType::Cluster && resource_name != CLUSTER_NAME {
            return Err(format!(
                "The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
            ));
        }
        parse_principal(principal)?;
        Ok(Self {
            resource_type,
            resource_name: resource_name.to_string(),
            pattern_type,
            principal: principal.to_string(),
            host: host.to_string(),
            operation,
            permission,
        })
    }

    /// Whether this binding's pattern covers the resource `name` of `resource_type`.
    pub fn covers(&self, resource_type: ResourceType, name: &str) -> bool {
        self.resource_type == resource_type
            && match self.pattern_type {
                PatternType::Literal => {
                    self.resource_name == name || self.resource_name == WILDCARD
                }
                PatternType::Prefixed => name.starts_with(&self.resource_name),
                PatternType::Any | PatternType::Match => false,
            }
    }
}

/// `Type:name` with a non-empty type and name (Kafka's `SecurityUtils.parseKafkaPrincipal`).
pub fn parse_principal(principal: &str) -> Result<(&str, &str), String> {
    match principal.split_once(':') {
        Some((kind, name)) if !kind.is_empty() && !name.is_empty() => Ok((kind, name)),
        _ => Err(format!(
            "Could not parse principal `{principal}`: expected `Type:name`, e.g. `User:alice`"
        )),
    }
}

/// A DescribeAcls / DeleteAcls filter: `None` fields and the ANY codes match everything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclFilter {
    pub resource_type: ResourceType,
    pub resource_name: Option<String>,
    pub pattern_type: PatternType,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: Operation,
    pub permission: Permission,
}

impl AclFilter {
    /// The filter from a request's codes; an unknown code is INVALID_REQUEST.
    pub fn from_request(
        resource_type: i8,
        resource_name: Option<&str>,
        pattern_type: i8,
        principal: Option<&str>,
        host: Option<&str>,
        operation: i8,
        permission: i8,
    ) -> Result<Self, String> {
        Ok(Self {
            resource_type: ResourceType::from_code(resource_type)
                .ok_or_else(|| format!("Invalid resourceType {resource_type}"))?,
            resource_name: resource_name.map(str::to_string),
            pattern_type: PatternType::from_code(pattern_type)
                .ok_or_else(|| format!("Invalid patternType {pattern_type}"))?,
            principal: principal.map(str::to_string),
            host: host.map(str::to_string),
            operation: Operation::from_code(operation)
                .ok_or_else(|| format!("Invalid operation {operation}"))?,
            permission: Permission::from_code(permission)
                .ok_or_else(|| format!("Invalid permissionType {permission}"))?,
        })
    }

    pub fn matches(&self, acl: &AclBinding) -> bool {
        self.matches_resource(acl)
            && self.principal.as_ref().is_none_or(|p| *p == acl.principal)
            && self.host.as_ref().is_none_or(|h| *h == acl.host)
            && (self.operation == Operation::Any || self.operation == acl.operation)
            && (self.permission == Permission::Any || self.permission == acl.permission)
    }

    fn matches_resource(&self, acl: &AclBinding) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != acl.resource_type {
            return false;
        }
        let Some(name) = &self.resource_name else {
            // No name: ANY and MATCH take every pattern, LITERAL/PREFIXED only their own.
            return matches!(self.pattern_type, PatternType::Any | PatternType::Match)
                || self.pattern_type == acl.pattern_type;
        };
        match self.pattern_type {
            PatternType::Any => *name == acl.resource_name,
            // Every binding that applies to the resource `name`.
            PatternType::Match => match acl.pattern_type {
                PatternType::Literal => *name == acl.resource_name || acl.resource_name == WILDCARD,
                PatternType::Prefixed => name.starts_with(&acl.resource_name),
                PatternType::Any | PatternType::Match => false,
            },
            exact => exact == acl.pattern_type && *name == acl.resource_name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acl(resource: &str, pattern: PatternType) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            resource_name: resource.into(),
            pattern_type: pattern,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: Operation::Read,
            permission: Permission::Allow,
        }
    }

    fn filter(name: Option<&str>, pattern: PatternType) -> AclFilter {
        AclFilter {
            resource_type: ResourceType::Any,
            resource_name: name.map(str::to_string),
            pattern_type: pattern,
            principal: None,
            host: None,
            operation: Operation::Any,
            permission: Permission::Any,
        }
    }

    #[test]
    fn codes_round_trip_and_unknown_codes_are_refused() {
        for operation in Operation::ALL {
            assert_eq!(Operation::from_code(operation.code()), Some(*operation));
        }
        assert_eq!(ResourceType::from_code(0), None);
        assert_eq!(PatternType::from_code(9), None);
    }

    #[test]
    fn creations_are_checked_as_kafka_checks_them() {
        let create = |rt: i8, name: &str, pt: i8, principal: &str, op: i8, perm: i8| {
            AclBinding::from_request(rt, name, pt, principal, "*", op, perm)
        };
        assert!(create(2, "orders", 3, "User:alice", 3, 3).is_ok());
        assert!(
            create(1, "orders", 3, "User:alice", 3, 3).is_err(),
            "ANY type"
        );
        assert!(create(2, "orders", 2, "User:alice", 3, 3).is_err(), "MATCH");
        assert!(
            create(2, "orders", 3, "User:alice", 1, 3).is_err(),
            "ANY op"
        );
        assert!(
            create(2, "orders", 3, "User:alice", 3, 1).is_err(),
            "ANY perm"
        );
        assert!(create(2, "", 3, "User:alice", 3, 3).is_err(), "empty name");
        assert!(create(2, "orders", 3, "alice", 3, 3).is_err(), "principal");
        assert!(
            create(4, "other", 3, "User:alice", 7, 3).is_err(),
            "cluster name"
        );
        assert!(create(4, CLUSTER_NAME, 3, "User:alice", 7, 3).is_ok());
    }

    #[test]
    fn match_filters_select_every_pattern_covering_the_name() {
        let literal = acl("orders", PatternType::Literal);
        let wildcard = acl("*", PatternType::Literal);
        let prefixed = acl("ord", PatternType::Prefixed);
        let other = acl("payments", PatternType::Literal);
        let matching = filter(Some("orders"), PatternType::Match);
        assert!(matching.matches(&literal));
        assert!(matching.matches(&wildcard));
        assert!(matching.matches(&prefixed));
        assert!(!matching.matches(&other));
        let any = filter(Some("orders"), PatternType::Any);
        assert!(any.matches(&literal) && !any.matches(&wildcard) && !any.matches(&prefixed));
        let prefixed_only = filter(None, PatternType::Prefixed);
        assert!(prefixed_only.matches(&prefixed) && !prefixed_only.matches(&literal));
        assert!(filter(None, PatternType::Any).matches(&other));
    }
}
