//! librdkafka (the `rdkafka` crate) against the real `oxbow` binary: byte-identical round
//! trips with keys, null keys and values, headers (a null-valued one too) and explicit
//! timestamps, in every compression codec; a record batch exactly at max.message.bytes is
//! stored and one byte more is refused with MESSAGE_TOO_LARGE. The broker is SIGKILLed
//! between produce and consume; every acknowledged message is read back after the
//! restart, once over the sendfile fetch path and once over the copying one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Header, Headers, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, Timestamp, TopicPartitionList};

use oxbow_testkit::BrokerProcess;

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];
const MESSAGES_PER_CODEC: usize = 60;
/// Kafka's default max.message.bytes: a whole record batch of 1 MiB plus 12 bytes.
const MAX_MESSAGE_BYTES: usize = 1024 * 1024 + 12;
/// A v2 batch of one record with a null key, no headers and a value of this many bytes is
/// exactly MAX_MESSAGE_BYTES long: 61 bytes of batch header, a 3-byte record length, 4 bytes
/// of attributes, timestamp and offset deltas and null key, a 3-byte value length, and the
/// header count.
const VALUE_AT_LIMIT: usize = MAX_MESSAGE_BYTES - 61 - 3 - 4 - 3 - 1;
const WAIT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Sent {
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
    timestamp: i64,
}

/// Deterministic messages: every byte value appears, keys and values are sometimes null,
/// headers sometimes absent, sometimes with a null value.
fn messages(seed: usize) -> Vec<Sent> {
    (0..MESSAGES_PER_CODEC)
        .map(|i| {
            let n = i + seed * 1000;
            let key = (i % 5 != 0).then(|| format!("key-{n}-\u{0}-\u{ff}").into_bytes());
            let value = (i % 7 != 3).then(|| {
                (0..(i * 37) % 700 + 1)
                    .map(|j| ((j * 31 + n * 7) % 256) as u8)
                    .collect()
            });
            let headers = match i % 3 {
                0 => Vec::new(),
                1 => vec![("h".to_string(), Some(vec![0, 1, 2, 255]))],
                _ => vec![
                    ("trace".to_string(), Some(format!("t-{n}").into_bytes())),
                    ("null-header".to_string(), None),
                    ("trace".to_string(), Some(b"duplicate key".to_vec())),
                ],
            };
            Sent {
                key,
                value,
                headers,
                timestamp: 1_700_000_000_000 + n as i64 * 1000,
            }
        })
        .collect()
}

fn producer(bootstrap: &str, codec: &str, idempotent: bool) -> FutureProducer {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("compression.type", codec)
        .set("acks", "all")
        .set("enable.idempotence", idempotent.to_string())
        .set("linger.ms", "5")
        // Let the client send what the broker must refuse.
        .set("message.max.bytes", "4000000")
        .set("batch.size", "4000000")
        // No retries for the plain producer: a refused batch is reported, not retried.
        .set(
            "message.send.max.retries",
            if idempotent { "5" } else { "0" },
        )
        .create()
        .expect("producer")
}

fn record_headers(sent: &Sent) -> OwnedHeaders {
    let mut headers = OwnedHeaders::new_with_capacity(sent.headers.len());
    for (key, value) in &sent.headers {
        headers = headers.insert(Header {
            key,
            value: value.as_deref(),
        });
    }
    headers
}

/// Produces every message to partition 0 and returns the acknowledged offsets in order.
async fn produce_all(producer: &FutureProducer, topic: &str, sent: &[Sent]) -> Vec<i64> {
    let deliveries: Vec<_> = sent
        .iter()
        .map(|message| {
            let mut record = FutureRecord::<[u8], [u8]>::to(topic)
                .partition(0)
                .timestamp(message.timestamp)
                .headers(record_headers(message));
            if let Some(key) = &message.key {
                record = record.key(key.as_slice());
            }
            if let Some(value) = &message.value {
                record = record.payload(value.as_slice());
            }
            producer.send_result(record).expect("queued")
        })
        .collect();
    let mut offsets = Vec::with_capacity(deliveries.len());
    for delivery in deliveries {
        let delivered = delivery
            .await
            .expect("delivery report")
            .expect("acknowledged");
        assert_eq!(delivered.partition, 0);
        offsets.push(delivered.offset);
    }
    offsets
}

#[derive(Debug, PartialEq, Eq)]
struct Received {
    offset: i64,
    message: Sent,
}

/// Reads partition 0 of `topic` from the beginning until `count` messages arrived.
fn consume(bootstrap: &str, topic: &str, count: usize) -> Vec<Received> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        // librdkafka wants a group id even for manual assignment; no group is joined.
        .set("group.id", "clients-rdkafka")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .set("check.crcs", "true")
        .create()
        .expect("consumer");
    let mut assignment = TopicPartitionList::new();
    assignment
        .add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    consumer.assign(&assignment).unwrap();
    let deadline = Instant::now() + WAIT;
    let mut received = Vec::with_capacity(count);
    while received.len() < count {
        assert!(
            Instant::now() < deadline,
            "{topic}: {} of {count} messages after {WAIT:?}",
            received.len()
        );
        let Some(polled) = consumer.poll(Duration::from_millis(500)) else {
            continue;
        };
        let message = polled.unwrap_or_else(|e| panic!("{topic}: consume error {e}"));
        let headers = message
            .headers()
            .map(|headers| {
                headers
                    .iter()
                    .map(|h| (h.key.to_string(), h.value.map(<[u8]>::to_vec)))
                    .collect()
            })
            .unwrap_or_default();
        let timestamp = match message.timestamp() {
            Timestamp::CreateTime(ms) => ms,
            other => panic!("{topic}: expected CreateTime, got {other:?}"),
        };
        received.push(Received {
            offset: message.offset(),
            message: Sent {
                key: message.key().map(<[u8]>::to_vec),
                value: message.payload().map(<[u8]>::to_vec),
                headers,
                timestamp,
            },
        });
    }
    received
}

struct Expected {
    topic: String,
    received: Vec<Received>,
}

fn check_all(bootstrap: &str, expected: &[Expected], path: &str) {
    for topic in expected {
        let received = consume(bootstrap, &topic.topic, topic.received.len());
        for (got, want) in received.iter().zip(&topic.received) {
            assert_eq!(got, want, "{} over the {path} fetch path", topic.topic);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rdkafka_round_trips_survive_sigkill_on_both_fetch_paths() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = BrokerProcess::start(dir.path(), &[]);
    let bootstrap = broker.bootstrap();
    let mut expected = Vec::new();

    for (seed, codec) in CODECS.iter().enumerate() {
        let topic = format!("rdkafka-{codec}");
        let sent = messages(seed);
        // Idempotent producers, as recent clients default to.
        let producer = producer(&bootstrap, codec, true);
        let offsets = produce_all(&producer, &topic, &sent).await;
        assert_eq!(offsets, (0..sent.len() as i64).collect::<Vec<_>>());
        expected.push(Expected {
            topic,
            received: offsets
                .into_iter()
                .zip(sent)
                .map(|(offset, message)| Received { offset, message })
                .collect(),
        });
    }

    // The size limit counts the whole batch: exactly at it is stored, one byte more is not.
    let topic = "rdkafka-limit".to_string();
    let producer = producer(&bootstrap, "none", false);
    let at_limit = Sent {
        key: None,
        value: Some(vec![0xab; VALUE_AT_LIMIT]),
        headers: Vec::new(),
        timestamp: 1_700_000_000_000,
    };
    let offsets = produce_all(&producer, &topic, std::slice::from_ref(&at_limit)).await;
    assert_eq!(offsets, vec![0]);
    let over_limit = vec![0xcd; VALUE_AT_LIMIT + 1];
    let refused = producer
        .send_result(
            FutureRecord::<[u8], [u8]>::to(&topic)
                .partition(0)
                .payload(over_limit.as_slice()),
        )
        .expect("queued")
        .await
        .expect("delivery report");
    match refused {
        Err((KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge), _)) => {}
        other => panic!("expected MESSAGE_TOO_LARGE, got {other:?}"),
    }
    expected.push(Expected {
        topic,
        received: vec![Received {
            offset: 0,
            message: at_limit,
        }],
    });
    drop(producer);

    // SIGKILL: no shutdown, no flush. Every acknowledged message must be there.
    broker.sigkill();
    broker.restart(&[]);
    let bootstrap_again = bootstrap.clone();
    let expected = tokio::task::spawn_blocking(move || {
        check_all(&bootstrap_again, &expected, "sendfile");
        expected
    })
    .await
    .unwrap();

    broker.stop();
    broker.restart(&["fetch.sendfile.enable=false"]);
    tokio::task::spawn_blocking(move || check_all(&bootstrap, &expected, "copy"))
        .await
        .unwrap();
    assert!(broker.is_running());
    broker.stop();
}
