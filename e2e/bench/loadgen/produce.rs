//! Produce mode: N messages of S bytes as fast as the broker acknowledges them, split over
//! K producers, each its own librdkafka client on its own thread.

use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

use crate::args::{Args, ProduceArgs, ProducerSettings};
use crate::client::producer_config;
use crate::delivery::{DeliveryContext, DeliveryStats, UNTIMED};
use crate::histogram::Latencies;
use crate::payload::Payloads;
use crate::report::Report;

/// How often (in messages) the send loop serves delivery callbacks.
const POLL_EVERY: u64 = 64;
/// One message in this many is timed from send to acknowledgement. Two clock reads per
/// message were a tenth of the sending thread's time with 100 B messages, the thread that
/// bounds that row (docs/benchmarks/2026-12-03-client-profile.txt); 1 in 16 of 2,000,000
/// still gives the percentiles 125,000 samples.
const TIME_EVERY: u64 = 16;
/// How long to wait for outstanding messages at the end.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(300);

pub fn run(args: &Args, produce: &ProduceArgs) -> Result<Report> {
    if produce.producers == 0 {
        bail!("--producers must be at least 1");
    }
    let start = Instant::now();
    let per_producer = produce.messages / produce.producers;
    let remainder = produce.messages % produce.producers;
    let outcomes: Vec<Result<DeliveryStats>> = thread::scope(|scope| {
        let handles: Vec<_> = (0..produce.producers)
            .map(|i| {
                let count = per_producer + u64::from(i < remainder);
                scope.spawn(move || produce_messages(args, &produce.producer, count, start))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| anyhow!("a producer thread panicked"))?
            })
            .collect()
    });

    let mut latencies = Latencies::with_capacity(usize::try_from(produce.messages).unwrap_or(0));
    let (mut acknowledged, mut errors, mut end) = (0, 0, Duration::ZERO);
    let mut first_error = None;
    for outcome in outcomes {
        let stats = outcome?;
        acknowledged += stats.acknowledged;
        errors += stats.errors;
        end = end.max(stats.last_ack);
        first_error = first_error.or(stats.first_error);
        latencies.merge(stats.latencies);
    }
    if let Some(error) = first_error {
        eprintln!("oxbow-loadgen: first delivery error: {error}");
    }

    let mut report = Report::new("produce", &args.label, &args.topic);
    let bytes = acknowledged * produce.producer.size as u64;
    report.throughput(acknowledged, bytes, end);
    report.ack_latency_ms = latencies.summary();
    report.errors = errors + produce.messages.saturating_sub(acknowledged + errors);
    describe(&mut report, args, &produce.producer);
    report.param("producers", produce.producers);
    report.param("acks timed", format!("1 in {TIME_EVERY}"));
    Ok(report)
}

/// Records the producer settings of a run in its report.
pub fn describe(report: &mut Report, args: &Args, settings: &ProducerSettings) {
    report.param("bootstrap", &args.bootstrap);
    report.param("size", settings.size);
    report.param("acks", &settings.acks);
    report.param("linger.ms", settings.linger_ms);
    report.param("batch.size", settings.batch_size);
    report.param("compression", settings.compression.as_config());
    report.param("payload", settings.payload.as_str());
    report.param("partitions", args.partitions);
}

fn produce_messages(
    args: &Args,
    settings: &ProducerSettings,
    count: u64,
    start: Instant,
) -> Result<DeliveryStats> {
    let producer: BaseProducer<DeliveryContext> = producer_config(args, settings)?
        .create_with_context(DeliveryContext::new(start, count))
        .context("creating the producer")?;
    let mut payloads = Payloads::new(settings.payload, settings.size);
    for i in 0..count {
        let stamp = if i % TIME_EVERY == 0 {
            producer.context().send_stamp()
        } else {
            UNTIMED
        };
        send(&producer, &args.topic, payloads.next_message(), stamp)?;
        if i % POLL_EVERY == 0 {
            producer.poll(Duration::ZERO);
        }
    }
    producer
        .flush(FLUSH_TIMEOUT)
        .context("flushing the producer")?;
    Ok(producer.context().take_stats())
}

/// Sends one message; while librdkafka's queue is full, serves callbacks and retries.
pub fn send(
    producer: &BaseProducer<DeliveryContext>,
    topic: &str,
    payload: &[u8],
    stamp: usize,
) -> Result<()> {
    let mut record = BaseRecord::<(), [u8], usize>::with_opaque_to(topic, stamp).payload(payload);
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned)) => {
                record = returned;
                producer.poll(Duration::from_millis(1));
            }
            Err((error, _)) => return Err(error).context("sending a message"),
        }
    }
}
