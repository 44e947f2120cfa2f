//! `oxbow-operator`: runs the controllers (`run`), writes the CRD YAML (`crdgen`), or
//! resolves a broker pod's rack from its node (`rack-init`, an init container).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::Client;
use kube::api::{Api, ListParams};
use kube::runtime::{Controller, watcher};
use oxbow_operator::cluster::build::BuildSettings;
use oxbow_operator::cluster::settings::{DEFAULT_BROKER_IMAGE, DEFAULT_OPERATOR_IMAGE};
use oxbow_operator::context::Context;
use oxbow_operator::crd::{Cluster, Topic, User};
use oxbow_operator::leader::LeaderElector;
use oxbow_operator::metrics::{self, Health, Metrics};
use oxbow_operator::{cluster, controller, crd, rack};

/// Topic reconciles that run at once (each holds one admin connection to its cluster).
const TOPIC_CONCURRENCY: u16 = 16;

#[derive(Debug, Parser)]
#[command(name = "oxbow-operator", version, about = "Oxbow Kubernetes operator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the Cluster and Topic controllers.
    Run(RunArgs),
    /// Write the CRD YAML generated from the Rust types.
    Crdgen {
        /// Files to write; stdout when none.
        #[arg(long = "out")]
        out: Vec<PathBuf>,
    },
    /// Print the objects the operator would create for a Cluster (YAML file), offline.
    Render {
        /// File holding one Cluster.
        file: PathBuf,
        /// Namespace when the file names none.
        #[arg(long, default_value = "default")]
        namespace: String,
    },
    /// Init container step: write `broker.rack` from the node's topology label.
    RackInit {
        /// Node the pod runs on (downward API `spec.nodeName`).
        #[arg(long, env = "NODE_NAME")]
        node: String,
        /// Node label holding the rack.
        #[arg(long, default_value = crd::DEFAULT_TOPOLOGY_KEY)]
        topology_key: String,
        /// File to write.
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Address of `/metrics`, `/healthz` and `/readyz`.
    #[arg(
        long,
        env = "OXBOW_OPERATOR_METRICS_ADDR",
        default_value = "0.0.0.0:8080"
    )]
    metrics_addr: SocketAddr,
    /// Broker image for Clusters that name none.
    #[arg(long, env = "OXBOW_BROKER_IMAGE", default_value = DEFAULT_BROKER_IMAGE)]
    broker_image: String,
    /// This operator's image (runs the rack-init init container).
    #[arg(long, env = "OXBOW_OPERATOR_IMAGE", default_value = DEFAULT_OPERATOR_IMAGE)]
    operator_image: String,
    /// ClusterRole that lets broker pods read nodes (bound per Cluster).
    #[arg(
        long,
        env = "OXBOW_RACK_CLUSTER_ROLE",
        default_value = "oxbow-broker-rack"
    )]
    rack_cluster_role: String,
    /// Watch only this namespace (all namespaces when unset).
    #[arg(long, env = "OXBOW_WATCH_NAMESPACE")]
    watch_namespace: Option<String>,
    /// Take a Lease before reconciling (for more than one replica).
    #[arg(long, env = "OXBOW_LEADER_ELECTION", default_value_t = true, action = clap::ArgAction::Set)]
    leader_election: bool,
    /// Namespace of the leader Lease.
    #[arg(long, env = "POD_NAMESPACE", default_value = "default")]
    lease_namespace: String,
    /// Name of the leader Lease.
    #[arg(long, env = "OXBOW_LEASE_NAME", default_value = "oxbow-operator")]
    lease_name: String,
    /// Identity in the Lease (the pod name).
    #[arg(long, env = "POD_NAME")]
    identity: Option<String>,
    /// `namespace/cluster=host:port`: reach a cluster's brokers at this address instead of
    /// its bootstrap Service (for an operator outside the cluster network). Repeatable.
    #[arg(
        long = "bootstrap-override",
        env = "OXBOW_BOOTSTRAP_OVERRIDES",
        value_delimiter = ';'
    )]
    bootstrap_overrides: Vec<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,kube=warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Run(args) => run(args).await,
        Command::Crdgen { out } => {
            let yaml = crd::crd_yaml().context("generating CRDs")?;
            if out.is_empty() {
                std::io::Write::write_all(&mut std::io::stdout(), yaml.as_bytes())?;
            }
            for path in out {
                std::fs::write(&path, &yaml)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            Ok(())
        }
        Command::Render { file, namespace } => render(&file, &namespace),
        Command::RackInit {
            node,
            topology_key,
            out,
        } => {
            let rack = rack::run(&node, &topology_key, &out).await?;
            tracing::info!(
                node,
                rack = rack.as_deref().unwrap_or("<none>"),
                "Wrote rack file"
            );
            Ok(())
        }
    }
}

/// Builds the objects of a Cluster read from `file` and prints them as multi-document YAML.
fn render(file: &std::path::Path, namespace: &str) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut cluster: Cluster =
        serde_yaml::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
    cluster
        .metadata
        .namespace
        .get_or_insert_with(|| namespace.to_string());
    cluster
        .metadata
        .uid
        .get_or_insert_with(|| "00000000-0000-0000-0000-000000000000".to_string());
    let settings = BuildSettings {
        broker_image: DEFAULT_BROKER_IMAGE.to_string(),
        operator_image: DEFAULT_OPERATOR_IMAGE.to_string(),
        rack_cluster_role: "oxbow-broker-rack".to_string(),
    };
    let desired = cluster::build::build(&cluster, &settings)?;
    let mut docs = vec![
        serde_yaml::to_string(&desired.service_account)?,
        serde_yaml::to_string(&desired.config_map)?,
        serde_yaml::to_string(&desired.headless_service)?,
        serde_yaml::to_string(&desired.bootstrap_service)?,
        serde_yaml::to_string(&desired.stateful_set)?,
        serde_yaml::to_string(&desired.pod_disruption_budget)?,
    ];
    if let Some(binding) = &desired.rack_binding {
        docs.push(serde_yaml::to_string(binding)?);
    }
    for service in &desired.external_services {
        docs.push(serde_yaml::to_string(service)?);
    }
    if let Some(monitor) = &desired.service_monitor {
        docs.push(serde_yaml::to_string(monitor)?);
    }
    let out = docs.iter().map(|d| format!("---\n{d}")).collect::<String>();
    std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes())?;
    Ok(())
}

fn parse_overrides(entries: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    entries
        .iter()
        .filter(|e| !e.trim().is_empty())
        .map(|entry| {
            let (key, address) = entry.split_once('=').with_context(|| {
                format!("bootstrap override `{entry}` is not namespace/cluster=host:port")
            })?;
            Ok((key.trim().to_string(), address.trim().to_string()))
        })
        .collect()
}

async fn run(args: RunArgs) -> anyhow::Result<()> {
    let metrics = Metrics::new()?;
    let health = Arc::new(Health::default());
    let server = tokio::spawn(metrics::serve(
        args.metrics_addr,
        metrics.clone(),
        health.clone(),
    ));
    let client = Client::try_default()
        .await
        .context("connecting to the Kubernetes API")?;
    // Fails early and clearly when the CRDs are not installed.
    let probe: Api<Cluster> = Api::all(client.clone());
    probe
        .list(&ListParams::default().limit(1))
        .await
        .context("listing Clusters (are the CRDs installed?)")?;
    health.ready.store(true, Ordering::Relaxed);
    let identity = args.identity.clone().unwrap_or_else(|| {
        std::env::var("HOSTNAME")
            .unwrap_or_else(|_| format!("oxbow-operator-{}", std::process::id()))
    });
    let elector = LeaderElector::new(
        client.clone(),
        &args.lease_namespace,
        &args.lease_name,
        &identity,
    );
    if args.leader_election {
        tracing::info!(identity, lease = %args.lease_name, "Waiting for the leader Lease");
        elector.acquire().await?;
    }
    metrics.leader.set(1);
    let settings = BuildSettings {
        broker_image: args.broker_image.clone(),
        operator_image: args.operator_image.clone(),
        rack_cluster_role: args.rack_cluster_role.clone(),
    };
    let ctx = Arc::new(Context::new(
        client.clone(),
        settings,
        metrics.clone(),
        parse_overrides(&args.bootstrap_overrides)?,
        Some(identity),
    ));
    let (clusters, topics, stateful_sets, services, config_maps) = match &args.watch_namespace {
        Some(ns) => (
            Api::<Cluster>::namespaced(client.clone(), ns),
            Api::<Topic>::namespaced(client.clone(), ns),
            Api::<StatefulSet>::namespaced(client.clone(), ns),
            Api::<Service>::namespaced(client.clone(), ns),
            Api::<ConfigMap>::namespaced(client.clone(), ns),
        ),
        None => (
            Api::all(client.clone()),
            Api::all(client.clone()),
            Api::all(client.clone()),
            Api::all(client.clone()),
            Api::all(client.clone()),
        ),
    };
    let (users, user_secrets, certificate_secrets) = match &args.watch_namespace {
        Some(ns) => (
            Api::<User>::namespaced(client.clone(), ns),
            Api::<Secret>::namespaced(client.clone(), ns),
            Api::<Secret>::namespaced(client.clone(), ns),
        ),
        None => (
            Api::all(client.clone()),
            Api::all(client.clone()),
            Api::all(client.clone()),
        ),
    };
    let owned = watcher::Config::default().labels("app.kubernetes.io/managed-by=oxbow-operator");
    let cluster_controller = Controller::new(clusters, watcher::Config::default())
        .owns(stateful_sets, owned.clone())
        .owns(services, owned.clone())
        .owns(config_maps, owned.clone())
        // A certificate Secret annotated for renewal (or deleted) is seen at once.
        .owns(certificate_secrets, owned)
        .shutdown_on_signal();
    // Thousands of Topics must not become thousands of simultaneous admin connections to
    // the brokers (and status writes to the API server): a bounded number run at once.
    let topic_controller = Controller::new(topics, watcher::Config::default())
        .with_config(kube::runtime::controller::Config::default().concurrency(TOPIC_CONCURRENCY))
        .shutdown_on_signal();
    // A User's Secret deleted or edited by hand is written again at once.
    let user_controller = Controller::new(users, watcher::Config::default())
        .owns(
            user_secrets,
            watcher::Config::default().labels("oxbow.dev/user"),
        )
        .shutdown_on_signal();
    ctx.use_stores(cluster_controller.store(), topic_controller.store());
    let cluster_controller = cluster_controller
        .run(
            controller::reconcile::<Cluster>,
            controller::error_policy::<Cluster>,
            ctx.clone(),
        )
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "Cluster controller event");
            }
        });
    let topic_controller = topic_controller
        .run(
            controller::reconcile::<Topic>,
            controller::error_policy::<Topic>,
            ctx.clone(),
        )
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "Topic controller event");
            }
        });
    let user_controller = user_controller
        .run(
            controller::reconcile::<User>,
            controller::error_policy::<User>,
            ctx,
        )
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "User controller event");
            }
        });
    tracing::info!("Controllers started");
    let hold = async {
        if args.leader_election {
            elector.hold().await
        } else {
            std::future::pending().await
        }
    };
    tokio::select! {
        () = cluster_controller => tracing::info!("Cluster controller stopped"),
        () = topic_controller => tracing::info!("Topic controller stopped"),
        () = user_controller => tracing::info!("User controller stopped"),
        lost = hold => {
            metrics.leader.set(0);
            return Err(lost).context("leadership lost; exiting so a standby can take over");
        }
        finished = server => {
            return match finished {
                Ok(Ok(())) => Ok(()),
                Ok(Err(error)) => Err(error).context("metrics server failed"),
                Err(error) => Err(error).context("metrics server task failed"),
            };
        }
    }
    Ok(())
}
