//! Reads of a partition log: fetch regions, offsets by timestamp, largest timestamp.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::records::{Record, RecordBatchDecoder};

use super::log::{Log, LogError};
use super::segment::{FileRegion, LogSegment};

/// What a fetch read found: file regions of whole batches plus the partition's offsets.
#[derive(Debug, Clone, Default)]
pub struct ReadResult {
    pub regions: Vec<FileRegion>,
    /// Offset after the last batch returned (the start offset when nothing was).
    pub next_offset: u64,
    pub high_watermark: u64,
    /// The last stable offset when the read was made (`read_committed` reads stop there).
    pub last_stable_offset: u64,
    pub log_start_offset: u64,
    pub log_end_offset: u64,
}

impl ReadResult {
    pub fn bytes(&self) -> u64 {
        self.regions.iter().map(|r| r.length).sum()
    }

    /// Copies every region into one buffer (the copying path, for TLS and tests).
    pub fn read_to_vec(&self) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(self.bytes() as usize);
        self.read_into(&mut bytes)?;
        Ok(bytes)
    }

    /// Appends every region to `buffer`, reusing its capacity.
    pub fn read_into(&self, buffer: &mut Vec<u8>) -> std::io::Result<()> {
        for region in &self.regions {
            region.read_into(buffer)?;
        }
        Ok(())
    }
}

/// Which offsets a reader may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadLimit {
    /// Consumers: up to the high watermark.
    HighWatermark,
    /// Followers: up to the log end offset.
    LogEnd,
    /// `read_committed` consumers: up to the last stable offset.
    LastStable,
}

impl Log {
    /// Whole batches from the one containing `start_offset`, up to `max_bytes` (at least
    /// one batch), below the high watermark. The regions can be sent with `sendfile`.
    pub fn read(&self, start_offset: u64, max_bytes: u64) -> Result<ReadResult, LogError> {
        self.read_with_limit(start_offset, max_bytes, ReadLimit::HighWatermark)
    }

    pub fn read_with_limit(
        &self,
        start_offset: u64,
        max_bytes: u64,
        limit: ReadLimit,
    ) -> Result<ReadResult, LogError> {
        if self.health.read().is_offline() {
            return Err(LogError::DirOffline {
                dir: self.health.read().path().to_path_buf(),
            });
        }
        let last_stable_offset = self.last_stable_offset();
        let high_watermark = self.high_watermark();
        let log_end_offset = self.log_end_offset();
        let log_start_offset = self.log_start_offset();
        let upper = match limit {
            ReadLimit::HighWatermark => high_watermark,
            ReadLimit::LogEnd => log_end_offset,
            ReadLimit::LastStable => last_stable_offset.min(high_watermark),
        };
        if start_offset < log_start_offset || start_offset > log_end_offset {
            return Err(LogError::OffsetOutOfRange {
                topic_partition: self.topic_partition.clone(),
                offset: start_offset,
                log_start_offset,
                log_end_offset,
            });
        }
        let mut result = ReadResult {
            regions: Vec::new(),
            next_offset: start_offset,
            high_watermark,
            last_stable_offset: last_stable_offset.min(high_watermark),
            log_start_offset,
            log_end_offset,
        };
        if start_offset >= upper {
            return Ok(result);
        }
        let segments: Vec<Arc<LogSegment>> = {
            let map = self.segments.read();
            let first = map
                .range(..=start_offset)
                .next_back()
                .map_or(0, |(base, _)| *base);
            map.range(first..).map(|(_, s)| Arc::clone(s)).collect()
        };
        let mut remaining = max_bytes;
        for segment in segments {
            if result.next_offset >= upper {
                break;
            }
            let found = segment
                .find_batch(result.next_offset)
                .map_err(|e| self.fail(e))?;
            let Some((position, _)) = found else { continue };
            let region = segment
                .region_from(position, remaining, upper)
                .map_err(|e| self.fail(e))?;
            let Some((region, next)) = region else { break };
            // Only the very first batch may exceed `max_bytes` (KIP-74).
            if !result.regions.is_empty() && region.length > remaining {
                break;
            }
            remaining = remaining.saturating_sub(region.length);
            result.next_offset = next;
            result.regions.push(region);
            // The region stopped inside this segment (the next batch did not fit, or is
            // not readable yet): the read ends here. Going on to the next segment would
            // skip the rest of this one.
            if remaining == 0 || next < segment.next_offset() {
                break;
            }
        }
        Ok(result)
    }

    /// The first offset whose record timestamp is at or after `timestamp`, with that
    /// timestamp (ListOffsets by timestamp); `None` when every record is older.
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<(u64, i64)>, LogError> {
        let log_start = self.log_start_offset();
        let upper = self.high_watermark();
        for segment in self.segments() {
            if segment.max_timestamp() < timestamp || segment.next_offset() <= log_start {
                continue;
            }
            let found = segment
                .find_by_timestamp(timestamp)
                .map_err(|e| self.fail(e))?;
            let Some((position, header)) = found else {
                continue;
            };
            if header.base_offset as u64 >= upper {
                return Ok(None);
            }
            let records = self.decode_batch_at(&segment, position, header.total_size())?;
            let exact = records
                .iter()
                .find(|r| r.timestamp >= timestamp && r.offset as u64 >= log_start)
                .map(|r| (r.offset as u64, r.timestamp));
            if let Some(found) = exact {
                return Ok(Some(found));
            }
            if header.is_log_append_time() {
                return Ok(Some((
                    (header.base_offset as u64).max(log_start),
                    header.max_timestamp,
                )));
            }
        }
        Ok(None)
    }

    /// The offset and timestamp of the record with the largest timestamp (ListOffsets
    /// MAX_TIMESTAMP); the earliest such record when several share it.
    pub fn max_timestamp_offset(&self) -> Result<Option<(u64, i64)>, LogError> {
        let best = self
            .segments()
            .into_iter()
            .filter(|s| !s.is_empty() && s.next_offset() > self.log_start_offset())
            .fold(None::<Arc<LogSegment>>, |best, segment| match best {
                Some(b) if b.max_timestamp() >= segment.max_timestamp() => Some(b),
                _ => Some(segment),
            });
        let Some(segment) = best else { return Ok(None) };
        let target = segment.max_timestamp();
        self.offset_for_timestamp(target)
    }

    /// Decodes the records of the batch at `position` (decompressing as needed).
    pub(super) fn decode_batch_at(
        &self,
        segment: &LogSegment,
        position: u64,
        size: usize,
    ) -> Result<Vec<Record>, LogError> {
        let region = FileRegion {
            file: Arc::clone(segment.file()),
            position,
            length: size as u64,
        };
        let bytes = region.read_to_vec().map_err(|source| {
            self.fail(super::segment::SegmentError::Read {
                path: segment.log_path().to_path_buf(),
                position,
                source,
            })
        })?;
        let mut buffer = Bytes::from(bytes);
        RecordBatchDecoder::decode(&mut buffer)
            .map(|set| set.records)
            .map_err(|error| LogError::Decode {
                topic_partition: self.topic_partition.clone(),
                offset: position,
                reason: error.to_string(),
            })
    }
}
