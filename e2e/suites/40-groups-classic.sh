#!/usr/bin/env bash
# Consumer groups, classic protocol, confluent-kafka: exactly once per group with 3
# members on 6 partitions, two groups each see everything, commits survive a broker
# SIGKILL and restart.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 20 s (warm, 2-core machine; e2e/run warns past twice that)
source "$(dirname "$0")/../groups/env.sh"
"$PYTHON" "$GROUPS_DIR/test_classic.py"
