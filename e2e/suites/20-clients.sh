#!/usr/bin/env bash
# Real Kafka clients against the real broker (e2e/clients/roundtrip.py): kcat,
# confluent-kafka, kafka-python and kafkajs each round-trip every codec byte for byte,
# hit max.message.bytes exactly and one byte over, and read everything back after a
# SIGKILL, over the sendfile and the copying fetch path. The rdkafka crate's round trip is
# a cargo test (e2e/tests/clients_rdkafka.rs). Clients come from e2e/setup.d/10-clients.sh.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 40 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
e2e/lib/build >/dev/null
exec python3 e2e/clients/roundtrip.py --binary "$CARGO_TARGET_DIR/debug/oxbow" \
  --clients "${OXBOW_CLIENTS:-kcat,confluent-kafka,kafka-python,kafkajs}"
