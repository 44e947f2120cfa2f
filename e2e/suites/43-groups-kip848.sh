#!/usr/bin/env bash
# KIP-848 consumer groups (group.protocol=consumer, server-side assignor) with
# librdkafka: the same exactly-once-per-group, two-group and broker-restart checks as
# the classic suite.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 20 s (warm, 2-core machine; e2e/run warns past twice that)
source "$(dirname "$0")/../groups/env.sh"
"$PYTHON" "$GROUPS_DIR/test_classic.py" --protocol consumer
