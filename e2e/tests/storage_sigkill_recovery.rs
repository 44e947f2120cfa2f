//! SIGKILL a process in the middle of appends, then recover its log: every append it
//! acknowledged is there, in order, byte for byte, and the log takes appends again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::records::RecordBatchDecoder;
use oxbow_broker::{LogConfig, LogManager, SystemClock, TopicPartition};

fn kill_after(dir: &std::path::Path, acks: usize) -> u64 {
    let mut child = Command::new(env!("CARGO_BIN_EXE_log-crash-writer"))
        .arg(dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut last_acked = None;
    for _ in 0..acks {
        last_acked = Some(
            lines
                .next()
                .expect("writer stopped early")
                .unwrap()
                .parse::<u64>()
                .unwrap(),
        );
    }
    assert_eq!(sigkill(child.id()), 0);
    // Acks already in the pipe were acknowledged before the kill too.
    for line in lines {
        last_acked = Some(line.unwrap().parse().unwrap());
    }
    let status = child.wait().unwrap();
    assert!(!status.success(), "the writer must have died from SIGKILL");
    last_acked.unwrap()
}

/// SIGKILL through kill(1): the workspace forbids `unsafe`, which libc::kill would need.
fn sigkill(pid: u32) -> i32 {
    Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .map_or(-1, |s| s.code().unwrap_or(-1))
}

#[test]
fn every_acknowledged_append_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut acknowledged_end = 0;
    for round in 0..3 {
        let last_acked = kill_after(dir.path(), 150 + round * 50);
        assert!(last_acked + 1 > acknowledged_end);
        acknowledged_end = last_acked + 1;

        let (manager, report) = LogManager::open(
            &[dir.path().to_path_buf()],
            &|_| LogConfig {
                segment_bytes: 256 * 1024,
                ..LogConfig::default()
            },
            Arc::new(SystemClock),
        )
        .unwrap();
        assert_eq!(
            report.unclean_dirs.len(),
            1,
            "a SIGKILL is not a clean shutdown"
        );
        assert!(report.failed.is_empty());
        let log = manager.get(&TopicPartition::new("crash", 0)).unwrap();
        assert!(
            log.log_end_offset() >= acknowledged_end,
            "lost acknowledged data"
        );

        // Every record is readable, in order, with the content the writer gave it.
        let mut expected = 0u64;
        while expected < log.log_end_offset() {
            let read = log.read(expected, 1 << 20).unwrap();
            let mut bytes = Bytes::from(read.read_to_vec().unwrap());
            for set in RecordBatchDecoder::decode_all(&mut bytes).unwrap() {
                for record in set.records {
                    assert_eq!(record.offset as u64, expected);
                    assert_eq!(record.key.unwrap(), Bytes::from(expected.to_string()));
                    let value = record.value.unwrap();
                    assert!(value.iter().all(|b| *b == (expected % 251) as u8));
                    expected += 1;
                }
            }
        }
        manager.shutdown().unwrap();
    }
}
