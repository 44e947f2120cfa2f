#!/usr/bin/env bash
# ACLs with Kafka's StandardAuthorizer rules (e2e/security/acls.py): kafka-acls adds, lists
# and removes entries; librdkafka and the Java console consumer are allowed, refused with
# Kafka's error codes and shown only the topics they may describe; entries survive a restart.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 60 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
e2e/lib/build >/dev/null
e2e/peers/kafka/bin/kafka-acls --version >/dev/null
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/security/acls.py "$CARGO_TARGET_DIR/debug/oxbow"
