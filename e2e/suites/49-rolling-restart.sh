#!/usr/bin/env bash
# A rolling restart of a 3-broker cluster under acks=all load (e2e/cluster/rolling_restart.py):
# SIGTERM (controlled shutdown), restart, wait until back in every ISR, next broker. No
# produce fails, no partition is ever without a leader, a consumer group reads every
# record, and the under-replicated metric rises while a broker is away and returns to 0.
# The cluster's clients are on 23792-23794 (OXBOW_SUITE_PORT moves them).
# Expected time: 30 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
"$root/e2e/lib/build" >/dev/null
exec "$OXBOW_CACHE/clients/venv/bin/python" "$root/e2e/cluster/rolling_restart.py" "$CARGO_TARGET_DIR/debug/oxbow"
