//! Feature levels (KIP-584): what a broker runs and what the cluster finalized, from
//! ApiVersions, and finalizing levels with UpdateFeatures, as `kafka-features describe` and
//! `kafka-features upgrade | downgrade` do.

use std::collections::BTreeMap;

use kafka_protocol::messages::update_features_request::{FeatureUpdateKey, UpdateFeaturesRequest};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;

use super::{AdminClient, AdminError, check};

/// ApiVersions version that lists every supported feature: before v4 a feature whose
/// lowest level is 0 (`kraft.version`, `group.version`, ...) is left out.
const FEATURES_VERSION: i16 = 4;
/// UpdateFeatures' `timeout_ms`.
const UPDATE_TIMEOUT_MS: i32 = 30_000;

/// Supported ranges (inclusive) by feature name.
pub type SupportedFeatures = BTreeMap<String, (i16, i16)>;

/// One broker's answer: the levels it runs and the levels the cluster finalized.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrokerFeatures {
    pub supported: SupportedFeatures,
    /// Finalized levels; a feature left out is at 0.
    pub finalized: BTreeMap<String, i16>,
    /// The finalized levels' epoch (-1: none finalized yet). Clients keep the answer of
    /// the highest one: brokers learn a change at slightly different times.
    pub epoch: i64,
}

/// How UpdateFeatures asks for a level (Kafka's `FeatureUpdate.UpgradeType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpgradeType {
    Upgrade,
    SafeDowngrade,
}

impl UpgradeType {
    fn code(self) -> i8 {
        match self {
            UpgradeType::Upgrade => 1,
            UpgradeType::SafeDowngrade => 2,
        }
    }
}

/// One level to finalize.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureUpdate {
    pub feature: String,
    pub level: i16,
    pub upgrade_type: UpgradeType,
}

impl AdminClient {
    /// The connected broker's supported feature ranges and the cluster's finalized levels.
    pub async fn features(&mut self) -> Result<BrokerFeatures, AdminError> {
        let version = self.connection.version_for::<ApiVersionsRequest>()?;
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("oxbow-operator"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let response: ApiVersionsResponse = self
            .connection
            .call_version(
                &request,
                version.min(FEATURES_VERSION),
                super::REQUEST_TIMEOUT,
            )
            .await?;
        check("ApiVersions", response.error_code, None)?;
        Ok(features_of(&response))
    }

    /// Finalizes `updates`, all or none (the active controller decides); a refusal is
    /// [`AdminError::Kafka`] with the controller's reason.
    pub async fn update_features(&mut self, updates: &[FeatureUpdate]) -> Result<(), AdminError> {
        let version = self.connection.version_for::<UpdateFeaturesRequest>()?;
        let request = UpdateFeaturesRequest::default()
            .with_timeout_ms(UPDATE_TIMEOUT_MS)
            .with_feature_updates(
                updates
                    .iter()
                    .map(|update| {
                        let key = FeatureUpdateKey::default()
                            .with_feature(StrBytes::from_string(update.feature.clone()))
                            .with_max_version_level(update.level);
                        // v0 knows only "allow downgrade" (a safe one); v1+ names the type.
                        if version == 0 {
                            key.with_allow_downgrade(update.upgrade_type != UpgradeType::Upgrade)
                        } else {
                            key.with_upgrade_type(update.upgrade_type.code())
                        }
                    })
                    .collect(),
            );
        let response = self
            .connection
            .call_version(&request, version, super::REQUEST_TIMEOUT)
            .await?;
        check(
            "UpdateFeatures",
            response.error_code,
            response.error_message.as_ref(),
        )?;
        for result in &response.results {
            check(
                "UpdateFeatures",
                result.error_code,
                result.error_message.as_ref(),
            )?;
        }
        Ok(())
    }
}

fn features_of(response: &ApiVersionsResponse) -> BrokerFeatures {
    BrokerFeatures {
        supported: response
            .supported_features
            .iter()
            .map(|f| (f.name.to_string(), (f.min_version, f.max_version)))
            .collect(),
        finalized: response
            .finalized_features
            .iter()
            .map(|f| (f.name.to_string(), f.max_version_level))
            .collect(),
        epoch: response.finalized_features_epoch,
    }
}
