#!/usr/bin/env bash
# Classic group membership with confluent-kafka: static membership (KIP-345) re-joins
# without a rebalance; cooperative-sticky revokes only the partitions that move.
source "$(dirname "$0")/../groups/env.sh"
"$PYTHON" "$GROUPS_DIR/test_membership.py"
