//! The record codecs of a RecordBatch's records section, as Kafka frames them:
//!
//! ```text
//! id  codec   framing
//!  1  gzip    a gzip member (RFC 1952)
//!  2  snappy  xerial framing: 16-byte magic header, then [u32 length][raw snappy block]…;
//!             some clients send one raw snappy block instead, which is accepted too
//!  3  lz4     an LZ4 frame (64 KiB independent blocks, no checksums: what Kafka writes)
//!  4  zstd    a zstd frame
//! ```
//!
//! Decompression is bounded: the records section comes from a peer, and a few kilobytes
//! of zeros compress by a thousand times or more, so inflating without a limit would let one
//! request take the broker's memory. Compression takes Kafka's levels
//! (`compression.gzip.level`, `compression.lz4.level`, `compression.zstd.level`).
// Every read here is on bytes from the network: no indexing that can panic.
#![deny(clippy::indexing_slicing)]

use std::io::{Read, Write};

/// The largest records section the broker inflates. Producers bound batches well below
/// this (`batch.size`, `message.max.bytes` of the uncompressed batch in librdkafka).
pub const MAX_DECOMPRESSED_BYTES: usize = 64 * 1024 * 1024;

pub const CODEC_NONE: i16 = 0;
pub const CODEC_GZIP: i16 = 1;
pub const CODEC_SNAPPY: i16 = 2;
pub const CODEC_LZ4: i16 = 3;
pub const CODEC_ZSTD: i16 = 4;

const XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
const XERIAL_HEADER: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
/// Uncompressed bytes per xerial block, as the Java client's SnappyOutputStream writes.
const XERIAL_BLOCK: usize = 32 * 1024;

/// Why a records section could not be decoded or encoded.
#[derive(Debug, thiserror::Error)]
pub enum CompressionError {
    #[error("unknown compression codec id {codec}")]
    UnknownCodec { codec: i16 },
    #[error("cannot decompress {codec} records: {reason}")]
    Decompress { codec: &'static str, reason: String },
    #[error("{codec} records inflate beyond {MAX_DECOMPRESSED_BYTES} bytes")]
    TooLarge { codec: &'static str },
    #[error("cannot compress records with {codec}: {reason}")]
    Compress { codec: &'static str, reason: String },
}

/// The codec's name, as Kafka spells it.
pub fn codec_name(codec: i16) -> &'static str {
    match codec {
        CODEC_NONE => "uncompressed",
        CODEC_GZIP => "gzip",
        CODEC_SNAPPY => "snappy",
        CODEC_LZ4 => "lz4",
        CODEC_ZSTD => "zstd",
        _ => "unknown",
    }
}

/// Inflates a records section compressed with `codec`, refusing more than `limit` bytes.
pub fn decompress(codec: i16, data: &[u8], limit: usize) -> Result<Vec<u8>, CompressionError> {
    let name = codec_name(codec);
    let failed = |error: std::io::Error| CompressionError::Decompress {
        codec: name,
        reason: error.to_string(),
    };
    match codec {
        CODEC_NONE => Ok(data.to_vec()),
        CODEC_GZIP => read_bounded(flate2::read::GzDecoder::new(data), name, limit),
        CODEC_LZ4 => read_bounded(lz4::Decoder::new(data).map_err(failed)?, name, limit),
        CODEC_ZSTD => read_bounded(
            zstd::stream::read::Decoder::new(data).map_err(failed)?,
            name,
            limit,
        ),
        CODEC_SNAPPY => decompress_snappy(data, limit),
        codec => Err(CompressionError::UnknownCodec { codec }),
    }
}

fn read_bounded(
    reader: impl Read,
    codec: &'static str,
    limit: usize,
) -> Result<Vec<u8>, CompressionError> {
    let mut out = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|error| CompressionError::Decompress {
            codec,
            reason: error.to_string(),
        })?;
    if out.len() > limit {
        return Err(CompressionError::TooLarge { codec });
    }
    Ok(out)
}

fn decompress_snappy(data: &[u8], limit: usize) -> Result<Vec<u8>, CompressionError> {
    let failed = |reason: String| CompressionError::Decompress {
        codec: "snappy",
        reason,
    };
    let mut out = Vec::new();
    let block = |compressed: &[u8], out: &mut Vec<u8>| -> Result<(), CompressionError> {
        // The length a block claims is checked before anything is allocated for it.
        let length = snap::raw::decompress_len(compressed).map_err(|e| failed(e.to_string()))?;
        if out.len().saturating_add(length) > limit {
            return Err(CompressionError::TooLarge { codec: "snappy" });
        }
        let start = out.len();
        out.resize(start + length, 0);
        let target = out.get_mut(start..).unwrap_or_default();
        snap::raw::Decoder::new()
            .decompress(compressed, target)
            .map_err(|e| failed(e.to_string()))?;
        Ok(())
    };
    if !data.starts_with(XERIAL_MAGIC) {
        block(data, &mut out)?;
        return Ok(out);
    }
    let mut rest = data.get(XERIAL_HEADER.len()..).unwrap_or_default();
    while !rest.is_empty() {
        let Some((length, tail)) = rest.split_first_chunk::<4>() else {
            return Err(failed("truncated xerial block length".into()));
        };
        let length = u32::from_be_bytes(*length) as usize;
        let Some(compressed) = tail.get(..length) else {
            return Err(failed("truncated xerial block".into()));
        };
        block(compressed, &mut out)?;
        rest = tail.get(length..).unwrap_or_default();
    }
    Ok(out)
}

/// Compresses a records section with `codec` at `level` (Kafka's level configs; ignored
/// by snappy, which has none).
pub fn compress(codec: i16, level: i32, data: &[u8]) -> Result<Vec<u8>, CompressionError> {
    let name = codec_name(codec);
    let failed = |error: std::io::Error| CompressionError::Compress {
        codec: name,
        reason: error.to_string(),
    };
    match codec {
        CODEC_NONE => Ok(data.to_vec()),
        CODEC_GZIP => {
            // -1 is zlib's default level, 6.
            let level = if level < 0 { 6 } else { level as u32 };
            let mut encoder = flate2::write::GzEncoder::new(
                Vec::with_capacity(data.len() / 2),
                flate2::Compression::new(level),
            );
            encoder.write_all(data).map_err(failed)?;
            encoder.finish().map_err(failed)
        }
        CODEC_LZ4 => {
            let mut encoder = lz4::EncoderBuilder::new()
                .level(level.max(0) as u32)
                .block_size(lz4::BlockSize::Max64KB)
                .block_mode(lz4::BlockMode::Independent)
                .block_checksum(lz4::liblz4::BlockChecksum::NoBlockChecksum)
                .checksum(lz4::ContentChecksum::NoChecksum)
                .build(Vec::with_capacity(data.len() / 2))
                .map_err(failed)?;
            encoder.write_all(data).map_err(failed)?;
            let (out, result) = encoder.finish();
            result.map_err(failed)?;
            Ok(out)
        }
        CODEC_ZSTD => zstd::bulk::compress(data, level).map_err(failed),
        CODEC_SNAPPY => {
            let mut out = Vec::with_capacity(XERIAL_HEADER.len() + data.len());
            out.extend_from_slice(XERIAL_HEADER);
            let mut encoder = snap::raw::Encoder::new();
            for chunk in data.chunks(XERIAL_BLOCK) {
                let compressed =
                    encoder
                        .compress_vec(chunk)
                        .map_err(|e| CompressionError::Compress {
                            codec: name,
                            reason: e.to_string(),
                        })?;
                out.extend_from_slice(&(compressed.len() as u32).to_be_bytes());
                out.extend_from_slice(&compressed);
            }
            Ok(out)
        }
        codec => Err(CompressionError::UnknownCodec { codec }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_round_trips_at_its_levels() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 251).to_be_bytes())
            .collect();
        for (codec, level) in [
            (CODEC_NONE, 0),
            (CODEC_GZIP, -1),
            (CODEC_GZIP, 9),
            (CODEC_SNAPPY, 0),
            (CODEC_LZ4, 1),
            (CODEC_LZ4, 17),
            (CODEC_ZSTD, 3),
            (CODEC_ZSTD, -5),
        ] {
            let compressed = compress(codec, level, &data).unwrap();
            let back = decompress(codec, &compressed, MAX_DECOMPRESSED_BYTES).unwrap();
            assert_eq!(back, data, "{} level {level}", codec_name(codec));
        }
    }

    #[test]
    fn kafka_protocol_decoders_read_what_is_written() {
        // The client library's codecs (which follow Kafka's framing) read our output.
        use bytes::Bytes;
        use kafka_protocol::compression::{Decompressor, Gzip, Lz4, Snappy, Zstd};
        let data = b"records section bytes, repeated; records section bytes".repeat(100);
        let check = |codec: i16, read: &dyn Fn(&mut Bytes) -> Vec<u8>| {
            let mut compressed = Bytes::from(compress(codec, 1, &data).unwrap());
            assert_eq!(read(&mut compressed), data, "{}", codec_name(codec));
        };
        check(CODEC_GZIP, &|b| {
            Gzip::decompress(b, |out| Ok(out.to_vec())).unwrap()
        });
        check(CODEC_SNAPPY, &|b| {
            Snappy::decompress(b, |out| Ok(out.to_vec())).unwrap()
        });
        check(CODEC_LZ4, &|b| {
            Lz4::decompress(b, |out| Ok(out.to_vec())).unwrap()
        });
        check(CODEC_ZSTD, &|b| {
            Zstd::decompress(b, |out| Ok(out.to_vec())).unwrap()
        });
    }

    #[test]
    fn inflation_is_bounded_and_garbage_is_an_error() {
        let zeros = vec![0u8; 1 << 20];
        for codec in [CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD] {
            let compressed = compress(codec, 1, &zeros).unwrap();
            assert!(matches!(
                decompress(codec, &compressed, 1000),
                Err(CompressionError::TooLarge { .. })
            ));
            assert!(decompress(codec, b"\x82SNAPPY\x00garbage garbage", 1 << 20).is_err());
        }
        // A raw snappy block claiming 4 GiB is refused before any allocation.
        assert!(matches!(
            decompress(CODEC_SNAPPY, &[0xff, 0xff, 0xff, 0xff, 0x0f, 0], 1 << 20),
            Err(CompressionError::TooLarge { .. })
        ));
        assert!(matches!(
            decompress(7, b"x", 10),
            Err(CompressionError::UnknownCodec { codec: 7 })
        ));
    }
}
