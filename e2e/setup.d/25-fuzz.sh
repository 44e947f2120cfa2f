#!/usr/bin/env bash
# Installs cargo-fuzz (idempotent, into ${OXBOW_CACHE}/cargo-fuzz) for the fuzz suite
# (e2e/suites/25-fuzz.sh). cargo-fuzz needs a nightly toolchain; without one the suite says
# so, runs the stable driver (broker/tests/server_request_decode.rs) instead and reports a skip.
set -euo pipefail
. "$(dirname "$0")/../lib/fetch.sh"
root="${OXBOW_CACHE:-$HOME/.cache/oxbow}/cargo-fuzz"
version=0.13.2
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "No nightly toolchain: the fuzz suite will run the stable driver and report libFuzzer as skipped"
  exit 0
fi
if [ "$("$root/bin/cargo-fuzz" --version 2>/dev/null)" != "cargo-fuzz $version" ]; then
  echo "Installing cargo-fuzz $version into $root"
  fetch "cargo-fuzz $version" "crates.io" cargo install --quiet --locked --version "$version" --root "$root" cargo-fuzz
fi
