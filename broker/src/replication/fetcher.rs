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
use crate::config::{InterBrokerSasl, ReplicationConfig};
use crate::metadata::records::Endpoint;
use crate::security::ServerTls;
use crate::storage::TopicPartition;
use oxbow_kafka_client::{Connection as PeerConnection, WireError as PeerError};

/// Fetch version followers speak: topic names, last fetched epoch, diverging epoch.
const FETCH_VERSION: i16 = 12;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
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
    security: PeerSecurity,
}

/// How this broker connects to the others' inter-broker listener.
#[derive(Debug, Clone, Default)]
pub struct PeerSecurity {
    /// When the inter-broker listener is `SSL` or `SASL_SSL`: over TLS, with these stores.
    pub tls: Option<Arc<ServerTls>>,
    /// When it is `SASL_*`: authenticated first.
    pub sasl: Option<Arc<InterBrokerSasl>>,
}

impl FetcherPool {
    pub fn new(
        node_id: i32,
        config: ReplicationConfig,
        bytes_in: IntCounter,
        throttles: Arc<Throttles>,
        security: PeerSecurity,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Self {
            node_id,
            config,
            bytes_in,
            throttles,
            fetchers: Mutex::new(HashMap::new()),
            shutdown,
            security,
        }
    }

    /// A connection to another broker's inter-broker listener, as the fetchers make
    /// theirs (the transaction coordinator sends markers over it).
    pub async fn connect_peer(
        &self,
        endpoint: &Endpoint,
        client_id: &str,
    ) -> Result<PeerConnection, PeerError> {
        connect_to(
            endpoint,
            client_id,
            self.security.tls.as_ref(),
            self.security.sasl.as_ref(),
        )
        .await
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
                        tls: self.security.tls.clone(),
                        sasl: self.security.sasl.clone(),
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
    tls: Option<Arc<ServerTls>>,
    sasl: Option<Arc<InterBrokerSasl>>,
}

/// A connection to the leader's inter-broker listener, over TLS when it is `SSL` or
/// `SASL_SSL`, authenticated when it is `SASL_*`.
async fn connect(link: &Link) -> Result<PeerConnection, PeerError> {
    connect_to(
        &link.endpoint,
        &format!("oxbow-replica-{}", link.node_id),
        link.tls.as_ref(),
        link.sasl.as_ref(),
    )
    .await
}

/// A connection to another broker's inter-broker listener (TLS and SASL as configured).
async fn connect_to(
    endpoint: &Endpoint,
    client_id: &str,
    tls: Option<&Arc<ServerTls>>,
    sasl: Option<&Arc<InterBrokerSasl>>,
) -> Result<PeerConnection, PeerError> {
    let address = socket_address(&endpoint.host, endpoint.port);
    let tls = match tls {
        Some(tls) => tls
            .connector(&endpoint.host)
            .map_err(|error| PeerError::Tls {
                address: address.clone(),
                source: std::io::Error::other(error.to_string()),
            })?,
        None => None,
    };
    let mut connection = match tls {
        Some((connector, name)) => {
            PeerConnection::connect_tls(&address, client_id, CONNECT_TIMEOUT, &connector, name)
                .await?
        }
        None => PeerConnection::connect(&address, client_id, CONNECT_TIMEOUT).await?,
    };
    if let Some(sasl) = sasl {
        authenticate(&mut connection, sasl).await?;
    }
    Ok(connection)
}

/// SaslHandshake v1 and SaslAuthenticate v1 as a Kafka client: SCRAM's two rounds (the
/// leader's signature checked) or PLAIN's one.
async fn authenticate(
    connection: &mut PeerConnection,
    sasl: &InterBrokerSasl,
) -> Result<(), PeerError> {
    use crate::security::{SaslMechanism, ScramClient};
    use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
    let address = connection.address().to_string();
    let failed = |reason: String| PeerError::Authentication {
        address: address.clone(),
        reason,
    };
    let handshake = connection
        .call_version(
            &SaslHandshakeRequest::default()
                .with_mechanism(StrBytes::from_static_str(sasl.mechanism.name())),
            1,
            CONNECT_TIMEOUT,
        )
        .await?;
    if handshake.error_code != 0 {
        return Err(failed(format!(
            "SaslHandshake for {} answered {}",
            sasl.mechanism.name(),
            oxbow_kafka_client::error_name(handshake.error_code)
        )));
    }
    let mut step = async |bytes: Vec<u8>| -> Result<Vec<u8>, PeerError> {
        let answer = connection
            .call_version(
                &SaslAuthenticateRequest::default().with_auth_bytes(bytes.into()),
                1,
                CONNECT_TIMEOUT,
            )
            .await?;
        if answer.error_code != 0 {
            return Err(failed(format!(
                "{}: {}",
                oxbow_kafka_client::error_name(answer.error_code),
                answer.error_message.as_deref().unwrap_or_default()
            )));
        }
        Ok(answer.auth_bytes.to_vec())
    };
    match sasl.mechanism {
        SaslMechanism::Scram(mechanism) => {
            let mut client = ScramClient::new(mechanism, &sasl.username, &sasl.password);
            let server_first = step(client.client_first()).await?;
            let client_final = client.client_final(&server_first).map_err(&failed)?;
            let server_final = step(client_final).await?;
            client.verify_server_final(&server_final).map_err(&failed)
        }
        SaslMechanism::Plain => {
            let token = format!("\0{}\0{}", sasl.username, sasl.password);
            step(token.into_bytes()).await.map(|_| ())
        }
        SaslMechanism::OAuthBearer => Err(failed(
            "OAUTHBEARER is not used between brokers".to_string(),
        )),
    }
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

/// `host:port`, with an IPv6 literal in brackets.
fn socket_address(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}
