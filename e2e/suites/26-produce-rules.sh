#!/usr/bin/env bash
# Topic rules on produce through librdkafka (e2e/clients/produce_rules.py), against Oxbow
# and against Apache Kafka as the reference: keyless records on a compacted topic and
# out-of-range timestamps fail record by record (KIP-467), compression.type re-encodes
# batches of another codec (checked on disk), invalid compression configs are refused.
# Then the Java client (e2e/peers/java-client/produce-rules) against both: its
# observations, record errors and exception messages included, must be the same.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 30 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
e2e/lib/build >/dev/null
peers="$PWD/e2e/peers"
work="$(mktemp -d "${TMPDIR:-/tmp}/oxbow-produce-rules.XXXXXX")"
trap '"$peers/kafka/stop" --dir "$work/kafka" || true; "$peers/oxbow/stop" --dir "$work/oxbow" || true; rm -rf "$work"' EXIT
read -r port controller_port < <(e2e/lib/free-port 2)
"$peers/kafka/start-single" --port "$port" --controller-port "$controller_port" --dir "$work/kafka" >/dev/null
"$OXBOW_CACHE/clients/venv/bin/python" e2e/clients/produce_rules.py \
  --binary "$CARGO_TARGET_DIR/debug/oxbow" --kafka "127.0.0.1:$port"

oxbow_port="$(e2e/lib/free-port)"
OXBOW_BINARY="$CARGO_TARGET_DIR/debug/oxbow" "$peers/oxbow/start-single" --port "$oxbow_port" --dir "$work/oxbow" >/dev/null
run="$(python3 -c 'import uuid; print(uuid.uuid4().hex[:8])')"
"$peers/java-client/produce-rules" --bootstrap "127.0.0.1:$port" --run "$run" >"$work/java-kafka.txt"
"$peers/java-client/produce-rules" --bootstrap "127.0.0.1:$oxbow_port" --run "$run" >"$work/java-oxbow.txt"
if ! diff -u "$work/java-kafka.txt" "$work/java-oxbow.txt"; then
  echo "FAIL  the Java client observes Oxbow (+) differently from Kafka (-)"
  exit 1
fi
grep -q "mixed batch record 1: InvalidRecordException" "$work/java-oxbow.txt" ||
  { echo "FAIL  the keyless record was not refused with InvalidRecordException"; cat "$work/java-oxbow.txt"; exit 1; }
echo "ok    the Java client observes Oxbow as Kafka ($(wc -l <"$work/java-oxbow.txt") observations)"
