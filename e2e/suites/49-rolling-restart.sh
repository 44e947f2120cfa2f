#!/usr/bin/env bash
# A rolling restart of a 3-broker cluster under acks=all load (e2e/cluster/rolling_restart.py):
# SIGTERM (controlled shutdown), restart, wait until back in every ISR, next broker. No
# produce fails, no partition is ever without a leader, a consumer group reads every
# record, and the under-replicated metric rises while a broker is away and returns to 0.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
peers="$root/e2e/peers"
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
work="$(mktemp -d "${TMPDIR:-/tmp}/oxbow-rolling.XXXXXX")"
trap '"$peers/oxbow/stop-cluster" --dir "$work" --timeout 10 || true; rm -rf "$work"' EXIT
# Clients on 23792-23794, controllers on 23892-23894: no other suite's ports
# (OXBOW_SUITE_PORT moves them).
port="${OXBOW_SUITE_PORT:-23792}"
"$peers/oxbow/start-cluster" --port "$port" --dir "$work" \
  --config offsets.topic.replication.factor=3 --config group.initial.rebalance.delay.ms=0 >/dev/null
"$OXBOW_CACHE/clients/venv/bin/python" "$root/e2e/cluster/rolling_restart.py" "$work" "$port"
