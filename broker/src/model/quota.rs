//! Client quotas as values: the entities a quota is set for (users, client ids, their
//! defaults), the keys, and how a client's quota is resolved from the table (Kafka's
//! precedence). Enforcing them is [`crate::quota`]'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One side of a quota entity: a named user or client id, or the default for all.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EntityName {
    Default,
    Named(String),
}

impl EntityName {
    pub(crate) fn from_wire(name: Option<&str>) -> Self {
        name.map_or(EntityName::Default, |n| EntityName::Named(n.to_string()))
    }

    pub fn wire(&self) -> Option<&str> {
        match self {
            EntityName::Default => None,
            EntityName::Named(name) => Some(name),
        }
    }
}

/// What a quota applies to: a user, a client id, or a user's client id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct QuotaEntity {
    pub user: Option<EntityName>,
    pub client_id: Option<EntityName>,
}

pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";

impl QuotaEntity {
    /// The entity from a request's (type, name) components, or why Kafka refuses it.
    pub fn from_components<'a>(
        components: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> Result<Self, String> {
        let mut entity = QuotaEntity {
            user: None,
            client_id: None,
        };
        for (kind, name) in components {
            let slot = match kind {
                USER => &mut entity.user,
                CLIENT_ID => &mut entity.client_id,
                "ip" => return Err("ip quotas (connection_creation_rate) are not served".into()),
                other => return Err(format!("Unhandled client quota entity type: {other}")),
            };
            if slot.is_some() {
                return Err(format!("Duplicate {kind} entity type in the request"));
            }
            if name == Some("") {
                return Err(format!(
                    "Empty {kind} entity name (use null for the default)"
                ));
            }
            *slot = Some(EntityName::from_wire(name));
        }
        if entity.user.is_none() && entity.client_id.is_none() {
            return Err("Invalid empty client quota entity".into());
        }
        Ok(entity)
    }

    /// (type, name) components, user first, as Kafka lists them.
    pub fn components(&self) -> Vec<(&'static str, Option<&str>)> {
        let mut parts = Vec::new();
        if let Some(user) = &self.user {
            parts.push((USER, user.wire()));
        }
        if let Some(client) = &self.client_id {
            parts.push((CLIENT_ID, client.wire()));
        }
        parts
    }
}

/// A quota key Kafka defines for users and client ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum QuotaKey {
    ProducerByteRate,
    ConsumerByteRate,
    RequestPercentage,
}

impl QuotaKey {
    pub const ALL: [QuotaKey; 3] = [
        QuotaKey::ProducerByteRate,
        QuotaKey::ConsumerByteRate,
        QuotaKey::RequestPercentage,
    ];

    pub fn name(self) -> &'static str {
        match self {
            QuotaKey::ProducerByteRate => "producer_byte_rate",
            QuotaKey::ConsumerByteRate => "consumer_byte_rate",
            QuotaKey::RequestPercentage => "request_percentage",
        }
    }

    /// A metric label (a closed set).
    pub fn label(self) -> &'static str {
        match self {
            QuotaKey::ProducerByteRate => "produce",
            QuotaKey::ConsumerByteRate => "fetch",
            QuotaKey::RequestPercentage => "request",
        }
    }

    /// The key and a valid value, or Kafka's INVALID_REQUEST message.
    pub fn checked(key: &str, value: f64) -> Result<(Self, f64), String> {
        let key = match key {
            "producer_byte_rate" => QuotaKey::ProducerByteRate,
            "consumer_byte_rate" => QuotaKey::ConsumerByteRate,
            "request_percentage" => QuotaKey::RequestPercentage,
            "controller_mutation_rate" => {
                return Err("controller_mutation_rate is not served (no mutation quotas)".into());
            }
            other => return Err(format!("Invalid configuration key {other}")),
        };
        if !value.is_finite() || value <= 0.0 {
            return Err(format!("Quota {} must be greater than 0", key.name()));
        }
        if key != QuotaKey::RequestPercentage && value.fract() != 0.0 {
            return Err(format!(
                "Quota {} must be a whole number of bytes",
                key.name()
            ));
        }
        Ok((key, value))
    }
}

/// A quota's value (Kafka's double), comparable so the cluster image stays `Eq`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct QuotaValue(pub f64);

impl PartialEq for QuotaValue {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for QuotaValue {}

pub type QuotaTable = BTreeMap<QuotaEntity, BTreeMap<QuotaKey, QuotaValue>>;

/// A DescribeClientQuotas component: an exact name, the default, or any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    Exact(String),
    Default,
    Any,
}

/// Whether `entity` is one a DescribeClientQuotas filter selects.
pub fn filter_matches(filter: &[(String, Match)], strict: bool, entity: &QuotaEntity) -> bool {
    let side = |kind: &str| match kind {
        USER => Some(&entity.user),
        CLIENT_ID => Some(&entity.client_id),
        _ => None,
    };
    let each = filter.iter().all(|(kind, wanted)| {
        let Some(Some(name)) = side(kind) else {
            return false;
        };
        match wanted {
            Match::Any => true,
            Match::Default => *name == EntityName::Default,
            Match::Exact(exact) => *name == EntityName::Named(exact.clone()),
        }
    });
    let sides = entity.components().len();
    each && (!strict || sides == filter.len())
}

/// The quota on `key` for a connection of `user` with `client_id`, and the sensor that
/// counts against it (the tags of the entity that matched, named).
pub fn resolve(
    table: &QuotaTable,
    key: QuotaKey,
    user: &str,
    client_id: &str,
) -> Option<(f64, (String, String))> {
    use EntityName::{Default, Named};
    let named_user = Named(user.to_string());
    let named_client = Named(client_id.to_string());
    let order = [
        (Some(&named_user), Some(&named_client)),
        (Some(&named_user), Some(&Default)),
        (Some(&named_user), None),
        (Some(&Default), Some(&named_client)),
        (Some(&Default), Some(&Default)),
        (Some(&Default), None),
        (None, Some(&named_client)),
        (None, Some(&Default)),
    ];
    order.into_iter().find_map(|(u, c)| {
        let entity = QuotaEntity {
            user: u.cloned(),
            client_id: c.cloned(),
        };
        let value = table.get(&entity)?.get(&key)?;
        let tags = (
            u.map_or(String::new(), |_| user.to_string()),
            c.map_or(String::new(), |_| client_id.to_string()),
        );
        Some((value.0, tags))
    })
}
