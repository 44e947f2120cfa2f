#!/usr/bin/env bash
# Transactions on three nodes under faults (e2e/cluster/transactions.py): three transactional
# producers writing 9-record transactions over 3 partitions (RF=3, min.insync.replicas=2, one
# in four aborted), two on librdkafka (transaction version 1) and one on the Java client
# (e2e/peers/kafka-streams/TxnWriter.java, Kafka 4.1.2) on transaction version 2 (partitions
# added by their leaders on Produce, an epoch bump at every EndTxn), and a
# consume-transform-produce copier with the group's offsets in its transactions, while, one
# fault at a time, the transaction coordinators and the partition leaders are SIGKILLed and
# restarted (OXBOW_TXN_KILLS, default 6), alternating with network partitions
# (OXBOW_TXN_PARTITIONS, default 3; root with `ip netns`, else reported as skipped): a
# transaction coordinator, a partition leader or the copier's group coordinator cut off from
# the other brokers and the quorum, not from its clients, past the session timeout, then
# healed. Each fault waits for every partition to be led and fully in sync again. Then at
# read_committed: every committed transaction whole, every aborted one absent, none in part,
# no record twice, for each client; the Java writer's producer epoch (kafka-transactions
# describe) proves it bumped at every commit or abort; the copy holds every input record
# exactly once and the group's offsets are the input's ends. Then a real Kafka Streams
# application (e2e/transactions/streams.py: a word count with
# processing.guarantee=exactly_once_v2, from Maven Central) through two broker SIGKILLs and
# its own SIGKILL: every count exact, none ever above the truth. Then franz-go's
# GroupTransactSession (e2e/transactions/franz_etl.py): three sessions rebalancing every few
# seconds through three node SIGKILLs, never fenced, every record copied exactly once. Needs
# the Kafka peer's tools (e2e/peers/kafka/install). OXBOW_BINARY skips the build.
# Expected time: 360 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
if [ -z "${OXBOW_BINARY:-}" ]; then
  e2e/lib/build >/dev/null
  OXBOW_BINARY="$CARGO_TARGET_DIR/debug/oxbow"
fi
# Exit 77: the partitions were skipped (no network namespaces); the rest passed, go on.
status=0
python3 e2e/cluster/transactions.py --kills "${OXBOW_TXN_KILLS:-6}" --partitions "${OXBOW_TXN_PARTITIONS:-3}" \
  "$OXBOW_BINARY" || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then exit "$status"; fi
python3 e2e/transactions/streams.py "$OXBOW_BINARY"
python3 e2e/transactions/franz_etl.py "$OXBOW_BINARY"
exit "$status"
