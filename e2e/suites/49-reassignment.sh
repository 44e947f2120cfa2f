#!/usr/bin/env bash
# Moving partitions under acks=all load with Kafka's own tools (e2e/cluster/reassignment.py):
# five nodes, kafka-reassign-partitions --generate/--execute/--verify/--cancel/--list and
# kafka-leader-election, a controller SIGKILL and a leader SIGKILL in the middle of moves,
# then every acknowledged record read back once and the consumer group's longest stall.
# OXBOW_BINARY skips the build and uses that broker binary.
# Expected time: 70 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
if [ -z "${OXBOW_BINARY:-}" ]; then
  e2e/lib/build --release >/dev/null
  OXBOW_BINARY="$CARGO_TARGET_DIR/release/oxbow"
fi
# Kafka's tools are fetched (once) before the clock of the first move starts.
e2e/peers/kafka/bin/kafka-reassign-partitions --version >/dev/null
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/cluster/reassignment.py "$OXBOW_BINARY"
