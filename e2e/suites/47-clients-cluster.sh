#!/usr/bin/env bash
# The client round trips against a 3-broker Oxbow cluster whose topics are replicated:
# default.replication.factor=3, min.insync.replicas=2, so every topic the clients create
# is RF=3 and their acks=all (idempotent) producers wait for two copies. The Java client
# and franz-go with their defaults (consumer group, committed offsets), and kcat through
# one broker reading back through another.
# Expected time: 40 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
peers="$(cd "$(dirname "$0")/../peers" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/oxbow-clients-cluster.XXXXXX")"
trap '"$peers/oxbow/stop-cluster" --dir "$work" || true; rm -rf "$work"' EXIT
# Below the ephemeral range and away from the other suites' ports.
port=23392
"$peers/oxbow/start-cluster" --port "$port" --dir "$work" \
  --config default.replication.factor=3 --config min.insync.replicas=2 >/dev/null
bootstrap="127.0.0.1:$port,127.0.0.1:$(( port + 1 )),127.0.0.1:$(( port + 2 ))"
"$peers/java-client/run" --bootstrap "$bootstrap" --messages 2000
# franz-go takes one seed broker and finds the others through Metadata.
"$peers/franz-go/run" --bootstrap "127.0.0.1:$(( port + 1 ))" --messages 2000
seq 1 500 | kcat -P -b "127.0.0.1:$port" -t kcat-cluster -X acks=all -X enable.idempotence=true
got="$(kcat -C -b "127.0.0.1:$(( port + 2 ))" -t kcat-cluster -e -q | sort -n | tr '\n' ' ')"
want="$(seq 1 500 | tr '\n' ' ')"
[ "$got" = "$want" ] || { echo "FAIL kcat: read back $(wc -w <<<"$got") of 500 records" >&2; exit 1; }
"$peers/kafka/bin/kafka-topics" --bootstrap-server "127.0.0.1:$port" --describe --topic kcat-cluster \
  | grep -q 'ReplicationFactor: 3' || { echo "FAIL kcat-cluster is not RF=3" >&2; exit 1; }
echo "ok kcat: 500 acks=all records through broker 1, read back through broker 3 (RF=3)"
