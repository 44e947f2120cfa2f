#!/usr/bin/env bash
# Follower fetching (KIP-392) and log directories (e2e/cluster/replica_reads_and_dirs.py):
# three racks, consumers with client.rack served by their rack's replica (checked from
# each broker's byte counters), the rack's replica SIGKILLed under a reading consumer,
# kafka-log-dirs, and replicas moved between log dirs with kafka-reassign-partitions under
# acks=all writes, then every acknowledged record read back from every rack.
# OXBOW_BINARY skips the build and uses that broker binary.
# Expected time: 45 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
if [ -z "${OXBOW_BINARY:-}" ]; then
  e2e/lib/build --release >/dev/null
  OXBOW_BINARY="$CARGO_TARGET_DIR/release/oxbow"
fi
e2e/peers/kafka/bin/kafka-log-dirs --version >/dev/null
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/cluster/replica_reads_and_dirs.py "$OXBOW_BINARY"
