#!/usr/bin/env bash
# Classic groups with kafka-python, a mixed kafka-python + librdkafka group, and kafkajs:
# every message consumed exactly once per group.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 20 s (warm, 2-core machine; e2e/run warns past twice that)
source "$(dirname "$0")/../groups/env.sh"
"$PYTHON" "$GROUPS_DIR/test_other_clients.py"
