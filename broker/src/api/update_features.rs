//! UpdateFeatures (KIP-584): finalizes feature levels in the metadata log, decided by the
//! active controller against every registered broker's supported levels. Kafka's
//! `kafka-features upgrade | downgrade | disable` speak it; `describe` reads ApiVersions.

use bytes::Bytes;
use kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use kafka_protocol::messages::{ApiKey, UpdateFeaturesRequest, UpdateFeaturesResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::metadata::features::{FeatureUpdate, UpgradeType};
use crate::security::acl::Operation;

#[derive(Debug)]
pub struct UpdateFeaturesApi;

impl Api for UpdateFeaturesApi {
    fn key(&self) -> ApiKey {
        ApiKey::UpdateFeatures
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: UpdateFeaturesRequest = context.decode(body)?;
            let names: Vec<StrBytes> = request
                .feature_updates
                .iter()
                .map(|u| u.feature.clone())
                .collect();
            let outcome = if !context.access().allows_cluster(Operation::Alter) {
                Err((
                    errors::CLUSTER_AUTHORIZATION_FAILED,
                    format!("{} may not update features", context.principal),
                ))
            } else {
                match updates(&request, context.version) {
                    Err(message) => Err((errors::INVALID_REQUEST, message)),
                    Ok(updates) => context
                        .broker
                        .controller
                        .update_features(updates, request.validate_only)
                        .await
                        .map_err(|error| (errors::controller_error(&error), error.to_string())),
                }
            };
            if let Err((code, message)) = &outcome {
                tracing::info!(code, %message, "UpdateFeatures refused");
            }
            context.respond(&response(context.version, &names, outcome))
        })
    }
}

/// The request's updates: v0 says "allow downgrade" (a safe one), v1+ names the type.
fn updates(request: &UpdateFeaturesRequest, version: i16) -> Result<Vec<FeatureUpdate>, String> {
    let mut seen = std::collections::BTreeSet::new();
    request
        .feature_updates
        .iter()
        .map(|update| {
            let name = update.feature.to_string();
            if !seen.insert(name.clone()) {
                return Err(format!("Feature {name} was specified more than once."));
            }
            let upgrade_type = if version == 0 {
                if update.allow_downgrade {
                    UpgradeType::SafeDowngrade
                } else {
                    UpgradeType::Upgrade
                }
            } else {
                UpgradeType::from_code(update.upgrade_type).ok_or_else(|| {
                    format!(
                        "Invalid update version {} for feature {name}. The controller does not support the given upgrade type.",
                        update.max_version_level
                    )
                })?
            };
            Ok(FeatureUpdate {
                name,
                level: update.max_version_level,
                upgrade_type,
            })
        })
        .collect()
}

/// Kafka's answer: the outcome at the top level and, before v2, once per feature as well.
fn response(
    version: i16,
    names: &[StrBytes],
    outcome: Result<(), (i16, String)>,
) -> UpdateFeaturesResponse {
    let (code, message) = match outcome {
        Ok(()) => (errors::NONE, None),
        Err((code, message)) => (code, Some(StrBytes::from_string(message))),
    };
    let results = if version < 2 {
        names
            .iter()
            .map(|name| {
                UpdatableFeatureResult::default()
                    .with_feature(name.clone())
                    .with_error_code(code)
                    .with_error_message(message.clone())
            })
            .collect()
    } else {
        Vec::new()
    };
    UpdateFeaturesResponse::default()
        .with_error_code(code)
        .with_error_message(message)
        .with_results(results)
}
