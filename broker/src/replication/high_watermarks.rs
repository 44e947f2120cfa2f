//! `replication-offset-checkpoint` in every log directory: each partition's high
//! watermark, in Kafka's layout (version, entry count, `topic partition offset` lines),
//! written atomically every `replica.high.watermark.checkpoint.interval.ms` and at
//! shutdown. A restart resumes from it, so it neither exposes uncommitted records nor
//! hides committed ones.

use std::collections::HashMap;
use std::path::Path;

use crate::model::TopicPartition;
use crate::storage::{CheckpointError, write_atomically};

pub const HIGH_WATERMARK_CHECKPOINT_FILE: &str = "replication-offset-checkpoint";

pub fn write(log_dir: &Path, entries: &[(TopicPartition, u64)]) -> Result<(), CheckpointError> {
    let mut text = format!("0\n{}\n", entries.len());
    for (tp, offset) in entries {
        text.push_str(&format!("{} {} {offset}\n", tp.topic, tp.partition));
    }
    write_atomically(
        &log_dir.join(HIGH_WATERMARK_CHECKPOINT_FILE),
        text.as_bytes(),
    )
}

/// The checkpointed high watermarks of a log directory (none when the file is missing).
pub fn read(log_dir: &Path) -> Result<HashMap<TopicPartition, u64>, CheckpointError> {
    let path = log_dir.join(HIGH_WATERMARK_CHECKPOINT_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(source) => return Err(CheckpointError::Read { path, source }),
    };
    let malformed = |reason| CheckpointError::Malformed {
        path: path.clone(),
        reason,
    };
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("0") {
        return Err(malformed("unknown version"));
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| malformed("entry count missing"))?;
    let mut entries = HashMap::with_capacity(count.min(100_000));
    for line in lines.take(count) {
        // Topic names cannot hold spaces, so the last two fields are the numbers.
        let mut fields = line.trim().rsplitn(3, ' ');
        let offset = fields.next().and_then(|f| f.parse::<u64>().ok());
        let partition = fields.next().and_then(|f| f.parse::<i32>().ok());
        let topic = fields.next();
        match (topic, partition, offset) {
            (Some(topic), Some(partition), Some(offset)) => {
                entries.insert(TopicPartition::new(topic, partition), offset);
            }
            _ => return Err(malformed("bad entry")),
        }
    }
    if entries.len() != count {
        return Err(malformed("fewer entries than counted"));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_kafkas_layout() {
        let dir = tempfile::tempdir().unwrap();
        let entries = vec![
            (TopicPartition::new("a.b-c", 0), 17),
            (TopicPartition::new("__consumer_offsets", 49), 0),
        ];
        write(dir.path(), &entries).unwrap();
        let text =
            std::fs::read_to_string(dir.path().join(HIGH_WATERMARK_CHECKPOINT_FILE)).unwrap();
        assert_eq!(text, "0\n2\na.b-c 0 17\n__consumer_offsets 49 0\n");
        let read = read(dir.path()).unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read[&TopicPartition::new("a.b-c", 0)], 17);
        std::fs::write(
            dir.path().join(HIGH_WATERMARK_CHECKPOINT_FILE),
            "0\n2\nx 1 2\n",
        )
        .unwrap();
        assert!(super::read(dir.path()).is_err(), "a short file is refused");
    }
}
