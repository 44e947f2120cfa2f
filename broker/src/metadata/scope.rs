//! Which part of a new metadata image a broker must look at again.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::image::{ClusterImage, TopicImage};

/// The part of an image a broker must look at again: every topic, or only those whose
/// image changed. Successive images of one run share unchanged topics (`Arc`), so a
/// topic created, altered or moved costs its own partitions, not the cluster's.
#[derive(Debug)]
pub enum Scope {
    Everything,
    Topics(BTreeSet<String>),
}

impl Scope {
    pub fn between(previous: &ClusterImage, image: &ClusterImage) -> Self {
        // Brokers (leaders' endpoints, fencing) and dynamic broker configs (log defaults,
        // throttles) reach every partition.
        if previous.brokers != image.brokers || previous.broker_configs != image.broker_configs {
            return Self::Everything;
        }
        let mut changed: BTreeSet<String> = image
            .topics
            .iter()
            .filter(|(name, now)| match previous.topics.get(*name) {
                Some(before) => !Arc::ptr_eq(before, now) && before != *now,
                None => true,
            })
            .map(|(name, _)| name.clone())
            .collect();
        changed.extend(
            previous
                .topics
                .keys()
                .filter(|name| !image.topics.contains_key(*name))
                .cloned(),
        );
        Self::Topics(changed)
    }

    pub fn covers(&self, topic: &str) -> bool {
        match self {
            Self::Everything => true,
            Self::Topics(topics) => topics.contains(topic),
        }
    }

    /// The topics of `image` in this scope.
    pub fn topics<'a>(
        &'a self,
        image: &'a ClusterImage,
    ) -> Box<dyn Iterator<Item = &'a TopicImage> + 'a> {
        match self {
            Self::Everything => Box::new(image.topics.values().map(Arc::as_ref)),
            Self::Topics(topics) => Box::new(
                topics
                    .iter()
                    .filter_map(|name| image.topics.get(name).map(Arc::as_ref)),
            ),
        }
    }
}
