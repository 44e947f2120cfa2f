//! Fetch: record bytes from the logs, long-polled.
//!
//! ```text
//!   subscribe to the partitions' append signals
//!   read every partition (file regions, no copy)
//!   enough bytes (min_bytes), an error, or max_wait_ms passed? ── yes ──► respond
//!                        └── no: park until an append, the deadline or shutdown, retry
//! ```
//!
//! The record fields of the encoded response hold 16-byte placeholders; the server puts
//! the file regions there, with `sendfile` on plaintext connections.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{ApiKey, BrokerId, FetchRequest, FetchResponse};
use tokio::sync::watch;
use tokio::time::Instant;

use super::lookup::{leader_log, topic_name};
use super::{Api, ApiResponse, HandlerFuture, RecordsPlaceholder, RequestContext, errors};
use crate::storage::{ReadResult, TopicPartition};

#[derive(Debug)]
pub struct FetchApi;

/// Fetch versions whose records field is a compact (varint-length) field.
const FIRST_FLEXIBLE_VERSION: i16 = 12;

struct PartitionRead {
    topic_index: usize,
    partition: i32,
    outcome: Result<ReadResult, i16>,
}

impl Api for FetchApi {
    fn key(&self) -> ApiKey {
        ApiKey::Fetch
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: FetchRequest = context.decode(body)?;
            let broker = context.broker;
            let names: Vec<Option<String>> = request
                .topics
                .iter()
                .map(|t| topic_name(broker, &t.topic.0, &t.topic_id))
                .collect();
            let deadline =
                Instant::now() + Duration::from_millis(request.max_wait_ms.max(0) as u64);
            let min_bytes = request.min_bytes.max(0) as u64;
            let max_bytes = if request.max_bytes <= 0 {
                i32::MAX as u64
            } else {
                request.max_bytes as u64
            };
            let mut shutdown = broker.shutting_down.clone();
            let reads = loop {
                let mut signals: Vec<watch::Receiver<u64>> = Vec::new();
                for (topic, name) in request.topics.iter().zip(&names) {
                    if let Some(name) = name {
                        for partition in &topic.partitions {
                            signals.push(broker.appends.subscribe(&TopicPartition::new(
                                name.clone(),
                                partition.partition,
                            )));
                        }
                    }
                }
                let reads = read_all(context, &request, &names, max_bytes);
                let bytes: u64 = reads
                    .iter()
                    .filter_map(|r| r.outcome.as_ref().ok())
                    .map(ReadResult::bytes)
                    .sum();
                let any_error = reads.iter().any(|r| r.outcome.is_err());
                if bytes >= min_bytes
                    || any_error
                    || Instant::now() >= deadline
                    || *shutdown.borrow()
                {
                    break reads;
                }
                let any_append = async {
                    let waits = signals.iter_mut().map(|s| Box::pin(s.changed()));
                    let _ = futures_select_all(waits).await;
                };
                tokio::select! {
                    () = any_append => {}
                    () = tokio::time::sleep_until(deadline) => {}
                    _ = shutdown.changed() => {}
                }
            };
            respond(context, &request, &names, reads)
        })
    }
}

/// Waits for the first of several futures (no extra crate for one select_all).
async fn futures_select_all<F: std::future::Future + Unpin>(futures: impl Iterator<Item = F>) {
    let mut futures: Vec<F> = futures.collect();
    if futures.is_empty() {
        return std::future::pending().await;
    }
    std::future::poll_fn(|cx| {
        for future in futures.iter_mut() {
            if std::pin::Pin::new(future).poll(cx).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        std::task::Poll::Pending
    })
    .await;
}

fn read_all(
    context: &RequestContext<'_>,
    request: &FetchRequest,
    names: &[Option<String>],
    max_bytes: u64,
) -> Vec<PartitionRead> {
    let broker = context.broker;
    let mut remaining = max_bytes;
    let mut reads = Vec::new();
    for (topic_index, (topic, name)) in request.topics.iter().zip(names).enumerate() {
        for partition in &topic.partitions {
            let outcome = match name {
                None => Err(ResponseError::UnknownTopicId.code()),
                Some(name) => match leader_log(
                    broker,
                    &TopicPartition::new(name.clone(), partition.partition),
                    partition.current_leader_epoch,
                ) {
                    Err(code) => Err(code),
                    Ok((log, _)) => {
                        let limit = (partition.partition_max_bytes.max(0) as u64).min(remaining);
                        if limit == 0 && remaining == 0 {
                            // Response budget spent: report offsets, no records.
                            log.read(log.high_watermark(), 0)
                                .map_err(|e| errors::log_error(&e))
                        } else {
                            match u64::try_from(partition.fetch_offset) {
                                Ok(offset) => log
                                    .read(offset, limit.max(1))
                                    .map_err(|e| errors::log_error(&e)),
                                Err(_) => Err(ResponseError::OffsetOutOfRange.code()),
                            }
                        }
                    }
                },
            };
            if let Ok(read) = &outcome {
                remaining = remaining.saturating_sub(read.bytes());
            }
            reads.push(PartitionRead {
                topic_index,
                partition: partition.partition,
                outcome,
            });
        }
    }
    reads
}

fn respond(
    context: &RequestContext<'_>,
    request: &FetchRequest,
    names: &[Option<String>],
    reads: Vec<PartitionRead>,
) -> Result<ApiResponse, super::ApiError> {
    let broker = context.broker;
    let zero_copy = broker.config.fetch_sendfile;
    let nonce: u64 = rand::random();
    let mut placeholders = Vec::new();
    let mut topics: Vec<FetchableTopicResponse> = request
        .topics
        .iter()
        .map(|t| {
            FetchableTopicResponse::default()
                .with_topic(t.topic.clone())
                .with_topic_id(t.topic_id)
        })
        .collect();
    for read in reads {
        let mut data = PartitionData::default()
            .with_partition_index(read.partition)
            .with_preferred_read_replica(BrokerId(-1))
            .with_aborted_transactions(Some(Vec::new()));
        match read.outcome {
            Ok(result) => {
                data = data
                    .with_high_watermark(result.high_watermark as i64)
                    .with_last_stable_offset(result.high_watermark as i64)
                    .with_log_start_offset(result.log_start_offset as i64);
                let bytes = result.bytes();
                if let Some(Some(name)) = names.get(read.topic_index) {
                    broker
                        .metrics
                        .bytes_out
                        .with_label_values(&[name])
                        .inc_by(bytes);
                }
                if bytes == 0 {
                    data = data.with_records(Some(Bytes::new()));
                } else if zero_copy {
                    let mut marker = [0u8; 16];
                    marker[..8].copy_from_slice(&nonce.to_be_bytes());
                    marker[8..].copy_from_slice(&(placeholders.len() as u64).to_be_bytes());
                    data = data.with_records(Some(Bytes::copy_from_slice(&marker)));
                    placeholders.push(RecordsPlaceholder {
                        marker,
                        regions: result.regions,
                        compact: context.version >= FIRST_FLEXIBLE_VERSION,
                    });
                } else {
                    match result.read_to_vec() {
                        Ok(copied) => data = data.with_records(Some(Bytes::from(copied))),
                        Err(error) => {
                            tracing::error!(%error, "Reading fetched records failed");
                            data = data.with_error_code(ResponseError::KafkaStorageError.code());
                        }
                    }
                }
            }
            Err(code) => {
                broker
                    .metrics
                    .request_errors
                    .with_label_values(&["Fetch", &code.to_string()])
                    .inc();
                data = data
                    .with_error_code(code)
                    .with_high_watermark(-1)
                    .with_last_stable_offset(-1)
                    .with_log_start_offset(-1)
                    .with_records(Some(Bytes::new()));
            }
        }
        if let Some(topic) = topics.get_mut(read.topic_index) {
            topic.partitions.push(data);
        }
    }
    let response = FetchResponse::default().with_responses(topics);
    let encoded = context.encode(&response)?;
    if placeholders.is_empty() {
        Ok(ApiResponse::Encoded(encoded))
    } else {
        Ok(ApiResponse::WithRecords {
            encoded,
            records: placeholders,
        })
    }
}
