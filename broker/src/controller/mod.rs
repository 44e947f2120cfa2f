//! Cluster metadata: topics, partitions, configs and producer ids.
//!
//! Today one node is the whole quorum: the [`Controller`] validates a change, appends
//! its records to the local [`metadata_log::MetadataLog`] (fsynced), applies them to
//! the [`image::ClusterImage`] and makes the partition logs match. The records are the
//! ones a replicated quorum will carry, so cluster mode changes who appends, not what.

pub mod image;
pub mod metadata_log;

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use crate::storage::{LogConfig, LogConfigError, LogManager, LogManagerError, TopicPartition};
use image::{ClusterImage, TopicImage};
use metadata_log::{MetadataLog, MetadataLogError, MetadataRecord};

/// Producer ids are reserved in blocks so the log is not written per InitProducerId.
const PRODUCER_ID_BLOCK: i64 = 1000;
/// Most partitions one topic may have: each is a directory with open files and mapped
/// indexes, so an absurd count is refused instead of exhausting the broker.
pub const MAX_PARTITIONS: i32 = 10_000;
/// Kafka's limit on topic name length.
pub const MAX_TOPIC_NAME_LENGTH: usize = 249;

/// Why a metadata change was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("topic `{0}` already exists")]
    TopicAlreadyExists(String),
    #[error("topic `{0}` does not exist")]
    UnknownTopic(String),
    #[error("invalid topic name `{name}`: {reason}")]
    InvalidTopicName { name: String, reason: &'static str },
    #[error("invalid partition count {requested} for `{topic}`: {reason}")]
    InvalidPartitions {
        topic: String,
        requested: i32,
        reason: String,
    },
    #[error("replication factor {requested} is larger than the {brokers} available broker(s)")]
    InvalidReplicationFactor { requested: i16, brokers: i32 },
    #[error("invalid config: {0}")]
    InvalidConfig(#[from] LogConfigError),
    #[error("metadata log failure: {0}")]
    MetadataLog(#[from] MetadataLogError),
    #[error("storage failure: {0}")]
    Storage(#[from] LogManagerError),
}

/// The single-node controller.
#[derive(Debug)]
pub struct Controller {
    node_id: i32,
    log: Mutex<MetadataLog>,
    image: RwLock<Arc<ClusterImage>>,
    logs: Arc<LogManager>,
    log_defaults: LogConfig,
    /// Producer ids handed out from the reserved block: (next, end of block).
    producer_ids: Mutex<(i64, i64)>,
}

impl Controller {
    /// Replays the metadata log in `dir` and makes the partition logs match the image:
    /// partitions of known topics are created if missing, those of deleted topics removed.
    pub fn open(
        dir: &std::path::Path,
        node_id: i32,
        configured_cluster_id: Option<String>,
        logs: Arc<LogManager>,
        log_defaults: LogConfig,
    ) -> Result<Self, ControllerError> {
        let (mut log, records) = MetadataLog::open(dir)?;
        let mut image = ClusterImage::default();
        for record in &records {
            image.apply(record);
        }
        if image.cluster_id.is_none() {
            let cluster_id =
                configured_cluster_id.unwrap_or_else(|| Uuid::new_v4().simple().to_string());
            let record = MetadataRecord::ClusterIdentified { cluster_id };
            log.append(std::slice::from_ref(&record))?;
            image.apply(&record);
        }
        let controller = Self {
            node_id,
            log: Mutex::new(log),
            image: RwLock::new(Arc::new(image)),
            logs,
            log_defaults,
            producer_ids: Mutex::new((0, 0)),
        };
        controller.reconcile_logs()?;
        Ok(controller)
    }

    fn reconcile_logs(&self) -> Result<(), ControllerError> {
        let image = self.image();
        for log in self.logs.all() {
            let tp = log.topic_partition();
            let known = image
                .topics
                .get(&tp.topic)
                .is_some_and(|t| tp.partition < t.partitions);
            if !known {
                tracing::warn!(topic_partition = %tp, "Removing the log of a partition the metadata does not know");
                self.logs.delete(tp)?;
            }
        }
        for topic in image.topics.values() {
            self.ensure_logs(topic)?;
        }
        Ok(())
    }

    fn ensure_logs(&self, topic: &TopicImage) -> Result<(), ControllerError> {
        let config = self.log_config_for(topic)?;
        for partition in 0..topic.partitions {
            let tp = TopicPartition::new(topic.name.clone(), partition);
            match self.logs.get(&tp) {
                Some(log) => log.update_config(config.clone()),
                None => {
                    self.logs.create(tp, config.clone())?;
                }
            }
        }
        Ok(())
    }

    pub fn node_id(&self) -> i32 {
        self.node_id
    }

    /// A consistent snapshot of the metadata.
    pub fn image(&self) -> Arc<ClusterImage> {
        Arc::clone(&self.image.read())
    }

    pub fn cluster_id(&self) -> String {
        self.image().cluster_id.clone().unwrap_or_default()
    }

    pub fn logs(&self) -> &Arc<LogManager> {
        &self.logs
    }

    pub fn log_defaults(&self) -> &LogConfig {
        &self.log_defaults
    }

    /// The broker defaults with a topic's configs on top.
    pub fn log_config_for(&self, topic: &TopicImage) -> Result<LogConfig, LogConfigError> {
        self.log_defaults
            .with_topic_configs(topic.configs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    fn commit(&self, records: Vec<MetadataRecord>) -> Result<Arc<ClusterImage>, ControllerError> {
        let mut log = self.log.lock();
        log.append(&records)?;
        let mut image = (*self.image()).clone();
        for record in &records {
            image.apply(record);
        }
        let image = Arc::new(image);
        *self.image.write() = Arc::clone(&image);
        Ok(image)
    }

    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<TopicImage, ControllerError> {
        validate_topic_name(name)?;
        if self.image().topics.contains_key(name) {
            return Err(ControllerError::TopicAlreadyExists(name.to_string()));
        }
        if partitions < 1 {
            return Err(ControllerError::InvalidPartitions {
                topic: name.to_string(),
                requested: partitions,
                reason: "must be at least 1".into(),
            });
        }
        if partitions > MAX_PARTITIONS {
            return Err(too_many_partitions(name, partitions));
        }
        let brokers = 1;
        if replication_factor < 1 || i32::from(replication_factor) > brokers {
            return Err(ControllerError::InvalidReplicationFactor {
                requested: replication_factor,
                brokers,
            });
        }
        self.log_defaults
            .with_topic_configs(configs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        let topic = TopicImage {
            name: name.to_string(),
            topic_id: Uuid::new_v4(),
            partitions,
            replication_factor,
            configs,
        };
        if validate_only {
            return Ok(topic);
        }
        self.commit(vec![MetadataRecord::TopicCreated {
            name: topic.name.clone(),
            topic_id: topic.topic_id,
            partitions,
            replication_factor,
            configs: topic.configs.clone(),
        }])?;
        self.ensure_logs(&topic)?;
        tracing::info!(topic = name, partitions, "Created topic");
        Ok(topic)
    }

    pub fn delete_topic(&self, name: &str) -> Result<Uuid, ControllerError> {
        let image = self.image();
        let topic = image
            .topics
            .get(name)
            .ok_or_else(|| ControllerError::UnknownTopic(name.to_string()))?;
        self.commit(vec![MetadataRecord::TopicDeleted {
            name: name.to_string(),
            topic_id: topic.topic_id,
        }])?;
        for partition in 0..topic.partitions {
            self.logs.delete(&TopicPartition::new(name, partition))?;
        }
        tracing::info!(topic = name, "Deleted topic");
        Ok(topic.topic_id)
    }

    pub fn create_partitions(
        &self,
        name: &str,
        total: i32,
        validate_only: bool,
    ) -> Result<(), ControllerError> {
        let image = self.image();
        let topic = image
            .topics
            .get(name)
            .ok_or_else(|| ControllerError::UnknownTopic(name.to_string()))?;
        if total <= topic.partitions {
            return Err(ControllerError::InvalidPartitions {
                topic: name.to_string(),
                requested: total,
                reason: if total == topic.partitions {
                    format!("the topic already has {total} partition(s)")
                } else {
                    format!(
                        "the topic has {} partition(s); partitions can only grow",
                        topic.partitions
                    )
                },
            });
        }
        if total > MAX_PARTITIONS {
            return Err(too_many_partitions(name, total));
        }
        if validate_only {
            return Ok(());
        }
        let image = self.commit(vec![MetadataRecord::PartitionsAdded {
            name: name.to_string(),
            total_partitions: total,
        }])?;
        if let Some(topic) = image.topics.get(name) {
            self.ensure_logs(topic)?;
        }
        Ok(())
    }

    /// Replaces a topic's configs (AlterConfigs; IncrementalAlterConfigs computes the new
    /// set first). The live logs take the new configuration at once.
    pub fn set_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), ControllerError> {
        let image = self.image();
        if !image.topics.contains_key(name) {
            return Err(ControllerError::UnknownTopic(name.to_string()));
        }
        self.log_defaults
            .with_topic_configs(configs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        if validate_only {
            return Ok(());
        }
        let image = self.commit(vec![MetadataRecord::TopicConfigChanged {
            name: name.to_string(),
            configs,
        }])?;
        if let Some(topic) = image.topics.get(name) {
            self.ensure_logs(topic)?;
        }
        Ok(())
    }

    /// A new producer id; ids are reserved durably in blocks.
    pub fn allocate_producer_id(&self) -> Result<i64, ControllerError> {
        let mut ids = self.producer_ids.lock();
        if ids.0 >= ids.1 {
            let start = self.image().next_producer_id;
            let end = start + PRODUCER_ID_BLOCK;
            self.commit(vec![MetadataRecord::ProducerIdsAllocated {
                next_producer_id: end,
            }])?;
            *ids = (start, end);
        }
        let id = ids.0;
        ids.0 += 1;
        Ok(id)
    }
}

fn too_many_partitions(topic: &str, requested: i32) -> ControllerError {
    ControllerError::InvalidPartitions {
        topic: topic.to_string(),
        requested,
        reason: format!("more than the {MAX_PARTITIONS} partitions a topic may have"),
    }
}

/// Kafka's topic name rules.
pub fn validate_topic_name(name: &str) -> Result<(), ControllerError> {
    let invalid = |reason| ControllerError::InvalidTopicName {
        name: name.to_string(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("empty"));
    }
    if name == "." || name == ".." {
        return Err(invalid("'.' and '..' are not allowed"));
    }
    if name.len() > MAX_TOPIC_NAME_LENGTH {
        return Err(invalid("longer than 249 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(invalid(
            "only ASCII letters, digits, '.', '_' and '-' are allowed",
        ));
    }
    Ok(())
}
