#!/usr/bin/env bash
# Admin APIs against a real broker process with real clients: confluent-kafka's
# AdminClient (librdkafka) and kafka-python (DescribeLogDirs). See 35-admin.py for the
# checks: error codes of bad requests, configs taking effect on live logs, restart.
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
cargo build --locked -p oxbow-broker --bin oxbow
# A private copy: another build sharing the target directory cannot swap it mid-run.
binary="$(mktemp "${TMPDIR:-/tmp}/oxbow-admin-bin.XXXXXX")"
trap 'rm -f "$binary"' EXIT
cp "$CARGO_TARGET_DIR/debug/oxbow" "$binary"
chmod +x "$binary"
python3 e2e/suites/35-admin.py "$binary"
