#!/usr/bin/env bash
# The Java client (kafka-clients of the pinned Kafka peer) and franz-go against a fresh
# Oxbow broker, each with its defaults: idempotent producer, a consumer group,
# byte-identical records, committed offsets.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 20 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
peers="$(cd "$(dirname "$0")/../peers" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/oxbow-clients.XXXXXX")"
trap '"$peers/oxbow/stop" --dir "$work" || true; rm -rf "$work"' EXIT
port="$("$peers/../lib/free-port")"
"$peers/oxbow/start-single" --port "$port" --dir "$work" >/dev/null
"$peers/java-client/run" --bootstrap "127.0.0.1:$port" --messages 2000
"$peers/franz-go/run" --bootstrap "127.0.0.1:$port" --messages 2000
