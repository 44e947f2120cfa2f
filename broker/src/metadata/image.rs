//! The cluster image: the state the metadata records add up to. Every broker holds one,
//! built from the same records in the same order, so every broker answers Metadata the
//! same way once it has caught up.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::features::{FinalizedFeatures, SupportedFeatures};
use super::records::{
    AclBinding, Endpoint, ListenerEndpoints, MetadataRecord, PartitionState, ScramCredential,
    ScramMechanism,
};

/// One topic as the metadata log describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicImage {
    pub name: String,
    pub topic_id: Uuid,
    pub replication_factor: i16,
    /// Only the configs set on the topic; broker defaults fill in the rest.
    pub configs: BTreeMap<String, String>,
    /// Indexed by partition number.
    pub partitions: Vec<PartitionState>,
}

impl TopicImage {
    pub fn partition_count(&self) -> i32 {
        i32::try_from(self.partitions.len()).unwrap_or(i32::MAX)
    }

    pub fn partition(&self, partition: i32) -> Option<&PartitionState> {
        usize::try_from(partition)
            .ok()
            .and_then(|p| self.partitions.get(p))
    }
}

/// A registered broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerImage {
    pub node_id: i32,
    pub incarnation: Uuid,
    pub endpoint: Endpoint,
    pub rack: Option<String>,
    /// A fenced broker leads nothing, and Metadata stops listing it a few seconds after
    /// (api/metadata/listed_brokers.rs).
    pub fenced: bool,
    /// Its address on each client listener, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub listeners: ListenerEndpoints,
    /// The feature levels it runs (`None`: a release before feature levels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<SupportedFeatures>,
}

impl BrokerImage {
    /// Where a client that came in on `listener` reaches this broker: its address on the
    /// listener of the same name (none: the broker is not on that listener, and Kafka
    /// leaves it out of the answer). A broker registered before named listeners has one
    /// address for all.
    pub fn endpoint_for(&self, listener: &str) -> Option<&Endpoint> {
        if self.listeners.is_empty() {
            return Some(&self.endpoint);
        }
        self.listeners.get(listener)
    }
}

/// Brokers, topics, partitions, configs and id allocations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterImage {
    pub cluster_id: Option<String>,
    pub brokers: BTreeMap<i32, BrokerImage>,
    /// Shared between successive images: a new image copies only the topics its records
    /// touch, so applying a record costs the size of its topic, not of the cluster, and
    /// `Arc::ptr_eq` tells which topics two images of one run differ in.
    pub topics: BTreeMap<String, Arc<TopicImage>>,
    pub next_producer_id: i64,
    /// Dynamic broker configs by node id (-1: cluster-wide defaults).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub broker_configs: BTreeMap<i32, BTreeMap<String, String>>,
    /// SCRAM credentials by user and mechanism.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scram_credentials: BTreeMap<String, BTreeMap<ScramMechanism, ScramCredential>>,
    /// Access control entries, shared between images until one changes them (every
    /// request of an authorizing broker reads them).
    #[serde(default, skip_serializing_if = "acls_empty")]
    pub acls: Arc<BTreeSet<AclBinding>>,
    /// Client quotas by entity and key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub client_quotas: crate::model::quota::QuotaTable,
    /// The finalized feature levels.
    #[serde(default, skip_serializing_if = "features_unset")]
    pub features: FinalizedFeatures,
}

fn features_unset(features: &FinalizedFeatures) -> bool {
    !features.is_set() && features.levels.is_empty()
}

fn acls_empty(acls: &Arc<BTreeSet<AclBinding>>) -> bool {
    acls.is_empty()
}

impl ClusterImage {
    pub fn apply(&mut self, record: &MetadataRecord) {
        match record {
            MetadataRecord::ClusterIdentified { cluster_id } => {
                self.cluster_id = Some(cluster_id.clone())
            }
            MetadataRecord::BrokerRegistered {
                node_id,
                incarnation,
                endpoint,
                rack,
                listeners,
                supported_features,
            } => {
                self.brokers.insert(
                    *node_id,
                    BrokerImage {
                        node_id: *node_id,
                        incarnation: *incarnation,
                        endpoint: endpoint.clone(),
                        rack: rack.clone(),
                        fenced: true,
                        listeners: listeners.clone(),
                        supported_features: supported_features.clone(),
                    },
                );
            }
            MetadataRecord::BrokerFenced { node_id } => {
                if let Some(broker) = self.brokers.get_mut(node_id) {
                    broker.fenced = true;
                }
            }
            MetadataRecord::BrokerUnfenced { node_id } => {
                if let Some(broker) = self.brokers.get_mut(node_id) {
                    broker.fenced = false;
                }
            }
            MetadataRecord::BrokerUnregistered { node_id } => {
                self.brokers.remove(node_id);
                // A cordon belongs to the registration (Kafka keeps it in the broker's
                // registration record): a broker that joins later under the same id
                // starts uncordoned.
                if let Some(configs) = self.broker_configs.get_mut(node_id) {
                    configs.remove(super::dynamic_configs::CORDONED_LOG_DIRS);
                    if configs.is_empty() {
                        self.broker_configs.remove(node_id);
                    }
                }
            }
            MetadataRecord::TopicCreated {
                name,
                topic_id,
                replication_factor,
                configs,
            } => {
                self.topics.insert(
                    name.clone(),
                    Arc::new(TopicImage {
                        name: name.clone(),
                        topic_id: *topic_id,
                        replication_factor: *replication_factor,
                        configs: configs.clone(),
                        partitions: Vec::new(),
                    }),
                );
            }
            MetadataRecord::PartitionCreated {
                topic,
                partition,
                state,
            } => {
                if let Some(topic) = self.topics.get_mut(topic).map(Arc::make_mut) {
                    // Partitions are created in order; a record out of order would
                    // leave a hole, so it is ignored rather than misplaced.
                    if usize::try_from(*partition).ok() == Some(topic.partitions.len()) {
                        topic.partitions.push(state.clone());
                    }
                }
            }
            MetadataRecord::PartitionChanged {
                topic,
                partition,
                state,
            } => {
                if let Some(slot) = self
                    .topics
                    .get_mut(topic)
                    .map(Arc::make_mut)
                    .and_then(|t| t.partitions.get_mut(usize::try_from(*partition).ok()?))
                {
                    *slot = state.clone();
                }
            }
            MetadataRecord::TopicConfigChanged { name, configs } => {
                if let Some(topic) = self.topics.get_mut(name).map(Arc::make_mut) {
                    topic.configs = configs.clone();
                }
            }
            MetadataRecord::TopicDeleted { name, .. } => {
                self.topics.remove(name);
            }
            MetadataRecord::BrokerConfigChanged { node_id, configs } => {
                if configs.is_empty() {
                    self.broker_configs.remove(node_id);
                } else {
                    self.broker_configs.insert(*node_id, configs.clone());
                }
            }
            MetadataRecord::ProducerIdsAllocated { next_producer_id } => {
                self.next_producer_id = self.next_producer_id.max(*next_producer_id);
            }
            MetadataRecord::ScramCredentialSet {
                user,
                mechanism,
                credential,
            } => {
                self.scram_credentials
                    .entry(user.clone())
                    .or_default()
                    .insert(*mechanism, credential.clone());
            }
            MetadataRecord::ScramCredentialRemoved { user, mechanism } => {
                if let Some(credentials) = self.scram_credentials.get_mut(user) {
                    credentials.remove(mechanism);
                    if credentials.is_empty() {
                        self.scram_credentials.remove(user);
                    }
                }
            }
            MetadataRecord::AclCreated { acl } => {
                if !self.acls.contains(acl) {
                    Arc::make_mut(&mut self.acls).insert(acl.clone());
                }
            }
            MetadataRecord::ClientQuotaChanged { entity, key, value } => match value {
                Some(value) => {
                    self.client_quotas
                        .entry(entity.clone())
                        .or_default()
                        .insert(*key, *value);
                }
                None => {
                    if let Some(values) = self.client_quotas.get_mut(entity) {
                        values.remove(key);
                        if values.is_empty() {
                            self.client_quotas.remove(entity);
                        }
                    }
                }
            },
            MetadataRecord::FeatureLevel { name, level } => {
                if *level == 0 {
                    self.features.levels.remove(name);
                } else {
                    self.features.levels.insert(name.clone(), *level);
                }
            }
            MetadataRecord::AclRemoved { acl } => {
                if self.acls.contains(acl) {
                    Arc::make_mut(&mut self.acls).remove(acl);
                }
            }
        }
    }

    /// Records that build this image from an empty one, in an order every reader can
    /// apply (what a snapshot holds). The features epoch is the snapshot's to carry.
    pub fn to_records(&self) -> Vec<MetadataRecord> {
        let mut records = Vec::new();
        if let Some(cluster_id) = &self.cluster_id {
            records.push(MetadataRecord::ClusterIdentified {
                cluster_id: cluster_id.clone(),
            });
        }
        let mut features: Vec<(&String, &i16)> = self.features.levels.iter().collect();
        features.sort_by_key(|(name, _)| name.as_str() != super::features::METADATA_VERSION);
        records.extend(
            features
                .into_iter()
                .map(|(name, level)| MetadataRecord::FeatureLevel {
                    name: name.clone(),
                    level: *level,
                }),
        );
        for broker in self.brokers.values() {
            records.push(MetadataRecord::BrokerRegistered {
                node_id: broker.node_id,
                incarnation: broker.incarnation,
                endpoint: broker.endpoint.clone(),
                rack: broker.rack.clone(),
                listeners: broker.listeners.clone(),
                supported_features: broker.supported_features.clone(),
            });
            if !broker.fenced {
                records.push(MetadataRecord::BrokerUnfenced {
                    node_id: broker.node_id,
                });
            }
        }
        for (node_id, configs) in &self.broker_configs {
            records.push(MetadataRecord::BrokerConfigChanged {
                node_id: *node_id,
                configs: configs.clone(),
            });
        }
        for topic in self.topics.values() {
            records.push(MetadataRecord::TopicCreated {
                name: topic.name.clone(),
                topic_id: topic.topic_id,
                replication_factor: topic.replication_factor,
                configs: topic.configs.clone(),
            });
            for (partition, state) in topic.partitions.iter().enumerate() {
                records.push(MetadataRecord::PartitionCreated {
                    topic: topic.name.clone(),
                    partition: i32::try_from(partition).unwrap_or(i32::MAX),
                    state: state.clone(),
                });
            }
        }
        if self.next_producer_id != 0 {
            records.push(MetadataRecord::ProducerIdsAllocated {
                next_producer_id: self.next_producer_id,
            });
        }
        for (user, credentials) in &self.scram_credentials {
            for (mechanism, credential) in credentials {
                records.push(MetadataRecord::ScramCredentialSet {
                    user: user.clone(),
                    mechanism: *mechanism,
                    credential: credential.clone(),
                });
            }
        }
        records.extend(
            self.acls
                .iter()
                .map(|acl| MetadataRecord::AclCreated { acl: acl.clone() }),
        );
        for (entity, values) in &self.client_quotas {
            for (key, value) in values {
                records.push(MetadataRecord::ClientQuotaChanged {
                    entity: entity.clone(),
                    key: *key,
                    value: Some(*value),
                });
            }
        }
        records
    }

    /// A user's SCRAM credential for `mechanism`.
    pub fn scram_credential(
        &self,
        user: &str,
        mechanism: ScramMechanism,
    ) -> Option<&ScramCredential> {
        self.scram_credentials.get(user)?.get(&mechanism)
    }

    pub fn topic_by_id(&self, topic_id: &Uuid) -> Option<&TopicImage> {
        self.topics
            .values()
            .find(|t| &t.topic_id == topic_id)
            .map(Arc::as_ref)
    }

    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionState> {
        self.topics.get(topic)?.partition(partition)
    }

    /// Registered brokers that are not fenced.
    pub fn live_brokers(&self) -> impl Iterator<Item = &BrokerImage> {
        self.brokers.values().filter(|b| !b.fenced)
    }

    /// Partitions without a leader.
    pub fn offline_partitions(&self) -> usize {
        self.topics
            .values()
            .flat_map(|t| &t.partitions)
            .filter(|p| p.leader < 0)
            .count()
    }

    pub fn is_live(&self, node_id: i32) -> bool {
        self.brokers.get(&node_id).is_some_and(|b| !b.fenced)
    }

    /// A short fingerprint of the whole image: equal images give equal digests, so
    /// tests and operators can check that every broker sees the same metadata.
    pub fn digest(&self) -> String {
        // The image's records in their versioned encoding: every part counts (JSON could
        // not hold the quotas' structured keys).
        let mut w = super::wire::Writer::new();
        super::record_format::encode_batch(
            &mut w,
            &super::records::MetadataBatch {
                records: self.to_records(),
            },
        );
        format!("{:08x}", crc32c::crc32c(&w.into_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(replicas: &[i32]) -> PartitionState {
        PartitionState {
            replicas: replicas.to_vec(),
            in_sync_replicas: replicas.to_vec(),
            leader: replicas[0],
            leader_epoch: 0,
            partition_epoch: 0,
            ..Default::default()
        }
    }

    #[test]
    fn records_build_topics_partitions_and_brokers() {
        let mut image = ClusterImage::default();
        let topic_id = Uuid::new_v4();
        let records = [
            MetadataRecord::BrokerRegistered {
                node_id: 1,
                incarnation: Uuid::new_v4(),
                endpoint: Endpoint {
                    host: "h1".into(),
                    port: 9092,
                },
                rack: Some("a".into()),
                listeners: Default::default(),
                supported_features: None,
            },
            MetadataRecord::BrokerUnfenced { node_id: 1 },
            MetadataRecord::TopicCreated {
                name: "t".into(),
                topic_id,
                replication_factor: 1,
                configs: BTreeMap::new(),
            },
            MetadataRecord::PartitionCreated {
                topic: "t".into(),
                partition: 0,
                state: state(&[1]),
            },
            // Out of order: ignored, no hole.
            MetadataRecord::PartitionCreated {
                topic: "t".into(),
                partition: 5,
                state: state(&[1]),
            },
            MetadataRecord::PartitionCreated {
                topic: "t".into(),
                partition: 1,
                state: state(&[1]),
            },
        ];
        for record in &records {
            image.apply(record);
        }
        assert_eq!(image.topics["t"].partition_count(), 2);
        assert!(image.is_live(1));
        let before = image.digest();
        let mut changed = state(&[1]);
        changed.leader = -1;
        changed.leader_epoch = 1;
        image.apply(&MetadataRecord::PartitionChanged {
            topic: "t".into(),
            partition: 1,
            state: changed.clone(),
        });
        image.apply(&MetadataRecord::BrokerFenced { node_id: 1 });
        assert_eq!(image.partition("t", 1), Some(&changed));
        assert!(!image.is_live(1));
        assert_ne!(image.digest(), before);
        image.apply(&MetadataRecord::TopicDeleted {
            name: "t".into(),
            topic_id,
        });
        assert!(image.topic_by_id(&topic_id).is_none());
    }
}
