#!/usr/bin/env bash
# Transactions on three nodes under faults (e2e/cluster/transactions.py): two librdkafka
# transactional producers writing 9-record transactions over 3 partitions (RF=3,
# min.insync.replicas=2, one in four aborted) and a consume-transform-produce copier with the
# group's offsets in its transactions, while the transaction coordinators and the partition
# leaders are SIGKILLed and restarted (OXBOW_TXN_KILLS, default 6). Then at read_committed:
# every committed transaction whole, every aborted one absent, none in part, no record twice;
# the copy holds every input record exactly once. Then a real Kafka Streams application
# (e2e/transactions/streams.py: a word count with processing.guarantee=exactly_once_v2, from
# Maven Central) through two broker SIGKILLs and its own SIGKILL: every count exact, none ever
# above the truth. OXBOW_BINARY skips the build.
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
if [ -z "${OXBOW_BINARY:-}" ]; then
  cargo build --locked -p oxbow-broker --bin oxbow
  OXBOW_BINARY="$CARGO_TARGET_DIR/debug/oxbow"
fi
python3 e2e/cluster/transactions.py --kills "${OXBOW_TXN_KILLS:-6}" "$OXBOW_BINARY"
# Kafka Streams is compiled before the cluster starts (a javac error fails here).
e2e/peers/kafka-streams/run --compile-only
python3 e2e/transactions/streams.py "$OXBOW_BINARY"
