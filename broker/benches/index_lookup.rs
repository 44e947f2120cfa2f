//! Offset and time index lookups in a full 10 MiB index (1.3 M entries).

use criterion::{Criterion, criterion_group, criterion_main};
use oxbow_broker::{OffsetIndex, TimeIndex};

fn bench_lookup(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let capacity = 10 * 1024 * 1024;
    let Ok(offsets) = OffsetIndex::open(&dir.path().join("0.index"), 0, 0, capacity) else {
        return;
    };
    let Ok(times) = TimeIndex::open(&dir.path().join("0.timeindex"), 0, 0, capacity) else {
        return;
    };
    let mut entries = 0u64;
    while !offsets.is_full() && !times.is_full() {
        let _ = offsets.append(entries * 16 + 15, (entries * 4096) as u32);
        let _ = times.maybe_append(1_000 + entries as i64, entries * 16 + 15);
        entries += 1;
    }
    let mut probe = 7u64;
    c.bench_function("index_lookup/offset", |b| {
        b.iter(|| {
            probe = next_probe(probe) % (entries * 16);
            offsets.lookup(probe)
        });
    });
    c.bench_function("index_lookup/time", |b| {
        b.iter(|| {
            probe = next_probe(probe) % entries;
            times.lookup_before(1_000 + probe as i64)
        });
    });
}

/// A linear congruential step (Knuth's MMIX constants): cheap, spread-out probe offsets. It
/// wraps by design; plain `*` and `+` panic on that in a debug build (`cargo test --benches`).
fn next_probe(probe: u64) -> u64 {
    probe
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
}

criterion_group!(benches, bench_lookup);
criterion_main!(benches);
