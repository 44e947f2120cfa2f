//! The cluster image: the state the metadata records add up to.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::metadata_log::MetadataRecord;

/// One topic as the metadata log describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicImage {
    pub name: String,
    pub topic_id: Uuid,
    pub partitions: i32,
    pub replication_factor: i16,
    /// Only the configs set on the topic; broker defaults fill in the rest.
    pub configs: BTreeMap<String, String>,
}

/// Topics, configs and id allocations.
#[derive(Debug, Clone, Default)]
pub struct ClusterImage {
    pub cluster_id: Option<String>,
    pub topics: BTreeMap<String, TopicImage>,
    pub next_producer_id: i64,
}

impl ClusterImage {
    pub fn apply(&mut self, record: &MetadataRecord) {
        match record {
            MetadataRecord::ClusterIdentified { cluster_id } => {
                self.cluster_id = Some(cluster_id.clone())
            }
            MetadataRecord::TopicCreated {
                name,
                topic_id,
                partitions,
                replication_factor,
                configs,
            } => {
                self.topics.insert(
                    name.clone(),
                    TopicImage {
                        name: name.clone(),
                        topic_id: *topic_id,
                        partitions: *partitions,
                        replication_factor: *replication_factor,
                        configs: configs.clone(),
                    },
                );
            }
            MetadataRecord::PartitionsAdded {
                name,
                total_partitions,
            } => {
                if let Some(topic) = self.topics.get_mut(name) {
                    topic.partitions = *total_partitions;
                }
            }
            MetadataRecord::TopicConfigChanged { name, configs } => {
                if let Some(topic) = self.topics.get_mut(name) {
                    topic.configs = configs.clone();
                }
            }
            MetadataRecord::TopicDeleted { name, .. } => {
                self.topics.remove(name);
            }
            MetadataRecord::ProducerIdsAllocated { next_producer_id } => {
                self.next_producer_id = self.next_producer_id.max(*next_producer_id);
            }
        }
    }

    pub fn topic_by_id(&self, topic_id: &Uuid) -> Option<&TopicImage> {
        self.topics.values().find(|t| &t.topic_id == topic_id)
    }
}
