//! Append throughput of 1 KiB records in 16 KiB and 1 MiB batches to a real log on disk
//! (page cache, no fsync: Kafka's default durability). Compare with `dd bs=1M` on the
//! same filesystem.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kafka_protocol::records::Compression;
use oxbow_broker::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use oxbow_broker::{Log, LogConfig, LogDirHealth, SystemClock, TopicPartition};

fn batch_of(bytes: usize) -> Vec<u8> {
    let records: Vec<SimpleRecord> = (0..bytes / 1024)
        .map(|i| SimpleRecord {
            key: None,
            value: Some(vec![(i % 256) as u8; 1024 - 16].into()),
            timestamp: 1_700_000_000_000,
            headers: vec![],
        })
        .collect();
    build_batch(&records, Compression::None, ProducerFields::default())
        .map(|b| b.to_vec())
        .unwrap_or_default()
}

fn bench_append(c: &mut Criterion) {
    let mut group = c.benchmark_group("storage_append");
    group.measurement_time(Duration::from_secs(8));
    for (name, size) in [("16KiB_batches", 16 * 1024), ("1MiB_batches", 1024 * 1024)] {
        let Ok(dir) =
            tempfile::tempdir_in(std::env::var("OXBOW_BENCH_DIR").unwrap_or_else(|_| ".".into()))
        else {
            return;
        };
        let config = LogConfig {
            segment_bytes: 256 * 1024 * 1024,
            retention_bytes: 512 * 1024 * 1024,
            max_message_bytes: 2 * 1024 * 1024,
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
        let template = batch_of(size);
        group.throughput(Throughput::Bytes(template.len() as u64));
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let batches: Vec<Vec<u8>> =
                    (0..iterations.min(64)).map(|_| template.clone()).collect();
                let mut elapsed = Duration::ZERO;
                for i in 0..iterations {
                    let index = (i % batches.len() as u64) as usize;
                    let start = Instant::now();
                    let _ = log.append(&batches[index], 0);
                    elapsed += start.elapsed();
                    if log.size_bytes() > 768 * 1024 * 1024 {
                        let _ = log.apply_retention();
                    }
                }
                elapsed
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_append);
criterion_main!(benches);
