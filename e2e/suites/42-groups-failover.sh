#!/usr/bin/env bash
# SIGKILL a classic group member (its own process): after the session timeout the
# others own its partitions; only its last uncommitted batch is delivered again.
# Expected time: 20 s (warm, 2-core machine; e2e/run warns past twice that)
source "$(dirname "$0")/../groups/env.sh"
"$PYTHON" "$GROUPS_DIR/test_failover.py"
