//! Followers' fetchers: one task and one connection per leader broker, carrying every
//! partition this broker follows there. Each round is one Fetch (v12, with this broker's
//! id as `replica_id` and each partition's last fetched epoch); the leader answers with
//! records, its high watermark and log start, or the epoch where this replica diverged
//! (KIP-320/595), and the follower truncates to the end of that epoch before fetching on.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{BrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use parking_lot::Mutex;
use prometheus::IntCounter;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::partition::{FollowerError, Partition};
use super::throttle::Throttles;
use crate::config::ReplicationConfig;
use crate::metadata::records::Endpoint;
use crate::model::TopicPartition;
use crate::peers::PeerClient;
use oxbow_kafka_client::{Connection as PeerConnection, WireError as PeerError};

/// Fetch version followers speak: topic names, last fetched epoch, diverging epoch.
const FETCH_VERSION: i16 = 12;
/// How long a fetcher whose every partition is throttled waits for its budget.
const THROTTLE_PAUSE: Duration = Duration::from_millis(50);

/// A partition this broker follows, in the leader epoch the image gave.
#[derive(Debug, Clone)]
pub struct Following {
    pub partition: Arc<Partition>,
    pub leader_epoch: i32,
}

pub type Assignment = BTreeMap<TopicPartition, Following>;

#[derive(Debug)]
struct Fetcher {
    endpoint: Endpoint,
    assignment: watch::Sender<Assignment>,
    task: JoinHandle<()>,
}

/// Every fetcher of this broker, by leader.
#[derive(Debug)]
pub struct FetcherPool {
    node_id: i32,
    config: ReplicationConfig,
    bytes_in: IntCounter,
    throttles: Arc<Throttles>,
    fetchers: Mutex<HashMap<i32, Fetcher>>,
    shutdown: watch::Receiver<bool>,
    peers: Arc<PeerClient>,
}

impl FetcherPool {
    pub fn new(
        node_id: i32,
        config: ReplicationConfig,
        bytes_in: IntCounter,
        throttles: Arc<Throttles>,
        peers: Arc<PeerClient>,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Self {
            node_id,
            config,
            bytes_in,
            throttles,
            fetchers: Mutex::new(HashMap::new()),
            shutdown,
            peers,
        }
    }

    /// Makes the fetchers match `wanted` (leader → its endpoint and the partitions
    /// followed there): new leaders get a fetcher, gone ones lose theirs.
    pub fn assign(&self, wanted: &HashMap<i32, (Endpoint, Assignment)>) {
        let mut fetchers = self.fetchers.lock();
        fetchers.retain(|leader, fetcher| {
            let keep = wanted
                .get(leader)
                .is_some_and(|(endpoint, _)| *endpoint == fetcher.endpoint);
            if !keep {
                fetcher.task.abort();
            }
            keep
        });
        for (leader, (endpoint, assignment)) in wanted {
            match fetchers.get(leader) {
                Some(fetcher) => {
                    fetcher.assignment.send_if_modified(|current| {
                        let same = current.len() == assignment.len()
                            && current.iter().zip(assignment).all(|(a, b)| {
                                a.0 == b.0
                                    && a.1.leader_epoch == b.1.leader_epoch
                                    && Arc::ptr_eq(&a.1.partition, &b.1.partition)
                            });
                        if !same {
                            *current = assignment.clone();
                        }
                        !same
                    });
                }
                None => {
                    let (sender, receiver) = watch::channel(assignment.clone());
                    let link = Link {
                        node_id: self.node_id,
                        leader: *leader,
                        endpoint: endpoint.clone(),
                        config: self.config.clone(),
                        bytes_in: self.bytes_in.clone(),
                        throttles: Arc::clone(&self.throttles),
                        peers: Arc::clone(&self.peers),
                    };
                    let task = tokio::spawn(run(link, receiver, self.shutdown.clone()));
                    fetchers.insert(
                        *leader,
                        Fetcher {
                            endpoint: endpoint.clone(),
                            assignment: sender,
                            task,
                        },
                    );
                }
            }
        }
    }

    pub fn stop_all(&self) {
        for (_, fetcher) in self.fetchers.lock().drain() {
            fetcher.task.abort();
        }
    }
}

/// One fetcher's fixed parts: who fetches from which leader, and how.
#[derive(Debug)]
struct Link {
    node_id: i32,
    leader: i32,
    endpoint: Endpoint,
    config: ReplicationConfig,
    bytes_in: IntCounter,
    throttles: Arc<Throttles>,
    peers: Arc<PeerClient>,
}

/// A connection to the leader's inter-broker listener, over TLS when it is `SSL` or
/// `SASL_SSL`, authenticated when it is `SASL_*`.
async fn connect(link: &Link) -> Result<PeerConnection, PeerError> {
    link.peers
        .connect(&link.endpoint, &format!("oxbow-replica-{}", link.node_id))
        .await
}

async fn run(
    link: Link,
    mut assignment: watch::Receiver<Assignment>,
    mut shutdown: watch::Receiver<bool>,
) {
    let Link { leader, config, .. } = &link;
    let leader = *leader;
    let backoff = Duration::from_millis(config.fetch_backoff_ms);
    let mut connection: Option<PeerConnection> = None;
    let mut last_error = String::new();
    // The leader's high watermark per partition, from its last answer.
    let mut leader_marks: HashMap<TopicPartition, u64> = HashMap::new();
    loop {
        if *shutdown.borrow() {
            return;
        }
        let current = assignment.borrow_and_update().clone();
        if current.is_empty() {
            tokio::select! {
                changed = assignment.changed() => if changed.is_err() { return },
                _ = shutdown.changed() => return,
            }
            continue;
        }
        leader_marks.retain(|tp, _| current.contains_key(tp));
        let outcome = fetch_once(&link, &mut connection, &current, &mut leader_marks).await;
        match outcome {
            Ok(progress) => {
                last_error.clear();
                if !progress {
                    // Every partition answered an error: let the metadata catch up.
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = assignment.changed() => {}
                        _ = shutdown.changed() => return,
                    }
                }
            }
            Err(error) => {
                connection = None;
                let text = error.to_string();
                if text != last_error {
                    tracing::warn!(leader, %error, "Fetching from the leader failed; retrying");
                    last_error = text;
                }
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = shutdown.changed() => return,
                }
            }
        }
    }
}

/// One fetch round. `Ok(false)` when no partition made progress or fetched cleanly.
async fn fetch_once(
    link: &Link,
    connection: &mut Option<PeerConnection>,
    assignment: &Assignment,
    leader_marks: &mut HashMap<TopicPartition, u64>,
) -> Result<bool, PeerError> {
    let Link {
        node_id,
        config,
        bytes_in,
        throttles,
        ..
    } = link;
    let node_id = *node_id;
    // As in Kafka: a replica named in `follower.replication.throttled.replicas` that has not
    // caught up with the leader's high watermark (as its last answer gave it) is left out of
    // the round while this broker's follower budget is spent. Once the leader's high
    // watermark waits for this replica (it is joining the ISR), it is caught up by
    // definition and never held back.
    let throttled: HashSet<&TopicPartition> = assignment
        .iter()
        .filter(|(tp, following)| {
            let log = following.partition.log();
            log.config()
                .follower_throttled_replicas
                .contains(tp.partition, node_id)
                && leader_marks
                    .get(*tp)
                    .is_none_or(|mark| log.log_end_offset() < *mark)
        })
        .map(|(tp, _)| tp)
        .collect();
    let hold_throttled = throttles.follower.exceeded();
    if connection.is_none() {
        *connection = Some(connect(link).await?);
    }
    let Some(peer) = connection.as_mut() else {
        return Ok(false);
    };
    let mut topics: BTreeMap<String, Vec<FetchPartition>> = BTreeMap::new();
    for (tp, following) in assignment {
        if hold_throttled && throttled.contains(tp) {
            continue;
        }
        let log = following.partition.log();
        topics.entry(tp.topic.clone()).or_default().push(
            FetchPartition::default()
                .with_partition(tp.partition)
                .with_current_leader_epoch(following.leader_epoch)
                .with_fetch_offset(log.log_end_offset() as i64)
                .with_last_fetched_epoch(log.latest_epoch().unwrap_or(-1))
                .with_log_start_offset(log.log_start_offset() as i64)
                .with_partition_max_bytes(config.fetch_max_bytes),
        );
    }
    if topics.is_empty() {
        // Everything followed here is throttled and the budget is spent.
        tokio::time::sleep(THROTTLE_PAUSE).await;
        return Ok(true);
    }
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(node_id))
        .with_max_wait_ms(config.fetch_wait_max_ms)
        .with_min_bytes(1)
        .with_max_bytes(config.fetch_response_max_bytes)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(
            topics
                .into_iter()
                .map(|(name, partitions)| {
                    FetchTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(name)))
                        .with_partitions(partitions)
                })
                .collect(),
        );
    let wait = Duration::from_millis(config.fetch_wait_max_ms.max(0) as u64);
    let response = peer
        .call_version(&request, FETCH_VERSION, wait + Duration::from_secs(10))
        .await?;
    let mut applying = Vec::new();
    for topic in response.responses {
        for data in topic.partitions {
            let tp = TopicPartition::new(topic.topic.0.to_string(), data.partition_index);
            let Some(following) = assignment.get(&tp) else {
                continue;
            };
            if let Some(records) = &data.records {
                bytes_in.inc_by(records.len() as u64);
                if throttled.contains(&tp) {
                    throttles.follower.record(records.len() as u64);
                }
            }
            if let Ok(mark) = u64::try_from(data.high_watermark) {
                leader_marks.insert(tp.clone(), mark);
            }
            applying.push((following.clone(), tp, data));
        }
    }
    // Off the reactor, as the leader's appends: a write the kernel holds up stalls this
    // fetcher only, not the clients served by the same threads.
    let applied = tokio::task::spawn_blocking(move || {
        let mut progress = false;
        for (following, tp, data) in applying {
            progress |= handle_partition(&following, &tp, data);
        }
        progress
    })
    .await;
    match applied {
        Ok(progress) => Ok(progress),
        Err(error) => {
            tracing::error!(%error, "Replication: applying a fetch response failed");
            Ok(false)
        }
    }
}

/// Applies one partition's answer. Returns whether it was answered without error.
fn handle_partition(following: &Following, tp: &TopicPartition, data: PartitionData) -> bool {
    let partition = &following.partition;
    if partition.is_leader() || partition.role().leader_epoch != following.leader_epoch {
        // The role changed while the fetch was out; the next assignment takes over.
        return false;
    }
    let log = partition.log();
    match ResponseError::try_from_code(data.error_code) {
        None => {}
        Some(ResponseError::OffsetOutOfRange) => {
            let leader_start = u64::try_from(data.log_start_offset).unwrap_or(0);
            let leader_high_watermark = u64::try_from(data.high_watermark).unwrap_or(0);
            let epoch = following.leader_epoch;
            let result = if log.log_end_offset() < leader_start {
                tracing::info!(topic_partition = %tp, leader_start, "The leader's log starts past this replica's end; restarting the replica there");
                partition.restart_as_follower(epoch, leader_start)
            } else {
                tracing::warn!(topic_partition = %tp, leader_high_watermark, "This replica is ahead of its leader; truncating to the leader's high watermark");
                partition
                    .truncate_as_follower(epoch, leader_high_watermark)
                    .map(|_| ())
            };
            if let Err(error) = result {
                tracing::error!(topic_partition = %tp, %error, "Cannot realign the replica");
            }
            return false;
        }
        Some(error) => {
            tracing::debug!(topic_partition = %tp, ?error, "The leader refused a follower fetch");
            return false;
        }
    }
    if data.diverging_epoch.epoch >= 0 || data.diverging_epoch.end_offset >= 0 {
        let leader_epoch = data.diverging_epoch.epoch;
        let leader_end = u64::try_from(data.diverging_epoch.end_offset).unwrap_or(0);
        let target = match log.end_offset_for_epoch(leader_epoch) {
            // Both know the epoch: keep what both have of it.
            Some((epoch, end)) if epoch == leader_epoch => end.min(leader_end),
            // This replica's largest epoch below is older: its end is the safe point,
            // and the next fetch asks again from there.
            Some((_, end)) => end.min(leader_end),
            // No epoch that old here either: the leader's answer is the bound.
            None => leader_end.min(log.log_end_offset()),
        };
        tracing::info!(topic_partition = %tp, leader_epoch, leader_end, target, "Truncating a divergent suffix");
        return match partition.truncate_as_follower(following.leader_epoch, target) {
            Ok(_) => true,
            Err(FollowerError::RoleChanged) => false,
            Err(error) => {
                tracing::error!(topic_partition = %tp, %error, "Truncation failed");
                false
            }
        };
    }
    let records = data.records.unwrap_or_default();
    let high_watermark = u64::try_from(data.high_watermark).unwrap_or(0);
    let log_start = u64::try_from(data.log_start_offset).unwrap_or(0);
    match partition.append_as_follower(following.leader_epoch, &records, high_watermark, log_start)
    {
        Ok(_) => true,
        Err(FollowerError::RoleChanged) => false,
        Err(error) => {
            tracing::warn!(topic_partition = %tp, %error, "Cannot append what the leader sent");
            false
        }
    }
}
