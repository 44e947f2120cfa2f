//! The broker assembled in dependency order — storage, replication, the metadata quorum,
//! the coordinators on their runtime, the shared state — and then served until a signal.
//! Everything a part needs is handed to it when it is built; nothing is attached later.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::listeners::{ListenerTls, Sockets, start_listening};
use super::tasks;
use crate::config::BrokerConfig;
use crate::controller::active::LeaderBalance;
use crate::controller::{BrokerSide, Controller, ControllerTasks, QuorumSettings};
use crate::coordinator::{CoordinatorRuntime, CoordinatorShard};
use crate::group::GroupCoordinator;
use crate::group::metrics::GroupMetrics;
use crate::metadata::records::Endpoint;
use crate::metrics::Metrics;
use crate::peers::{PeerClient, PeerSecurity};
use crate::replication::{IsrProposal, ReplicaManager, ReplicationMetrics};
use crate::state::BrokerState;
use crate::storage::{LogManager, META_PROPERTIES, SystemClock, ensure_directory_id};
use crate::txn::markers::MarkerWriter;
use crate::txn::{TransactionCoordinator, TransactionMetrics};
use crate::{api, server};

/// Directory under the first log dir that holds the metadata quorum's log and snapshots.
const METADATA_DIR: &str = "__oxbow_metadata";

/// SIGTERM and SIGINT, handled from the first moment: as process 1 of a container the
/// kernel drops a signal that has no handler, so a SIGTERM during start-up (log recovery,
/// waiting for the quorum) would be lost and the stop would wait out the pod's whole grace
/// period.
#[derive(Debug)]
pub struct Signals {
    terminate: Signal,
    interrupt: Signal,
}

impl Signals {
    pub fn install() -> anyhow::Result<Self> {
        Ok(Self {
            terminate: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
            interrupt: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
        })
    }

    /// The name of the first signal received.
    async fn received(&mut self) -> &'static str {
        tokio::select! {
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.interrupt.recv() => "SIGINT",
        }
    }
}

/// One node, built and not yet serving clients.
pub struct Broker {
    config: BrokerConfig,
    kafka_sockets: Vec<socket2::Socket>,
    tls: ListenerTls,
    logs: Arc<LogManager>,
    shutdown: watch::Sender<bool>,
    replicas: Arc<ReplicaManager>,
    isr_proposals: tokio::sync::mpsc::UnboundedReceiver<IsrProposal>,
    controller: Arc<Controller>,
    controller_tasks: ControllerTasks,
    /// The coordinator runtime's task (loads, unloads, timers).
    coordinators: JoinHandle<()>,
    state: Arc<BrokerState>,
    metrics_task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("node_id", &self.config.node_id)
            .finish_non_exhaustive()
    }
}

impl Broker {
    /// Binds every socket, reads every key store, opens the logs, joins or forms the
    /// quorum and builds the coordinators. A failure stops the node with one line.
    pub async fn build(config: BrokerConfig) -> anyhow::Result<Self> {
        let sockets = Sockets::bind(&config).await?;
        let tls = ListenerTls::load(&config)?;
        let controller_tls = ListenerTls::controller(&config)?;
        let defaults = config.log_defaults.clone();
        let (logs, report) = LogManager::open(
            &config.log_dirs,
            &|_| defaults.clone(),
            Arc::new(SystemClock),
        )
        .context("opening the log directories")?;
        if !report.unclean_dirs.is_empty() {
            tracing::warn!(dirs = ?report.unclean_dirs, "Recovered log directories after an unclean shutdown");
        }
        for (dir, error) in &report.failed {
            tracing::error!(partition_dir = %dir.display(), %error, "Partition not loaded");
        }
        let logs = Arc::new(logs);
        // Every log directory gets its identity (meta.properties) after its lock is held;
        // the first one's names this controller's metadata directory (KIP-853).
        let mut directory_ids = Vec::new();
        for dir in &config.log_dirs {
            let id = ensure_directory_id(dir, config.node_id, config.cluster_id.as_deref())
                .with_context(|| format!("writing {}", dir.join(META_PROPERTIES).display()))?;
            directory_ids.push(id);
        }
        let (shutdown, shutdown_rx) = watch::channel(false);
        if let Some(tls) = &controller_tls {
            tokio::spawn(Arc::clone(tls).watch(shutdown_rx.clone()));
        }
        let settings = quorum_settings(
            &config,
            directory_ids.first().copied().unwrap_or_default(),
            controller_tls.clone(),
        )?;
        let metrics =
            Arc::new(Metrics::new(config.metrics_partition_labels).context("registering metrics")?);
        let peers = Arc::new(PeerClient::new(PeerSecurity {
            tls: tls.inter_broker(&config),
            sasl: config.inter_broker_sasl.clone().map(Arc::new),
        }));
        let (replicas, isr_proposals) = ReplicaManager::new(
            config.node_id,
            config.replication.clone(),
            Arc::clone(&logs),
            Arc::new(SystemClock),
            ReplicationMetrics::new(metrics.registry(), config.metrics_partition_labels)
                .context("registering replication metrics")?,
            Arc::clone(&peers),
            shutdown_rx.clone(),
        );
        // The publisher tells the coordinator runtime which partitions this broker leads,
        // from the first image on; the coordinators, built once the controller is up, get
        // every change in order.
        let (leadership, leadership_changes) = tokio::sync::mpsc::unbounded_channel();
        let (controller, controller_tasks) = Controller::start(
            settings,
            defaults,
            config.is_broker.then(|| BrokerSide {
                replicas: Arc::clone(&replicas),
                logs: Arc::clone(&logs),
                leadership,
            }),
            sockets.controller,
            shutdown_rx.clone(),
        )
        .await
        .context("starting the metadata quorum")?;
        let groups = Arc::new(GroupCoordinator::new(
            config.groups.clone(),
            Arc::clone(&replicas),
            Arc::new(SystemClock),
            GroupMetrics::with_partition_labels(
                metrics.registry(),
                config.metrics_partition_labels,
            )
            .context("registering group metrics")?,
        ));
        let transactions = Arc::new(
            TransactionCoordinator::new(
                config.transactions.clone(),
                MarkerWriter {
                    replicas: Arc::clone(&replicas),
                    peers: Arc::clone(&peers),
                    controller: Arc::clone(&controller),
                    groups: Arc::clone(&groups),
                    shutdown: shutdown_rx.clone(),
                },
                Arc::new(SystemClock),
            )
            .with_metrics(
                TransactionMetrics::new(metrics.registry())
                    .context("registering transaction metrics")?,
            ),
        );
        let coordinators = CoordinatorRuntime::new(
            Arc::clone(&replicas),
            vec![
                Arc::clone(&groups) as Arc<dyn CoordinatorShard>,
                Arc::clone(&transactions) as Arc<dyn CoordinatorShard>,
            ],
        );
        let coordinators = tokio::spawn(coordinators.run(leadership_changes, shutdown_rx.clone()));
        tokio::spawn(Arc::clone(&transactions).run(shutdown_rx.clone()));
        let state = Arc::new(BrokerState {
            config: config.clone(),
            controller: Arc::clone(&controller),
            replicas: Arc::clone(&replicas),
            peers,
            groups: Arc::clone(&groups),
            transactions,
            quotas: Default::default(),
            metrics,
            shutting_down: shutdown_rx,
            serving: AtomicBool::new(false),
            recently_fenced: Default::default(),
        });
        let metrics_task = sockets.metrics.map(|listener| {
            tokio::spawn(server::http::serve(
                listener,
                Arc::clone(&state),
                Arc::clone(&logs),
            ))
        });
        Ok(Self {
            config,
            kafka_sockets: sockets.kafka,
            tls,
            logs,
            shutdown,
            replicas,
            isr_proposals,
            controller,
            controller_tasks,
            coordinators,
            state,
            metrics_task,
        })
    }

    /// Waits to join the cluster, serves clients until a signal (or a controller task's
    /// end), then stops in order: leaderships moved away, listeners closed, tasks joined,
    /// the quorum shut down, the logs flushed.
    pub async fn serve(self, signals: &mut Signals) -> anyhow::Result<()> {
        let Self {
            config,
            kafka_sockets,
            tls,
            logs,
            shutdown,
            replicas,
            isr_proposals,
            controller,
            mut controller_tasks,
            coordinators,
            state,
            metrics_task,
        } = self;
        let shutdown_rx = state.shutting_down.clone();
        let mut stopped_early = false;
        let listener = if config.is_broker {
            tracing::info!(
                node_id = config.node_id,
                "Waiting to register with the controller quorum and be unfenced"
            );
            tokio::select! {
                ready = controller.wait_until_ready(shutdown_rx.clone()) => if !ready {
                    anyhow::bail!("stopped before joining the cluster");
                },
                Some(ended) = controller_tasks.join_next() => {
                    anyhow::bail!("cannot join the cluster: {}", tasks::task_end(ended));
                }
                name = signals.received() => {
                    tracing::info!("{name} received before joining the cluster; shutting down");
                    stopped_early = true;
                }
            }
            if stopped_early {
                None
            } else {
                if let Some(sasl) = config.inter_broker_sasl.clone() {
                    tokio::spawn(tasks::ensure_inter_broker_credential(
                        Arc::clone(&controller),
                        sasl,
                        shutdown_rx.clone(),
                    ));
                }
                let mut listening = Vec::with_capacity(kafka_sockets.len());
                for (listener, socket) in config.client_listeners.iter().zip(kafka_sockets) {
                    listening.push((
                        Arc::<str>::from(listener.name.as_str()),
                        start_listening(socket, listener.address)?,
                        tls.security(&config, listener),
                    ));
                }
                Some(listening)
            }
        } else {
            None
        };
        state.serving.store(listener.is_some(), Ordering::Relaxed);
        let maintenance = tokio::spawn(tasks::every(
            config.retention_check_interval_ms,
            shutdown_rx.clone(),
            {
                let logs = Arc::clone(&logs);
                move || logs.run_maintenance()
            },
        ));
        let cleaner = tokio::spawn(tasks::every(
            config.cleaner_backoff_ms,
            shutdown_rx.clone(),
            {
                let logs = Arc::clone(&logs);
                move || logs.run_cleaner()
            },
        ));
        let replication_timers =
            tokio::spawn(Arc::clone(&replicas).run_timers(shutdown_rx.clone()));
        tokio::spawn(tasks::send_isr_proposals(
            isr_proposals,
            Arc::clone(&controller),
            Arc::clone(&replicas),
        ));
        if !stopped_early {
            tracing::info!(
                listeners = %config
                    .client_listeners
                    .iter()
                    .map(|l| format!("{}://{} (advertised {}:{})", l.name, l.address, l.advertised_host, l.advertised_port))
                    .collect::<Vec<_>>()
                    .join(", "),
                inter_broker_listener = %config.inter_broker_listener,
                controller_listener = ?config.controller_listener,
                node_id = config.node_id,
                roles = %format!("{}{}", if config.is_broker { "broker " } else { "" }, if config.is_controller { "controller" } else { "" }),
                voters = ?config.voters,
                log_dirs = ?config.log_dirs,
                partitions = logs.all().len(),
                "Oxbow node started"
            );
        }
        tls.watch(&shutdown_rx);
        let routes = Arc::new(api::routes(config.fetch_session_slots));
        let servers: Vec<_> = listener
            .into_iter()
            .flatten()
            .map(|(name, listener, security)| {
                tokio::spawn(server::run(
                    name,
                    listener,
                    security,
                    Arc::clone(&state),
                    Arc::clone(&routes),
                    shutdown_rx.clone(),
                ))
            })
            .collect();

        let mut failure = None;
        if !stopped_early {
            tokio::select! {
                name = signals.received() => tracing::info!("{name} received; shutting down"),
                Some(ended) = controller_tasks.join_next() => {
                    let reason = tasks::task_end(ended);
                    tracing::error!(%reason, "Stopping the node");
                    failure = Some(reason);
                }
            }
        }
        if failure.is_none() && config.is_broker && !stopped_early {
            tasks::controlled_shutdown(&controller).await;
        }
        let _ = shutdown.send(true);
        for server in servers {
            if let Err(error) = server.await {
                tracing::error!(%error, "Server task failed");
            }
        }
        if let Err(error) = maintenance.await {
            tracing::error!(%error, "Maintenance task failed");
        }
        if let Err(error) = cleaner.await {
            tracing::error!(%error, "Log cleaner task failed");
        }
        if let Err(error) = replication_timers.await {
            tracing::error!(%error, "Replication timer task failed");
        }
        if let Err(error) = coordinators.await {
            tracing::error!(%error, "Coordinator runtime failed");
        }
        while let Some(ended) = controller_tasks.join_next().await {
            match ended {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::error!(%error, "Controller task failed"),
                Err(error) => tracing::error!(%error, "Controller task panicked"),
            }
        }
        if let Some(raft) = state.controller.raft()
            && let Err(error) = raft.shutdown().await
        {
            tracing::error!(%error, "Raft shutdown failed");
        }
        if let Some(task) = metrics_task {
            task.abort();
            let _ = task.await;
        }
        tokio::task::spawn_blocking(move || logs.shutdown())
            .await
            .context("shutdown task")?
            .context("flushing logs")?;
        if let Some(reason) = failure {
            anyhow::bail!(reason);
        }
        tracing::info!("Clean shutdown complete");
        Ok(())
    }
}

/// What the quorum needs to know of this node.
fn quorum_settings(
    config: &BrokerConfig,
    directory_id: uuid::Uuid,
    tls: crate::controller::rpc::ControllerTls,
) -> anyhow::Result<QuorumSettings> {
    let metadata_dir = config
        .log_dirs
        .first()
        .context("no log dir")?
        .join(METADATA_DIR);
    Ok(QuorumSettings {
        node_id: config.node_id,
        voters: config.voters.clone(),
        bootstrap_servers: config.bootstrap_servers.clone(),
        advertised_controller: config.controller_advertised.clone(),
        directory_id,
        is_voter: config.is_controller,
        is_broker: config.is_broker,
        controller_listener: config.controller_listener,
        cluster_id: config.cluster_id.clone(),
        heartbeat_interval: Duration::from_millis(config.broker_heartbeat_interval_ms),
        session_timeout: Duration::from_millis(config.broker_session_timeout_ms),
        snapshot_interval_entries: config.metadata_snapshot_interval_entries,
        metadata_dir,
        endpoint: Endpoint {
            host: config.advertised_host.clone(),
            port: config.advertised_port,
        },
        listeners: config
            .client_listeners
            .iter()
            .map(|l| {
                let endpoint = Endpoint {
                    host: l.advertised_host.clone(),
                    port: l.advertised_port,
                };
                (l.name.clone(), endpoint)
            })
            .collect(),
        rack: config.rack.clone(),
        leader_balance: config.auto_leader_rebalance.then(|| LeaderBalance {
            check_interval: Duration::from_secs(config.leader_imbalance_check_interval_s),
            imbalance_percent: config.leader_imbalance_percent,
        }),
        bootstrap_features: crate::metadata::features::bootstrap_levels(
            config.transactions.version,
        ),
        tls,
    })
}
