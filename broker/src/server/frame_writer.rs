//! Writes a response frame: the 4-byte size, the response header, the body — and for
//! Fetch the record bytes, straight from the segment files with `sendfile(2)` on
//! plaintext connections, or copied when zero-copy is off or the connection is TLS.
//!
//! The Fetch handler encodes its response with a unique 16-byte placeholder in every
//! records field. Here each placeholder and its length prefix (int32, or an unsigned
//! varint in flexible versions) are replaced by the real length and the file regions.

use std::os::fd::AsFd;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncWrite, AsyncWriteExt, Interest, WriteHalf};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;

use super::dispatch::Response;
use crate::api::{ApiResponse, RecordsPlaceholder};
use crate::storage::FileRegion;

enum Part {
    Bytes(Bytes),
    File(FileRegion),
}

/// Splits an encoded response at its placeholders.
fn assemble(
    encoded: BytesMut,
    placeholders: Vec<RecordsPlaceholder>,
) -> std::io::Result<Vec<Part>> {
    let encoded = encoded.freeze();
    let mut parts = Vec::new();
    let mut cursor = 0usize;
    for placeholder in placeholders {
        let position = find(&encoded, &placeholder.marker, cursor).ok_or_else(|| {
            std::io::Error::other("fetch response placeholder not found in the encoded response")
        })?;
        let prefix_bytes = if placeholder.compact { 1 } else { 4 };
        let prefix_start = position
            .checked_sub(prefix_bytes)
            .filter(|start| *start >= cursor)
            .ok_or_else(|| {
                std::io::Error::other("fetch response placeholder has no length prefix")
            })?;
        parts.push(Part::Bytes(encoded.slice(cursor..prefix_start)));
        let length: u64 = placeholder.regions.iter().map(|r| r.length).sum();
        let mut prefix = BytesMut::with_capacity(5);
        if placeholder.compact {
            put_unsigned_varint(&mut prefix, length + 1);
        } else {
            prefix.put_i32(
                i32::try_from(length).map_err(|_| std::io::Error::other("records too large"))?,
            );
        }
        parts.push(Part::Bytes(prefix.freeze()));
        parts.extend(placeholder.regions.into_iter().map(Part::File));
        cursor = position + placeholder.marker.len();
    }
    parts.push(Part::Bytes(encoded.slice(cursor..)));
    Ok(parts)
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn put_unsigned_varint(buffer: &mut BytesMut, mut value: u64) {
    while value >= 0x80 {
        buffer.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    buffer.put_u8(value as u8);
}

/// Where a connection's responses go: a plaintext socket (sendfile and TCP_CORK work on
/// it) or a TLS stream (record bytes are copied through the encryption).
pub trait ResponseSink: AsyncWrite + Unpin + Send {
    /// The socket itself, when bytes written to it reach the peer as they are.
    fn plain_socket(&self) -> Option<&TcpStream>;
}

impl ResponseSink for OwnedWriteHalf {
    fn plain_socket(&self) -> Option<&TcpStream> {
        Some(self.as_ref())
    }
}

impl ResponseSink for WriteHalf<tokio_rustls::server::TlsStream<TcpStream>> {
    fn plain_socket(&self) -> Option<&TcpStream> {
        None
    }
}

/// Writes one response frame.
pub async fn write<W: ResponseSink>(
    stream: &mut W,
    response: Response,
    sendfile: bool,
) -> std::io::Result<()> {
    // Under TLS the kernel cannot send file bytes itself (no kTLS here): they are read
    // and encrypted like any other.
    let sendfile = sendfile && stream.plain_socket().is_some();
    let parts = match response.body {
        ApiResponse::None => return Ok(()),
        ApiResponse::Encoded(body) => vec![Part::Bytes(body.freeze())],
        ApiResponse::WithRecords { encoded, records } => assemble(encoded, records)?,
    };
    let total: u64 = response.header.len() as u64
        + parts
            .iter()
            .map(|p| match p {
                Part::Bytes(b) => b.len() as u64,
                Part::File(r) => r.length,
            })
            .sum::<u64>();
    // A response with file regions goes out as several writes (the encoded bytes before
    // each region, then its sendfile): corked, the kernel packs them into full segments
    // instead of sending each partition's few header bytes as a packet of its own.
    let corked = sendfile && parts.iter().any(|p| matches!(p, Part::File(_)));
    if corked {
        set_cork(stream, true);
    }
    let written = write_parts(stream, &response.header, parts, total, sendfile).await;
    if corked {
        set_cork(stream, false);
    }
    written
}

/// TCP_CORK on or off; failing to set it only costs packets, so it is logged, not fatal.
fn set_cork<W: ResponseSink>(stream: &W, cork: bool) {
    let Some(socket) = stream.plain_socket() else {
        return;
    };
    if let Err(error) = socket2::SockRef::from(socket).set_tcp_cork(cork) {
        tracing::debug!(%error, cork, "Cannot set TCP_CORK");
    }
}

async fn write_parts<W: ResponseSink>(
    stream: &mut W,
    header: &[u8],
    parts: Vec<Part>,
    total: u64,
    sendfile: bool,
) -> std::io::Result<()> {
    let mut pending = BytesMut::with_capacity(4 + header.len() + 256);
    let mut copied = Vec::new();
    pending.put_u32(u32::try_from(total).map_err(|_| std::io::Error::other("response too large"))?);
    pending.extend_from_slice(header);
    for part in parts {
        match part {
            Part::Bytes(bytes) => pending.extend_from_slice(&bytes),
            Part::File(region) => {
                stream.write_all(&pending).await?;
                pending.clear();
                if let Some(socket) = stream.plain_socket().filter(|_| sendfile) {
                    send_region(socket, &region).await?;
                } else {
                    copied.clear();
                    region.read_into(&mut copied)?;
                    stream.write_all(&copied).await?;
                }
            }
        }
    }
    if !pending.is_empty() {
        stream.write_all(&pending).await?;
    }
    // A TLS stream may hold encrypted bytes the socket did not take yet: without a flush
    // the end of a large response waited for the next one (a Java consumer over TLS
    // stalled). On a plain socket this does nothing.
    stream.flush().await
}

/// `sendfile(2)` a file region to the socket: page cache to socket, no user-space copy.
async fn send_region(socket: &TcpStream, region: &FileRegion) -> std::io::Result<()> {
    let mut offset = region.position as i64;
    let end = (region.position + region.length) as i64;
    while offset < end {
        socket.writable().await?;
        let count = (end - offset) as usize;
        let sent = socket.try_io(Interest::WRITABLE, || {
            nix::sys::sendfile::sendfile(
                socket.as_fd(),
                region.file.as_fd(),
                Some(&mut offset),
                count,
            )
            .map_err(std::io::Error::from)
        });
        match sent {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "segment file shorter than the region",
                ));
            }
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_kafka_encoding() {
        let mut buffer = BytesMut::new();
        put_unsigned_varint(&mut buffer, 300);
        assert_eq!(&buffer[..], &[0xac, 0x02]);
    }
}
