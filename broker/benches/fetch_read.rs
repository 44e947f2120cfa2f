//! Reading sealed segments: the copying read (TLS path) of 1 MiB fetches, and the
//! zero-copy path's cost (locating file regions without touching the bytes).

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kafka_protocol::records::Compression;
use oxbow_broker::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use oxbow_broker::{Log, LogConfig, LogDirHealth, SystemClock, TopicPartition};

const LOG_BYTES: usize = 256 * 1024 * 1024;
const FETCH_BYTES: u64 = 1024 * 1024;

fn bench_read(c: &mut Criterion) {
    let Ok(dir) =
        tempfile::tempdir_in(std::env::var("OXBOW_BENCH_DIR").unwrap_or_else(|_| ".".into()))
    else {
        return;
    };
    let config = LogConfig {
        segment_bytes: 64 * 1024 * 1024,
        ..LogConfig::default()
    };
    let health = Arc::new(LogDirHealth::new(dir.path().to_path_buf()));
    let Ok(log) = Log::create(
        dir.path(),
        TopicPartition::new("bench", 0),
        config,
        Arc::new(SystemClock),
        health,
    ) else {
        return;
    };
    let records: Vec<SimpleRecord> = (0..16)
        .map(|i| SimpleRecord {
            value: Some(vec![i as u8; 1008].into()),
            timestamp: 1,
            ..Default::default()
        })
        .collect();
    let Ok(template) = build_batch(&records, Compression::None, ProducerFields::default()) else {
        return;
    };
    for _ in 0..LOG_BYTES / template.len() {
        let _ = log.append(&template, 0);
    }
    let _ = log.roll();
    let end = log.log_end_offset();

    let mut group = c.benchmark_group("fetch_read");
    group.measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Bytes(FETCH_BYTES));
    let mut offset = 0;
    group.bench_function("copying_1MiB_fetch_sealed", |b| {
        b.iter(|| {
            let read = log.read(offset, FETCH_BYTES).ok();
            let bytes = read
                .as_ref()
                .and_then(|r| r.read_to_vec().ok())
                .map_or(0, |v| v.len());
            offset = read.map_or(0, |r| r.next_offset);
            if offset >= end {
                offset = 0;
            }
            bytes
        });
    });
    let mut offset = 0;
    group.bench_function("regions_only_1MiB_fetch_sealed", |b| {
        b.iter(|| {
            let read = log.read(offset, FETCH_BYTES).ok();
            offset = read.map_or(0, |r| r.next_offset);
            if offset >= end {
                offset = 0;
            }
        });
    });
    group.finish();
}

criterion_group!(benches, bench_read);
criterion_main!(benches);
