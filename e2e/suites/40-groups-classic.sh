#!/usr/bin/env bash
# Consumer groups, classic protocol, confluent-kafka: exactly once per group with 3
# members on 6 partitions, two groups each see everything, commits survive a broker
# SIGKILL and restart.
source "$(dirname "$0")/../groups/env.sh"
"$PYTHON" "$GROUPS_DIR/test_classic.py"
