#!/usr/bin/env bash
# Fuzzes frame and request decoding (fuzz/fuzz_targets/request_decode.rs: the broker's own
# frame_size and parse_request, then the request decoders) and SASL tokens
# (fuzz/fuzz_targets/sasl_tokens.rs: SCRAM, PLAIN and OAUTHBEARER, unsecured and against a
# key set, through a connection's authenticator) with libFuzzer for OXBOW_FUZZ_SECONDS
# (default 30) each. New crashes fail the suite and are left in fuzz/artifacts/.
#
# libFuzzer needs a nightly toolchain. Without one the suite runs the stable proptest
# driver of the same decoder (broker/tests/server_request_decode.rs) for the same
# OXBOW_FUZZ_SECONDS, with 10x the cases of `cargo test` per run and fresh seeds each run,
# and then reports a skip (exit 77, e2e/lib/suite.sh): libFuzzer did not run, and under
# CI=true e2e/run fails on that.
# Beside others: yes (no ports, no brokers, no timing: libFuzzer in-process, its own build directory)
# Expected time: 240 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../lib/suite.sh"
cd "$here/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
seconds="${OXBOW_FUZZ_SECONDS:-30}"

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz: no nightly toolchain; running the stable proptest driver of request_decode for ${seconds}s instead"
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
  cases=20000 runs=0 start=$SECONDS
  while [ "$runs" -eq 0 ] || [ $((SECONDS - start)) -lt "$seconds" ]; do
    if ! OXBOW_DECODE_CASES=$cases cargo test --locked -q --workspace --test server_request_decode; then
      echo "fuzz: the stable driver of request_decode failed (run $((runs + 1)); the failing input is printed above)"
      exit 1
    fi
    runs=$((runs + 1))
  done
  suite_skip "libFuzzer not run: no nightly toolchain (rustup toolchain list); instead the stable proptest driver of request_decode ran $runs time(s) x $cases cases per property in $((SECONDS - start))s without a failure"
fi

export CARGO_TARGET_DIR="$OXBOW_CACHE/target-fuzz"
cd fuzz
fuzz="$OXBOW_CACHE/cargo-fuzz/bin/cargo-fuzz"
[ -x "$fuzz" ] || bash ../e2e/setup.d/25-fuzz.sh
[ -x "$fuzz" ] || { echo "fuzz: cargo-fuzz is not installed in $OXBOW_CACHE/cargo-fuzz (e2e/setup.d/25-fuzz.sh failed)"; exit 1; }
# What the fuzzer learns stays in the cache for the next run.
export PATH="$OXBOW_CACHE/cargo-fuzz/bin:$PATH"
for target in request_decode sasl_tokens; do
  corpus="$OXBOW_CACHE/fuzz-corpus/$target"
  mkdir -p "$corpus"
  log="$OXBOW_CACHE/fuzz-$target.log"
  # No AddressSanitizer: the decoders are safe Rust (the one unsafe module, the mmap index,
  # is not on these paths), so libFuzzer finds what matters here (panics, aborts, runaway
  # allocation, hangs) without it, and the instrumented build of the broker took minutes of
  # every CI run.
  if ! cargo +nightly fuzz run --sanitizer none "$target" "$corpus" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $target found a crash (input in fuzz/artifacts/$target/)"
    exit 1
  fi
  grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb|INFO: seed corpus)' "$log" || true
  echo "fuzz: $target ran ${seconds}s without a crash"
done
