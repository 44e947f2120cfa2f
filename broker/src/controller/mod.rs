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
//! - [`records`], [`image`]: the metadata records and the image they add up to.
//! - [`quorum`]: the Raft log, state machine and network (openraft).
//! - [`rpc`], [`service`], [`client`]: the controller listener's protocol, server and client.
//! - [`active`]: the active controller (decisions under one lock, broker sessions, fencing).
//! - [`lifecycle`]: a broker's registration, heartbeats and metadata fetching.
//! - [`feed`], [`publisher`]: the applied image, and applying it to this broker's logs.
//! - [`voters`]: adding and removing voters (KIP-853).

pub mod active;
pub mod client;
pub mod decisions;
pub mod feed;
pub mod lifecycle;
pub mod metrics;
// New partitions are placed by the code the operator also balances and drains with.
pub use oxbow_placement::new_partitions as placement;
pub mod publisher;
pub mod quorum;
pub mod rpc;
pub mod service;
pub mod voters;

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
    CommandOutcome, ControllerCommand, ControllerError, ElectionType, MAX_PARTITIONS,
    MAX_TOPIC_NAME_LENGTH, PartitionOutcome, Reassignment, TopicToCreate, validate_topic_name,
};

use crate::metadata::image::{ClusterImage, TopicImage};
use crate::metadata::records::{self, Endpoint};
use active::ActiveController;
use client::ControllerClient;
use feed::MetadataFeed;
use quorum::Raft;
use rpc::CommandReply;

use crate::replication::ReplicaManager;
use crate::storage::{LogConfig, LogConfigError};

/// How long a metadata change may take before the caller is told it timed out.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(8);
/// Pause before asking again for an active controller.
const RETRY_PAUSE: Duration = Duration::from_millis(50);
/// How long a caller waits for its own broker to apply a change it made.
const PUBLISH_WAIT: Duration = Duration::from_secs(5);
/// How often a controller that is not a member asks the leader to replicate to it.
const FOLLOW_RETRY: Duration = Duration::from_secs(2);
/// An observer whose controller port refuses connections this long is no longer
/// replicated to (it asks again when it comes back).
const OBSERVER_GONE_FOR: Duration = Duration::from_secs(60);
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
}

/// Why the controller cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot open the Raft log: {0}")]
    LogStore(#[from] quorum::log_store::LogStoreError),
    #[error("cannot open the metadata snapshot: {0}")]
    StateMachine(#[from] quorum::state_machine::StateMachineError),
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

impl Controller {
    /// Opens the quorum's storage, joins or forms the quorum, and starts this node's
    /// controller tasks (serving `controller_socket`, bound by the caller before anything
    /// on disk changed; timers, registration, metadata fetch, publisher).
    pub async fn start(
        settings: QuorumSettings,
        log_defaults: LogConfig,
        replicas: Option<Arc<ReplicaManager>>,
        controller_socket: Option<tokio::net::TcpListener>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<(Arc<Self>, ControllerTasks), StartError> {
        let dir = &settings.metadata_dir;
        let legacy = dir.join(LEGACY_METADATA_LOG);
        if legacy.exists() && !dir.join("raft-log").exists() {
            return Err(StartError::LegacyMetadata(legacy));
        }
        let log_store = quorum::log_store::LogStore::open(dir)?;
        let pristine = log_store.is_pristine();
        let (state_machine, feed) = quorum::state_machine::MetadataStateMachine::open(dir)?;
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
        let client =
            || ControllerClient::new(node_id, &known_voters, skip, Arc::clone(&cluster_id));
        let voter_changes = raft.as_ref().zip(peers_down.as_ref()).map(|(raft, down)| {
            Arc::new(voters::VoterChanges::new(
                raft.clone(),
                node_id,
                dynamic,
                down.clone(),
            ))
        });
        let (caught_up_sender, caught_up_target) = watch::channel(None);
        let (publisher, published) = match &replicas {
            Some(replicas) => {
                let (publisher, published) = publisher::Publisher::new(
                    Arc::clone(replicas),
                    log_defaults.clone(),
                    caught_up_target.clone(),
                );
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
                });
                let shutdown = shutdown.clone();
                tasks.spawn(async move {
                    service::serve(listener, service, shutdown).await;
                    Ok(())
                });
            }
            let stamp = settings
                .cluster_id
                .clone()
                .unwrap_or_else(|| Uuid::new_v4().simple().to_string());
            let static_voters = (!dynamic).then(|| settings.voters.clone());
            tasks.spawn(active.run_timers(static_voters, stamp, shutdown.clone()));
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
                            if let Err(error) = crate::storage::meta_properties::ensure_directory_id(
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

    async fn send(
        &self,
        client: &ControllerClient,
        command: &ControllerCommand,
        timeout: Duration,
    ) -> Result<CommandReply, ControllerError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // This voter may win an election while the command waits: ask it first.
            if let Some(active) = &self.active
                && active.is_leader()
            {
                match active.execute(command.clone()).await {
                    Err(ControllerError::NotController(_)) => {}
                    other => return other,
                }
            }
            // A voter knows from its own Raft state which voter leads: a better hint than
            // the last one that answered (which may be stopped).
            if let Some(leader) = self.active.as_ref().and_then(|a| a.leader())
                && leader != self.settings.node_id
            {
                client.set_leader_hint(Some(leader));
            }
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            let lone_voter = !client.has_voters() && self.active.is_some();
            let result = if lone_voter {
                Err(ControllerError::NotController(Some(
                    "this node is the only voter and has not been elected yet".into(),
                )))
            } else {
                client.command(command, remaining).await
            };
            match result {
                Err(ControllerError::NotController(_))
                    if tokio::time::Instant::now() + RETRY_PAUSE < deadline =>
                {
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                other => return other,
            }
        }
    }

    /// A registration or heartbeat, on its own connection so metadata changes in
    /// flight never delay it.
    async fn heartbeat(
        &self,
        command: &ControllerCommand,
    ) -> Result<CommandReply, ControllerError> {
        let timeout = self.settings.session_timeout / 2;
        self.send(&self.heartbeat_client, command, timeout).await
    }

    /// Asks the active controller to carry out `command`, and waits (briefly) until this
    /// broker has applied the result, so it reads its own writes.
    pub async fn execute(
        &self,
        command: ControllerCommand,
    ) -> Result<CommandOutcome, ControllerError> {
        let reply = self
            .send(&self.command_client, &command, COMMAND_TIMEOUT)
            .await?;
        let mut published = if self.settings.is_broker {
            self.published.clone()
        } else {
            let mut views = self.feed.subscribe();
            let _ = tokio::time::timeout(
                PUBLISH_WAIT,
                views.wait_for(|view| view.applied_index >= reply.index),
            )
            .await;
            return Ok(reply.outcome);
        };
        let _ = tokio::time::timeout(
            PUBLISH_WAIT,
            published.wait_for(|index| *index >= reply.index),
        )
        .await;
        Ok(reply.outcome)
    }

    /// One topic, placed by the controller (auto-creation, `__consumer_offsets`).
    pub async fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<TopicImage, ControllerError> {
        let topic = TopicToCreate {
            name: name.to_string(),
            partitions,
            replication_factor,
            configs,
            assignments: Vec::new(),
        };
        self.create_topics(vec![topic], validate_only)
            .await?
            .pop()
            .unwrap_or_else(|| Err(ControllerError::Quorum("no answer for the topic".into())))
    }

    /// CreateTopics: the topics in as few decisions and committed batches as keep each
    /// batch within [`MAX_PARTITIONS`] partitions (the size of the largest single topic, so
    /// no metadata entry is bigger than one topic's could always be). The outer error (no
    /// controller, no quorum) is that of every topic not yet decided; otherwise each topic
    /// has its own result.
    pub async fn create_topics(
        &self,
        topics: Vec<TopicToCreate>,
        validate_only: bool,
    ) -> Result<Vec<Result<TopicImage, ControllerError>>, ControllerError> {
        let mut outcomes = Vec::with_capacity(topics.len());
        for chunk in partition_bounded_chunks(topics, MAX_PARTITIONS) {
            let asked = chunk.len();
            let command = ControllerCommand::CreateTopics {
                topics: chunk,
                validate_only,
            };
            let decided = match self.execute(command).await {
                Ok(CommandOutcome::Topics(decided)) if decided.len() == asked => decided,
                Ok(other) => vec![Err(unexpected(other)); asked],
                // Nothing decided yet: the caller answers every topic with the error.
                Err(error) if outcomes.is_empty() => return Err(error),
                Err(error) => vec![Err(error); asked],
            };
            if !validate_only {
                for topic in decided.iter().flatten() {
                    tracing::info!(
                        topic = topic.name,
                        partitions = topic.partition_count(),
                        replication_factor = topic.replication_factor,
                        "Created topic"
                    );
                }
            }
            outcomes.extend(decided);
        }
        Ok(outcomes)
    }

    pub async fn delete_topic(&self, name: &str) -> Result<Uuid, ControllerError> {
        let command = ControllerCommand::DeleteTopic {
            name: name.to_string(),
        };
        match self.execute(command).await? {
            CommandOutcome::TopicDeleted(id) => {
                tracing::info!(topic = name, "Deleted topic");
                Ok(id)
            }
            other => Err(unexpected(other)),
        }
    }

    /// Grows a topic to `total` partitions; `assignments` (one replica list per new
    /// partition) places them by hand, empty leaves placement to the controller.
    pub async fn create_partitions(
        &self,
        name: &str,
        total: i32,
        assignments: Vec<Vec<i32>>,
        validate_only: bool,
    ) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::CreatePartitions {
            name: name.to_string(),
            total,
            validate_only,
            assignments,
        })
        .await
        .map(|_| ())
    }

    /// Replaces a topic's configs (AlterConfigs; IncrementalAlterConfigs computes the new
    /// set first).
    pub async fn set_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::SetTopicConfigs {
            name: name.to_string(),
            configs,
            validate_only,
        })
        .await
        .map(|_| ())
    }

    /// A new producer id; ids are reserved through the quorum in blocks.
    pub async fn allocate_producer_id(&self) -> Result<i64, ControllerError> {
        let mut ids = self.producer_ids.lock().await;
        if ids.0 >= ids.1 {
            match self.execute(ControllerCommand::AllocateProducerIds).await? {
                CommandOutcome::ProducerIds { first, end } => *ids = (first, end),
                other => return Err(unexpected(other)),
            }
        }
        let id = ids.0;
        ids.0 += 1;
        Ok(id)
    }

    /// Proposes a partition's new ISR (its leader's AlterPartition).
    pub async fn alter_partition(
        &self,
        proposal: &crate::replication::IsrProposal,
    ) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::AlterPartition {
            topic: proposal.topic_partition.topic.clone(),
            partition: proposal.topic_partition.partition,
            leader: proposal.leader,
            leader_epoch: proposal.leader_epoch,
            partition_epoch: proposal.partition_epoch,
            in_sync_replicas: proposal.in_sync_replicas.clone(),
        })
        .await
        .map(|_| ())
    }

    /// ElectLeaders: per-partition results (`None`: every partition that needed one).
    pub async fn elect_leaders(
        &self,
        election: ElectionType,
        partitions: Option<Vec<(String, i32)>>,
    ) -> Result<Vec<PartitionOutcome>, ControllerError> {
        match self
            .execute(ControllerCommand::ElectLeaders {
                election,
                partitions,
            })
            .await?
        {
            CommandOutcome::Partitions(outcomes) => Ok(outcomes),
            other => Err(unexpected(other)),
        }
    }

    /// AlterPartitionReassignments: per-partition results.
    pub async fn reassign_partitions(
        &self,
        reassignments: Vec<Reassignment>,
    ) -> Result<Vec<PartitionOutcome>, ControllerError> {
        match self
            .execute(ControllerCommand::ReassignPartitions { reassignments })
            .await?
        {
            CommandOutcome::Partitions(outcomes) => Ok(outcomes),
            other => Err(unexpected(other)),
        }
    }

    /// Replaces a broker's dynamic configs (`node_id` -1: the cluster-wide defaults).
    pub async fn set_broker_configs(
        &self,
        node_id: i32,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::SetBrokerConfigs {
            node_id,
            configs,
            validate_only,
        })
        .await
        .map(|_| ())
    }

    /// UnregisterBroker: a broker that holds no replicas leaves the cluster.
    pub async fn unregister_broker(&self, node_id: i32) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::UnregisterBroker { node_id })
            .await
            .map(|_| ())
    }

    /// Controlled shutdown: stops heartbeating, asks the controller to move this broker's
    /// leaderships to other in-sync replicas and take it out of every ISR, and waits
    /// until this broker has applied that (so it no longer leads anything).
    pub async fn controlled_shutdown(&self) -> Result<(), ControllerError> {
        self.heartbeats_stopped.store(true, Ordering::Relaxed);
        self.execute(ControllerCommand::ControlledShutdown {
            node_id: self.settings.node_id,
            incarnation: self.incarnation,
        })
        .await?;
        // The active controller about to stop: the other voters learn that the change is
        // committed only from its next heartbeat, so send one now and give it a moment,
        // rather than leaving them to find out after the next election.
        if let (Some(raft), Some(active)) = (&self.raft, &self.active)
            && active.is_leader()
        {
            if let Err(error) = raft.trigger().heartbeat().await {
                tracing::warn!(%error, "Cannot send a last heartbeat to the quorum");
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        Ok(())
    }

    pub fn heartbeats_stopped(&self) -> bool {
        self.heartbeats_stopped.load(Ordering::Relaxed)
    }

    /// The metadata quorum's state, from the active controller.
    /// The quorum's voters changed (or were learned): every way to the active controller
    /// asks them from now on.
    pub fn update_voters(&self, voters: &BTreeMap<i32, String>) {
        for client in [
            &self.command_client,
            &self.heartbeat_client,
            &self.fetch_client,
        ] {
            client.set_voters(voters);
        }
    }

    /// Follows the quorum's membership on a controller node: keeps the clients' voters
    /// current and, in a dynamic quorum, asks the leader to replicate to this controller
    /// while it is not a member (or the quorum does not know its directory yet).
    async fn follow_membership(&self, raft: Raft, mut shutdown: watch::Receiver<bool>) {
        let dynamic = !self.settings.bootstrap_servers.is_empty();
        let mut metrics = raft.metrics();
        let mut asked_at: Option<tokio::time::Instant> = None;
        let mut pruned_at: Option<tokio::time::Instant> = None;
        let mut last_voters = BTreeMap::new();
        loop {
            let (voters, needs_follow) = {
                let current = metrics.borrow_and_update();
                let membership = current.membership_config.membership();
                (
                    voters::voter_addresses(membership),
                    voters::asks_to_follow(membership, self.settings.node_id),
                )
            };
            if voters != last_voters {
                self.update_voters(&voters);
                last_voters = voters;
            }
            if let Some(changes) = &self.voter_changes
                && pruned_at.is_none_or(|at| at.elapsed() >= FOLLOW_RETRY)
            {
                pruned_at = Some(tokio::time::Instant::now());
                changes.prune_learners(OBSERVER_GONE_FOR).await;
            }
            let due = asked_at.is_none_or(|at| at.elapsed() >= FOLLOW_RETRY);
            if dynamic
                && needs_follow
                && due
                && let Some(address) = self.settings.advertised_controller.clone()
            {
                asked_at = Some(tokio::time::Instant::now());
                let request = rpc::VoterRequest::Follow {
                    node_id: self.settings.node_id,
                    directory_id: self.settings.directory_id,
                    address,
                };
                match self.voter_change(request, FOLLOW_RETRY).await {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => {
                        tracing::warn!(%error, "The active controller did not take this controller in")
                    }
                    Err(error) => tracing::debug!(%error, "Cannot reach the active controller yet"),
                }
            }
            tokio::select! {
                changed = metrics.changed() => if changed.is_err() { return },
                _ = tokio::time::sleep(FOLLOW_RETRY) => {}
                _ = shutdown.changed() => return,
            }
        }
    }

    /// A change of the quorum's voters, made by the active controller (here or forwarded).
    pub async fn voter_change(
        &self,
        request: rpc::VoterRequest,
        timeout: Duration,
    ) -> Result<Result<(), rpc::VoterChangeError>, ControllerError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(changes) = &self.voter_changes
                && let Ok(outcome) = changes.handle(request.clone()).await
            {
                return Ok(outcome);
            }
            if let Some(leader) = self.active.as_ref().and_then(|a| a.leader())
                && leader != self.settings.node_id
            {
                self.command_client.set_leader_hint(Some(leader));
            }
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            let result = if self.command_client.has_voters() {
                self.command_client.voter_change(&request, remaining).await
            } else {
                Err(ControllerError::NotController(Some(
                    "this node is the only voter and has not been elected yet".into(),
                )))
            };
            match result {
                Err(ControllerError::NotController(_))
                    if tokio::time::Instant::now() + RETRY_PAUSE < deadline =>
                {
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                other => return other,
            }
        }
    }

    pub async fn describe_quorum(&self) -> Result<rpc::QuorumStatus, ControllerError> {
        if let Some(status) = self.active.as_ref().and_then(|a| a.quorum_status()) {
            return Ok(status);
        }
        self.command_client.describe_quorum(COMMAND_TIMEOUT).await
    }
}

/// `topics` in order, cut into runs of at most `limit` partitions in all (a topic asking for
/// more than `limit` goes alone; the controller refuses it).
fn partition_bounded_chunks(topics: Vec<TopicToCreate>, limit: i32) -> Vec<Vec<TopicToCreate>> {
    let mut chunks: Vec<Vec<TopicToCreate>> = Vec::new();
    let mut in_last = 0i64;
    for topic in topics {
        let size = i64::from(topic.partitions.max(topic.assignments.len() as i32).max(1));
        match chunks.last_mut() {
            Some(last) if in_last + size <= i64::from(limit) => {
                in_last += size;
                last.push(topic);
            }
            _ => {
                in_last = size;
                chunks.push(vec![topic]);
            }
        }
    }
    chunks
}

fn unexpected(outcome: CommandOutcome) -> ControllerError {
    ControllerError::Quorum(format!("unexpected controller answer {outcome:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(name: &str, partitions: i32) -> TopicToCreate {
        TopicToCreate {
            name: name.into(),
            partitions,
            replication_factor: 1,
            configs: BTreeMap::new(),
            assignments: Vec::new(),
        }
    }

    #[test]
    fn create_topics_batches_stay_within_the_partition_bound_in_order() {
        let names = |chunks: &[Vec<TopicToCreate>]| -> Vec<Vec<String>> {
            chunks
                .iter()
                .map(|c| c.iter().map(|t| t.name.clone()).collect())
                .collect()
        };
        let chunks = partition_bounded_chunks(
            vec![
                topic("a", 6),
                topic("b", 4),
                topic("c", 1),
                topic("huge", 50),
                topic("d", -3),
                topic("e", 9),
            ],
            10,
        );
        assert_eq!(
            names(&chunks),
            [vec!["a", "b"], vec!["c"], vec!["huge"], vec!["d", "e"]]
        );
        assert!(partition_bounded_chunks(Vec::new(), 10).is_empty());
    }
}
