//! The local metadata log: an append-only file of typed records that describe topics,
//! partitions and configs. A single broker applies them directly; the controller quorum
//! will replicate the same records.
//!
//! Format: one record per line, `<crc32c as 8 hex digits> <record as JSON>\n`. A line
//! whose CRC does not match (a write torn by a crash) ends the log: replay stops there
//! and the file is truncated to the last good line before anything is appended.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A change to the cluster's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MetadataRecord {
    ClusterIdentified {
        cluster_id: String,
    },
    TopicCreated {
        name: String,
        topic_id: Uuid,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
    },
    PartitionsAdded {
        name: String,
        total_partitions: i32,
    },
    TopicConfigChanged {
        name: String,
        configs: BTreeMap<String, String>,
    },
    TopicDeleted {
        name: String,
        topic_id: Uuid,
    },
    ProducerIdsAllocated {
        next_producer_id: i64,
    },
}

/// Failures of the metadata log file.
#[derive(Debug, thiserror::Error)]
pub enum MetadataLogError {
    #[error("cannot open metadata log {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot append to metadata log {path}: {source}")]
    Append {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot encode metadata record: {0}")]
    Encode(String),
}

/// The metadata log file.
#[derive(Debug)]
pub struct MetadataLog {
    path: PathBuf,
    file: File,
}

impl MetadataLog {
    /// Opens (creating) the log in `dir` and returns every intact record in order.
    pub fn open(dir: &Path) -> Result<(Self, Vec<MetadataRecord>), MetadataLogError> {
        let path = dir.join("metadata.log");
        let open = |source| MetadataLogError::Open {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(open)?;
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(error) => return Err(open(error)),
        };
        let mut records = Vec::new();
        let mut good_length = 0usize;
        for line in bytes.split_inclusive(|b| *b == b'\n') {
            match decode_line(line) {
                Some(record) => {
                    records.push(record);
                    good_length += line.len();
                }
                None => {
                    tracing::warn!(path = %path.display(), offset = good_length, "Metadata log ends in a torn or corrupt record; truncating");
                    break;
                }
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)
            .map_err(open)?;
        if good_length < bytes.len() {
            file.set_len(good_length as u64).map_err(open)?;
        }
        Ok((Self { path, file }, records))
    }

    /// Appends records and fsyncs: metadata changes are acknowledged only when durable.
    pub fn append(&mut self, records: &[MetadataRecord]) -> Result<(), MetadataLogError> {
        let mut text = Vec::new();
        for record in records {
            let json =
                serde_json::to_vec(record).map_err(|e| MetadataLogError::Encode(e.to_string()))?;
            text.extend_from_slice(format!("{:08x} ", crc32c::crc32c(&json)).as_bytes());
            text.extend_from_slice(&json);
            text.push(b'\n');
        }
        let fail = |source| MetadataLogError::Append {
            path: self.path.clone(),
            source,
        };
        self.file.write_all(&text).map_err(fail)?;
        self.file.sync_data().map_err(fail)
    }
}

fn decode_line(line: &[u8]) -> Option<MetadataRecord> {
    let line = line.strip_suffix(b"\n")?;
    let (crc, json) = (line.get(..8)?, line.get(9..)?);
    let crc = u32::from_str_radix(std::str::from_utf8(crc).ok()?, 16).ok()?;
    (crc32c::crc32c(json) == crc)
        .then(|| serde_json::from_slice(json).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_replay_in_order_and_a_torn_tail_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, records) = MetadataLog::open(dir.path()).unwrap();
        assert!(records.is_empty());
        let created = MetadataRecord::TopicCreated {
            name: "a".into(),
            topic_id: Uuid::new_v4(),
            partitions: 3,
            replication_factor: 1,
            configs: BTreeMap::from([("retention.ms".into(), "5".into())]),
        };
        let grown = MetadataRecord::PartitionsAdded {
            name: "a".into(),
            total_partitions: 4,
        };
        log.append(&[created.clone(), grown.clone()]).unwrap();
        drop(log);
        // A torn third record.
        let path = dir.path().join("metadata.log");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"0000abcd {\"type\":\"topic_del");
        std::fs::write(&path, &bytes).unwrap();
        let (mut log, records) = MetadataLog::open(dir.path()).unwrap();
        assert_eq!(records, vec![created.clone(), grown.clone()]);
        log.append(&[MetadataRecord::ProducerIdsAllocated {
            next_producer_id: 1000,
        }])
        .unwrap();
        let (_, records) = MetadataLog::open(dir.path()).unwrap();
        assert_eq!(records.len(), 3);
    }
}
