#!/usr/bin/env bash
# A rolling upgrade of a 3-broker cluster under acks=all load (e2e/cluster/rolling_restart.py):
# from the previous release (this binary capped at metadata.version 3.9-IV0) one broker at a
# time: SIGTERM (controlled shutdown), restart as the new release, wait until back in every
# ISR, create a topic and commit a transaction, next broker; mixed, a reassignment works and
# `kafka-features upgrade` is refused; after the roll it finalizes 4.0-IV3 and group.version 1
# and a KIP-848 consumer reads, and a node of the previous release refuses to start with one
# line naming the level. No produce fails, no partition is ever without a leader, a
# consumer group reads every record, and the under-replicated metric rises while a broker
# is away and returns to 0.
# The cluster's clients are on 23792-23794 (OXBOW_SUITE_PORT moves them).
# Expected time: 35 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
"$root/e2e/lib/build" >/dev/null
exec "$OXBOW_CACHE/clients/venv/bin/python" "$root/e2e/cluster/rolling_restart.py" "$CARGO_TARGET_DIR/debug/oxbow"
