//! Cluster metadata: brokers, topics, partitions, configs and producer ids, agreed on by
//! a quorum of controller voters and followed by every broker.
//!
//! ```text
//!   Kafka admin API / broker lifecycle
//!        | ControllerCommand (local, or forwarded over the controller listener)
//!        v
//!   active::ActiveController --decisions::decide--> records --quorum (openraft)--> every voter
//!                                                                  |
//!   observers (broker-only nodes) <--lifecycle::run_observer-- feed::MetadataFeed
//!                                                                  |
//!                                       publisher::Publisher: partition logs of this broker
//! ```
//!
//! - [`decisions`]: the deterministic decision state machine (commands in, records out).
//! - [`placement`]: replica placement for new partitions.
//! - `crate::metadata`: the records the decisions write and the image they add up to.
//! - [`quorum`]: the Raft log, state machine and network (openraft).
//! - [`rpc`], [`service`], [`client`]: the controller listener's protocol, server and client.
//! - [`active`]: the active controller (decisions under one lock, broker sessions, fencing).
//! - [`lifecycle`]: a broker's registration, heartbeats, metadata fetching and controlled
//!   shutdown.
//! - `commands`: the admin commands a node forwards to the active controller.
//! - `membership`: a controller node following the quorum's voters.
//! - [`feed`], [`publisher`]: the applied image, and applying it to this broker's logs.
//! - [`voters`]: adding and removing voters (KIP-853).

pub mod active;
mod client;
mod commands;
mod decisions;
mod feed;
mod lifecycle;
mod membership;
pub mod metrics;
// New partitions are placed by the code the operator also balances and drains with.
pub use oxbow_placement::new_partitions as placement;
mod publisher;
mod quorum;
pub mod rpc;

/// Sets `user`'s SCRAM-SHA-256 and SCRAM-SHA-512 credentials through the quorum itself,
/// from outside any listener: how `oxbow dev --secure` creates its first user on a cluster
/// whose every port asks for credentials (with the controller listener's mutual TLS when
/// `tls` is given).
pub async fn set_scram_password(
    voters: &std::collections::BTreeMap<i32, String>,
    cluster_id: &str,
    tls: rpc::ControllerTls,
    user: &str,
    password: &str,
    timeout: std::time::Duration,
) -> Result<(), ControllerError> {
    use crate::metadata::records::ScramMechanism;
    // Printable, as Kafka's own salts are: librdkafka before 2.2 reads a salt up to its
    // first NUL byte and then fails every proof.
    let salt = uuid::Uuid::new_v4().simple().to_string().into_bytes();
    let alterations = ScramMechanism::ALL
        .into_iter()
        .map(|mechanism| ScramAlteration::Upsert {
            user: user.to_string(),
            mechanism: mechanism.code(),
            credential: crate::security::credential_from_password(mechanism, password, &salt, 8192),
        })
        .collect();
    let client = client::ControllerClient::new(
        0,
        voters,
        None,
        std::sync::Arc::new(parking_lot::RwLock::new(Some(cluster_id.to_string()))),
        tls,
    );
    let reply = client
        .command(
            &decisions::ControllerCommand::AlterScramCredentials { alterations },
            timeout,
        )
        .await?;
    match reply.outcome {
        decisions::CommandOutcome::Users(users) => match users.into_iter().find_map(|(_, e)| e) {
            Some(error) => Err(error),
            None => Ok(()),
        },
        other => Err(ControllerError::Refused(format!(
            "unexpected answer to AlterScramCredentials: {other:?}"
        ))),
    }
}
mod service;
mod voters;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use parking_lot::RwLock;
use tokio::sync::watch;
use tokio::task::JoinSet;
use uuid::Uuid;

pub use decisions::{
    ControllerError, ElectionType, QuotaChange, Reassignment, ScramAlteration, TopicToCreate,
    users_in_order, validate_topic_name,
};

use crate::metadata::image::{ClusterImage, TopicImage};
use crate::metadata::records::{self, Endpoint};
use active::ActiveController;
use client::ControllerClient;
use feed::MetadataFeed;
use quorum::Raft;

use crate::replication::ReplicaManager;
use crate::storage::{LogConfig, LogConfigError, LogManager};

/// A leftover of the single-node metadata log, before the quorum.
const LEGACY_METADATA_LOG: &str = "metadata.log";

/// This node's part in the quorum.
#[derive(Debug, Clone)]
pub struct QuorumSettings {
    pub node_id: i32,
    /// Voters: node id → controller listener `host:port` (of a dynamic quorum: the voters
    /// that form it).
    pub voters: BTreeMap<i32, String>,
    /// `controller.quorum.bootstrap.servers`: non-empty for a dynamic quorum (KIP-853).
    pub bootstrap_servers: Vec<String>,
    /// Where the other controllers reach this node's controller listener.
    pub advertised_controller: Option<String>,
    /// The id of this node's metadata directory (its `meta.properties`).
    pub directory_id: Uuid,
    pub is_voter: bool,
    pub is_broker: bool,
    /// Where this voter listens for the quorum and brokers (none for a lone voter).
    pub controller_listener: Option<SocketAddr>,
    pub cluster_id: Option<String>,
    pub heartbeat_interval: Duration,
    pub session_timeout: Duration,
    /// Raft entries between snapshots of the image (the log is purged behind them).
    pub snapshot_interval_entries: u64,
    pub metadata_dir: PathBuf,
    /// Where other brokers reach this one (the inter-broker listener's advertised address).
    pub endpoint: Endpoint,
    /// The advertised address of every client listener, by name.
    pub listeners: records::ListenerEndpoints,
    pub rack: Option<String>,
    /// `auto.leader.rebalance.enable` and its timer; `None` when off.
    pub leader_balance: Option<active::LeaderBalance>,
    /// The feature levels a new cluster starts at (see [`crate::metadata::features`]).
    pub bootstrap_features: BTreeMap<String, i16>,
    /// Mutual TLS on the controller listener, when it is `SSL`.
    pub tls: rpc::ControllerTls,
}

/// Why the controller cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot open the Raft log: {0}")]
    LogStore(#[from] quorum::log_store::LogStoreError),
    #[error("cannot open the metadata snapshot: {0}")]
    StateMachine(#[from] quorum::state_machine::StateMachineError),
    #[error("{0}: run a release that supports it (see \"Upgrading\" in the README)")]
    UnsupportedFeatures(String),
    #[error("invalid Raft settings: {0}")]
    RaftConfig(String),
    #[error("cannot start Raft: {0}")]
    Raft(String),
    #[error(
        "{0} is the metadata log of an Oxbow without a quorum; this version keeps metadata in a Raft log. Move the data directory aside (or remove that file to start with no topics)"
    )]
    LegacyMetadata(PathBuf),
}

/// This node's controller: the image, and the way to change it.
#[derive(Debug)]
pub struct Controller {
    pub settings: QuorumSettings,
    /// New on every start: tells a restart from another process with the same node id.
    pub incarnation: Uuid,
    pub feed: Arc<MetadataFeed>,
    raft: Option<Raft>,
    active: Option<Arc<ActiveController>>,
    voter_changes: Option<Arc<voters::VoterChanges>>,
    command_client: ControllerClient,
    heartbeat_client: ControllerClient,
    fetch_client: ControllerClient,
    cluster_id: Arc<RwLock<Option<String>>>,
    log_defaults: LogConfig,
    producer_ids: tokio::sync::Mutex<(i64, i64)>,
    fenced: AtomicBool,
    /// Set by controlled shutdown: no more heartbeats (they would unfence this broker).
    heartbeats_stopped: AtomicBool,
    known_controller: AtomicI32,
    published: watch::Receiver<u64>,
    caught_up_target: watch::Receiver<Option<u64>>,
}

/// The controller's background tasks; any of them ending with an error stops the node.
pub type ControllerTasks = JoinSet<Result<(), ControllerError>>;

/// What a node that is also a broker gives its controller: the publisher applies each
/// image to these logs and replicas and tells the coordinator runtime which partitions
/// this broker started or stopped leading.
#[derive(Debug)]
pub struct BrokerSide {
    pub replicas: Arc<ReplicaManager>,
    pub logs: Arc<LogManager>,
    pub leadership: crate::coordinator::LeadershipChanges,
}

impl Controller {
    /// Opens the quorum's storage, joins or forms the quorum, and starts this node's
    /// controller tasks (serving `controller_socket`, bound by the caller before anything
    /// on disk changed; timers, registration, metadata fetch, publisher).
    pub async fn start(
        settings: QuorumSettings,
        log_defaults: LogConfig,
        broker: Option<BrokerSide>,
        controller_socket: Option<tokio::net::TcpListener>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<(Arc<Self>, ControllerTasks), StartError> {
        let dir = &settings.metadata_dir;
        let legacy = dir.join(LEGACY_METADATA_LOG);
        if legacy.exists() && !dir.join("raft-log").exists() && !dir.join("metadata-log").exists() {
            return Err(StartError::LegacyMetadata(legacy));
        }
        let log_store = quorum::log_store::LogStore::open(dir)?;
        let pristine = log_store.is_pristine();
        let (state_machine, feed) = quorum::state_machine::MetadataStateMachine::open(dir)?;
        if let Some(reason) = feed.current().image.features.unsupported_here() {
            return Err(StartError::UnsupportedFeatures(reason));
        }
        let cluster_id = Arc::new(RwLock::new(settings.cluster_id.clone()));
        let mut tasks = JoinSet::new();
        let node_id = settings.node_id;
        let (raft, active, peers_down) = if settings.is_voter {
            let config = openraft::Config {
                cluster_name: "oxbow-metadata".into(),
                heartbeat_interval: 100,
                // openraft waits out a leader lease of `election_timeout_max` on top of
                // the election timeout: a dead active controller is replaced after
                // 1.1-1.4 s.
                election_timeout_min: 400,
                election_timeout_max: 700,
                install_snapshot_timeout: 5000,
                snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(
                    settings.snapshot_interval_entries,
                ),
                // The log keeps a tail behind each snapshot for followers a little behind.
                max_in_snapshot_log_to_keep: settings.snapshot_interval_entries / 5,
                ..Default::default()
            }
            .validate()
            .map_err(|e| StartError::RaftConfig(e.to_string()))?;
            let peers_down = quorum::network::PeersDown::default();
            let network = quorum::network::NetworkFactory {
                sender: quorum::network::Sender {
                    node_id,
                    cluster_id: Arc::clone(&cluster_id),
                    peers_down: peers_down.clone(),
                    reachability: Default::default(),
                },
                tls: settings.tls.clone(),
            };
            let raft = openraft::Raft::new(
                node_id as u64,
                Arc::new(config),
                network,
                log_store,
                state_machine,
            )
            .await
            .map(Raft)
            .map_err(|e| StartError::Raft(e.to_string()))?;
            let initial_voter = settings.voters.contains_key(&node_id);
            if pristine && !initial_voter {
                tracing::info!(bootstrap = ?settings.bootstrap_servers, "This controller is not one of the initial voters: it follows the quorum as an observer until AddRaftVoter adds it");
            }
            if pristine && initial_voter {
                let members: BTreeMap<u64, quorum::VoterNode> = settings
                    .voters
                    .iter()
                    .map(|(id, address)| (*id as u64, quorum::VoterNode::new(address)))
                    .collect();
                match raft.initialize(members).await {
                    Ok(()) => {
                        tracing::info!(voters = ?settings.voters, "Formed a new metadata quorum")
                    }
                    Err(error) => {
                        tracing::info!(%error, "The metadata quorum already exists; joining it")
                    }
                }
            }
            if settings.voters.len() == 1 && initial_voter {
                // A lone voter need not wait out an election timeout to lead.
                if let Err(error) = raft.trigger().elect().await {
                    tracing::warn!(%error, "Cannot start an election");
                }
            }
            let active = Arc::new(ActiveController::new(
                node_id,
                raft.clone(),
                Arc::clone(&feed),
                log_defaults.clone(),
                active::ActiveSettings {
                    session_timeout: settings.session_timeout,
                    heartbeat_interval: settings.heartbeat_interval,
                    leader_balance: settings.leader_balance,
                },
                peers_down.clone(),
            ));
            (Some(raft), Some(active), Some(peers_down))
        } else {
            drop((log_store, state_machine));
            (None, None, None)
        };
        let skip = settings.is_voter.then_some(node_id);
        let dynamic = !settings.bootstrap_servers.is_empty();
        let known_voters = if settings.voters.is_empty() {
            ControllerClient::bootstrap_ids(&settings.bootstrap_servers)
        } else {
            settings.voters.clone()
        };
        let client = || {
            ControllerClient::new(
                node_id,
                &known_voters,
                skip,
                Arc::clone(&cluster_id),
                settings.tls.clone(),
            )
        };
        let voter_changes = raft.as_ref().zip(peers_down.as_ref()).map(|(raft, down)| {
            Arc::new(voters::VoterChanges::new(
                raft.clone(),
                node_id,
                dynamic,
                down.clone(),
            ))
        });
        let (caught_up_sender, caught_up_target) = watch::channel(None);
        let (publisher, published) = match broker {
            Some(side) => {
                let (publisher, published) =
                    publisher::Publisher::new(side, log_defaults.clone(), caught_up_target.clone());
                (Some(publisher), published)
            }
            None => (None, watch::channel(0).1),
        };
        let controller = Arc::new(Self {
            settings: settings.clone(),
            incarnation: Uuid::new_v4(),
            feed: Arc::clone(&feed),
            raft: raft.clone(),
            active: active.clone(),
            command_client: client(),
            heartbeat_client: client(),
            fetch_client: client(),
            voter_changes: voter_changes.clone(),
            cluster_id: Arc::clone(&cluster_id),
            log_defaults,
            producer_ids: tokio::sync::Mutex::new((0, 0)),
            fenced: AtomicBool::new(true),
            heartbeats_stopped: AtomicBool::new(false),
            known_controller: AtomicI32::new(-1),
            published,
            caught_up_target,
        });
        if let (Some(raft), Some(active)) = (raft, active) {
            let leadership =
                quorum::events::log_leadership(raft.clone(), node_id, shutdown.clone());
            tasks.spawn(async move {
                leadership.await;
                Ok(())
            });
            if let Some(listener) = controller_socket {
                let service = Arc::new(service::ControllerService {
                    raft: raft.clone(),
                    voter_changes: voter_changes.clone(),
                    active: Arc::clone(&active),
                    feed: Arc::clone(&feed),
                    cluster_id: Arc::clone(&cluster_id),
                    versions: rpc::versions::Versions::this_release(),
                });
                let shutdown = shutdown.clone();
                let tls = settings.tls.clone();
                tasks.spawn(async move {
                    service::serve(listener, service, tls, shutdown).await;
                    Ok(())
                });
            }
            let stamp = settings
                .cluster_id
                .clone()
                .unwrap_or_else(|| Uuid::new_v4().simple().to_string());
            let static_voters = (!dynamic).then(|| settings.voters.clone());
            tasks.spawn(active.run_timers(
                static_voters,
                stamp,
                settings.bootstrap_features.clone(),
                shutdown.clone(),
            ));
            let membership = Arc::clone(&controller);
            let shutdown_membership = shutdown.clone();
            tasks.spawn(async move {
                membership
                    .follow_membership(raft, shutdown_membership)
                    .await;
                Ok(())
            });
        } else {
            let observer = Arc::clone(&controller);
            let shutdown = shutdown.clone();
            tasks.spawn(lifecycle::run_observer(observer, shutdown));
        }
        tasks.spawn(Arc::clone(&controller).watch_cluster_id(shutdown.clone()));
        if let Some(publisher) = publisher {
            let views = feed.subscribe();
            let shutdown_publisher = shutdown.clone();
            tasks.spawn(async move {
                publisher.run(views, shutdown_publisher).await;
                Ok(())
            });
        }
        if settings.is_broker {
            let broker = Arc::clone(&controller);
            tasks.spawn(lifecycle::run_broker(broker, caught_up_sender, shutdown));
        } else {
            caught_up_sender.send_replace(Some(0));
        }
        Ok((controller, tasks))
    }

    /// Learns the cluster id from the image; a node configured for another cluster stops.
    async fn watch_cluster_id(
        self: Arc<Self>,
        mut shutdown: watch::Receiver<bool>,
    ) -> Result<(), ControllerError> {
        let mut views = self.feed.subscribe();
        loop {
            let recorded = views.borrow_and_update().image.cluster_id.clone();
            if let Some(recorded) = recorded {
                match &self.settings.cluster_id {
                    Some(configured) if *configured != recorded => {
                        return Err(ControllerError::Quorum(format!(
                            "cluster.id is {configured} but the quorum's cluster is {recorded}"
                        )));
                    }
                    _ => {
                        let learned = self.cluster_id.read().as_deref() != Some(recorded.as_str());
                        *self.cluster_id.write() = Some(recorded.clone());
                        if learned && let Some(log_dir) = self.settings.metadata_dir.parent() {
                            // Kafka's tools read the cluster id from meta.properties too.
                            if let Err(error) = crate::storage::ensure_directory_id(
                                log_dir,
                                self.settings.node_id,
                                Some(&recorded),
                            ) {
                                tracing::warn!(%error, "Cannot record the cluster id in meta.properties");
                            }
                        }
                    }
                }
            }
            tokio::select! {
                changed = views.changed() => if changed.is_err() { return Ok(()) },
                _ = shutdown.changed() => return Ok(()),
            }
        }
    }

    pub fn node_id(&self) -> i32 {
        self.settings.node_id
    }

    /// A consistent snapshot of the metadata as this node has applied it.
    pub fn image(&self) -> Arc<ClusterImage> {
        Arc::clone(&self.feed.current().image)
    }

    /// Whether any client quota is set (without reading the image).
    pub fn client_quotas_set(&self) -> bool {
        self.feed.client_quotas_set()
    }

    pub fn cluster_id(&self) -> String {
        self.image().cluster_id.clone().unwrap_or_default()
    }

    /// The active controller as this node knows it.
    pub fn controller_id(&self) -> Option<i32> {
        match &self.active {
            Some(active) => active.leader(),
            None => Some(self.known_controller.load(Ordering::Relaxed)).filter(|id| *id >= 0),
        }
    }

    fn set_known_controller(&self, id: Option<i32>) {
        self.known_controller
            .store(id.unwrap_or(-1), Ordering::Relaxed);
    }

    fn set_fenced(&self, fenced: bool) {
        if self.fenced.swap(fenced, Ordering::Relaxed) != fenced {
            tracing::info!(fenced, "Broker fencing changed");
        }
    }

    /// Registered, unfenced, and its logs match an image at least as new as the one the
    /// controller had when it registered.
    pub fn is_ready(&self) -> bool {
        if !self.settings.is_broker {
            return self.feed.current().applied_index > 0;
        }
        let target = *self.caught_up_target.borrow();
        !self.fenced.load(Ordering::Relaxed)
            && target.is_some_and(|target| *self.published.borrow() >= target)
    }

    /// The index of the last image applied to this broker's logs.
    pub fn published_index(&self) -> u64 {
        *self.published.borrow()
    }

    /// Waits until [`Self::is_ready`]: a broker serves clients only once it is unfenced
    /// and its logs match the metadata, as a Kafka broker does.
    pub async fn wait_until_ready(&self, mut shutdown: watch::Receiver<bool>) -> bool {
        let mut views = self.feed.subscribe();
        let mut published = self.published.clone();
        loop {
            if self.is_ready() {
                // The change that unfenced this broker also gives it back its leaderships:
                // let the publisher apply what this node already knows before clients come.
                let known = self.feed.current().applied_index;
                let _ = tokio::time::timeout(
                    Duration::from_secs(2),
                    published.wait_for(|index| *index >= known),
                )
                .await;
                return true;
            }
            tokio::select! {
                _ = views.changed() => {}
                _ = published.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = shutdown.changed() => return false,
            }
        }
    }

    pub fn raft(&self) -> Option<&Raft> {
        self.raft.as_ref()
    }

    pub fn log_defaults(&self) -> &LogConfig {
        &self.log_defaults
    }

    /// The broker defaults in effect here (static, then dynamic) with a topic's configs
    /// on top.
    pub fn log_config_for(&self, topic: &TopicImage) -> Result<LogConfig, LogConfigError> {
        crate::metadata::dynamic_configs::log_defaults(
            &self.log_defaults,
            &self.image().broker_configs,
            self.settings.node_id,
        )
        .with_topic_configs(topic.configs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}
