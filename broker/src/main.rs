//! `oxbow`: the Kafka-compatible broker.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use oxbow_broker::api;
use oxbow_broker::config::BrokerConfig;
use oxbow_broker::controller::active::LeaderBalance;
use oxbow_broker::controller::{BrokerSide, Controller, ControllerError, QuorumSettings};
use oxbow_broker::coordinator::{CoordinatorRuntime, CoordinatorShard};
use oxbow_broker::group::GroupCoordinator;
use oxbow_broker::group::metrics::GroupMetrics;
use oxbow_broker::metadata::records::Endpoint;
use oxbow_broker::metrics::Metrics;
use oxbow_broker::replication::ReplicationMetrics;
use oxbow_broker::replication::{IsrProposal, ReplicaManager};
use oxbow_broker::security::ServerTls;
use oxbow_broker::server;
use oxbow_broker::state::BrokerState;
use oxbow_broker::storage::{LogManager, META_PROPERTIES, SystemClock, ensure_directory_id};
use oxbow_broker::txn::markers::MarkerWriter;
use oxbow_broker::txn::{TransactionCoordinator, TransactionMetrics};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

mod dev;

/// Directory under the first log dir that holds the metadata quorum's log and snapshots.
const METADATA_DIR: &str = "__oxbow_metadata";

#[derive(Debug, Parser)]
#[command(name = "oxbow", version, about = "Oxbow: a Kafka-compatible streaming broker", after_help = BrokerConfig::help_table())]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Config file: Kafka's `server.properties` as written (`*.properties`) or a flat YAML map of the same keys (`*.yaml`, `*.yml`); repeatable, later files win.
    #[arg(long = "config", value_name = "FILE")]
    config: Vec<PathBuf>,
    /// Set any key, as Kafka's start script allows: `--override num.partitions=3`; repeatable, wins over files and env.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Run a local cluster of separate broker processes on loopback (combined broker and
    /// controller nodes); Ctrl-C stops them all.
    Dev(dev::DevArgs),
}

fn main() {
    let cli = Cli::parse();
    if let Some(Command::Dev(args)) = &cli.command {
        std::process::exit(dev::run(args, &cli.overrides));
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // openraft logs every failed call to a stopped voter; the quorum's
                // own lines (controller::quorum::events) say what changed, once.
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,openraft=off")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let config = match BrokerConfig::load(&cli.config, std::env::vars(), &cli.overrides) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("oxbow: invalid configuration: {error}");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("oxbow: cannot start the runtime: {error}");
            std::process::exit(1);
        }
    };
    if let Err(error) = runtime.block_on(run(config)) {
        tracing::error!("Broker failed: {error:#}");
        std::process::exit(1);
    }
}

async fn run(config: BrokerConfig) -> anyhow::Result<()> {
    // First of all: as process 1 of a container the kernel drops a signal that has no
    // handler, so a SIGTERM during start-up (log recovery, waiting for the quorum) would be
    // lost and the stop would wait out the pod's whole grace period.
    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let sockets = Sockets::bind(&config).await?;
    // The key and trust stores are read before anything on disk changes: a missing or
    // unreadable one stops the node with one line.
    let tls = match &config.ssl {
        Some(ssl) if config.is_broker => Some(Arc::new(
            ServerTls::load(ssl).context("cannot serve the SSL listeners")?,
        )),
        _ => None,
    };
    // So is the OAUTHBEARER key set.
    let token_validator = Arc::new(token_validator(&config)?);
    // SASL_SSL listeners ignore ssl.client.auth (KIP-684: SASL authenticates the client):
    // the same stores, no client certificate asked for.
    let sasl_tls = match &config.ssl {
        Some(ssl)
            if config.is_broker
                && ssl.client_auth != oxbow_broker::config::ClientAuth::None
                && config
                    .client_listeners
                    .iter()
                    .any(|l| l.protocol == oxbow_broker::config::SecurityProtocol::SaslSsl) =>
        {
            let relaxed = oxbow_broker::config::SslConfig {
                client_auth: oxbow_broker::config::ClientAuth::None,
                ..ssl.clone()
            };
            Some(Arc::new(
                ServerTls::load(&relaxed).context("cannot serve the SASL_SSL listeners")?,
            ))
        }
        _ => None,
    };
    // Listeners with their own `listener.name.<l>.ssl.*` stores (SASL_SSL ones, again,
    // without asking for a client certificate).
    let mut listener_tls = std::collections::BTreeMap::new();
    for (name, ssl) in config.listener_ssl.iter().filter(|_| config.is_broker) {
        let sasl = config.client_listeners.iter().any(|l| {
            l.name == *name && l.protocol == oxbow_broker::config::SecurityProtocol::SaslSsl
        });
        let effective = oxbow_broker::config::SslConfig {
            client_auth: if sasl {
                oxbow_broker::config::ClientAuth::None
            } else {
                ssl.client_auth
            },
            ..ssl.clone()
        };
        let loaded = ServerTls::load(&effective).with_context(|| {
            format!("cannot serve the listener {name} with its listener.name.* stores")
        })?;
        listener_tls.insert(name.clone(), Arc::new(loaded));
    }
    // The quorum's mutual TLS: the same stores, a client certificate always required.
    let controller_tls = match &config.ssl {
        Some(ssl) if config.controller_tls => {
            let mutual = oxbow_broker::config::SslConfig {
                client_auth: oxbow_broker::config::ClientAuth::Required,
                ..ssl.clone()
            };
            let tls = Arc::new(
                ServerTls::load(&mutual).context("cannot serve the SSL controller listener")?,
            );
            oxbow_broker::controller::rpc::use_tls(Arc::clone(&tls));
            Some(tls)
        }
        _ => None,
    };
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
    let metadata_dir = config
        .log_dirs
        .first()
        .context("no log dir")?
        .join(METADATA_DIR);
    // Every log directory gets its identity (meta.properties) after its lock is held; the
    // first one's names this controller's metadata directory (KIP-853).
    let mut directory_ids = Vec::new();
    for dir in &config.log_dirs {
        let id = ensure_directory_id(dir, config.node_id, config.cluster_id.as_deref())
            .with_context(|| format!("writing {}", dir.join(META_PROPERTIES).display()))?;
        directory_ids.push(id);
    }
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    if let Some(tls) = &controller_tls {
        tokio::spawn(Arc::clone(tls).watch(shutdown_rx.clone()));
    }
    let settings = QuorumSettings {
        node_id: config.node_id,
        voters: config.voters.clone(),
        bootstrap_servers: config.bootstrap_servers.clone(),
        advertised_controller: config.controller_advertised.clone(),
        directory_id: directory_ids.first().copied().unwrap_or_default(),
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
    };
    let metrics =
        Arc::new(Metrics::new(config.metrics_partition_labels).context("registering metrics")?);
    let (replicas, isr_proposals) = ReplicaManager::new(
        config.node_id,
        config.replication.clone(),
        Arc::clone(&logs),
        Arc::new(SystemClock),
        ReplicationMetrics::new(metrics.registry(), config.metrics_partition_labels)
            .context("registering replication metrics")?,
        shutdown_rx.clone(),
    );
    let inter_broker_tls = listener_tls
        .get(&config.inter_broker_listener)
        .or(tls.as_ref());
    if let Some(tls) = inter_broker_tls.filter(|_| config.inter_broker_tls()) {
        replicas.fetch_over_tls(Arc::clone(tls));
    }
    if let Some(sasl) = &config.inter_broker_sasl {
        replicas.fetch_with_sasl(Arc::new(sasl.clone()));
    }
    // The publisher tells the coordinator runtime which partitions this broker leads, from
    // the first image on; the coordinators, built once the controller is up, get every
    // change in order.
    let (leadership, leadership_changes) = tokio::sync::mpsc::unbounded_channel();
    let (controller, mut controller_tasks) = Controller::start(
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
        GroupMetrics::with_partition_labels(metrics.registry(), config.metrics_partition_labels)
            .context("registering group metrics")?,
    ));
    let transactions = Arc::new(
        TransactionCoordinator::new(
            config.transactions.clone(),
            MarkerWriter {
                replicas: Arc::clone(&replicas),
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
    let runtime = CoordinatorRuntime::new(
        Arc::clone(&replicas),
        vec![
            Arc::clone(&groups) as Arc<dyn CoordinatorShard>,
            Arc::clone(&transactions) as Arc<dyn CoordinatorShard>,
        ],
    );
    tokio::spawn(runtime.run(leadership_changes, shutdown_rx.clone()));
    let state = Arc::new(BrokerState {
        config: config.clone(),
        controller: Arc::clone(&controller),
        replicas: Arc::clone(&replicas),
        groups: Arc::clone(&groups),
        transactions: Arc::clone(&transactions),
        quotas: Default::default(),
        metrics,
        shutting_down: shutdown_rx.clone(),
        serving: AtomicBool::new(false),
        recently_fenced: Default::default(),
    });
    tokio::spawn(Arc::clone(&transactions).run(shutdown_rx.clone()));
    let metrics_task = sockets.metrics.map(|listener| {
        tokio::spawn(server::http::serve(
            listener,
            Arc::clone(&state),
            Arc::clone(&logs),
        ))
    });
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
                anyhow::bail!("cannot join the cluster: {}", task_end(ended));
            }
            _ = terminate.recv() => {
                tracing::info!("SIGTERM received before joining the cluster; shutting down");
                stopped_early = true;
            }
            _ = interrupt.recv() => {
                tracing::info!("SIGINT received before joining the cluster; shutting down");
                stopped_early = true;
            }
        }
        if stopped_early {
            None
        } else {
            if let Some(sasl) = config.inter_broker_sasl.clone() {
                tokio::spawn(ensure_inter_broker_credential(
                    Arc::clone(&controller),
                    sasl,
                    shutdown_rx.clone(),
                ));
            }
            let mut listening = Vec::with_capacity(sockets.kafka.len());
            for (listener, socket) in config.client_listeners.iter().zip(sockets.kafka) {
                let security = server::ListenerSecurity {
                    tls: match listener.protocol {
                        _ if listener_tls.contains_key(&listener.name) => {
                            listener_tls.get(&listener.name).map(Arc::clone)
                        }
                        oxbow_broker::config::SecurityProtocol::SaslSsl => {
                            sasl_tls.as_ref().or(tls.as_ref()).map(Arc::clone)
                        }
                        protocol if protocol.uses_tls() => tls.as_ref().map(Arc::clone),
                        _ => None,
                    },
                    sasl: listener.protocol.uses_sasl().then(|| {
                        Arc::new(oxbow_broker::security::SaslListener {
                            mechanisms: config.sasl_mechanisms_for(&listener.name).to_vec(),
                            tokens: Arc::clone(&token_validator),
                        })
                    }),
                };
                listening.push((
                    Arc::<str>::from(listener.name.as_str()),
                    start_listening(socket, listener.address)?,
                    security,
                ));
            }
            Some(listening)
        }
    } else {
        None
    };
    state
        .serving
        .store(listener.is_some(), std::sync::atomic::Ordering::Relaxed);
    let maintenance = tokio::spawn(every(
        config.retention_check_interval_ms,
        shutdown_rx.clone(),
        {
            let logs = Arc::clone(&logs);
            move || logs.run_maintenance()
        },
    ));
    let cleaner = tokio::spawn(every(config.cleaner_backoff_ms, shutdown_rx.clone(), {
        let logs = Arc::clone(&logs);
        move || logs.run_cleaner()
    }));
    let group_timers = tokio::spawn(tick_groups(groups, shutdown_rx.clone()));
    let replication_timers = tokio::spawn(Arc::clone(&replicas).run_timers(shutdown_rx.clone()));
    tokio::spawn(send_isr_proposals(
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
    for tls in [&tls, &sasl_tls]
        .into_iter()
        .flatten()
        .chain(listener_tls.values())
    {
        tokio::spawn(Arc::clone(tls).watch(shutdown_rx.clone()));
    }
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
            _ = terminate.recv() => tracing::info!("SIGTERM received; shutting down"),
            _ = interrupt.recv() => tracing::info!("SIGINT received; shutting down"),
            Some(ended) = controller_tasks.join_next() => {
                let reason = task_end(ended);
                tracing::error!(%reason, "Stopping the node");
                failure = Some(reason);
            }
        }
    }
    if failure.is_none() && config.is_broker && !stopped_early {
        controlled_shutdown(&controller).await;
    }
    let _ = shutdown_tx.send(true);
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
    if let Err(error) = group_timers.await {
        tracing::error!(%error, "Group timer task failed");
    }
    if let Err(error) = replication_timers.await {
        tracing::error!(%error, "Replication timer task failed");
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

/// Every socket the node serves, bound before anything on disk changes: a port another
/// process holds stops the node with one line, its log and metadata directories untouched.
/// The Kafka listener's socket is bound but listens only once the broker has joined the
/// cluster, so until then clients are refused and try another broker, as before.
struct Sockets {
    /// One per client listener, in `config.client_listeners` order.
    kafka: Vec<socket2::Socket>,
    controller: Option<tokio::net::TcpListener>,
    metrics: Option<tokio::net::TcpListener>,
}

impl Sockets {
    async fn bind(config: &BrokerConfig) -> anyhow::Result<Self> {
        async fn bind(
            address: Option<std::net::SocketAddr>,
            what: &str,
        ) -> anyhow::Result<Option<tokio::net::TcpListener>> {
            match address {
                Some(address) => tokio::net::TcpListener::bind(address)
                    .await
                    .map(Some)
                    .with_context(|| format!("cannot bind the {what} {address}")),
                None => Ok(None),
            }
        }
        let mut kafka = Vec::new();
        if config.is_broker {
            for listener in &config.client_listeners {
                kafka.push(bind_only(listener.address).with_context(|| {
                    format!(
                        "cannot bind the Kafka listener {} {}",
                        listener.name, listener.address
                    )
                })?);
            }
        }
        Ok(Self {
            kafka,
            controller: bind(
                config.controller_listener.filter(|_| config.is_controller),
                "controller listener",
            )
            .await?,
            metrics: bind(config.metrics_listener, "metrics.listener").await?,
        })
    }
}

/// A TCP socket bound to `address` (address reuse on, as tokio's listeners), not listening.
/// Creates the SCRAM credential the brokers authenticate to each other with when the user
/// has none (Kafka writes it at format time with `kafka-storage --add-scram`; here the
/// quorum, which brokers reach without SASL, takes it). A credential set since, by any
/// broker or an admin, is left alone.
async fn ensure_inter_broker_credential(
    controller: Arc<Controller>,
    sasl: oxbow_broker::config::InterBrokerSasl,
    mut shutdown: watch::Receiver<bool>,
) {
    use oxbow_broker::controller::ScramAlteration;
    use oxbow_broker::metadata::records::ScramMechanism;
    use oxbow_broker::security::SaslMechanism;
    // PLAIN is checked against the SCRAM-SHA-512 credential.
    let mechanism = match sasl.mechanism {
        SaslMechanism::Scram(mechanism) => mechanism,
        _ => ScramMechanism::Sha512,
    };
    loop {
        if controller
            .image()
            .scram_credential(&sasl.username, mechanism)
            .is_some()
        {
            return;
        }
        let salt = uuid::Uuid::new_v4().simple().to_string().into_bytes();
        let alteration = ScramAlteration::Upsert {
            user: sasl.username.clone(),
            mechanism: mechanism.code(),
            credential: oxbow_broker::security::credential_from_password(
                mechanism,
                &sasl.password,
                &salt,
                8192,
            ),
        };
        match controller.alter_scram_credentials(vec![alteration]).await {
            Ok(results) if results.iter().all(|(_, error)| error.is_none()) => {
                tracing::info!(user = %sasl.username, mechanism = ?mechanism, "Created the inter-broker SCRAM credential (the user had none)");
                return;
            }
            Ok(results) => {
                tracing::warn!(user = %sasl.username, ?results, "Cannot create the inter-broker SCRAM credential; retrying");
            }
            Err(error) => {
                tracing::warn!(user = %sasl.username, %error, "Cannot create the inter-broker SCRAM credential yet; retrying");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = shutdown.wait_for(|down| *down) => return,
        }
    }
}

/// How OAUTHBEARER tokens are validated: against the key set, read now (an unreadable set
/// refuses the start), or with Kafka's unsecured validator, with a warning when a SASL
/// listener offers it. Also warns of JAAS options Oxbow does not read.
fn token_validator(
    config: &BrokerConfig,
) -> anyhow::Result<oxbow_broker::security::TokenValidator> {
    use oxbow_broker::security::{JwksValidator, SaslMechanism, TokenValidator};
    let sasl_listeners: Vec<_> = config
        .client_listeners
        .iter()
        .filter(|l| l.protocol.uses_sasl())
        .collect();
    for listener in &sasl_listeners {
        let plain = config
            .listener_settings
            .get(&listener.name)
            .and_then(|l| l.jaas_for(SaslMechanism::Plain));
        if plain.is_some_and(|jaas| jaas.options.keys().any(|k| k.starts_with("user_"))) {
            tracing::warn!(
                listener = %listener.name,
                "PLAIN's JAAS user_<name> entries are not read: PLAIN passwords are checked against the users' SCRAM credentials (kafka-configs --entity-type users)"
            );
        }
    }
    let offered = sasl_listeners.iter().any(|l| {
        config
            .sasl_mechanisms_for(&l.name)
            .contains(&SaslMechanism::OAuthBearer)
    });
    Ok(match &config.oauthbearer_jwks {
        Some(settings) => {
            let keys = JwksValidator::load(settings.clone()).map_err(|reason| {
                anyhow::anyhow!("sasl.oauthbearer.jwks.endpoint.url: {reason}")
            })?;
            if offered {
                tracing::info!(jwks = %settings.path.display(), "OAUTHBEARER tokens must be signed by a key of the key set");
            }
            TokenValidator::Jwks(keys)
        }
        None => {
            if offered {
                tracing::warn!(
                    "OAUTHBEARER is offered with Kafka's default validator, which trusts unsecured (alg:none) tokens: for development and tests only (set sasl.oauthbearer.jwks.endpoint.url for signed tokens)"
                );
            }
            TokenValidator::Unsecured
        }
    })
}

fn bind_only(address: std::net::SocketAddr) -> std::io::Result<socket2::Socket> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(address),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.bind(&address.into())?;
    Ok(socket)
}

fn start_listening(
    socket: socket2::Socket,
    address: std::net::SocketAddr,
) -> anyhow::Result<tokio::net::TcpListener> {
    let listening = (|| {
        socket.listen(1024)?;
        socket.set_nonblocking(true)?;
        tokio::net::TcpListener::from_std(socket.into())
    })();
    listening.with_context(|| format!("cannot listen on the Kafka listener {address}"))
}

/// Why a controller task ended (none ends while the node runs).
fn task_end(ended: Result<Result<(), ControllerError>, tokio::task::JoinError>) -> String {
    match ended {
        Ok(Ok(())) => "a controller task ended".to_string(),
        Ok(Err(error)) => error.to_string(),
        Err(error) => format!("a controller task failed: {error}"),
    }
}

/// Moves this broker's leaderships away before it stops (when another broker can take
/// them), so a rolling restart takes no partition offline.
async fn controlled_shutdown(controller: &Controller) {
    let node_id = controller.node_id();
    let others_live = controller
        .image()
        .live_brokers()
        .any(|b| b.node_id != node_id);
    if !others_live {
        return;
    }
    let started = std::time::Instant::now();
    match tokio::time::timeout(Duration::from_secs(10), controller.controlled_shutdown()).await {
        Ok(Ok(())) => {
            tracing::info!(elapsed = ?started.elapsed(), "Controlled shutdown: leaderships moved")
        }
        Ok(Err(error)) => tracing::warn!(%error, "Controlled shutdown failed; stopping anyway"),
        Err(_) => tracing::warn!("Controlled shutdown timed out; stopping anyway"),
    }
}

/// Sends the ISR changes this broker's leaders propose to the controller.
async fn send_isr_proposals(
    mut proposals: tokio::sync::mpsc::UnboundedReceiver<IsrProposal>,
    controller: Arc<Controller>,
    replicas: Arc<ReplicaManager>,
) {
    while let Some(proposal) = proposals.recv().await {
        let controller = Arc::clone(&controller);
        let replicas = Arc::clone(&replicas);
        tokio::spawn(async move {
            let grows = replicas
                .partition(&proposal.topic_partition)
                .is_some_and(|p| p.role().in_sync_replicas.len() < proposal.in_sync_replicas.len());
            let result = controller.alter_partition(&proposal).await;
            if result.is_ok() {
                if grows {
                    replicas.metrics.isr_expands.inc();
                } else {
                    replicas.metrics.isr_shrinks.inc();
                }
            }
            if let Err(error) = result {
                tracing::info!(topic_partition = %proposal.topic_partition, isr = ?proposal.in_sync_replicas, %error, "The controller did not take an ISR change");
                if let Some(partition) = replicas.partition(&proposal.topic_partition) {
                    partition.proposal_failed(proposal.partition_epoch, replicas.now_ms());
                }
            }
        });
    }
}

/// Runs the blocking `work` every `interval_ms` (at least 100 ms) on the blocking pool,
/// off the request path: retention and flushes, the log cleaner.
async fn every(
    interval_ms: u64,
    mut shutdown: watch::Receiver<bool>,
    work: impl Fn() + Send + Sync + 'static,
) {
    let work = Arc::new(work);
    let mut ticker = tokio::time::interval(Duration::from_millis(interval_ms.max(100)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                let work = Arc::clone(&work);
                if let Err(error) = tokio::task::spawn_blocking(move || work()).await {
                    tracing::error!(%error, "Log maintenance task failed");
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}

/// Drives the group timers (session and rebalance timeouts, offset expiry).
async fn tick_groups(groups: Arc<GroupCoordinator>, mut shutdown: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticker.tick() => groups.tick(),
            _ = shutdown.changed() => return,
        }
    }
}
