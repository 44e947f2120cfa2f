//! The command line: common connection and topic options, then one mode.

use std::path::PathBuf;

use clap::{Args as ClapArgs, Parser, Subcommand, ValueEnum};

use crate::payload::PayloadKind;

/// Load generator for Kafka-compatible brokers (Oxbow and Apache Kafka), on librdkafka.
#[derive(Debug, Parser)]
#[command(name = "oxbow-loadgen", version)]
pub struct Args {
    /// Bootstrap address, host:port[,host:port...].
    #[arg(long, default_value = "127.0.0.1:9092", global = true)]
    pub bootstrap: String,
    /// Topic to produce to / consume from.
    #[arg(long, default_value = "oxbow-loadgen", global = true)]
    pub topic: String,
    /// Partitions of the topic when it is created.
    #[arg(long, default_value_t = 1, global = true)]
    pub partitions: i32,
    /// Replication factor of the topic when it is created.
    #[arg(long, default_value_t = 1, global = true)]
    pub replication_factor: i32,
    /// Create the topic first (an existing topic is left as it is).
    #[arg(long, global = true)]
    pub create_topic: bool,
    /// Free-form label copied into the JSON line (e.g. the matrix row).
    #[arg(long, default_value = "", global = true)]
    pub label: String,
    /// Extra librdkafka properties, KEY=VALUE, applied last (repeatable).
    #[arg(long = "property", short = 'X', global = true)]
    pub properties: Vec<String>,
    #[command(subcommand)]
    pub mode: Mode,
}

#[derive(Debug, Subcommand)]
pub enum Mode {
    /// Only create the topic (as --create-topic does before any mode).
    Create,
    /// Produce N messages as fast as the broker takes them.
    Produce(ProduceArgs),
    /// Consume the topic from the beginning up to its end (or N messages).
    Consume(ConsumeArgs),
    /// End-to-end latency at a fixed rate: send time travels in the payload.
    Latency(LatencyArgs),
    /// Write messages of a payload kind to a file, one per line, for
    /// kafka-producer-perf-test's --payload-file.
    PayloadFile(PayloadFileArgs),
}

/// Producer settings shared by the produce and latency modes.
#[derive(Debug, Clone, ClapArgs)]
pub struct ProducerSettings {
    /// Message size in bytes.
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
    /// acks: 0, 1 or all.
    #[arg(long, default_value = "1")]
    pub acks: String,
    /// linger.ms.
    #[arg(long, default_value_t = 5)]
    pub linger_ms: u64,
    /// batch.size in bytes.
    #[arg(long, default_value_t = 1_000_000)]
    pub batch_size: u64,
    /// compression.type.
    #[arg(long, value_enum, default_value_t = Compression::None)]
    pub compression: Compression,
    /// What the messages hold: letters (one message of random A-Z repeated, as Kafka's
    /// ProducerPerformance), random (incompressible bytes) or text (JSON-ish, ~3-5x lz4).
    #[arg(long, value_enum, default_value_t = PayloadKind::Letters)]
    pub payload: PayloadKind,
}

#[derive(Debug, ClapArgs)]
pub struct ProduceArgs {
    /// Messages to produce (in all, split across the producers).
    #[arg(long, default_value_t = 1_000_000)]
    pub messages: u64,
    /// Concurrent producers, each its own client and thread.
    #[arg(long, default_value_t = 1)]
    pub producers: u64,
    #[command(flatten)]
    pub producer: ProducerSettings,
}

#[derive(Debug, ClapArgs)]
pub struct ConsumeArgs {
    /// Messages to consume; 0 = everything up to the high watermark seen at start.
    #[arg(long, default_value_t = 0)]
    pub messages: u64,
    /// Give up after this many seconds without a message.
    #[arg(long, default_value_t = 30)]
    pub idle_timeout_s: u64,
}

#[derive(Debug, ClapArgs)]
pub struct LatencyArgs {
    /// Messages per second to send.
    #[arg(long, default_value_t = 1000)]
    pub rate: u64,
    /// Seconds to send for.
    #[arg(long, default_value_t = 10)]
    pub duration_s: u64,
    #[command(flatten)]
    pub producer: ProducerSettings,
}

#[derive(Debug, ClapArgs)]
pub struct PayloadFileArgs {
    /// Payload kind (random is written as printable ASCII: the perf tool reads text).
    #[arg(long, value_enum)]
    pub payload: PayloadKind,
    /// Message size in bytes.
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
    /// Messages to write.
    #[arg(long, default_value_t = 10_000)]
    pub count: u64,
    /// The file to write.
    pub out: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Compression {
    pub fn as_config(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}
