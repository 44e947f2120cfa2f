#!/usr/bin/env bash
# The replication history checker of suite 46 (e2e/cluster/replication.py) on a cluster
# whose every Kafka listener is mutual TLS (--tls): clients, replication (the inter-broker
# listener) and the controller quorum are SSL with client certificates required, each node's
# certificate naming only its own address. The idempotent acks=all producers (librdkafka and
# the Java client, PEM stores), the admin client, the read-back consumer and the harness's
# Metadata requests all present a client certificate. Same nemesis, same checks: every
# acknowledged record read back exactly once at its offset, in order; replicas byte-identical.
#
# Before any fault, every node's client and controller port must refuse a TLS client without
# a certificate, and the client port must give no Kafka answer in clear.
#
# CI size (77 s on two shared cores): 15 leader SIGKILLs, 3 SIGTERMs, 1 SIGSTOP, 1 double
# SIGKILL, 2 network partitions (root with `ip netns`; otherwise skipped, as in suite 46),
# 2 acks=1 SIGKILLs. Each OXBOW_REPLICATION_* knob set in the environment wins (see
# replication.py). The long run (>= 100 kills and 100 partitions, as suite 46's) under
# mutual TLS:
#
#   OXBOW_REPLICATION_LONG=1 bash e2e/suites/46-replication-mtls.sh
#   (= python e2e/cluster/replication.py --long --tls BINARY)
#
# OXBOW_BINARY skips the build and uses that broker binary.
# Expected time: 110 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
if [ -z "${OXBOW_BINARY:-}" ]; then
  e2e/lib/build >/dev/null
  OXBOW_BINARY="$CARGO_TARGET_DIR/debug/oxbow"
fi
# The Java producer is compiled now (a javac error fails here, not 30 s into the history).
e2e/peers/java-client/history-producer --compile-only
args=(--tls)
if [ "${OXBOW_REPLICATION_LONG:-0}" = 1 ]; then
  args+=(--long)
else
  export OXBOW_REPLICATION_KILLS="${OXBOW_REPLICATION_KILLS:-15}"
  export OXBOW_REPLICATION_TERMS="${OXBOW_REPLICATION_TERMS:-3}"
  export OXBOW_REPLICATION_STOPS="${OXBOW_REPLICATION_STOPS:-1}"
  export OXBOW_REPLICATION_DOUBLES="${OXBOW_REPLICATION_DOUBLES:-1}"
  export OXBOW_REPLICATION_PARTITIONS="${OXBOW_REPLICATION_PARTITIONS:-2}"
  export OXBOW_REPLICATION_ACKS1_KILLS="${OXBOW_REPLICATION_ACKS1_KILLS:-2}"
fi
exec "$OXBOW_CACHE/clients/venv/bin/python" e2e/cluster/replication.py "${args[@]}" "$OXBOW_BINARY"
