//! Consume mode: reads the topic from the beginning, by manual assignment of every partition
//! (no group protocol in the measurement), up to the high watermarks seen at the start or
//! `--messages`, whichever the user asked for.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};

use crate::args::{Args, ConsumeArgs};
use crate::client::consumer_config;
use crate::report::Report;

const METADATA_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one poll waits for a message.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);
/// How often (in messages) the consume loop reads the clock.
const CLOCK_EVERY: u64 = 1024;

pub fn run(args: &Args, consume: &ConsumeArgs) -> Result<Report> {
    let consumer: BaseConsumer = consumer_config(args)?
        .create()
        .context("creating the consumer")?;
    let (assignment, available) =
        assign_from(&consumer, &args.topic, |_, low, _| Offset::Offset(low))?;
    let target = if consume.messages > 0 {
        consume.messages
    } else {
        available
    };
    if target == 0 {
        bail!("topic {} is empty: nothing to consume", args.topic);
    }
    consumer
        .assign(&assignment)
        .context("assigning partitions")?;

    let start = Instant::now();
    let idle_timeout = Duration::from_secs(consume.idle_timeout_s);
    // `last` is when a message was last seen, read every CLOCK_EVERY messages and at an empty
    // poll rather than per message: two clock reads per message were 3.4% of the machine's
    // samples in a 1 KiB consume profile (docs/benchmarks/2026-12-03-client-profile.txt), CPU
    // the consumer needs. A complete run's end is read at its last message; one that stops
    // short is timed to the first empty poll after its last message (at most POLL_TIMEOUT late).
    let (mut messages, mut bytes, mut last, mut errors) = (0u64, 0u64, start, 0u64);
    let mut stamped = 0u64; // `messages` when `last` was read
    while messages < target {
        match consumer.poll(POLL_TIMEOUT) {
            Some(Ok(message)) => {
                messages += 1;
                bytes += message.payload_len() as u64;
                if messages - stamped < CLOCK_EVERY {
                    continue;
                }
            }
            Some(Err(error)) => {
                errors += 1;
                eprintln!("oxbow-loadgen: consume error: {error}");
            }
            None => {}
        }
        let now = Instant::now();
        if messages != stamped {
            (last, stamped) = (now, messages);
        }
        if now.duration_since(last) > idle_timeout {
            eprintln!(
                "oxbow-loadgen: no message for {idle_timeout:?}; stopping at {messages} of {target}"
            );
            break;
        }
    }
    if messages >= target {
        last = Instant::now();
    }

    let mut report = Report::new("consume", &args.label, &args.topic);
    report.throughput(messages, bytes, last.duration_since(start));
    report.errors = errors + target.saturating_sub(messages);
    report.param("bootstrap", &args.bootstrap);
    report.param("partitions", assignment.count());
    Ok(report)
}

/// Every partition of `topic` with the offset `offset(partition, low, high)` picked from its
/// watermarks, and the number of messages between the watermarks in all.
pub fn assign_from(
    consumer: &BaseConsumer,
    topic: &str,
    offset: impl Fn(i32, i64, i64) -> Offset,
) -> Result<(TopicPartitionList, u64)> {
    let metadata = consumer
        .fetch_metadata(Some(topic), METADATA_TIMEOUT)
        .with_context(|| format!("fetching metadata of {topic}"))?;
    let Some(topic_metadata) = metadata.topics().iter().find(|t| t.name() == topic) else {
        bail!("topic {topic} not in metadata");
    };
    if let Some(error) = topic_metadata.error() {
        bail!("topic {topic}: {error:?}");
    }
    let mut assignment = TopicPartitionList::new();
    let mut available = 0u64;
    for partition in topic_metadata.partitions() {
        let id = partition.id();
        let (low, high) = consumer
            .fetch_watermarks(topic, id, METADATA_TIMEOUT)
            .with_context(|| format!("fetching watermarks of {topic}-{id}"))?;
        available += u64::try_from(high - low).unwrap_or(0);
        assignment
            .add_partition_offset(topic, id, offset(id, low, high))
            .with_context(|| format!("assigning {topic}-{id}"))?;
    }
    if assignment.count() == 0 {
        bail!("topic {topic} has no partitions");
    }
    Ok((assignment, available))
}
