#!/usr/bin/env bash
# Transactions end to end against real broker processes:
#  1. librdkafka (confluent-kafka) — see e2e/transactions/test_transactions.py: commit and
#     abort across partitions, an open transaction holding read_committed consumers back,
#     consume-transform-produce with the group's offsets in the transaction, fencing by a
#     new session, the coordinator aborting a transaction past its timeout, SIGKILL and
#     restart;
#  2. the Java client through Apache Kafka 4.1's own tools: kafka-producer-perf-test as a
#     transactional producer (a commit every 100 ms), read back by kafka-console-consumer
#     at read_committed; kafka-transactions list / describe on the coordinator's state;
#     kafka-features shows transaction.version 2, and the producer used it (its epoch
#     bumped at every commit);
#  3. a hanging transaction (its producer gone, a 10-minute timeout): the metrics show it,
#     kafka-transactions describe-producers finds its start offset, kafka-transactions
#     abort ends it (WriteTxnMarkers from the admin client) and read_committed consumers
#     get past it.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 70 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
e2e/lib/build >/dev/null
# A private copy: another build sharing the target directory cannot swap it mid-run.
work="$(mktemp -d "${TMPDIR:-/tmp}/oxbow-transactions.XXXXXX")"
binary="$work/oxbow"
cp "$CARGO_TARGET_DIR/debug/oxbow" "$binary"
cleanup() {
  e2e/peers/oxbow/stop --dir "$work/java" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "--- librdkafka"
OXBOW_BINARY="$binary" python3 e2e/transactions/test_transactions.py

echo "--- Java client (Kafka's tools)"
port="$(e2e/lib/free-port)"
metrics_port="$(e2e/lib/free-port)"
OXBOW_BINARY="$binary" e2e/peers/oxbow/start-single --port "$port" --dir "$work/java" \
  --config transaction.state.log.num.partitions=3 --config offsets.topic.num.partitions=3 \
  --config "metrics.listener=127.0.0.1:$metrics_port" >/dev/null
tools=e2e/peers/kafka/bin
bootstrap=(--bootstrap-server "127.0.0.1:$port")
failed() {
  echo "FAIL $1"; sed 's/^/     /' <<<"$2" | tail -n 15
  tail -n 20 "$work/java/oxbow.log"
  exit 1
}
"$tools/kafka-topics" "${bootstrap[@]}" --create --topic java-txn --partitions 3 >/dev/null
records=20000
perf="$("$tools/kafka-producer-perf-test" --topic java-txn --num-records "$records" --record-size 100 \
  --throughput -1 --transactional-id java-perf --transaction-duration-ms 100 \
  --producer-props "bootstrap.servers=127.0.0.1:$port" 2>&1)" || failed "kafka-producer-perf-test" "$perf"
summary="$(grep -E "^$records records sent" <<<"$perf")" || failed "the transactional producer did not send $records records" "$perf"
echo "ok   Java transactional producer, a commit every 100 ms: $summary"
consumed="$("$tools/kafka-console-consumer" "${bootstrap[@]}" --topic java-txn --from-beginning \
  --isolation-level read_committed --max-messages "$records" --timeout-ms 30000 2>/dev/null | wc -l)"
[ "$consumed" = "$records" ] || failed "read_committed read $consumed of $records committed records" ""
echo "ok   kafka-console-consumer --isolation-level read_committed read all $records records"
listed="$("$tools/kafka-transactions" "${bootstrap[@]}" list 2>&1)" || failed "kafka-transactions list" "$listed"
grep -qE "^java-perf[[:space:]]+0[[:space:]]+[0-9]+[[:space:]]+CompleteCommit" <<<"$listed" || failed "kafka-transactions list does not show java-perf as CompleteCommit" "$listed"
described="$("$tools/kafka-transactions" "${bootstrap[@]}" describe --transactional-id java-perf 2>&1)" ||
  failed "kafka-transactions describe" "$described"
grep -qE "CompleteCommit" <<<"$described" || failed "kafka-transactions describe" "$described"
echo "ok   kafka-transactions list and describe: java-perf is CompleteCommit on coordinator 0"
# Transaction version 2 (KIP-890 part 2): the broker finalizes it, so the Java client
# bumped its epoch at every commit (with version 1 the epoch stays 0 for a session).
features="$("$tools/kafka-features" "${bootstrap[@]}" describe 2>&1)" || failed "kafka-features describe" "$features"
grep -qE "Feature: transaction.version[[:space:]]+SupportedMinVersion: 0[[:space:]]+SupportedMaxVersion: 2[[:space:]]+FinalizedVersionLevel: 2" <<<"$features" ||
  failed "kafka-features describe does not show transaction.version finalized at 2" "$features"
epoch="$(awk 'NR==1 { for (i = 1; i <= NF; i++) if ($i == "ProducerEpoch") col = i; next } col { print $col }' <<<"$described")"
[[ "$epoch" =~ ^[0-9]+$ ]] && [ "$epoch" -ge 2 ] ||
  failed "the Java producer's epoch is '$epoch' after its commits: transaction version 2 was not used" "$described"
echo "ok   transaction version 2: kafka-features shows transaction.version finalized at 2; the Java producer's epoch reached $epoch, bumped by its commits"

echo "--- a hanging transaction"
metric() { curl -sf "http://127.0.0.1:$metrics_port/metrics" | awk -v name="$1" '$1 == name { print $2 }'; }
"$tools/kafka-topics" "${bootstrap[@]}" --create --topic hanging --partitions 1 >/dev/null
python3 - "$port" <<'PY'
import os, sys
from confluent_kafka import Producer
producer = Producer({"bootstrap.servers": f"127.0.0.1:{sys.argv[1]}", "transactional.id": "gone",
                     "transaction.timeout.ms": 600000})
producer.init_transactions(30)
producer.begin_transaction()
for i in range(5):
    producer.produce("hanging", value=f"hung-{i}".encode(), partition=0)
producer.flush(30)
os._exit(0)  # gone with its transaction open
PY
python3 -c "
from confluent_kafka import Producer
p = Producer({'bootstrap.servers': '127.0.0.1:$port'})
for i in range(3): p.produce('hanging', value=f'later-{i}'.encode(), partition=0)
p.flush(30)"
[ "$(metric oxbow_transactions_open)" = 1 ] || failed "oxbow_transactions_open is $(metric oxbow_transactions_open), not 1" ""
[ "$(metric oxbow_replication_unstable_partitions)" = 1 ] || failed "oxbow_replication_unstable_partitions is not 1" ""
[ "$(metric oxbow_replication_max_last_stable_offset_lag_messages)" = 8 ] ||
  failed "the last stable offset lag is $(metric oxbow_replication_max_last_stable_offset_lag_messages), not 8" ""
producers="$("$tools/kafka-transactions" "${bootstrap[@]}" describe-producers --topic hanging --partition 0 2>&1)" ||
  failed "kafka-transactions describe-producers" "$producers"
grep -qE "^[0-9]+[[:space:]]+0[[:space:]]+-1[[:space:]]+4[[:space:]]+[0-9]+[[:space:]]+0[[:space:]]" <<<"$producers" ||
  failed "describe-producers does not show the open transaction at offset 0" "$producers"
echo "ok   the hanging transaction: oxbow_transactions_open 1, one unstable partition 8 records behind; describe-producers: last sequence 4, transaction from offset 0"
seen="$("$tools/kafka-console-consumer" "${bootstrap[@]}" --topic hanging --from-beginning \
  --isolation-level read_committed --timeout-ms 3000 2>/dev/null | wc -l)"
[ "$seen" = 0 ] || failed "read_committed read $seen records past an open transaction" ""
aborted="$("$tools/kafka-transactions" "${bootstrap[@]}" abort --topic hanging --partition 0 --start-offset 0 2>&1)" ||
  failed "kafka-transactions abort" "$aborted"
read="$("$tools/kafka-console-consumer" "${bootstrap[@]}" --topic hanging --from-beginning \
  --isolation-level read_committed --max-messages 3 --timeout-ms 30000 2>/dev/null)"
[ "$(grep -c '^later-' <<<"$read")" = 3 ] && ! grep -q '^hung-' <<<"$read" ||
  failed "after kafka-transactions abort, read_committed read: $read" ""
[ "$(metric oxbow_replication_unstable_partitions)" = 0 ] || failed "a partition is still unstable after the abort" ""
echo "ok   kafka-transactions abort wrote the ABORT marker: read_committed reads the 3 later records and none of the 5 aborted"
