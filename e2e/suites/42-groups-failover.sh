#!/usr/bin/env bash
# SIGKILL a classic group member (its own process): after the session timeout the
# others own its partitions; only its last uncommitted batch is delivered again.
source "$(dirname "$0")/../groups/env.sh"
"$PYTHON" "$GROUPS_DIR/test_failover.py"
