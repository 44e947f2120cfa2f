//! Which brokers a Metadata answer lists: the live (unfenced) ones, and for a short while
//! the ones just fenced.
//!
//! A broker that dies is fenced and loses its leaderships in one step, so the first
//! Metadata answer after it names the new leaders and no longer lists the dead broker.
//! librdkafka handles that answer in two racing steps: it moves each partition to its new
//! leader, and it decommissions the broker that left the list, whose thread hands the
//! partitions it still held to the internal broker; the partition then waits for the next
//! one-second leader scan (the 2 s failovers of issue 51: one more second, every other
//! kill). Listing a just-fenced broker for a few seconds more lets the partitions move
//! first; a later answer drops it when it holds nothing. Kafka lists a dead broker for its
//! whole session timeout (9 s), so clients already cope with a listed broker that refuses
//! connections.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::metadata::image::{BrokerImage, ClusterImage};

/// How long a fenced broker stays listed after this broker first answered without it
/// being live: past librdkafka's one-second scan, well inside Kafka's session timeout.
pub const FENCED_LISTED_FOR: Duration = Duration::from_secs(5);

/// When this broker first saw each fenced broker fenced.
#[derive(Debug, Default)]
pub struct RecentlyFenced {
    since: Mutex<HashMap<i32, Instant>>,
}

impl RecentlyFenced {
    /// The brokers to list at `now`: every live one, and every one fenced for less than
    /// [`FENCED_LISTED_FOR`].
    pub fn listed<'a>(&self, image: &'a ClusterImage, now: Instant) -> Vec<&'a BrokerImage> {
        let mut since = self.since.lock();
        since.retain(|node_id, _| image.brokers.get(node_id).is_some_and(|b| b.fenced));
        image
            .brokers
            .values()
            .filter(|broker| {
                !broker.fenced || {
                    let fenced_at = *since.entry(broker.node_id).or_insert(now);
                    now.duration_since(fenced_at) < FENCED_LISTED_FOR
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::Endpoint;

    fn broker(node_id: i32, fenced: bool) -> BrokerImage {
        BrokerImage {
            node_id,
            incarnation: uuid::Uuid::nil(),
            endpoint: Endpoint {
                host: "127.0.0.1".into(),
                port: 9092,
            },
            rack: None,
            fenced,
            listeners: Default::default(),
            supported_features: None,
        }
    }

    fn ids(listed: Vec<&BrokerImage>) -> Vec<i32> {
        listed.iter().map(|b| b.node_id).collect()
    }

    #[test]
    fn a_fenced_broker_stays_listed_for_a_moment_then_leaves() {
        let recently = RecentlyFenced::default();
        let mut image = ClusterImage::default();
        image.brokers.insert(1, broker(1, false));
        image.brokers.insert(2, broker(2, false));
        let start = Instant::now();
        assert_eq!(ids(recently.listed(&image, start)), vec![1, 2]);

        image.brokers.insert(2, broker(2, true));
        let fenced = start + Duration::from_secs(1);
        assert_eq!(ids(recently.listed(&image, fenced)), vec![1, 2]);
        let almost = fenced + FENCED_LISTED_FOR - Duration::from_millis(1);
        assert_eq!(ids(recently.listed(&image, almost)), vec![1, 2]);
        assert_eq!(
            ids(recently.listed(&image, fenced + FENCED_LISTED_FOR)),
            vec![1]
        );

        // Back (unfenced), then fenced again: listed for a moment again.
        image.brokers.insert(2, broker(2, false));
        let back = fenced + Duration::from_secs(10);
        assert_eq!(ids(recently.listed(&image, back)), vec![1, 2]);
        image.brokers.insert(2, broker(2, true));
        let again = back + Duration::from_secs(1);
        assert_eq!(ids(recently.listed(&image, again)), vec![1, 2]);
        assert_eq!(
            ids(recently.listed(&image, again + FENCED_LISTED_FOR)),
            vec![1]
        );
    }
}
