#!/usr/bin/env bash
# Topic rules on produce through librdkafka (e2e/clients/produce_rules.py), against Oxbow
# and against Apache Kafka as the reference: keyless records on a compacted topic and
# out-of-range timestamps fail record by record (KIP-467), compression.type re-encodes
# batches of another codec (checked on disk), invalid compression configs are refused.
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
cargo build --locked -p oxbow-broker --bin oxbow
peers="$PWD/e2e/peers"
work="$(mktemp -d "${TMPDIR:-/tmp}/oxbow-produce-rules.XXXXXX")"
trap '"$peers/kafka/stop" --dir "$work/kafka" || true; rm -rf "$work"' EXIT
# Kafka's two ports from 32000-33999 (this suite's range), free ones.
read -r port controller_port < <(python3 - <<'PY'
import socket
found = []
for port in range(32000, 34000):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
    found.append(port)
    if len(found) == 2:
        break
print(*found)
PY
)
"$peers/kafka/start-single" --port "$port" --controller-port "$controller_port" --dir "$work/kafka" >/dev/null
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/clients/produce_rules.py \
  --binary "$CARGO_TARGET_DIR/debug/oxbow" --kafka "127.0.0.1:$port"
