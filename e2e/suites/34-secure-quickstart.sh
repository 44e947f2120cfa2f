#!/usr/bin/env bash
# The README's secured quick start (e2e/security/quickstart.py): `oxbow dev --brokers 1
# --secure`, then kcat with the kcat.conf and Kafka's tools with the client.properties it
# writes, and nothing served without credentials.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 40 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
e2e/lib/build >/dev/null
e2e/peers/kafka/bin/kafka-topics --version >/dev/null
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/security/quickstart.py "$CARGO_TARGET_DIR/debug/oxbow"
