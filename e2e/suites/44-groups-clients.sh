#!/usr/bin/env bash
# Classic groups with kafka-python, a mixed kafka-python + librdkafka group, and kafkajs:
# every message consumed exactly once per group.
source "$(dirname "$0")/../groups/env.sh"
"$PYTHON" "$GROUPS_DIR/test_other_clients.py"
