//! Produce v0–2. Kafka 4 removed them (KIP-896) yet lists Produce from version 0 in
//! ApiVersions (KAFKA-18659: librdkafka compresses only when the broker lists v0), and
//! answers a v0–2 request with UNSUPPORTED_VERSION for every partition instead of closing
//! the connection. Oxbow does the same: these versions are read and answered here, with
//! the old wire formats written out by hand (the protocol crate starts at v3), and
//! nothing is appended.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::errors;

/// The newest of the removed versions.
pub const LAST_LEGACY_VERSION: i16 = 2;

/// A v0–2 request that does not follow its format.
#[derive(Debug, thiserror::Error)]
#[error("malformed Produce v{version} request: {reason}")]
pub struct LegacyDecodeError {
    pub version: i16,
    pub reason: &'static str,
}

/// The topics and partitions a v0–2 request names, and its acks.
#[derive(Debug, PartialEq, Eq)]
pub struct LegacyProduce {
    pub acks: i16,
    pub topics: Vec<(Bytes, Vec<i32>)>,
}

/// Reads a v0–2 request body (acks, timeout, then topics of partitions with their
/// records, which are skipped).
pub fn decode(version: i16, mut body: Bytes) -> Result<LegacyProduce, LegacyDecodeError> {
    let fail = |reason| LegacyDecodeError { version, reason };
    if body.remaining() < 6 {
        return Err(fail("too short for acks and timeout"));
    }
    let acks = body.get_i16();
    let _timeout_ms = body.get_i32();
    let topic_count = array_length(&mut body).ok_or_else(|| fail("bad topic count"))?;
    let mut topics = Vec::with_capacity(topic_count.min(body.remaining() / 6));
    for _ in 0..topic_count {
        let name = string(&mut body).ok_or_else(|| fail("bad topic name"))?;
        let partition_count = array_length(&mut body).ok_or_else(|| fail("bad partition count"))?;
        let mut partitions = Vec::with_capacity(partition_count.min(body.remaining() / 8));
        for _ in 0..partition_count {
            if body.remaining() < 8 {
                return Err(fail("truncated partition"));
            }
            partitions.push(body.get_i32());
            let size = body.get_i32();
            if size > 0 {
                let size = size as usize;
                if body.remaining() < size {
                    return Err(fail("records longer than the request"));
                }
                body.advance(size);
            }
        }
        topics.push((name, partitions));
    }
    Ok(LegacyProduce { acks, topics })
}

/// The v0–2 response: every partition UNSUPPORTED_VERSION, base offset −1 (v2 adds the
/// log append time, v1 the throttle time), or `None` for acks=0, which has no response.
pub fn refuse(version: i16, request: &LegacyProduce) -> Option<BytesMut> {
    if request.acks == 0 {
        return None;
    }
    let mut out = BytesMut::new();
    out.put_i32(request.topics.len() as i32);
    for (name, partitions) in &request.topics {
        out.put_i16(name.len() as i16);
        out.put_slice(name);
        out.put_i32(partitions.len() as i32);
        for partition in partitions {
            out.put_i32(*partition);
            out.put_i16(errors::UNSUPPORTED_VERSION);
            out.put_i64(-1);
            if version >= 2 {
                out.put_i64(-1);
            }
        }
    }
    if version >= 1 {
        out.put_i32(0);
    }
    Some(out)
}

/// An int32 array length; null (−1) reads as empty, as Kafka's old decoders did.
fn array_length(body: &mut Bytes) -> Option<usize> {
    if body.remaining() < 4 {
        return None;
    }
    match body.get_i32() {
        -1 => Some(0),
        n => usize::try_from(n).ok(),
    }
}

/// An int16-length string (topic names are never null).
fn string(body: &mut Bytes) -> Option<Bytes> {
    if body.remaining() < 2 {
        return None;
    }
    let length = usize::try_from(body.get_i16()).ok()?;
    (body.remaining() >= length).then(|| body.split_to(length))
}

#[cfg(test)]
mod tests;
