//! Appends numbered batches to a partition log until it is killed, printing the last
//! offset of every acknowledged append. The SIGKILL recovery test runs it.
//!
//! Usage: `log-crash-writer <log dir>`

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use kafka_protocol::records::Compression;
use oxbow_broker::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use oxbow_broker::{LogConfig, LogManager, SystemClock, TopicPartition};

/// Records per batch and value size: large enough that a kill often lands mid-write.
const RECORDS_PER_BATCH: u64 = 8;
const VALUE_BYTES: usize = 4096;

fn main() -> anyhow::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .context("usage: log-crash-writer <log dir>")?;
    let config = LogConfig {
        segment_bytes: 256 * 1024,
        ..LogConfig::default()
    };
    let (manager, _) = LogManager::open(&[dir.into()], &|_| config.clone(), Arc::new(SystemClock))?;
    let tp = TopicPartition::new("crash", 0);
    let log = match manager.get(&tp) {
        Some(log) => log,
        None => manager.create(tp, config.clone())?,
    };
    let mut stdout = std::io::stdout().lock();
    let mut next = log.log_end_offset();
    loop {
        let records: Vec<SimpleRecord> = (next..next + RECORDS_PER_BATCH)
            .map(|offset| SimpleRecord {
                key: Some(offset.to_string().into_bytes().into()),
                value: Some(vec![(offset % 251) as u8; VALUE_BYTES].into()),
                timestamp: offset as i64,
                headers: vec![],
            })
            .collect();
        let batch = build_batch(&records, Compression::None, ProducerFields::default())?;
        let info = log.append(&batch, 0)?;
        anyhow::ensure!(
            info.base_offset == next,
            "offsets jumped from {next} to {}",
            info.base_offset
        );
        next = info.last_offset + 1;
        writeln!(stdout, "{}", info.last_offset)?;
        stdout.flush()?;
    }
}
