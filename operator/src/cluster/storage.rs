//! Storage growth: a larger `spec.storage.size` expands every broker's claim in place.
//!
//! A StatefulSet's claim templates cannot change, so the template keeps the size the
//! StatefulSet was created with and the operator asks each claim (`data-<pod>`) for the
//! new size itself, as Kubernetes' volume expansion works: the StorageClass must allow it
//! (`allowVolumeExpansion`), the storage driver grows the volume, the file system follows.
//! A claim created later by a scale-out starts at the template's size and is expanded the
//! same way. Claims only grow (the CRD refuses a smaller size). The `StorageResized`
//! condition says where it stands: at size, expanding, or not possible with this class.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, Patch, PatchParams};

use super::names::{FIELD_MANAGER, Names};
use crate::context::Context;
use crate::crd::Cluster;

/// The condition type.
pub const STORAGE_RESIZED: &str = "StorageResized";

/// Where the claims stand against `spec.storage.size`: the condition's status, reason and
/// message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizing {
    pub at_size: bool,
    pub reason: &'static str,
    pub message: String,
}

/// Bytes of a Kubernetes quantity (`10Gi`, `1.5G`, `500M`, `1e9` is not accepted by the
/// CRD's pattern and not here); `None` when it is not one.
pub fn quantity_bytes(quantity: &str) -> Option<u128> {
    let quantity = quantity.trim();
    let split = quantity
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(quantity.len());
    let (number, suffix) = quantity.split_at(split);
    let multiplier: u128 = match suffix {
        "" => 1,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "E" => 1_000_000_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        "Ei" => 1 << 60,
        _ => return None,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut bytes = whole.checked_mul(multiplier)?;
    if !fraction.is_empty() {
        let digits = u32::try_from(fraction.len()).ok().filter(|d| *d <= 18)?;
        let scale = 10_u128.pow(digits);
        let part: u128 = fraction.parse().ok()?;
        // Kubernetes rounds a fractional byte count up.
        bytes = bytes.checked_add((part * multiplier).div_ceil(scale))?;
    }
    Some(bytes)
}

/// One claim as the decision sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub name: String,
    /// `spec.resources.requests.storage`, bytes.
    pub requested: Option<u128>,
    /// `status.capacity.storage`, bytes (none while unbound).
    pub capacity: Option<u128>,
    pub bound: bool,
}

impl Claim {
    fn of(claim: &PersistentVolumeClaim) -> Self {
        let bytes = |q: Option<&Quantity>| q.and_then(|q| quantity_bytes(&q.0));
        Self {
            name: claim.metadata.name.clone().unwrap_or_default(),
            requested: bytes(
                claim
                    .spec
                    .as_ref()
                    .and_then(|s| s.resources.as_ref())
                    .and_then(|r| r.requests.as_ref())
                    .and_then(|r| r.get("storage")),
            ),
            capacity: bytes(
                claim
                    .status
                    .as_ref()
                    .and_then(|s| s.capacity.as_ref())
                    .and_then(|c| c.get("storage")),
            ),
            bound: claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"),
        }
    }
}

/// What to do about the claims: which to ask for `wanted` bytes, and the condition.
/// `expandable` says whether their StorageClass allows expansion (`None`: unknown).
pub fn decide(
    claims: &[Claim],
    wanted: u128,
    size: &str,
    class: &str,
    expandable: Option<bool>,
) -> (Vec<String>, Sizing) {
    let small: Vec<&Claim> = claims
        .iter()
        .filter(|c| c.requested.is_some_and(|r| r < wanted))
        .collect();
    // An unbound claim cannot be resized (the API server refuses it); it is asked for the
    // new size once it is bound.
    let to_ask: Vec<String> = small
        .iter()
        .filter(|c| c.bound)
        .map(|c| c.name.clone())
        .collect();
    let growing = claims
        .iter()
        .filter(|c| c.bound && c.capacity.is_some_and(|cap| cap < wanted))
        .count();
    if !small.is_empty() && expandable == Some(false) {
        let names: Vec<&str> = small.iter().map(|c| c.name.as_str()).collect();
        let sizing = Sizing {
            at_size: false,
            reason: "ExpansionNotSupported",
            message: format!(
                "StorageClass {class} does not allow volume expansion (allowVolumeExpansion is not true): claim(s) {} stay at their size, below {size}",
                names.join(", ")
            ),
        };
        return (Vec::new(), sizing);
    }
    if small.is_empty() && growing == 0 {
        let sizing = Sizing {
            at_size: true,
            reason: "AtSize",
            message: format!("Every broker's claim holds {size}"),
        };
        return (Vec::new(), sizing);
    }
    let sizing = Sizing {
        at_size: false,
        reason: "Expanding",
        message: format!(
            "Expanding {} claim(s) to {size}: the storage driver grows the volumes, then the file systems follow",
            small.len().max(growing)
        ),
    };
    (to_ask, sizing)
}

/// Expands the claims of brokers `0..brokers` to `spec.storage.size`; returns the
/// condition to show, `None` when the claims cannot be read (the operator lacks nothing
/// else for that).
pub async fn reconcile(
    ctx: &Context,
    cluster: &Cluster,
    names: &Names,
    brokers: i32,
) -> Option<Sizing> {
    let size = cluster.spec.storage.size.as_str();
    let wanted = quantity_bytes(size)?;
    let claims_api: Api<PersistentVolumeClaim> =
        Api::namespaced(ctx.client.clone(), &names.namespace);
    let mut claims = Vec::new();
    let mut class = cluster.spec.storage.storage_class_name.clone();
    for ordinal in 0..brokers {
        let name = format!("data-{}", names.pod(ordinal));
        match claims_api.get_opt(&name).await {
            Ok(Some(claim)) => {
                if class.is_none() {
                    class = claim
                        .spec
                        .as_ref()
                        .and_then(|s| s.storage_class_name.clone());
                }
                claims.push(Claim::of(&claim));
            }
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(claim = name, %error, "Cannot read a broker's claim");
                return None;
            }
        }
    }
    let expandable = match &class {
        Some(class) => {
            let classes: Api<StorageClass> = Api::all(ctx.client.clone());
            match classes.get_opt(class).await {
                Ok(found) => Some(found.is_some_and(|c| c.allow_volume_expansion == Some(true))),
                Err(error) => {
                    tracing::debug!(class, %error, "Cannot read the StorageClass");
                    None
                }
            }
        }
        None => None,
    };
    let class_name = class.as_deref().unwrap_or("(the cluster default)");
    let (to_ask, mut sizing) = decide(&claims, wanted, size, class_name, expandable);
    for name in to_ask {
        let patch = serde_json::json!({
            "spec": {"resources": {"requests": {"storage": size}}}
        });
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..PatchParams::default()
        };
        match claims_api
            .patch(&name, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(_) => tracing::info!(claim = name, size, "Asked a claim for more storage"),
            Err(error) => {
                tracing::warn!(claim = name, %error, "Expanding a claim was refused");
                sizing = Sizing {
                    at_size: false,
                    reason: "ExpansionRefused",
                    message: format!("Expanding claim {name} to {size} was refused: {error}"),
                };
            }
        }
    }
    Some(sizing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_in_bytes() {
        assert_eq!(quantity_bytes("10Gi"), Some(10 << 30));
        assert_eq!(quantity_bytes("1.5Gi"), Some(3 << 29));
        assert_eq!(quantity_bytes("500M"), Some(500_000_000));
        assert_eq!(quantity_bytes("1024"), Some(1024));
        assert_eq!(quantity_bytes("0.5k"), Some(500));
        assert_eq!(quantity_bytes("Gi"), None);
        assert_eq!(quantity_bytes("10Qi"), None);
        assert_eq!(quantity_bytes(""), None);
    }

    fn claim(name: &str, requested: u128, capacity: Option<u128>, bound: bool) -> Claim {
        Claim {
            name: name.to_string(),
            requested: Some(requested),
            capacity,
            bound,
        }
    }

    #[test]
    fn bound_claims_below_the_size_are_asked_for_it_and_reported_until_they_hold_it() {
        let gi = 1 << 30;
        let claims = [
            claim("data-a-0", gi, Some(gi), true),
            claim("data-a-1", 2 * gi, Some(gi), true),
            claim("data-a-2", gi, None, false),
        ];
        let (ask, sizing) = decide(&claims, 2 * gi, "2Gi", "local", Some(true));
        assert_eq!(ask, vec!["data-a-0".to_string()]);
        assert_eq!(sizing.reason, "Expanding");
        assert!(!sizing.at_size);
        let done = [
            claim("data-a-0", 2 * gi, Some(2 * gi), true),
            claim("data-a-1", 2 * gi, Some(3 * gi), true),
        ];
        let (ask, sizing) = decide(&done, 2 * gi, "2Gi", "local", Some(true));
        assert!(ask.is_empty());
        assert!(sizing.at_size, "{sizing:?}");
    }

    #[test]
    fn a_class_without_expansion_is_named_and_nothing_is_asked() {
        let gi = 1 << 30;
        let claims = [claim("data-a-0", gi, Some(gi), true)];
        let (ask, sizing) = decide(&claims, 2 * gi, "2Gi", "fixed", Some(false));
        assert!(ask.is_empty());
        assert_eq!(sizing.reason, "ExpansionNotSupported");
        assert!(sizing.message.contains("StorageClass fixed"), "{sizing:?}");
        assert!(sizing.message.contains("data-a-0"), "{sizing:?}");
    }
}
