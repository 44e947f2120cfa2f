//! Message payloads, chosen with `--payload`:
//!
//! - `letters` (the default): one payload of pseudo-random upper-case letters, sent as every
//!   message. It is what Kafka's ProducerPerformance sends without a payload file, so the two
//!   tools give compression the same data. Because every message repeats the same bytes, a
//!   batch of them compresses far better than real data does (lz4 shrinks a batch dozens of
//!   times): the compressed rows with this payload measure little compression work.
//! - `random`: every message different, uniformly random bytes. No codec can shrink them, so
//!   a compressed row pays the full codec cost and sends full-sized batches.
//! - `text`: every message different, JSON-ish log events (field names and most values from
//!   small vocabularies, random ids, timestamps and numbers), which lz4 shrinks about 3-5x
//!   over a batch: roughly what compression meets in application logs and events.
//!
//! `random` and `text` messages are consecutive slices of a pool of [`POOL_BYTES`] generated
//! at start, so a batch never repeats a message (which would flatter compression) and the
//! send loop does no generation work (which would show up as load-generator CPU).

use std::fs::File;
use std::io::{BufWriter, Write};

use anyhow::{Context, Result};
use clap::ValueEnum;

use crate::args::PayloadFileArgs;

/// Size of the pool `random` and `text` messages are taken from: far more than any batch
/// (batch.size is 1 MB), so a batch holds no message twice.
pub const POOL_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PayloadKind {
    Letters,
    Random,
    Text,
}

impl PayloadKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PayloadKind::Letters => "letters",
            PayloadKind::Random => "random",
            PayloadKind::Text => "text",
        }
    }
}

/// The messages of one producer, each `size` bytes, handed out in turn.
pub struct Payloads {
    pool: Vec<u8>,
    size: usize,
    next: usize,
}

impl Payloads {
    pub fn new(kind: PayloadKind, size: usize) -> Self {
        let records = match kind {
            PayloadKind::Letters => 1,
            PayloadKind::Random | PayloadKind::Text => (POOL_BYTES / size.max(1)).max(1),
        };
        let mut rng = XorShift::new();
        let pool = match kind {
            PayloadKind::Letters => letters(size),
            PayloadKind::Random => (0..records * size).map(|_| rng.next() as u8).collect(),
            PayloadKind::Text => {
                let mut pool = Vec::with_capacity(records * size);
                let mut clock = START_MILLIS;
                for _ in 0..records {
                    pool.extend_from_slice(&text_record(&mut rng, &mut clock, size));
                }
                pool
            }
        };
        Payloads {
            pool,
            size,
            next: 0,
        }
    }

    /// The next message.
    pub fn next_message(&mut self) -> &[u8] {
        let start = self.next * self.size;
        let records = self.pool.len() / self.size.max(1);
        self.next = (self.next + 1) % records.max(1);
        self.pool.get(start..start + self.size).unwrap_or(&[])
    }
}

/// `size` bytes of pseudo-random letters A..Z (xorshift64, fixed seed: runs are comparable).
pub fn letters(size: usize) -> Vec<u8> {
    let mut rng = XorShift::new();
    (0..size).map(|_| b'A' + (rng.next() % 26) as u8).collect()
}

/// Writes `count` messages of `kind` for kafka-producer-perf-test's `--payload-file`, one per
/// line. That tool reads the file as UTF-8 text, so `random` is written as random printable
/// ASCII (`!`..`~`) rather than raw bytes: lz4 finds no repeats in either, so the compressed
/// rows see incompressible data from both tools. `letters` needs no file (it is that tool's
/// own payload).
pub fn write_file(
    out: &mut impl Write,
    kind: PayloadKind,
    size: usize,
    count: u64,
) -> std::io::Result<()> {
    let mut rng = XorShift::new();
    let mut clock = START_MILLIS;
    for _ in 0..count {
        let record = match kind {
            PayloadKind::Letters => letters(size),
            PayloadKind::Random => (0..size).map(|_| b'!' + (rng.next() % 94) as u8).collect(),
            PayloadKind::Text => text_record(&mut rng, &mut clock, size),
        };
        out.write_all(&record)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// The `payload-file` mode.
pub fn write_payload_file(args: &PayloadFileArgs) -> Result<()> {
    let file =
        File::create(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let mut out = BufWriter::new(file);
    write_file(&mut out, args.payload, args.size, args.count)
        .and_then(|()| out.flush())
        .with_context(|| format!("writing {}", args.out.display()))
}

/// The `text` events' first timestamp, milliseconds into the day.
const START_MILLIS: u64 = 9 * 3_600_000;
const SERVICES: [&str; 6] = [
    "checkout",
    "cart",
    "payments",
    "search",
    "inventory",
    "auth",
];
const LEVELS: [&str; 4] = ["INFO", "INFO", "WARN", "DEBUG"];
const ROUTES: [(&str, &str); 5] = [
    ("POST", "/api/v1/orders"),
    ("GET", "/api/v1/products"),
    ("GET", "/api/v1/cart"),
    ("PUT", "/api/v1/cart/items"),
    ("POST", "/api/v1/payments"),
];
const MESSAGES: [&str; 5] = [
    "request completed",
    "order placed",
    "cache miss, loaded from store",
    "payment authorised",
    "item added to cart",
];

/// One `text` message: log events, one after the other, cut at exactly `size` bytes. ASCII,
/// no newline (a perf-tool payload file is one message per line).
fn text_record(rng: &mut XorShift, clock: &mut u64, size: usize) -> Vec<u8> {
    let mut record = String::with_capacity(size + 512);
    while record.len() < size {
        let pick = |rng: &mut XorShift, n: usize| (rng.next() % n as u64) as usize;
        let service = SERVICES[pick(rng, SERVICES.len())];
        let level = LEVELS[pick(rng, LEVELS.len())];
        let (method, path) = ROUTES[pick(rng, ROUTES.len())];
        let message = MESSAGES[pick(rng, MESSAGES.len())];
        // Log timestamps rise: a few milliseconds between events, as in a busy service.
        *clock = (*clock + rng.next() % 8) % 86_400_000;
        let millis = *clock;
        record.push_str(&format!(
            concat!(
                "{{\"ts\":\"2026-12-01T{:02}:{:02}:{:02}.{:03}Z\",\"level\":\"{}\",",
                "\"service\":\"{}\",\"host\":\"{}-{}\",\"trace_id\":\"{:016x}\",",
                "\"user_id\":{},\"method\":\"{}\",\"path\":\"{}/{}\",\"status\":{},",
                "\"duration_ms\":{}.{},\"msg\":\"{}\"}} "
            ),
            millis / 3_600_000,
            millis / 60_000 % 60,
            millis / 1000 % 60,
            millis % 1000,
            level,
            service,
            service,
            pick(rng, 12),
            rng.next(),
            10_000 + pick(rng, 90_000),
            method,
            path,
            pick(rng, 10_000_000),
            [200, 200, 200, 201, 404, 500][pick(rng, 6)],
            pick(rng, 250),
            pick(rng, 10),
            message,
        ));
    }
    let mut bytes = record.into_bytes();
    bytes.truncate(size);
    bytes
}

/// xorshift64 with a fixed seed: every run sends the same data, so runs are comparable.
struct XorShift(u64);

impl XorShift {
    fn new() -> Self {
        XorShift(0x9E37_79B9_7F4A_7C15)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    /// lz4-frame compression ratio of `messages` concatenated, as in one produce batch.
    fn lz4_ratio(messages: &[u8]) -> f64 {
        let mut encoder = lz4::EncoderBuilder::new()
            .build(Vec::new())
            .unwrap_or_else(|e| panic!("lz4 encoder: {e}"));
        encoder
            .write_all(messages)
            .unwrap_or_else(|e| panic!("lz4 write: {e}"));
        let (compressed, result) = encoder.finish();
        result.unwrap_or_else(|e| panic!("lz4 finish: {e}"));
        messages.len() as f64 / compressed.len() as f64
    }

    fn batch(kind: PayloadKind, size: usize, count: usize) -> Vec<u8> {
        let mut payloads = Payloads::new(kind, size);
        (0..count)
            .flat_map(|_| payloads.next_message().to_vec())
            .collect()
    }

    #[test]
    fn every_message_has_the_size() {
        for kind in [PayloadKind::Letters, PayloadKind::Random, PayloadKind::Text] {
            for size in [100, 1024] {
                let mut payloads = Payloads::new(kind, size);
                for _ in 0..1000 {
                    assert_eq!(payloads.next_message().len(), size, "{kind:?} {size}");
                }
            }
        }
    }

    #[test]
    fn letters_are_one_message_of_letters() {
        let mut payloads = Payloads::new(PayloadKind::Letters, 1000);
        let first = payloads.next_message().to_vec();
        assert!(first.iter().all(u8::is_ascii_uppercase));
        assert_eq!(payloads.next_message(), first.as_slice());
    }

    #[test]
    fn random_and_text_do_not_repeat_within_a_batch() {
        for kind in [PayloadKind::Random, PayloadKind::Text] {
            let mut payloads = Payloads::new(kind, 1024);
            let mut seen = std::collections::HashSet::new();
            for _ in 0..2000 {
                assert!(seen.insert(payloads.next_message().to_vec()), "{kind:?}");
            }
        }
    }

    #[test]
    fn compression_ratios_are_as_documented() {
        // 256 KiB, about a batch at 100k msg/s with linger.ms=5.
        let random = lz4_ratio(&batch(PayloadKind::Random, 1024, 256));
        let text = lz4_ratio(&batch(PayloadKind::Text, 1024, 256));
        let letters = lz4_ratio(&batch(PayloadKind::Letters, 1024, 256));
        assert!(random < 1.01, "random shrank {random:.2}x");
        assert!((3.0..=5.0).contains(&text), "text shrank {text:.2}x");
        assert!(letters > 20.0, "letters shrank only {letters:.2}x");
    }

    #[test]
    fn payload_file_is_one_text_message_per_line() {
        for kind in [PayloadKind::Random, PayloadKind::Text] {
            let mut file = Vec::new();
            write_file(&mut file, kind, 1024, 50).unwrap_or_else(|e| panic!("{e}"));
            let mut text = String::new();
            file.as_slice()
                .read_to_string(&mut text)
                .unwrap_or_else(|e| panic!("{kind:?} is not UTF-8: {e}"));
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 50);
            assert!(lines.iter().all(|l| l.len() == 1024 && l.is_ascii()));
        }
        let random = {
            let mut file = Vec::new();
            write_file(&mut file, PayloadKind::Random, 1024, 256).unwrap_or_else(|e| panic!("{e}"));
            lz4_ratio(&file)
        };
        assert!(random < 1.01, "the perf tool's random shrank {random:.2}x");
    }
}
