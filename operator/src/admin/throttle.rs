//! Throttled moves, the way `kafka-reassign-partitions --throttle` does them: a cluster-wide
//! rate (`leader/follower.replication.throttled.rate` on the brokers' default config), and
//! on every moving topic the replicas it applies to (`leader.replication.throttled.replicas`:
//! the replicas that serve the copy; `follower.replication.throttled.replicas`: the new ones
//! that fetch it). Only the named replicas are throttled, so clients never are. The lists
//! are removed once the topic's partitions have stopped moving; they live in the metadata
//! log, so an operator that restarts finds and removes them too.

use std::collections::{BTreeMap, BTreeSet};

use oxbow_placement::reassignment::TopicPartition;

use super::{AdminClient, AdminError, ConfigChange, RESOURCE_BROKER, RESOURCE_TOPIC};

const LEADER_REPLICAS: &str = "leader.replication.throttled.replicas";
const FOLLOWER_REPLICAS: &str = "follower.replication.throttled.replicas";
/// The per-topic lists a move sets and removes (the operator owns them).
pub const THROTTLED_REPLICAS_KEYS: [&str; 2] = [LEADER_REPLICAS, FOLLOWER_REPLICAS];
const RATE_KEYS: [&str; 2] = [
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
];

/// One partition's move: its index, its replicas now and after.
type Move<'a> = (i32, &'a [i32], &'a [i32]);

/// Whether a topic config is a move's throttle (not part of any Topic's spec).
pub fn is_move_throttle(key: &str) -> bool {
    THROTTLED_REPLICAS_KEYS.contains(&key)
}

/// The leader and follower throttle lists (`partition:broker,...`) of one topic's moves:
/// every replica a moving partition has now serves, every replica it gains fetches.
pub fn throttled_replicas<'a>(moves: impl IntoIterator<Item = Move<'a>>) -> (String, String) {
    let mut leaders = BTreeSet::new();
    let mut followers = BTreeSet::new();
    for (partition, current, target) in moves {
        leaders.extend(current.iter().map(|id| (partition, *id)));
        followers.extend(
            target
                .iter()
                .filter(|id| !current.contains(id))
                .map(|id| (partition, *id)),
        );
    }
    let join = |set: BTreeSet<(i32, i32)>| {
        set.iter()
            .map(|(p, b)| format!("{p}:{b}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    (join(leaders), join(followers))
}

impl AdminClient {
    /// Starts `plan` (new replica lists) throttled to `rate` bytes/s per broker: the rate,
    /// then each moving topic's throttle lists, then one reassignment of every partition.
    pub async fn start_moves(
        &mut self,
        current: &BTreeMap<TopicPartition, Vec<i32>>,
        plan: &BTreeMap<TopicPartition, Vec<i32>>,
        rate: u64,
    ) -> Result<(), AdminError> {
        if plan.is_empty() {
            return Ok(());
        }
        let mut by_topic: BTreeMap<&str, Vec<Move>> = BTreeMap::new();
        for (partition, target) in plan {
            let now = current.get(partition).map_or(&[][..], Vec::as_slice);
            by_topic.entry(partition.topic.as_str()).or_default().push((
                partition.partition,
                now,
                target.as_slice(),
            ));
        }
        let mut changes = vec![ConfigChange {
            resource_type: RESOURCE_BROKER,
            name: String::new(),
            set: RATE_KEYS
                .iter()
                .map(|key| (key.to_string(), rate.to_string()))
                .collect(),
            delete: Vec::new(),
        }];
        for (topic, moves) in by_topic {
            let (leaders, followers) = throttled_replicas(moves);
            let mut set = BTreeMap::new();
            set.insert(LEADER_REPLICAS.to_string(), leaders);
            set.insert(FOLLOWER_REPLICAS.to_string(), followers);
            changes.push(ConfigChange {
                resource_type: RESOURCE_TOPIC,
                name: topic.to_string(),
                set,
                delete: Vec::new(),
            });
        }
        self.alter_configs(changes).await?;
        self.reassign(plan).await
    }

    /// Removes the throttle lists of every topic in `topics` whose partitions no longer
    /// move; returns the topics cleared.
    pub async fn clear_finished_throttles(
        &mut self,
        topics: &[String],
        moving: &BTreeSet<TopicPartition>,
    ) -> Result<Vec<String>, AdminError> {
        if topics.is_empty() {
            return Ok(Vec::new());
        }
        let still: BTreeSet<&str> = moving.iter().map(|p| p.topic.as_str()).collect();
        let configs = self.configs_of_topics(topics, true).await?;
        let mut cleared = Vec::new();
        let mut changes = Vec::new();
        for (topic, configs) in configs {
            let keys: Vec<String> = configs
                .keys()
                .filter(|k| is_move_throttle(k))
                .cloned()
                .collect();
            if keys.is_empty() || still.contains(topic.as_str()) {
                continue;
            }
            changes.push(ConfigChange {
                resource_type: RESOURCE_TOPIC,
                name: topic.clone(),
                set: BTreeMap::new(),
                delete: keys,
            });
            cleared.push(topic);
        }
        self.alter_configs(changes).await?;
        Ok(cleared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_replicas_serve_and_new_ones_fetch() {
        let (leaders, followers) = throttled_replicas([
            (0, &[1, 2][..], &[1, 3][..]),
            (2, &[2, 1][..], &[2, 1, 4][..]),
        ]);
        assert_eq!(leaders, "0:1,0:2,2:1,2:2");
        assert_eq!(followers, "0:3,2:4");
        // A move that only reorders (a leadership swap) copies nothing.
        let (_, followers) = throttled_replicas([(5, &[1, 2][..], &[2, 1][..])]);
        assert_eq!(followers, "");
    }
}
