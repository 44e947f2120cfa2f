#!/usr/bin/env bash
# Fuzzes frame and request decoding (fuzz/fuzz_targets/request_decode.rs: the broker's own
# frame_size and parse_request, then the request decoders) with libFuzzer for
# OXBOW_FUZZ_SECONDS (default 30). New crashes fail the suite and are left in
# fuzz/artifacts/. Needs nightly; without it the stable driver in cargo test is what runs.
set -euo pipefail
cd "$(dirname "$0")/../../fuzz"
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="$OXBOW_CACHE/target-fuzz"
seconds="${OXBOW_FUZZ_SECONDS:-30}"
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz: no nightly toolchain; skipped (the stable driver ran in cargo test)"
  exit 0
fi
fuzz="$OXBOW_CACHE/cargo-fuzz/bin/cargo-fuzz"
[ -x "$fuzz" ] || bash ../e2e/setup.d/25-fuzz.sh
corpus="$OXBOW_CACHE/fuzz-corpus/request_decode"
mkdir -p "$corpus"
# What the fuzzer learns stays in the cache for the next run.
export PATH="$OXBOW_CACHE/cargo-fuzz/bin:$PATH"
log="$OXBOW_CACHE/fuzz-request_decode.log"
if ! cargo +nightly fuzz run request_decode "$corpus" -- \
  -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 >"$log" 2>&1; then
  tail -n 60 "$log"
  echo "fuzz: request_decode found a crash (input in fuzz/artifacts/request_decode/)"
  exit 1
fi
grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb|INFO: seed corpus)' "$log" || true
echo "fuzz: request_decode ran ${seconds}s without a crash"
