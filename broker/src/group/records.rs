//! The records of `__consumer_offsets`, in Kafka's own key/value schemas, so Kafka's
//! tools (`kafka-dump-log --offsets-decoder`) read our partitions and we read theirs.
//!
//! Every record key starts with an `int16` version that says what the record is:
//!
//! ```text
//! key v0/v1  OffsetCommitKey     group: string, topic: string, partition: int32
//! key v2     GroupMetadataKey    group: string
//!
//! OffsetCommitValue v3 (written; v0-v3 read)
//!   offset: int64, leader_epoch: int32 (v3), metadata: string,
//!   commit_timestamp: int64, expire_timestamp: int64 (v1 only)
//!
//! GroupMetadataValue v3 (written and read)
//!   protocol_type: string, generation: int32, protocol: nullable string,
//!   leader: nullable string, current_state_timestamp: int64,
//!   members: int32 count, then per member
//!     member_id: string, group_instance_id: nullable string, client_id: string,
//!     client_host: string, rebalance_timeout: int32, session_timeout: int32,
//!     subscription: bytes, assignment: bytes
//! ```
//!
//! A null value is a tombstone: the offset, or the whole group, is gone; compaction
//! (`cleanup.policy=compact`) keeps only the newest value per key. Strings are `int16`
//! length-prefixed, bytes `int32` length-prefixed, big-endian, as in the protocol
//! (`kafka-protocol` keeps its primitive codecs private, so [`Reader`] checks every
//! length against the bytes left); a record we cannot decode is skipped with a log
//! line at load time, never a panic. KIP-848 groups persist only their offsets: their
//! members re-join after a coordinator restart (the protocol fences them with
//! UNKNOWN_MEMBER_ID and the client re-joins at epoch 0).

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// A record of `__consumer_offsets` that cannot be decoded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot decode a __consumer_offsets key: {0}")]
    Key(String),
    #[error("cannot decode the value of {key}: {reason}")]
    Value { key: String, reason: String },
    #[error("unsupported __consumer_offsets {what} version {version}")]
    UnsupportedVersion { what: &'static str, version: i16 },
    #[error("cannot encode a __consumer_offsets record: {0}")]
    Encode(String),
}

/// What a record's key names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordKey {
    Offset {
        group: String,
        topic: String,
        partition: i32,
    },
    Group {
        group: String,
    },
}

/// A committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetValue {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
}

/// A classic group's persisted state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupMetadataValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub current_state_timestamp: i64,
    pub members: Vec<MemberMetadata>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberMetadata {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout: i32,
    pub session_timeout: i32,
    pub subscription: Bytes,
    pub assignment: Bytes,
}

/// A decoded value (None for a tombstone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordValue {
    Offset(OffsetValue),
    Group(GroupMetadataValue),
}

fn put_string(buf: &mut BytesMut, value: Option<&str>) -> Result<(), RecordError> {
    match value {
        None => buf.put_i16(-1),
        Some(value) => {
            let len = i16::try_from(value.len())
                .map_err(|_| RecordError::Encode(format!("string of {} bytes", value.len())))?;
            buf.put_i16(len);
            buf.put_slice(value.as_bytes());
        }
    }
    Ok(())
}

fn put_bytes(buf: &mut BytesMut, value: &[u8]) -> Result<(), RecordError> {
    let len = i32::try_from(value.len())
        .map_err(|_| RecordError::Encode(format!("bytes of length {}", value.len())))?;
    buf.put_i32(len);
    buf.put_slice(value);
    Ok(())
}

/// Bounds-checked reads of the protocol's primitives.
#[derive(Debug)]
struct Reader(Bytes);

impl Reader {
    fn need(&self, n: usize) -> Result<(), String> {
        if self.0.remaining() < n {
            return Err(format!("needs {n} more bytes, {} left", self.0.remaining()));
        }
        Ok(())
    }

    fn i16(&mut self) -> Result<i16, String> {
        self.need(2)?;
        Ok(self.0.get_i16())
    }

    fn i32(&mut self) -> Result<i32, String> {
        self.need(4)?;
        Ok(self.0.get_i32())
    }

    fn i64(&mut self) -> Result<i64, String> {
        self.need(8)?;
        Ok(self.0.get_i64())
    }

    fn nullable_string(&mut self) -> Result<Option<String>, String> {
        let len = self.i16()?;
        if len < 0 {
            return Ok(None);
        }
        let len = len as usize;
        self.need(len)?;
        let bytes = self.0.split_to(len);
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| "string is not UTF-8".to_string())
    }

    fn string(&mut self) -> Result<String, String> {
        self.nullable_string()?
            .ok_or_else(|| "null where a string is required".to_string())
    }

    fn bytes(&mut self) -> Result<Bytes, String> {
        let len = self.i32()?;
        if len < 0 {
            return Ok(Bytes::new());
        }
        let len = len as usize;
        self.need(len)?;
        Ok(self.0.split_to(len))
    }
}

pub fn encode_key(key: &RecordKey) -> Result<Bytes, RecordError> {
    let mut buf = BytesMut::new();
    match key {
        RecordKey::Offset {
            group,
            topic,
            partition,
        } => {
            buf.put_i16(1i16);
            put_string(&mut buf, Some(group.as_str()))?;
            put_string(&mut buf, Some(topic.as_str()))?;
            buf.put_i32(*partition);
        }
        RecordKey::Group { group } => {
            buf.put_i16(2i16);
            put_string(&mut buf, Some(group.as_str()))?;
        }
    }
    Ok(buf.freeze())
}

pub fn encode_offset_value(value: &OffsetValue) -> Result<Bytes, RecordError> {
    let mut buf = BytesMut::new();
    buf.put_i16(3i16);
    buf.put_i64(value.offset);
    buf.put_i32(value.leader_epoch);
    put_string(&mut buf, Some(value.metadata.as_str()))?;
    buf.put_i64(value.commit_timestamp);
    Ok(buf.freeze())
}

pub fn encode_group_value(value: &GroupMetadataValue) -> Result<Bytes, RecordError> {
    let mut buf = BytesMut::new();
    buf.put_i16(3i16);
    put_string(&mut buf, Some(value.protocol_type.as_str()))?;
    buf.put_i32(value.generation);
    put_string(&mut buf, value.protocol.as_deref())?;
    put_string(&mut buf, value.leader.as_deref())?;
    buf.put_i64(value.current_state_timestamp);
    let count =
        i32::try_from(value.members.len()).map_err(|e| RecordError::Encode(e.to_string()))?;
    buf.put_i32(count);
    for member in &value.members {
        put_string(&mut buf, Some(member.member_id.as_str()))?;
        put_string(&mut buf, member.group_instance_id.as_deref())?;
        put_string(&mut buf, Some(member.client_id.as_str()))?;
        put_string(&mut buf, Some(member.client_host.as_str()))?;
        buf.put_i32(member.rebalance_timeout);
        buf.put_i32(member.session_timeout);
        put_bytes(&mut buf, &member.subscription)?;
        put_bytes(&mut buf, &member.assignment)?;
    }
    Ok(buf.freeze())
}

pub fn decode_key(bytes: Bytes) -> Result<RecordKey, RecordError> {
    let mut reader = Reader(bytes);
    let mut read = || -> Result<RecordKey, String> {
        match reader.i16()? {
            0 | 1 => Ok(RecordKey::Offset {
                group: reader.string()?,
                topic: reader.string()?,
                partition: reader.i32()?,
            }),
            2 => Ok(RecordKey::Group {
                group: reader.string()?,
            }),
            version => Err(format!("unsupported key version {version}")),
        }
    };
    read().map_err(RecordError::Key)
}

/// Decodes the value of `key`; `Ok(None)` for a tombstone.
pub fn decode_value(
    key: &RecordKey,
    value: Option<Bytes>,
) -> Result<Option<RecordValue>, RecordError> {
    let Some(bytes) = value else {
        return Ok(None);
    };
    let mut r = Reader(bytes);
    let fail = |reason: String| RecordError::Value {
        key: format!("{key:?}"),
        reason,
    };
    let version = r.i16().map_err(fail)?;
    match key {
        RecordKey::Offset { .. } => {
            if !(0..=3).contains(&version) {
                return Err(RecordError::UnsupportedVersion {
                    what: "offset value",
                    version,
                });
            }
            let mut read = || -> Result<OffsetValue, String> {
                let offset = r.i64()?;
                let leader_epoch = if version >= 3 { r.i32()? } else { -1 };
                let metadata = r.string()?;
                let commit_timestamp = r.i64()?;
                Ok(OffsetValue {
                    offset,
                    leader_epoch,
                    metadata,
                    commit_timestamp,
                })
            };
            read().map(|v| Some(RecordValue::Offset(v))).map_err(fail)
        }
        RecordKey::Group { .. } => {
            if version != 3 {
                return Err(RecordError::UnsupportedVersion {
                    what: "group metadata value",
                    version,
                });
            }
            let mut read = || -> Result<GroupMetadataValue, String> {
                let protocol_type = r.string()?;
                let generation = r.i32()?;
                let protocol = r.nullable_string()?;
                let leader = r.nullable_string()?;
                let current_state_timestamp = r.i64()?;
                let count = r.i32()?;
                let mut members = Vec::new();
                for _ in 0..count.max(0) {
                    members.push(MemberMetadata {
                        member_id: r.string()?,
                        group_instance_id: r.nullable_string()?,
                        client_id: r.string()?,
                        client_host: r.string()?,
                        rebalance_timeout: r.i32()?,
                        session_timeout: r.i32()?,
                        subscription: r.bytes()?,
                        assignment: r.bytes()?,
                    });
                }
                Ok(GroupMetadataValue {
                    protocol_type,
                    generation,
                    protocol,
                    leader,
                    current_state_timestamp,
                    members,
                })
            };
            read().map(|v| Some(RecordValue::Group(v))).map_err(fail)
        }
    }
}

/// The `__consumer_offsets` partition of a group, as Kafka computes it
/// (`Utils.abs(groupId.hashCode) % partitions`), so a group lands where Kafka puts it.
pub fn partition_for(group: &str, partitions: i32) -> i32 {
    let mut hash: i32 = 0;
    for unit in group.encode_utf16() {
        hash = hash.wrapping_mul(31).wrapping_add(i32::from(unit));
    }
    // Kafka's Utils.abs maps i32::MIN to 0.
    let positive = if hash == i32::MIN { 0 } else { hash.abs() };
    positive % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_records_round_trip() {
        let key = RecordKey::Offset {
            group: "g".into(),
            topic: "t".into(),
            partition: 3,
        };
        let value = OffsetValue {
            offset: 42,
            leader_epoch: 7,
            metadata: "m".into(),
            commit_timestamp: 1_000,
        };
        let decoded_key = decode_key(encode_key(&key).unwrap()).unwrap();
        assert_eq!(decoded_key, key);
        let bytes = encode_offset_value(&value).unwrap();
        assert_eq!(
            decode_value(&key, Some(bytes)).unwrap(),
            Some(RecordValue::Offset(value))
        );
        assert_eq!(decode_value(&key, None).unwrap(), None);
    }

    #[test]
    fn group_records_round_trip() {
        let key = RecordKey::Group { group: "g".into() };
        let value = GroupMetadataValue {
            protocol_type: "consumer".into(),
            generation: 4,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            current_state_timestamp: 5,
            members: vec![MemberMetadata {
                member_id: "m1".into(),
                group_instance_id: Some("i1".into()),
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                rebalance_timeout: 300_000,
                session_timeout: 45_000,
                subscription: Bytes::from_static(b"sub"),
                assignment: Bytes::from_static(b"asg"),
            }],
        };
        let decoded = decode_value(&key, Some(encode_group_value(&value).unwrap())).unwrap();
        assert_eq!(decoded, Some(RecordValue::Group(value)));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bytes in [
            &b""[..],
            b"\x00",
            b"\x00\x01\x00\x05ab",
            b"\x7f\x7f",
            b"\x00\x02\xff\xff",
        ] {
            let _ = decode_key(Bytes::copy_from_slice(bytes));
            let key = RecordKey::Group { group: "g".into() };
            let _ = decode_value(&key, Some(Bytes::copy_from_slice(bytes)));
        }
        let key = RecordKey::Group { group: "g".into() };
        assert!(decode_value(&key, Some(Bytes::from_static(b"\x00\x03\x00\x01"))).is_err());
    }

    #[test]
    fn partition_matches_java_string_hash_code() {
        // "my-group".hashCode() == -1906497762 in Java; abs % 50 == 12.
        assert_eq!(partition_for("my-group", 50), 12);
        assert_eq!(partition_for("", 50), 0);
    }
}
