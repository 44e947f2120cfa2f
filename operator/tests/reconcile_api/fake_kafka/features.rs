//! The fake's feature levels (KIP-584): the supported ranges and finalized levels its
//! ApiVersions lists, and UpdateFeatures, applied all or none as Kafka's controller does,
//! or refused with a reason the test gives.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::{FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::messages::update_features_response::UpdatableFeatureResult;
use kafka_protocol::messages::{
    ApiVersionsResponse, UpdateFeaturesRequest, UpdateFeaturesResponse,
};
use kafka_protocol::protocol::Decodable;

use super::{Call, encode, text};

/// Kafka's INVALID_UPDATE_VERSION.
const INVALID_UPDATE_VERSION: i16 = 95;

/// None by default: the brokers list no feature, and nothing is ever finalized.
#[derive(Debug, Default)]
pub(super) struct Features {
    pub supported: BTreeMap<String, (i16, i16)>,
    pub finalized: BTreeMap<String, i16>,
    pub epoch: i64,
    /// Every UpdateFeatures is refused with this reason.
    pub refusal: Option<String>,
}

/// `response` with the features, at ApiVersions `version` (they exist from v3).
pub(super) fn listed(
    response: ApiVersionsResponse,
    version: i16,
    features: &Features,
) -> ApiVersionsResponse {
    if version < 3 {
        return response;
    }
    response
        .with_supported_features(
            features
                .supported
                .iter()
                // Before v4 a feature starting at 0 is left out, as Kafka does.
                .filter(|(_, (min, _))| version >= 4 || *min > 0)
                .map(|(name, (min, max))| {
                    SupportedFeatureKey::default()
                        .with_name(text(name))
                        .with_min_version(*min)
                        .with_max_version(*max)
                })
                .collect(),
        )
        .with_finalized_features_epoch(features.epoch)
        .with_finalized_features(
            features
                .finalized
                .iter()
                .filter(|(_, level)| **level > 0)
                .map(|(name, level)| {
                    FinalizedFeatureKey::default()
                        .with_name(text(name))
                        .with_min_version_level(*level)
                        .with_max_version_level(*level)
                })
                .collect(),
        )
}

/// Records the request as [`Call::UpdateFeatures`] and finalizes its levels (or refuses).
pub(super) fn update(
    features: &mut Features,
    calls: &mut Vec<Call>,
    body: &mut Bytes,
    version: i16,
) -> anyhow::Result<BytesMut> {
    let request = UpdateFeaturesRequest::decode(body, version)?;
    let levels: Vec<(String, i16, i8)> = request
        .feature_updates
        .iter()
        .map(|u| {
            let upgrade_type = match (version, u.allow_downgrade) {
                (0, true) => 2,
                (0, false) => 1,
                _ => u.upgrade_type,
            };
            (u.feature.to_string(), u.max_version_level, upgrade_type)
        })
        .collect();
    calls.push(Call::UpdateFeatures {
        levels: levels.clone(),
    });
    let (code, message) = match &features.refusal {
        Some(reason) => (INVALID_UPDATE_VERSION, Some(text(reason))),
        None => {
            for (feature, level, _) in &levels {
                features.finalized.insert(feature.clone(), *level);
            }
            features.epoch += 1;
            (0, None)
        }
    };
    let results = if version < 2 {
        levels
            .iter()
            .map(|(feature, _, _)| {
                UpdatableFeatureResult::default()
                    .with_feature(text(feature))
                    .with_error_code(code)
                    .with_error_message(message.clone())
            })
            .collect()
    } else {
        Vec::new()
    };
    encode(
        &UpdateFeaturesResponse::default()
            .with_error_code(code)
            .with_error_message(message)
            .with_results(results),
        version,
    )
}
