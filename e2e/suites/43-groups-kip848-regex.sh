#!/usr/bin/env bash
# KIP-848 with librdkafka, the rest of it: regex subscriptions resolved by the broker
# (topics existing and created later, members joining and leaving) and manual assignment
# with a group.id (commit, committed, incremental unassign), against Oxbow and Apache Kafka
# as the reference (e2e/groups/test_kip848_regex_assign.py).
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 70 s (warm, 2-core machine; e2e/run warns past twice that)
source "$(dirname "$0")/../groups/env.sh"
peers="$root/e2e/peers"
work="$(mktemp -d "${TMPDIR:-/tmp}/oxbow-kip848.XXXXXX")"
trap '"$peers/kafka/stop" --dir "$work/kafka" || true; rm -rf "$work"' EXIT
read -r port controller_port < <("$root/e2e/lib/free-port" 2)
"$peers/kafka/start-single" --port "$port" --controller-port "$controller_port" --dir "$work/kafka" >/dev/null
"$PYTHON" "$GROUPS_DIR/test_kip848_regex_assign.py" --kafka "127.0.0.1:$port"
