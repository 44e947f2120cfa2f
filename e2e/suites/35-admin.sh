#!/usr/bin/env bash
# Admin APIs against a real broker process with real clients:
#  1. confluent-kafka's AdminClient (librdkafka) and kafka-python (DescribeLogDirs,
#     DescribeCluster) — see 35-admin.py: error codes of bad requests, topic configs taking
#     effect on live logs, restart;
#  2. the Java AdminClient through Apache Kafka 4.1's own tools (kafka-topics,
#     kafka-configs, kafka-delete-records, kafka-get-offsets, kafka-features; installed by
#     e2e/setup.d/40-kafka.sh), checked on their printed output.
# Beside others: yes (its own brokers on e2e/lib/ports.py ports, no timing asserted)
# Expected time: 60 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
e2e/lib/build >/dev/null
# A private copy: another build sharing the target directory cannot swap it mid-run.
work="$(mktemp -d "${TMPDIR:-/tmp}/oxbow-admin.XXXXXX")"
binary="$work/oxbow"
cp "$CARGO_TARGET_DIR/debug/oxbow" "$binary"
cleanup() {
  e2e/peers/oxbow/stop --dir "$work/java" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "--- librdkafka and kafka-python"
python3 e2e/suites/35-admin.py "$binary"

echo "--- Java AdminClient (Kafka's tools)"
port="$(e2e/lib/free-port)"
metrics_port="$(e2e/lib/free-port)"
OXBOW_BINARY="$binary" e2e/peers/oxbow/start-single --port "$port" --dir "$work/java" \
  --config auto.create.topics.enable=false --config "metrics.listener=127.0.0.1:$metrics_port" >/dev/null
tools=e2e/peers/kafka/bin
bootstrap=(--bootstrap-server "127.0.0.1:$port")
# expect LABEL PATTERN COMMAND...: the command's output (stdout and stderr) must match.
expect() {
  local label="$1" pattern="$2"; shift 2
  local output
  output="$("$@" 2>&1)" || true
  if grep -qE -- "$pattern" <<<"$output"; then
    echo "ok   $label"
  else
    echo "FAIL $label: expected /$pattern/ in:"; sed 's/^/     /' <<<"$output" | tail -n 15
    tail -n 20 "$work/java/oxbow.log"
    exit 1
  fi
}
expect "create a topic with a config" "Created topic jt" \
  "$tools/kafka-topics" "${bootstrap[@]}" --create --topic jt --partitions 1 --config retention.ms=100000
expect "grow to 3 partitions" "PartitionCount: 3" bash -c \
  "$tools/kafka-topics ${bootstrap[*]} --alter --topic jt --partitions 3 &&
   $tools/kafka-topics ${bootstrap[*]} --describe --topic jt"
# The admin client describes by DescribeTopicPartitions when the broker lists it: one
# partition per answer pages through its cursor (three answers for three partitions, counted
# by the broker's request metric), and every partition comes back once.
dtp_requests() {
  curl -s "http://127.0.0.1:$metrics_port/metrics" |
    awk '$1 == "oxbow_server_requests_total{api=\"DescribeTopicPartitions\"}" { n = $2 } END { print n + 0 }'
}
describe_paged() {
  local before partitions
  before="$(dtp_requests)"
  partitions="$("$tools/kafka-topics" "${bootstrap[@]}" --describe --topic jt \
    --partition-size-limit-per-response 1 | grep -oE 'Partition: [0-9]+' | sort -u | wc -l)"
  echo "partitions=$partitions requests=$(( $(dtp_requests) - before ))"
}
expect "describe pages through DescribeTopicPartitions (one partition per answer)" \
  "^partitions=3 requests=3$" describe_paged
# kafka-configs looks a client-metrics resource up with ListConfigResources (KIP-1142) before
# describing it; Oxbow has none, and says so as Kafka does.
expect "ListConfigResources: an unknown client-metrics resource" \
  "The client-metric 'probe' doesn't exist and doesn't have dynamic config" \
  "$tools/kafka-configs" "${bootstrap[@]}" --describe --entity-type client-metrics --entity-name probe
expect "shrinking is refused" "InvalidPartitionsException" \
  "$tools/kafka-topics" "${bootstrap[@]}" --alter --topic jt --partitions 2
expect "describe the topic's own configs with synonyms" \
  "retention.ms=100000 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:retention.ms=100000\}" \
  "$tools/kafka-configs" "${bootstrap[@]}" --describe --entity-type topics --entity-name jt
expect "add and delete configs" "segment.bytes=100000 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG" bash -c \
  "$tools/kafka-configs ${bootstrap[*]} --alter --entity-type topics --entity-name jt \
     --add-config 'segment.bytes=100000,cleanup.policy=[compact,delete]' --delete-config retention.ms &&
   $tools/kafka-configs ${bootstrap[*]} --describe --all --entity-type topics --entity-name jt"
# Kafka 4.1's words for both (log.retention.ms has no default of its own, so no synonym).
expect "a deleted config falls back to the broker default" \
  "retention.ms=604800000 sensitive=false synonyms=\{\}" \
  "$tools/kafka-configs" "${bootstrap[@]}" --describe --all --entity-type topics --entity-name jt
expect "a negative segment.bytes is refused" "InvalidConfigurationException.*segment.bytes" \
  "$tools/kafka-configs" "${bootstrap[@]}" --alter --entity-type topics --entity-name jt --add-config segment.bytes=-3
expect "an unknown config is refused" "InvalidConfigurationException.*foo.bar" \
  "$tools/kafka-configs" "${bootstrap[@]}" --alter --entity-type topics --entity-name jt --add-config foo.bar=1
expect "describe the broker's configs" "log.dirs=$work/java/data sensitive=false synonyms=\{STATIC_BROKER_CONFIG" \
  "$tools/kafka-configs" "${bootstrap[@]}" --describe --all --entity-type brokers --entity-name 0
expect "static broker configs are refused" "InvalidRequestException: Cannot update these configs dynamically: Set\(node.id\)" \
  "$tools/kafka-configs" "${bootstrap[@]}" --alter --entity-type brokers --entity-name 0 --add-config node.id=5
expect "a dynamic broker config is set and described" "log.retention.ms=1000 sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:log.retention.ms=1000" bash -c \
  "$tools/kafka-configs ${bootstrap[*]} --alter --entity-type brokers --entity-name 0 --add-config log.retention.ms=1000 &&
   $tools/kafka-configs ${bootstrap[*]} --describe --entity-type brokers --entity-name 0"
expect "a cluster-wide default is set and reaches the topics" "retention.ms=1000 sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:log.retention.ms=1000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=2000" bash -c \
  "$tools/kafka-configs ${bootstrap[*]} --alter --entity-type brokers --entity-default --add-config log.retention.ms=2000 &&
   $tools/kafka-configs ${bootstrap[*]} --describe --all --entity-type topics --entity-name jt"
expect "dynamic broker configs are removed" "retention.ms=604800000 sensitive=false synonyms=\{\}" bash -c \
  "$tools/kafka-configs ${bootstrap[*]} --alter --entity-type brokers --entity-name 0 --delete-config log.retention.ms &&
   $tools/kafka-configs ${bootstrap[*]} --alter --entity-type brokers --entity-default --delete-config log.retention.ms &&
   $tools/kafka-configs ${bootstrap[*]} --describe --all --entity-type topics --entity-name jt"
expect "a cordoned broker (KIP-1066) gets no new partition" "InvalidReplicationFactorException" bash -c \
  "$tools/kafka-configs ${bootstrap[*]} --alter --entity-type brokers --entity-name 0 --add-config 'cordoned.log.dirs=*' &&
   $tools/kafka-topics ${bootstrap[*]} --create --topic jc --partitions 1"
expect "only the broker's own log directories can be cordoned" "InvalidRequestException: Invalid value /nope for configuration cordoned.log.dirs: /nope is not one of this broker's log.dirs" \
  "$tools/kafka-configs" "${bootstrap[@]}" --alter --entity-type brokers --entity-name 0 --add-config cordoned.log.dirs=/nope
expect "uncordoned, it takes new partitions again" "Created topic jc" bash -c \
  "$tools/kafka-configs ${bootstrap[*]} --alter --entity-type brokers --entity-name 0 --delete-config cordoned.log.dirs &&
   $tools/kafka-topics ${bootstrap[*]} --create --topic jc --partitions 1"
expect "create a topic for DeleteRecords" "Created topic jd" \
  "$tools/kafka-topics" "${bootstrap[@]}" --create --topic jd --partitions 1
printf 'a\nb\nc\nd\ne\n' | "$tools/kafka-console-producer" "${bootstrap[@]}" --topic jd >/dev/null 2>&1
echo '{"partitions":[{"topic":"jd","partition":0,"offset":3}],"version":1}' >"$work/delete-records.json"
expect "delete records below offset 3" "partition: jd-0	low_watermark: 3" \
  "$tools/kafka-delete-records" "${bootstrap[@]}" --offset-json-file "$work/delete-records.json"
expect "the earliest offset is now 3" "^jd:0:3$" \
  "$tools/kafka-get-offsets" "${bootstrap[@]}" --topic jd --time -2
expect "delete a topic" "^jd$" bash -c \
  "$tools/kafka-topics ${bootstrap[*]} --delete --topic jt && $tools/kafka-topics ${bootstrap[*]} --list"
if "$tools/kafka-topics" "${bootstrap[@]}" --list 2>/dev/null | grep -qx jt; then
  echo "FAIL the deleted topic jt is still listed"; exit 1
fi
# Feature levels (KIP-584) with Kafka's kafka-features: a new cluster starts at the newest
# levels Oxbow runs; changes are finalized in the metadata log, bad ones refused with
# Kafka's reason and nothing changed.
features=("$tools/kafka-features" "${bootstrap[@]}")
expect "features: metadata.version described by Kafka's names" \
  "Feature: metadata.version	SupportedMinVersion: 3.3-IV3	SupportedMaxVersion: 4.0-IV3	FinalizedVersionLevel: 4.0-IV3	Epoch: [0-9]+" \
  "${features[@]}" describe
expect "features: transaction.version and group.version finalized at their newest" \
  "Feature: transaction.version	SupportedMinVersion: 0	SupportedMaxVersion: 2	FinalizedVersionLevel: 2" \
  bash -c "${features[*]} describe | grep -F 'group.version	SupportedMinVersion: 0	SupportedMaxVersion: 1	FinalizedVersionLevel: 1' >/dev/null && ${features[*]} describe"
expect "features: a safe downgrade of transaction.version" "transaction.version was downgraded to 1\." \
  "${features[@]}" downgrade --feature transaction.version=1
expect "features: the downgrade is finalized" "Feature: transaction.version	SupportedMinVersion: 0	SupportedMaxVersion: 2	FinalizedVersionLevel: 1" \
  "${features[@]}" describe
expect "features: upgrade --release-version 4.0 brings every feature to 4.0's levels" \
  "transaction.version was upgraded to 2\." "${features[@]}" upgrade --release-version 4.0
expect "features: a release newer than Oxbow runs is refused" \
  "Could not upgrade metadata.version to 27\. Invalid update version 27 for feature metadata.version\. This controller only supports versions 7-25" \
  "${features[@]}" upgrade --release-version 4.1
expect "features: a feature Oxbow does not run is refused" \
  "Could not upgrade eligible.leader.replicas.version to 1\. Invalid update version 1 for feature eligible.leader.replicas.version\. The controller does not support the given feature" \
  "${features[@]}" upgrade --feature eligible.leader.replicas.version=1
expect "features: a level out of range is refused" \
  "Could not upgrade transaction.version to 7\. Invalid update version 7 for feature transaction.version\. This controller only supports versions 0-2" \
  "${features[@]}" upgrade --feature transaction.version=7
expect "features: a downgrade that would drop metadata is refused" \
  "Could not downgrade metadata.version to 8\..*might delete metadata information" \
  "${features[@]}" downgrade --metadata 3.4-IV0
expect "features: kraft.version cannot go down" \
  "Could not downgrade kraft.version to 0\..*Can't downgrade the version of this feature" \
  "${features[@]}" downgrade --feature kraft.version=0
expect "features: the refusals changed nothing" \
  "Feature: metadata.version	SupportedMinVersion: 3.3-IV3	SupportedMaxVersion: 4.0-IV3	FinalizedVersionLevel: 4.0-IV3" \
  bash -c "${features[*]} describe | grep -F 'transaction.version	SupportedMinVersion: 0	SupportedMaxVersion: 2	FinalizedVersionLevel: 2' >/dev/null &&
           ${features[*]} describe | grep -F 'kraft.version	SupportedMinVersion: 0	SupportedMaxVersion: 1	FinalizedVersionLevel: 1' >/dev/null && ${features[*]} describe"
# The README's Upgrading example, as it shows it (its port pointed at this broker, Kafka's
# tools on PATH as the README says).
readme_block="$(awk '/^## Upgrading/{u=1} u&&/^```sh/{b=1;next} b&&/^```/{exit} b' README.md)"
grep -q "kafka-features.sh" <<<"$readme_block" || { echo "FAIL the README's Upgrading example lost its kafka-features.sh commands"; exit 1; }
expect "the README's kafka-features example runs as written" \
  "transaction.version was downgraded to 1\." \
  env PATH="$PWD/$tools:$PATH" bash -euc "${readme_block//localhost:9092/127.0.0.1:$port}"
echo "all Java AdminClient checks passed"
