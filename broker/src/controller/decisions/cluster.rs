//! Cluster-wide decisions: producer id blocks, dynamic broker configs, the cluster id.

use std::collections::BTreeMap;

use super::{CommandOutcome, ControllerError, DecisionInputs, PRODUCER_ID_BLOCK};
use crate::metadata::dynamic_configs::{self, CLUSTER_DEFAULT, CORDONED_LOG_DIRS};
use crate::metadata::features::{self, FeatureUpdate, METADATA_VERSION, SupportedFeatures};
use crate::metadata::image::ClusterImage;
use crate::metadata::records::MetadataRecord;

/// The next block of producer ids.
pub(super) fn allocate_producer_ids(image: &ClusterImage) -> (Vec<MetadataRecord>, CommandOutcome) {
    let first = image.next_producer_id;
    let end = first + PRODUCER_ID_BLOCK;
    (
        vec![MetadataRecord::ProducerIdsAllocated {
            next_producer_id: end,
        }],
        CommandOutcome::ProducerIds { first, end },
    )
}

/// Replaces the dynamic configs of broker `node_id` (-1: the cluster-wide defaults).
pub(super) fn set_broker_configs(
    image: &ClusterImage,
    node_id: i32,
    configs: &BTreeMap<String, String>,
    validate_only: bool,
) -> super::Decision {
    let fixed: Vec<&str> = configs
        .keys()
        .map(String::as_str)
        .filter(|key| !dynamic_configs::is_dynamic(key))
        .collect();
    if !fixed.is_empty() {
        return Err(ControllerError::InvalidRequest(format!(
            "Cannot update these configs dynamically: Set({})",
            fixed.join(", ")
        )));
    }
    if node_id == CLUSTER_DEFAULT && configs.contains_key(CORDONED_LOG_DIRS) {
        return Err(ControllerError::InvalidRequest(format!(
            "{CORDONED_LOG_DIRS} is set per broker, not as a cluster-wide default"
        )));
    }
    // Kafka answers INVALID_REQUEST (not INVALID_CONFIG) for a bad broker value.
    for (key, value) in configs {
        dynamic_configs::validate(key, value).map_err(ControllerError::InvalidRequest)?;
    }
    let unchanged = image
        .broker_configs
        .get(&node_id)
        .map_or(configs.is_empty(), |c| c == configs);
    let records = if validate_only || unchanged {
        Vec::new()
    } else {
        vec![MetadataRecord::BrokerConfigChanged {
            node_id,
            configs: configs.clone(),
        }]
    };
    Ok((records, CommandOutcome::Done))
}

/// Stamps `cluster_id` and the first feature levels on a new cluster. A cluster whose
/// data comes from a release before feature levels gets `features` written once: the
/// levels that release ran at.
pub(super) fn identify_cluster(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    cluster_id: &str,
    features: &BTreeMap<String, i16>,
) -> (Vec<MetadataRecord>, CommandOutcome) {
    let mut records = Vec::new();
    if image.cluster_id.is_none() {
        // Kafka 4 formats a cluster with `min.insync.replicas` as a cluster-wide
        // dynamic default (for eligible leader replicas); tools see it as one.
        let mut defaults = image
            .broker_configs
            .get(&CLUSTER_DEFAULT)
            .cloned()
            .unwrap_or_default();
        defaults
            .entry("min.insync.replicas".to_string())
            .or_insert_with(|| inputs.log_defaults.min_insync_replicas.to_string());
        records.push(MetadataRecord::ClusterIdentified {
            cluster_id: cluster_id.to_string(),
        });
        records.push(MetadataRecord::BrokerConfigChanged {
            node_id: CLUSTER_DEFAULT,
            configs: defaults,
        });
    }
    if !image.features.is_set() {
        // metadata.version first: a reader learns the format before anything it gates.
        let mut ordered: Vec<(&String, &i16)> = features.iter().collect();
        ordered.sort_by_key(|(name, _)| name.as_str() != METADATA_VERSION);
        records.extend(ordered.into_iter().filter(|(_, level)| **level > 0).map(
            |(name, level)| MetadataRecord::FeatureLevel {
                name: name.clone(),
                level: *level,
            },
        ));
    }
    (records, CommandOutcome::Done)
}

/// UpdateFeatures: the levels checked against this controller's support and every
/// registered broker's, finalized all together or not at all.
pub(super) fn update_features(
    image: &ClusterImage,
    updates: &[FeatureUpdate],
    validate_only: bool,
) -> super::Decision {
    let brokers: Vec<(i32, Option<&SupportedFeatures>)> = image
        .brokers
        .values()
        .map(|b| (b.node_id, b.supported_features.as_ref()))
        .collect();
    let changes = features::validate_updates(&image.features, updates, &brokers)
        .map_err(ControllerError::InvalidUpdateVersion)?;
    for (name, level) in &changes {
        tracing::warn!(
            feature = %name,
            from = image.features.level(name),
            to = level,
            validate_only,
            "Changing a finalized feature level"
        );
    }
    let records = if validate_only {
        Vec::new()
    } else {
        let mut ordered: Vec<(String, i16)> = changes.into_iter().collect();
        // An upgrade of metadata.version goes before what it allows, a downgrade after.
        let mv_first = ordered.iter().any(|(name, level)| {
            name == METADATA_VERSION && *level > image.features.metadata_version()
        });
        ordered.sort_by_key(|(name, _)| (name.as_str() == METADATA_VERSION) != mv_first);
        ordered
            .into_iter()
            .map(|(name, level)| MetadataRecord::FeatureLevel { name, level })
            .collect()
    };
    Ok((records, CommandOutcome::Done))
}
