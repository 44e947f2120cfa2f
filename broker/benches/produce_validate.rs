//! The leader's per-record validation on produce (`storage::validator`) and what it adds
//! to an append: 16 KiB batches of 1 KiB records under the default topic rules (CreateTime
//! bounds), uncompressed and lz4 (both kept as produced: the zero-copy path, no
//! allocation), a compacted topic (lz4 inflated to read keys) and compression.type=zstd
//! (the lz4 batch re-encoded: the copy path). `append_only` and `validate_then_append` are
//! the produce path without and with validation; both append the request's bytes as they
//! are (stamped header + body in one `pwritev`), as Produce does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kafka_protocol::records::Compression;
use oxbow_broker::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use oxbow_broker::{
    Clock, Log, LogConfig, LogDirHealth, RecordRules, SystemClock, TopicPartition, validate_records,
};

fn batch(compression: Compression) -> Vec<u8> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default();
    let records: Vec<SimpleRecord> = (0..16)
        .map(|i| SimpleRecord {
            key: Some(format!("key-{i}").into_bytes().into()),
            value: Some(
                (0..1000)
                    .map(|j| ((i * 31 + j) % 251) as u8)
                    .collect::<Vec<u8>>()
                    .into(),
            ),
            timestamp: now,
            headers: vec![],
        })
        .collect();
    build_batch(&records, compression, ProducerFields::default())
        .map(|b| b.to_vec())
        .unwrap_or_default()
}

fn bench_validate(c: &mut Criterion) {
    let mut group = c.benchmark_group("produce_validate");
    group.measurement_time(Duration::from_secs(4));
    let tp = TopicPartition::new("bench", 0);
    let now = SystemClock.now_ms();
    let compacted = LogConfig::default()
        .with_topic_configs([("cleanup.policy", "compact")])
        .unwrap_or_default();
    let zstd = LogConfig::default()
        .with_topic_configs([("compression.type", "zstd")])
        .unwrap_or_default();
    let default = LogConfig::default();
    for (name, config, compression) in [
        ("as_produced_uncompressed", &default, Compression::None),
        ("as_produced_lz4", &default, Compression::Lz4),
        ("compacted_lz4_inflated", &compacted, Compression::Lz4),
        ("re_encode_lz4_to_zstd", &zstd, Compression::Lz4),
    ] {
        let records = batch(compression);
        let rules = RecordRules::new(config, &tp, now);
        group.throughput(Throughput::Bytes(records.len() as u64));
        group.bench_function(name, |b| b.iter(|| validate_records(&records, &rules)));
    }

    // The produce path before and after: copy the request's bytes and append, with and
    // without validating first.
    let Ok(dir) =
        tempfile::tempdir_in(std::env::var("OXBOW_BENCH_DIR").unwrap_or_else(|_| ".".into()))
    else {
        return;
    };
    let health = Arc::new(LogDirHealth::new(dir.path().to_path_buf()));
    let config = LogConfig {
        segment_bytes: 256 * 1024 * 1024,
        retention_bytes: 512 * 1024 * 1024,
        ..LogConfig::default()
    };
    let Ok(log) = Log::create(
        dir.path(),
        TopicPartition::new("bench", 0),
        config.clone(),
        Arc::new(SystemClock),
        health,
    ) else {
        return;
    };
    let records = batch(Compression::None);
    group.throughput(Throughput::Bytes(records.len() as u64));
    for validate in [false, true] {
        let name = if validate {
            "validate_then_append"
        } else {
            "append_only"
        };
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut elapsed = Duration::ZERO;
                for _ in 0..iterations {
                    let start = Instant::now();
                    if validate {
                        let rules = RecordRules::new(&config, &tp, log.now_ms());
                        let _ = validate_records(&records, &rules);
                    }
                    let _ = log.append(&records, 0);
                    elapsed += start.elapsed();
                    if log.size_bytes() > 384 * 1024 * 1024 {
                        let _ = log.apply_retention();
                    }
                }
                elapsed
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_validate);
criterion_main!(benches);
