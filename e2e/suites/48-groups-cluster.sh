#!/usr/bin/env bash
# A consumer group across coordinator failovers on a 3-broker cluster with a replicated
# __consumer_offsets (e2e/cluster/coordinator_failover.py): the coordinator is SIGKILLed
# three times while a librdkafka consumer works; commits survive, nothing below an
# acknowledged commit is delivered again, every record is consumed. Clients on 23592-23594
# (OXBOW_SUITE_PORT moves them).
# Expected time: 20 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
"$root/e2e/lib/build" >/dev/null
exec "$OXBOW_CACHE/clients/venv/bin/python" "$root/e2e/cluster/coordinator_failover.py" "$CARGO_TARGET_DIR/debug/oxbow"
