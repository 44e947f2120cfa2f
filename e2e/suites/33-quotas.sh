#!/usr/bin/env bash
# Client quotas (e2e/security/quotas.py): kafka-configs sets and describes them, bad values
# are refused, a librdkafka producer limited to 1 MiB/s averages within 10 % over 30 s and
# is told its throttle, a consumer is held to its byte rate.
# Expected time: 80 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
e2e/lib/build >/dev/null
e2e/peers/kafka/bin/kafka-configs --version >/dev/null
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/security/quotas.py "$CARGO_TARGET_DIR/debug/oxbow"
