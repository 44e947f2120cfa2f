#!/usr/bin/env bash
# SASL/SCRAM listeners with real clients (e2e/security/sasl.py): credentials set and
# described with Kafka's kafka-configs, librdkafka, kafka-python and the Java console
# consumer over SASL_PLAINTEXT and SASL_SSL, franz-go over SASL_SSL (SCRAM-SHA-512 and
# PLAIN), wrong passwords, unknown users and requests before authenticating refused,
# credentials kept across a restart; PLAIN, OAUTHBEARER (unsecured and JWKS-signed tokens),
# KIP-368 re-authentication; three brokers replicating over SASL_SSL.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 220 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
e2e/lib/build >/dev/null
e2e/peers/kafka/bin/kafka-configs --version >/dev/null
e2e/peers/franz-go/run --build-only
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/security/sasl.py "$CARGO_TARGET_DIR/debug/oxbow"
