//! The publisher: makes this broker's partition logs match each new image. A log is
//! created for every partition this broker is a replica of, takes its topic's configs
//! when they change, and is removed when the image no longer places it here.
//!
//! A broker that has not caught up with the quorum must not act on what its image lacks:
//! a log the image does not mention is removed only if an earlier image of this run placed
//! it here (a deletion or move this broker saw happen), or once this broker has applied
//! the log up to the index the controller gave it at registration. Until then it is kept
//! and reported once.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::watch;

use super::BrokerSide;
use super::feed::MetadataView;
use crate::coordinator::LeadershipChanges;
use crate::metadata::image::ClusterImage;
use crate::metadata::scope::Scope;
use crate::replication::ReplicaManager;
use crate::storage::{LogConfig, LogManager, TopicPartition};

#[derive(Debug)]
pub struct Publisher {
    node_id: i32,
    replicas: Arc<ReplicaManager>,
    logs: Arc<LogManager>,
    /// The coordinator runtime's channel: partitions this broker started or stopped leading.
    leadership: LeadershipChanges,
    log_defaults: LogConfig,
    /// The index this broker must reach before removing logs its image does not know.
    caught_up_target: watch::Receiver<Option<u64>>,
    /// The index of the last image applied to the logs.
    published: watch::Sender<u64>,
    reported_strays: BTreeSet<TopicPartition>,
    applied_once: bool,
    caught_up_before: bool,
    /// Topics with a log this broker failed to create, looked at again with the next image.
    failed_topics: BTreeSet<String>,
}

impl Publisher {
    pub fn new(
        side: BrokerSide,
        log_defaults: LogConfig,
        caught_up_target: watch::Receiver<Option<u64>>,
    ) -> (Self, watch::Receiver<u64>) {
        let (published, receiver) = watch::channel(0);
        (
            Self {
                node_id: side.replicas.node_id(),
                logs: side.logs,
                replicas: side.replicas,
                leadership: side.leadership,
                log_defaults,
                caught_up_target,
                published,
                reported_strays: BTreeSet::new(),
                applied_once: false,
                caught_up_before: false,
                failed_topics: BTreeSet::new(),
            },
            receiver,
        )
    }

    /// Applies every new image until shutdown.
    pub async fn run(
        mut self,
        mut views: watch::Receiver<Arc<MetadataView>>,
        mut shutdown: watch::Receiver<bool>,
    ) {
        let mut previous = Arc::new(ClusterImage::default());
        loop {
            let view = Arc::clone(&views.borrow_and_update());
            let caught_up = self
                .caught_up_target
                .borrow()
                .is_some_and(|target| view.applied_index >= target);
            let publisher = self;
            let before = Arc::clone(&previous);
            let image = Arc::clone(&view.image);
            let applied = tokio::task::spawn_blocking(move || {
                let mut publisher = publisher;
                publisher.apply(&before, &image, caught_up);
                publisher
            })
            .await;
            self = match applied {
                Ok(publisher) => publisher,
                Err(error) => {
                    tracing::error!(%error, "Publishing metadata to the logs failed");
                    return;
                }
            };
            previous = Arc::clone(&view.image);
            self.published.send_replace(view.applied_index);
            tokio::select! {
                changed = views.changed() => if changed.is_err() { return },
                changed = self.caught_up_target.changed() => if changed.is_err() { return },
                _ = shutdown.changed() => return,
            }
        }
    }

    fn config_for(&self, image: &ClusterImage, topic: &str) -> LogConfig {
        let defaults = crate::metadata::dynamic_configs::log_defaults(
            &self.log_defaults,
            &image.broker_configs,
            self.node_id,
        );
        let Some(topic) = image.topics.get(topic) else {
            return defaults;
        };
        defaults
            .with_topic_configs(topic.configs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .unwrap_or_else(|error| {
                tracing::error!(topic = %topic.name, %error, "Topic configs in the metadata are invalid here; using broker defaults");
                defaults.clone()
            })
    }

    fn hosted(&self, image: &ClusterImage, scope: &Scope) -> BTreeSet<TopicPartition> {
        scope
            .topics(image)
            .flat_map(|topic| {
                topic
                    .partitions
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.replicas.contains(&self.node_id))
                    .map(|(index, _)| TopicPartition::new(topic.name.clone(), index as i32))
            })
            .collect()
    }

    fn apply(&mut self, previous: &ClusterImage, image: &ClusterImage, caught_up: bool) {
        // Strays (logs no image of this run placed here) are looked for by walking every
        // log, so only when the answer can change: at the first image and when this broker
        // becomes caught up.
        let look_for_strays = !self.applied_once || caught_up != self.caught_up_before;
        let scope = match Scope::between(previous, image) {
            _ if look_for_strays => Scope::Everything,
            Scope::Everything => Scope::Everything,
            // A log that could not be created (a full disk, no file descriptors) is tried
            // again with every image, as before its topic was last changed.
            Scope::Topics(mut topics) => {
                topics.append(&mut self.failed_topics);
                Scope::Topics(topics)
            }
        };
        self.failed_topics.clear();
        let hosted = self.hosted(image, &scope);
        let hosted_before = self.hosted(previous, &scope);
        // A dynamic broker config can change the defaults of every topic.
        let changed_defaults = previous.broker_configs != image.broker_configs;
        for tp in &hosted {
            let changed_configs = changed_defaults
                || previous.topics.get(&tp.topic).map(|t| &t.configs)
                    != image.topics.get(&tp.topic).map(|t| &t.configs);
            let recreated = matches!(
                (previous.topics.get(&tp.topic), image.topics.get(&tp.topic)),
                (Some(before), Some(now)) if before.topic_id != now.topic_id
            );
            if recreated {
                tracing::info!(topic_partition = %tp, "The topic was deleted and created again; starting its log afresh");
                if let Err(error) = self.logs.delete(tp) {
                    tracing::error!(topic_partition = %tp, %error, "Cannot remove a partition log");
                }
            }
            match self.logs.get(tp) {
                Some(log) if changed_configs => {
                    log.update_config(self.config_for(image, &tp.topic))
                }
                Some(_) => {}
                None => {
                    if let Err(error) = self
                        .logs
                        .create(tp.clone(), self.config_for(image, &tp.topic))
                    {
                        tracing::error!(topic_partition = %tp, %error, "Cannot create a partition log");
                        self.failed_topics.insert(tp.topic.clone());
                    }
                }
            }
        }
        let candidates: Vec<TopicPartition> = if look_for_strays {
            self.logs
                .all()
                .iter()
                .map(|log| log.topic_partition().clone())
                .collect()
        } else {
            hosted_before.difference(&hosted).cloned().collect()
        };
        for tp in candidates {
            if hosted.contains(&tp) {
                continue;
            }
            if hosted_before.contains(&tp) || caught_up {
                if self.logs.get(&tp).is_none() {
                    continue;
                }
                tracing::info!(topic_partition = %tp, "Removing a partition log the metadata no longer places here");
                if let Err(error) = self.logs.delete(&tp) {
                    tracing::error!(topic_partition = %tp, %error, "Cannot remove a partition log");
                }
            } else if self.reported_strays.insert(tp.clone()) {
                tracing::warn!(topic_partition = %tp, "Keeping a partition log the metadata does not mention until this broker has caught up with the quorum");
            }
        }
        for change in self.replicas.apply_image(image, &scope) {
            // Nobody listens only while the broker shuts down.
            let _ = self.leadership.send(change);
        }
        self.applied_once = true;
        self.caught_up_before = caught_up;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::MetadataRecord;
    use crate::metadata::testing::{add_topic, image};
    use crate::storage::SystemClock;

    #[tokio::test]
    async fn logs_follow_the_image_and_strays_wait_until_caught_up() {
        let dir = tempfile::tempdir().unwrap();
        let defaults = LogConfig::default();
        let (logs, _) = LogManager::open(
            &[dir.path().to_path_buf()],
            &|_| defaults.clone(),
            Arc::new(SystemClock),
        )
        .unwrap();
        let logs = Arc::new(logs);
        // A log from before this run that the (not yet caught-up) image does not mention.
        let stray = TopicPartition::new("old", 0);
        logs.create(stray.clone(), defaults.clone()).unwrap();
        let (_target, caught_up_target) = watch::channel(None);
        let (_stop, shutdown) = watch::channel(false);
        let (replicas, _) = ReplicaManager::new(
            1,
            crate::config::BrokerConfig::load(&[], Vec::new(), &[])
                .unwrap()
                .replication,
            Arc::clone(&logs),
            Arc::new(SystemClock),
            crate::replication::ReplicationMetrics::new(&prometheus::Registry::new(), false)
                .unwrap(),
            Default::default(),
            shutdown,
        );
        let (leadership, _) = tokio::sync::mpsc::unbounded_channel();
        let (mut publisher, _) = Publisher::new(
            BrokerSide {
                replicas: Arc::clone(&replicas),
                logs: Arc::clone(&logs),
                leadership,
            },
            defaults,
            caught_up_target,
        );

        let first = image(&[("a", &[&[1, 2], &[2, 3]])]);
        publisher.apply(&ClusterImage::default(), &first, false);
        assert!(
            logs.get(&TopicPartition::new("a", 0)).is_some(),
            "a replica here gets a log"
        );
        assert!(
            logs.get(&TopicPartition::new("a", 1)).is_none(),
            "no log where not a replica"
        );
        assert!(logs.get(&stray).is_some(), "kept until caught up");

        // Moved away from this broker (seen happen in this run): removed at once.
        let second = image(&[("a", &[&[2, 3], &[2, 3]])]);
        publisher.apply(&first, &second, false);
        assert!(logs.get(&TopicPartition::new("a", 0)).is_none());
        assert!(logs.get(&stray).is_some());

        // Caught up: what the image does not place here goes.
        publisher.apply(&second, &second, true);
        assert!(logs.get(&stray).is_none());

        // A topic created next to an unchanged one: only the new topic is looked at, and
        // what was applied before stays as it was.
        let kept = TopicPartition::new("k", 0);
        let with_kept = image(&[("a", &[&[2, 3], &[2, 3]]), ("k", &[&[1, 2]])]);
        publisher.apply(&second, &with_kept, true);
        assert!(logs.get(&kept).is_some() && replicas.partition(&kept).is_some());
        let mut third = with_kept.clone();
        add_topic(&mut third, "n", 102, &[&[1, 3]]);
        publisher.apply(&with_kept, &third, true);
        for tp in [kept.clone(), TopicPartition::new("n", 0)] {
            assert!(logs.get(&tp).is_some(), "{tp} has its log");
            assert!(replicas.partition(&tp).is_some(), "{tp} has its role");
        }
        // Deleting the new topic removes its logs and roles only.
        let mut fourth = third.clone();
        fourth.apply(&MetadataRecord::TopicDeleted {
            name: "n".into(),
            topic_id: third.topics["n"].topic_id,
        });
        publisher.apply(&third, &fourth, true);
        assert!(logs.get(&TopicPartition::new("n", 0)).is_none());
        assert!(replicas.partition(&TopicPartition::new("n", 0)).is_none());
        assert!(logs.get(&kept).is_some() && replicas.partition(&kept).is_some());
    }
}
