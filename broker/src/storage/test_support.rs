//! Helpers for the storage unit tests: real batches, real directories, a manual clock.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::records::{Compression, RecordBatchDecoder};

use super::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use super::{Log, LogConfig, LogDirHealth, ManualClock, TopicPartition};

pub const START_MS: i64 = 1_700_000_000_000;

pub fn records(
    count: usize,
    value_bytes: usize,
    timestamp: i64,
    key_space: usize,
) -> Vec<SimpleRecord> {
    (0..count)
        .map(|i| SimpleRecord {
            key: Some(Bytes::from(format!("key-{}", i % key_space.max(1)))),
            value: Some(Bytes::from(vec![(i % 251) as u8; value_bytes])),
            timestamp: timestamp + i as i64,
            headers: vec![("h".to_string(), Some(Bytes::from_static(b"1")))],
        })
        .collect()
}

pub fn batch(count: usize, value_bytes: usize, timestamp: i64) -> Vec<u8> {
    build_batch(
        &records(count, value_bytes, timestamp, usize::MAX),
        Compression::None,
        ProducerFields::default(),
    )
    .unwrap()
    .to_vec()
}

pub fn keyed_batch(keys: &[(&str, Option<&str>)], timestamp: i64) -> Vec<u8> {
    let records: Vec<SimpleRecord> = keys
        .iter()
        .map(|(k, v)| SimpleRecord {
            key: Some(Bytes::from(k.to_string())),
            value: v.map(|v| Bytes::from(v.to_string())),
            timestamp,
            headers: vec![],
        })
        .collect();
    build_batch(&records, Compression::None, ProducerFields::default())
        .unwrap()
        .to_vec()
}

pub struct TestLog {
    pub dir: tempfile::TempDir,
    pub clock: Arc<ManualClock>,
    pub log: Log,
}

pub fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 4096,
        index_interval_bytes: 256,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    }
}

pub fn test_log(config: LogConfig) -> TestLog {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_MS));
    let health = Arc::new(LogDirHealth::new(dir.path().to_path_buf()));
    let log = Log::create(
        dir.path(),
        TopicPartition::new("t", 0),
        config,
        clock.clone(),
        health,
    )
    .unwrap();
    TestLog { dir, clock, log }
}

impl TestLog {
    pub fn reopen(self, clean: bool) -> (TestLog, super::log::LoadReport) {
        let config = (*self.log.config()).clone();
        let path = self.log.dir().to_path_buf();
        drop(self.log);
        let health = Arc::new(LogDirHealth::new(self.dir.path().to_path_buf()));
        let (log, report) = Log::open(
            &path,
            TopicPartition::new("t", 0),
            config,
            self.clock.clone(),
            health,
            clean,
        )
        .unwrap();
        (
            TestLog {
                dir: self.dir,
                clock: self.clock,
                log,
            },
            report,
        )
    }
}

/// Every record in the log from `start`, as (offset, key, value), by decoding fetches.
pub fn all_records(log: &Log, start: u64) -> Vec<(u64, Option<Bytes>, Option<Bytes>)> {
    let mut out = Vec::new();
    let mut next = start;
    loop {
        let read = log.read(next, 64 * 1024).unwrap();
        if read.regions.is_empty() {
            break;
        }
        let mut bytes = Bytes::from(read.read_to_vec().unwrap());
        for set in RecordBatchDecoder::decode_all(&mut bytes).unwrap() {
            for r in set.records {
                out.push((r.offset as u64, r.key, r.value));
            }
        }
        next = read.next_offset;
    }
    out
}
