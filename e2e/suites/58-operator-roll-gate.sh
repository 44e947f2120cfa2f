#!/usr/bin/env bash
# The operator's roll gate (operator/src/cluster/roll.rs, what reconcile() asks before it
# restarts an outdated broker) against brokers that really report under-replicated
# partitions (operator/tests/roll_gate.rs): a 3-broker cluster with an RF=3 topic, one
# broker SIGSTOPped until the ISR shrinks. The gate must keep the roll waiting while a
# partition is under-replicated, and let it proceed once the broker is back in every ISR.
# Against Oxbow (real oxbow processes) and against Apache Kafka, the reference (the Kafka
# peer cluster, e2e/peers/kafka/start-cluster).
# Expected time: 40 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
peers="$root/e2e/peers"
work="$(mktemp -d "${TMPDIR:-/tmp}/oxbow-roll-gate.XXXXXX")"
trap '"$peers/kafka/stop" --dir "$work" --kill >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
# Kafka brokers on 24192-24194, controllers on 24292-24294: no other suite's ports
# (OXBOW_SUITE_PORT moves them).
port="${OXBOW_SUITE_PORT:-24192}"

# The broker binary the Oxbow half starts, built from this tree (not a stale one).
e2e/lib/build >/dev/null
export OXBOW_BINARY="$CARGO_TARGET_DIR/debug/oxbow"
cargo test --locked --workspace --test roll_gate -- --exact \
  oxbow_roll_gate_waits_while_a_partition_is_under_replicated
echo "ok oxbow: the roll waits while a partition is under-replicated, proceeds once in sync"

"$peers/kafka/start-cluster" --port "$port" --dir "$work" \
  --config replica.lag.time.max.ms=2000 >/dev/null
OXBOW_ROLL_GATE_KAFKA_DIR="$work" OXBOW_ROLL_GATE_KAFKA_PORT="$port" \
  cargo test --locked --workspace --test roll_gate -- --ignored --exact \
  kafka_roll_gate_waits_while_a_partition_is_under_replicated
echo "ok kafka: the roll waits while a partition is under-replicated, proceeds once in sync"
