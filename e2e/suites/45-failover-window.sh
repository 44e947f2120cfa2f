#!/usr/bin/env bash
# How long producers at their clients' defaults wait when a partition leader dies
# (e2e/cluster/failover_window.py): three nodes, three partitions (one led by each), RF=3,
# min.insync.replicas=2, three idempotent acks=all producers at ~700 records/s each —
# librdkafka (confluent-kafka), the Java client and franz-go; OXBOW_FAILOVER_ROUNDS (default
# 4) SIGKILLs and as many SIGTERMs of a leader, the victim in turn the active controller and a
# plain broker, the preferred leaders restored between rounds. Reports each client's windows
# per kind (median, worst, every sample, by victim role), the clients' own log lines for a
# window past 1.5 s, and how often librdkafka parked a partition on its internal broker;
# asserts only that every round recovers within 30 s for every client and every acknowledged
# record is read back. Needs e2e/peers/kafka/install (the Java client) and Go (franz-go).
# The Java client's and librdkafka's own windows under more faults: suite 46
# (replication.py). Runs alone: it measures time. Ports 29192-29394 (e2e/lib/oxbow_cluster.py). OXBOW_BINARY skips the build.
# Expected time: 120 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
binary="${OXBOW_BINARY:-$(e2e/lib/build)/oxbow}"
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/cluster/failover_window.py \
  --rounds "${OXBOW_FAILOVER_ROUNDS:-4}" "$binary"
