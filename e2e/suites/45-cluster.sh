#!/usr/bin/env bash
# The metadata quorum with real processes and Kafka's own tools (e2e/cluster/quorum.py):
# `oxbow dev --brokers 3` as the README shows it, kafka-topics --describe and
# kafka-metadata-quorum against it, and controller failover (SIGKILL) measured over
# OXBOW_FAILOVER_RUNS runs (default 10); then the voters changed at run time (KIP-853,
# e2e/cluster/voters.py): 1 -> 3 -> 5 -> 3 with kafka-metadata-quorum add-controller /
# remove-controller under load, ports from 30192 (OXBOW_VOTERS_PORT); then each node in turn
# SIGSTOPped for 300 ms, 30 times, under an acks=all producer (e2e/cluster/stall.py): no
# broker fenced, every record acknowledged, at most one warning per stall. The fault and bad-input tests of the quorum are
# cargo tests (broker/tests/cluster_quorum.rs, cluster_bad_input.rs). Ports from 21092
# and 22092 (OXBOW_SUITE_PORT moves them).
# Expected time: 150 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
e2e/lib/build >/dev/null
"$OXBOW_CACHE/clients/venv/bin/python" e2e/cluster/quorum.py "$CARGO_TARGET_DIR/debug/oxbow"
"$OXBOW_CACHE/clients/venv/bin/python" e2e/cluster/voters.py "$CARGO_TARGET_DIR/debug/oxbow"
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/cluster/stall.py "$CARGO_TARGET_DIR/debug/oxbow"
