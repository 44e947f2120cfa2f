#!/usr/bin/env bash
# An offline upgrade from the release before the versioned formats (e2e/upgrade/
# from_previous.py): a 3-node cluster's data directories written by that release (commit
# 8936395: topics, acknowledged records, committed offsets, a SCRAM user, an ACL, a client
# quota, a committed and an open transaction; e2e/upgrade/fixtures/previous-release.tar.gz)
# start under this release, which converts their JSON metadata logs, finalizes the feature
# levels once, and serves all of it — to librdkafka, over SASL with the user's ACL — again
# after a restart.
# Beside others: yes (fixed controller ports 25492-25494, kept out of e2e/lib/ports.py's block)
# Expected time: 25 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
e2e/lib/build >/dev/null
e2e/peers/kafka/bin/kafka-configs --version >/dev/null
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/upgrade/from_previous.py check \
  "$CARGO_TARGET_DIR/debug/oxbow" e2e/upgrade/fixtures/previous-release.tar.gz
