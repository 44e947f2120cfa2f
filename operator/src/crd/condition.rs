//! Status conditions shared by both resources.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// Condition types written by the operator.
pub mod types {
    /// Everything the spec asks for is in place and healthy.
    pub const READY: &str = "Ready";
    /// The operator is changing something (creating, scaling, rolling).
    pub const RECONCILING: &str = "Reconciling";
    /// Something is wrong: an invalid spec, an impossible request or a failing dependency.
    pub const DEGRADED: &str = "Degraded";
    /// A Cluster's feature levels are finalized as its release and `spec.features` ask.
    pub const FEATURES_FINALIZED: &str = "FeaturesFinalized";
}

/// Builds a condition; `status` is `"True"` or `"False"`.
pub fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
    observed_generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: if status { "True" } else { "False" }.to_string(),
        reason: reason.to_string(),
        message: message.into(),
        observed_generation,
        last_transition_time: Time(Timestamp::now()),
    }
}

/// Merges `new` into `existing`, keeping `lastTransitionTime` when the status did not change
/// (so `kubectl describe` shows how long a condition has held).
pub fn merge_conditions(existing: &[Condition], new: Vec<Condition>) -> Vec<Condition> {
    new.into_iter()
        .map(|mut condition| {
            if let Some(old) = existing.iter().find(|c| c.type_ == condition.type_)
                && old.status == condition.status
            {
                condition.last_transition_time = old.last_transition_time.clone();
            }
            condition
        })
        .collect()
}

/// Whether `conditions` hold `type_` with status True.
pub fn condition_is_true(conditions: &[Condition], type_: &str) -> bool {
    conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}
