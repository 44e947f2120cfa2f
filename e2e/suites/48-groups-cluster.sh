#!/usr/bin/env bash
# A consumer group across coordinator failovers on a 3-broker cluster with a replicated
# __consumer_offsets (e2e/cluster/coordinator_failover.py): the coordinator is SIGKILLed
# three times while a librdkafka consumer works; commits survive, nothing below an
# acknowledged commit is delivered again, every record is consumed.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
peers="$root/e2e/peers"
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
work="$(mktemp -d "${TMPDIR:-/tmp}/oxbow-groups-cluster.XXXXXX")"
trap '"$peers/oxbow/stop-cluster" --dir "$work" --timeout 10 || true; rm -rf "$work"' EXIT
port="${OXBOW_SUITE_PORT:-23592}"  # OXBOW_SUITE_PORT moves the cluster (clients port..port+2, controllers +100)
"$peers/oxbow/start-cluster" --port "$port" --dir "$work" \
  --config default.replication.factor=3 --config min.insync.replicas=2 \
  --config offsets.topic.replication.factor=3 --config group.initial.rebalance.delay.ms=0 >/dev/null
"$OXBOW_CACHE/clients/venv/bin/python" "$root/e2e/cluster/coordinator_failover.py" \
  "127.0.0.1:$port,127.0.0.1:$(( port + 1 )),127.0.0.1:$(( port + 2 ))" "$work"
