#!/usr/bin/env bash
# ISR replication under faults (issue 12), checked from the outside by
# e2e/cluster/replication.py: three `oxbow` nodes, idempotent acks=all producers (librdkafka
# and the Java client) on an RF=3, min.insync.replicas=2 topic, and a nemesis — leader
# SIGKILL (OXBOW_REPLICATION_KILLS, default 20) and restart, SIGTERM, SIGSTOP past the
# session timeout, two brokers killed at once, and (root with `ip netns`) the leader cut off
# from the other brokers but not from its clients. Then every acknowledged record must be
# read back exactly once at its offset, in order, and the replicas' segment bytes below the
# high watermark must be identical. An acks=1 phase reports what leader kills lose.
# Unavailability windows are printed, not asserted. OXBOW_REPLICATION_LONG=1 runs --long
# (>= 100 kills and 100 partitions).
# OXBOW_BINARY skips the build and uses that broker binary.
# Expected time: 100 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
if [ -z "${OXBOW_BINARY:-}" ]; then
  e2e/lib/build >/dev/null
  OXBOW_BINARY="$CARGO_TARGET_DIR/debug/oxbow"
fi
# The Java producer is compiled now (a javac error fails here, not 30 s into the history).
e2e/peers/java-client/history-producer --compile-only
args=()
if [ "${OXBOW_REPLICATION_LONG:-0}" = 1 ]; then args+=(--long); fi
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/cluster/replication.py "${args[@]}" "$OXBOW_BINARY"
