#!/usr/bin/env bash
# A rolling upgrade of a 3-broker cluster from the previous release under acks=all load
# (e2e/cluster/rolling_restart.py): the previous release's own binary (e2e/upgrade/
# previous-release, built once into the cache by e2e/lib/build-previous-release; its levels
# capped at metadata.version 3.9-IV0 so the roll has a level to finalize), one broker at a
# time: SIGTERM (controlled shutdown), restart as this tree's binary, wait until back in
# every ISR; at every step a topic is created, a transaction commits, a partition is
# reassigned and a consumer group rebalances, and while mixed `kafka-features upgrade` is
# refused; after the roll it finalizes 4.0-IV3 and group.version 1 and a KIP-848 consumer
# reads (before that one node goes back to the previous release and forward again), and a
# node of the previous release refuses to start with one line naming the
# level. No produce fails, no partition is ever without a leader, the group reads every
# record, the topic holds each acknowledged record exactly once, and the under-replicated
# metric rises while a broker is away and returns to 0.
# The cluster's clients are on 23792-23794 (OXBOW_SUITE_PORT moves them).
# Expected time: 60 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
"$root/e2e/lib/build" >/dev/null
previous="$("$root/e2e/lib/build-previous-release")"
exec "$OXBOW_CACHE/clients/venv/bin/python" "$root/e2e/cluster/rolling_restart.py" \
  "$CARGO_TARGET_DIR/debug/oxbow" "$previous/oxbow"
