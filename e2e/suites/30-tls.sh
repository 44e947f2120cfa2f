#!/usr/bin/env bash
# TLS listeners with real clients (e2e/security/tls.py): librdkafka, kafka-python and
# Kafka's Java tools over SSL with client certificates (mTLS), refused handshakes (no
# certificate, an untrusted CA, plaintext on the TLS port), the principal a certificate
# maps to, and a key store rotated in place under a producer.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 80 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
e2e/lib/build >/dev/null
e2e/peers/kafka/bin/kafka-topics --version >/dev/null
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/security/tls.py "$CARGO_TARGET_DIR/debug/oxbow"
