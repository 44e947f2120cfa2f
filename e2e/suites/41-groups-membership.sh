#!/usr/bin/env bash
# Classic group membership with confluent-kafka: static membership (KIP-345) re-joins
# without a rebalance; cooperative-sticky revokes only the partitions that move.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 20 s (warm, 2-core machine; e2e/run warns past twice that)
source "$(dirname "$0")/../groups/env.sh"
"$PYTHON" "$GROUPS_DIR/test_membership.py"
