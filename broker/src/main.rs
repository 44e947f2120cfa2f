//! `oxbow`: the Kafka-compatible broker.

use std::path::PathBuf;

use clap::Parser;
use oxbow_broker::BrokerConfig;

mod dev;

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
    if let Err(error) = runtime.block_on(oxbow_broker::run(config)) {
        tracing::error!("Broker failed: {error:#}");
        std::process::exit(1);
    }
}
