//! Latency mode: one producer sends at a fixed rate for a fixed time while one consumer,
//! assigned at the partitions' ends, receives. Each payload starts with its send time (u64
//! little-endian nanoseconds since the run's start `Instant`; both threads share it), so the
//! consumer measures end-to-end latency; the producer's delivery reports give ack latency.
//!
//! Warm-up: before the measured run the producer sends a few messages stamped `WARM_UP` and
//! waits until the consumer has seen one, so connection set-up is not measured.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use rdkafka::Message;
use rdkafka::Offset;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, Producer};

use crate::args::{Args, LatencyArgs};
use crate::client::{consumer_config, producer_config};
use crate::consume::assign_from;
use crate::delivery::DeliveryContext;
use crate::histogram::Latencies;
use crate::payload::Payloads;
use crate::produce::{describe, send};
use crate::report::Report;

const STAMP_BYTES: usize = 8;
const WARM_UP: u64 = u64::MAX;
const WARM_UP_MESSAGES: u64 = 10;
const WARM_UP_TIMEOUT: Duration = Duration::from_secs(60);
/// How early a message may be sent rather than sleeping out the gap to its slot.
const PACING_SLACK: Duration = Duration::from_millis(1);
/// After the last send, how long the consumer may take to see the rest.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// State the two threads share.
struct Shared {
    start: Instant,
    warmed_up: AtomicBool,
    sent: AtomicU64,
    sending_done: AtomicBool,
}

pub fn run(args: &Args, latency: &LatencyArgs) -> Result<Report> {
    let settings = &latency.producer;
    if settings.size < STAMP_BYTES {
        bail!("--size must be at least {STAMP_BYTES} bytes to carry the send time");
    }
    if latency.rate == 0 {
        bail!("--rate must be at least 1");
    }
    let total = latency.rate.saturating_mul(latency.duration_s);
    let consumer: BaseConsumer = consumer_config(args)?
        .create()
        .context("creating the consumer")?;
    let (assignment, _) = assign_from(&consumer, &args.topic, |_, _, high| Offset::Offset(high))?;
    consumer
        .assign(&assignment)
        .context("assigning partitions")?;
    let shared = Shared {
        start: Instant::now(),
        warmed_up: AtomicBool::new(false),
        sent: AtomicU64::new(0),
        sending_done: AtomicBool::new(false),
    };

    let (produced, received) = thread::scope(|scope| {
        let receiver = scope.spawn(|| receive(&consumer, &shared, total));
        let produced = produce_paced(args, latency, &shared, total);
        shared.sending_done.store(true, Ordering::Release);
        let received = receiver
            .join()
            .map_err(|_| anyhow!("the consumer thread panicked"))
            .and_then(|r| r);
        (produced, received)
    });
    let (ack, send_time, errors) = produced?;
    let (e2e, seen) = received?;

    let mut report = Report::new("latency", &args.label, &args.topic);
    report.throughput(seen, seen * settings.size as u64, send_time);
    report.ack_latency_ms = ack.summary();
    report.e2e_latency_ms = e2e.summary();
    report.errors = errors + total.saturating_sub(seen);
    describe(&mut report, args, settings);
    report.param("partitions", assignment.count());
    report.param("rate", latency.rate);
    report.param("duration.s", latency.duration_s);
    Ok(report)
}

/// Sends the warm-up, then `total` messages at `rate`; returns ack latencies, the time the
/// sending took and the delivery errors.
fn produce_paced(
    args: &Args,
    latency: &LatencyArgs,
    shared: &Shared,
    total: u64,
) -> Result<(Latencies, Duration, u64)> {
    let settings = &latency.producer;
    let producer: BaseProducer<DeliveryContext> = producer_config(args, settings)?
        .create_with_context(DeliveryContext::new(shared.start, total))
        .context("creating the producer")?;
    let mut payloads = Payloads::new(settings.payload, settings.size);
    // The stamp is written into a copy: the pool's messages stay as generated.
    let mut payload = payloads.next_message().to_vec();

    stamp(&mut payload, WARM_UP);
    let warm_up_deadline = Instant::now() + WARM_UP_TIMEOUT;
    for _ in 0..WARM_UP_MESSAGES {
        send(&producer, &args.topic, &payload, 0)?;
    }
    producer
        .flush(WARM_UP_TIMEOUT)
        .context("flushing the warm-up")?;
    while !shared.warmed_up.load(Ordering::Acquire) {
        if Instant::now() > warm_up_deadline {
            bail!("the consumer saw no warm-up message within {WARM_UP_TIMEOUT:?}");
        }
        producer.poll(Duration::from_millis(10));
    }
    producer.context().take_stats();

    let interval = Duration::from_secs_f64(1.0 / latency.rate as f64);
    let begin = Instant::now();
    for i in 0..total {
        let due = begin + interval.mul_f64(i as f64);
        // Serve delivery reports while waiting for the next send slot, and send a message as
        // soon as its slot is less than a millisecond away: librdkafka's poll timeout is whole
        // milliseconds (polling through a shorter wait spun a core), and sleeping out every
        // sub-millisecond gap cost a context switch per message (100,000 a second at
        // 100,000 msg/s, a fifth of the client's samples) on a machine the broker shares.
        // Messages leave at most 1 ms early, in bursts of at most a millisecond's worth; each
        // is stamped when it is sent, so latencies are measured from the real send.
        loop {
            let wait = due.saturating_duration_since(Instant::now());
            if wait < PACING_SLACK {
                break;
            }
            producer.poll(wait);
        }
        payload.copy_from_slice(payloads.next_message());
        let stamp_nanos = producer.context().send_stamp();
        stamp(&mut payload, stamp_nanos as u64);
        send(&producer, &args.topic, &payload, stamp_nanos)?;
        shared.sent.store(i + 1, Ordering::Release);
        producer.poll(Duration::ZERO);
    }
    let send_time = begin.elapsed();
    producer
        .flush(DRAIN_TIMEOUT)
        .context("flushing the producer")?;
    let stats = producer.context().take_stats();
    if let Some(error) = stats.first_error {
        eprintln!("oxbow-loadgen: first delivery error: {error}");
    }
    Ok((stats.latencies, send_time, stats.errors))
}

/// Receives until `total` stamped messages arrived (or the drain timeout after the last send);
/// returns end-to-end latencies and the count seen.
fn receive(consumer: &BaseConsumer, shared: &Shared, total: u64) -> Result<(Latencies, u64)> {
    let mut latencies = Latencies::with_capacity(usize::try_from(total).unwrap_or(0));
    let mut seen = 0u64;
    let mut drain_deadline = None;
    let give_up = Instant::now() + WARM_UP_TIMEOUT;
    while seen < total {
        if let Some(result) = consumer.poll(Duration::from_millis(50)) {
            let now = shared.start.elapsed();
            let message = result.context("consuming")?;
            let Some(sent) = message.payload().and_then(read_stamp) else {
                bail!(
                    "a message without a send time at offset {}",
                    message.offset()
                );
            };
            if sent == WARM_UP {
                shared.warmed_up.store(true, Ordering::Release);
                continue;
            }
            latencies.record(now.saturating_sub(Duration::from_nanos(sent)));
            seen += 1;
        }
        if !shared.warmed_up.load(Ordering::Acquire) && Instant::now() > give_up {
            bail!("no warm-up message arrived");
        }
        if shared.sending_done.load(Ordering::Acquire) {
            let deadline = *drain_deadline.get_or_insert_with(|| Instant::now() + DRAIN_TIMEOUT);
            let sent = shared.sent.load(Ordering::Acquire);
            if Instant::now() > deadline || (sent < total && seen >= sent) {
                break;
            }
        }
    }
    Ok((latencies, seen))
}

fn stamp(payload: &mut [u8], nanos: u64) {
    if let Some(head) = payload.get_mut(..STAMP_BYTES) {
        head.copy_from_slice(&nanos.to_le_bytes());
    }
}

fn read_stamp(payload: &[u8]) -> Option<u64> {
    let head: [u8; STAMP_BYTES] = payload.get(..STAMP_BYTES)?.try_into().ok()?;
    Some(u64::from_le_bytes(head))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_round_trips() {
        let mut payload = vec![b'A'; 16];
        stamp(&mut payload, 123_456_789);
        assert_eq!(read_stamp(&payload), Some(123_456_789));
        assert_eq!(read_stamp(&payload[..4]), None);
    }
}
