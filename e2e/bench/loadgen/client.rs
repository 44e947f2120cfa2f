//! librdkafka client configurations and topic creation.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::types::RDKafkaErrorCode;

use crate::args::{Args, ProducerSettings};

/// The base configuration of every client: bootstrap plus the user's `-X` properties.
pub fn base_config(args: &Args) -> Result<ClientConfig> {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", &args.bootstrap);
    for property in &args.properties {
        let Some((key, value)) = property.split_once('=') else {
            bail!("property {property:?} is not KEY=VALUE");
        };
        config.set(key, value);
    }
    Ok(config)
}

/// A producer configuration: the settings, then the user's `-X` properties on top.
pub fn producer_config(args: &Args, settings: &ProducerSettings) -> Result<ClientConfig> {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &args.bootstrap)
        .set("acks", &settings.acks)
        .set("linger.ms", settings.linger_ms.to_string())
        .set("batch.size", settings.batch_size.to_string())
        .set("compression.type", settings.compression.as_config())
        // Keep the producer fed: a deep local queue, the send loop waits when it is full.
        .set("queue.buffering.max.messages", "1000000")
        .set("queue.buffering.max.kbytes", "1048576");
    for (key, value) in base_config(args)?.config_map() {
        config.set(key, value);
    }
    Ok(config)
}

/// A consumer configuration for manual assignment (no group membership, no commits).
pub fn consumer_config(args: &Args) -> Result<ClientConfig> {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &args.bootstrap)
        .set("group.id", "oxbow-loadgen")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        // librdkafka (2.4 and later) waits fetch.queue.backoff.ms, 1 s by default, before the
        // next fetch once its local queue holds queued.min.messages (100,000): with 100 B
        // messages that is ten 1 MB fetches, after which the consumer sat idle for most of
        // each second and consume rows measured that pause, 32-208 MB/s run to run against
        // either broker. A bench client asks again at once, so the rows measure the brokers.
        .set("fetch.queue.backoff.ms", "1");
    for (key, value) in base_config(args)?.config_map() {
        config.set(key, value);
    }
    Ok(config)
}

/// Creates `args.topic` with `args.partitions`; a topic that already exists is fine.
pub fn ensure_topic(args: &Args) -> Result<()> {
    let admin: AdminClient<DefaultClientContext> = base_config(args)?
        .create()
        .context("creating the admin client")?;
    let topic = NewTopic::new(
        &args.topic,
        args.partitions,
        TopicReplication::Fixed(args.replication_factor),
    );
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime for the admin request")?;
    let results = runtime
        .block_on(admin.create_topics([&topic], &options))
        .with_context(|| format!("creating topic {}", args.topic))?;
    for result in results {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((name, code)) => bail!("creating topic {name}: {code}"),
        }
    }
    Ok(())
}
