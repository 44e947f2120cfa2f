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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::MetadataRecord;
    use crate::metadata::testing::{add_topic, image};

    fn topic_scope(scope: Scope) -> Vec<String> {
        match scope {
            Scope::Topics(topics) => topics.into_iter().collect(),
            Scope::Everything => vec!["(everything)".to_string()],
        }
    }

    #[test]
    fn scope_names_only_the_topics_an_image_changed() {
        let first = image(&[("a", &[&[1]]), ("b", &[&[1]])]);
        let mut second = first.clone();
        add_topic(&mut second, "c", 103, &[&[1]]);
        let mut moved = second.topics["b"].partitions[0].clone();
        moved.leader_epoch += 1;
        second.apply(&MetadataRecord::PartitionChanged {
            topic: "b".into(),
            partition: 0,
            state: moved,
        });
        assert_eq!(topic_scope(Scope::between(&first, &second)), ["b", "c"]);
        assert!(Arc::ptr_eq(&first.topics["a"], &second.topics["a"]));
        // An image rebuilt from scratch (a snapshot) shares nothing but equals where equal.
        let rebuilt: ClusterImage =
            serde_json::from_value(serde_json::to_value(&second).unwrap()).unwrap();
        assert_eq!(
            topic_scope(Scope::between(&second, &rebuilt)),
            Vec::<String>::new()
        );
        let mut third = second.clone();
        third.apply(&MetadataRecord::TopicDeleted {
            name: "a".into(),
            topic_id: second.topics["a"].topic_id,
        });
        assert_eq!(topic_scope(Scope::between(&second, &third)), ["a"]);
        // A broker's registration reaches every partition (a leader's address).
        let mut fourth = third.clone();
        fourth.apply(&MetadataRecord::BrokerUnfenced { node_id: 9 });
        assert_eq!(
            topic_scope(Scope::between(&third, &fourth)),
            Vec::<String>::new()
        );
        fourth.apply(&MetadataRecord::BrokerRegistered {
            node_id: 9,
            incarnation: uuid::Uuid::from_u128(9),
            endpoint: crate::metadata::records::Endpoint {
                host: "h".into(),
                port: 1,
            },
            rack: None,
            listeners: Default::default(),
            supported_features: None,
        });
        assert_eq!(
            topic_scope(Scope::between(&third, &fourth)),
            ["(everything)"]
        );
    }
}
