#!/usr/bin/env bash
# A rolling upgrade by the operator on the e2e Kubernetes testbed (issue 53; real control
# plane, pod network with CoreDNS, the pod runner running the pods' containers from their
# images; the chart as shipped, this tree's operator):
#   the previous release's images, built by that release's own e2e/images/build from its
#   commit (e2e/lib/build-previous-release --images) -> manifests/cluster.yaml (3 brokers,
#   3 voters, 3 zones) on spec.version = the previous release, with spec.features
#   {metadata.version: 21, group.version: 0} -> Ready, every broker pod runs the previous
#   release's image; the new cluster's levels (it starts at the newest) are brought down to
#   the pins as a safe downgrade (status, FeaturesFinalized condition, kafka-features) ->
#   a Topic with RF 3 and min.insync.replicas 2 -> an idempotent acks=all producer
#   (librdkafka) under load -> spec.version = this release: the brokers roll one at a time
#   behind the roll gate; the API server's watches of the Cluster and its pods show
#   status.brokers[].version changing one broker at a time and never back, never two broker
#   pods down at once, Degraded never True, FeaturesFinalized True throughout (the pinned
#   levels hold while both releases run), Ready False only as Rolling or BrokersNotReady ->
#   Ready, status.version = this release, every broker pod runs this release's image -> no
#   send failed, every acknowledged record read back at its offset, none twice -> the pins
#   removed: metadata.version 25 and group.version 1 finalized in one UpdateFeatures (one
#   more FeaturesFinalized Event occurrence, an Event telling of metadata.version 25, the
#   operator's one request naming both), the
#   condition, status.finalizedFeatures, nothing pending, kafka-features describe from a pod.
# Prints each broker's roll (old pod deleted -> new pod Ready), the whole roll, the records
# acknowledged and the failed sends. Waits are on conditions (kubectl wait, a bounded poll of
# a check, or the watches' record); the figures are printed, never asserted.
# Beside others: yes (its own testbed: control plane on e2e/lib/ports.py ports, its own 10.<k> pod network; no timing asserted)
# Expected time: 90 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
REPO="$PWD"
. e2e/k8s/lib.sh
. e2e/lib/suite.sh
NS=default   # the manifests' namespace
CLUSTER=events
BOOTSTRAP=events-bootstrap.default.svc:9092
FROM="$(grep -v '^#' e2e/upgrade/previous-release | grep -m1 . | cut -d' ' -f1)"
TO="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)"

passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $*"; }
fail() {
  echo "not ok - $*" >&2
  [ -z "${work:-}" ] || touch "$work/stop" "$work/watch.stop"   # the producer and the watches end
  {
    kubectl get clusters,topics,sts,pods -A -o wide
    kubectl -n "$NS" get cluster "$CLUSTER" -o yaml | sed -n '/^status:/,$p'
    kubectl -n "$NS" get events.events.k8s.io --sort-by=.metadata.creationTimestamp | tail -20
    for log in "$OXBOW_K8S_STATE"/pods/*/*.log; do echo "== $log"; tail -n 25 "$log"; done
    tail -n 30 "$OXBOW_K8S_STATE/pod-runner.log"
  } >&2 2>/dev/null || true
  echo "operator-upgrade: $passed passed, 1 failed"
  exit 1
}
k8s_local || suite_skip "the upgrade's clients run in a client pod (k8s_pod_exec with the host's librdkafka and Kafka's tools): OXBOW_K8S_EXTERNAL=1 needs a client image"
[ -n "$FROM" ] && [ -n "$TO" ] && [ "$FROM" != "$TO" ] || fail "releases: from '$FROM' to '$TO'"

# Both releases' images, before the control plane starts (neither build idles it). The
# previous release first: a build of it shares the build directory and leaves its binaries
# in target/release, which this tree's release build (k8s_images) then links again; each
# image is asked which release its binary is.
previous="$(e2e/lib/build-previous-release --images)" || fail "e2e/lib/build-previous-release --images"
k8s_images
REPOSITORY="${K8S_BROKER_IMAGE%:*}"
for version in "$FROM" "$TO"; do
  said="$(podman run --rm --network none "$REPOSITORY:$version" --version)" || fail "$REPOSITORY:$version --version"
  [ "$said" = "oxbow $version" ] || fail "$REPOSITORY:$version says '$said'"
done
ok "images: $REPOSITORY:$FROM (from $previous/src, by its own e2e/images/build) says oxbow $FROM, $REPOSITORY:$TO says oxbow $TO"

k8s_cluster_up
k8s_pod_runner --selector app.kubernetes.io/name=oxbow-operator --namespace "$NS"
k8s_pod_runner --selector app.kubernetes.io/name=oxbow --namespace "$NS"
# The clients' pod: the host's librdkafka (the clients venv) and Kafka's tools in the pod's
# network namespace, so the brokers' advertised DNS names resolve and survive their pods.
k8s_pod_runner --selector app=oxbow-e2e-client --namespace "$NS" --host-processes
kubectl -n "$NS" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: kafka-client, labels: {app: oxbow-e2e-client}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: client, image: python:3-slim, command: [python3, -c, "import time; time.sleep(10**9)"]}
EOF
in_pod() { k8s_pod_exec "$NS" kafka-client "$@"; }
load() { in_pod "$OXBOW_CACHE/clients/venv/bin/python" "$REPO/e2e/operator/upgrade_load.py" "$@"; }
features_describe() { in_pod "$REPO/e2e/peers/kafka/bin/kafka-features" --bootstrap-server "$BOOTSTRAP" describe 2>&1; }
status() { kubectl -n "$NS" get cluster "$CLUSTER" -o jsonpath="$1"; }
cond() { status "{.status.conditions[?(@.type==\"$1\")].$2}"; }
events_of() { # how many times an Event of reason $1 was emitted (a repeated one is a series)
  kubectl -n "$NS" get events.events.k8s.io --field-selector reason="$1" \
    -o jsonpath='{range .items[*]}{.series.count}{"\n"}{end}' | awk '{ n += ($1 == "" ? 1 : $1) } END { print n + 0 }'
}
# pods_on VERSION: every broker pod names that release's image and version label, and ran
# from the image podman holds under that name
pods_on() {
  local version="$1" pod image label
  for pod in $(kubectl -n "$NS" get pods -l "app.kubernetes.io/instance=$CLUSTER" -o name); do
    image="$(kubectl -n "$NS" get "$pod" -o jsonpath='{.spec.containers[?(@.name=="broker")].image}')"
    label="$(kubectl -n "$NS" get "$pod" -o jsonpath='{.metadata.labels.app\.kubernetes\.io/version}')"
    [ "$image" = "$REPOSITORY:$version" ] && [ "$label" = "$version" ] || { echo "$pod: image $image, version label $label"; return 1; }
  done
  k8s_pods_from_images "$NS" "app.kubernetes.io/instance=$CLUSTER"
}
finalized() { status '{.status.finalizedFeatures}'; }
level_is() { # level_is FEATURE LEVEL: status.finalizedFeatures says so
  [ "$(status "{.status.finalizedFeatures.${1//./\\.}}")" = "$2" ]
}

helm install oxbow charts/oxbow --wait --timeout 120s >/dev/null || fail "helm install oxbow charts/oxbow"
ok "helm install oxbow charts/oxbow: operator Available ($K8S_OPERATOR_IMAGE)"

# --- a Cluster on the previous release, its levels pinned --------------------------------
python3 - manifests/cluster.yaml "$FROM" > "$OXBOW_K8S_STATE/cluster.yaml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
doc["spec"]["version"] = sys.argv[2]
# Held where a release that runs no higher could still go back to (Kafka 3.9's levels).
doc["spec"]["features"] = {"metadata.version": 21, "group.version": 0}
print(yaml.safe_dump(doc))
PY
kubectl apply -f "$OXBOW_K8S_STATE/cluster.yaml" >/dev/null || fail "kubectl apply the Cluster on $FROM"
t0=$SECONDS
kubectl -n "$NS" wait --for=condition=Ready "cluster/$CLUSTER" --timeout=300s >/dev/null || fail "Cluster Ready on $FROM"
kubectl -n "$NS" wait --for=condition=Ready pod/kafka-client --timeout=60s >/dev/null || fail "client pod Ready"
from_images="$(pods_on "$FROM")" || fail "broker pods on $FROM: $from_images"
[ "$(status '{.status.version}')" = "$FROM" ] && [ "$(status '{.status.brokers[*].version}')" = "$FROM $FROM $FROM" ] \
  || fail "status: version $(status '{.status.version}'), brokers $(status '{.status.brokers[*].version}')"
ok "Cluster Ready on $FROM after $((SECONDS - t0)) s, status.version $FROM; every broker ran from the $FROM image: $(paste -sd, <<<"$from_images" | sed 's/,/, /g')"

pinned_levels() {
  level_is metadata.version 21 && level_is group.version 0 && [ "$(cond FeaturesFinalized status)" = True ] \
    && case "$(status '{.status.pendingFeatures}')" in ""|"{}") true ;; *) false ;; esac
}
until_true 120 pinned_levels || fail "the pins were not finalized: finalized $(finalized), pending $(status '{.status.pendingFeatures}'), FeaturesFinalized $(cond FeaturesFinalized message)"
described="$(features_describe)" || fail "kafka-features describe: $described"
grep -qP "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.0-IV3\tFinalizedVersionLevel: 3.9-IV0\t" <<<"$described" \
  && grep -qP "Feature: group.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 0\t" <<<"$described" \
  || fail "kafka-features describe on $FROM with the pins: $described"
ok "pins on a new cluster (which starts at the newest levels) finalized as a safe downgrade: status.finalizedFeatures $(finalized); FeaturesFinalized: $(cond FeaturesFinalized message); kafka-features describe: metadata.version 3.9-IV0, group.version 0"

# --- a replicated topic under an idempotent acks=all producer ----------------------------
kubectl -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: oxbow.dev/v1alpha1
kind: Topic
metadata: {name: ledger, namespace: $NS}
spec:
  cluster: $CLUSTER
  partitions: 6
  replicationFactor: 3
  config: {min.insync.replicas: 2}
EOF
kubectl -n "$NS" wait --for=condition=Ready topic/ledger --timeout=120s >/dev/null || fail "Topic ledger Ready"
config="$(in_pod "$REPO/e2e/peers/kafka/bin/kafka-configs" --bootstrap-server "$BOOTSTRAP" --describe --entity-type topics --entity-name ledger 2>&1)" \
  || fail "kafka-configs --describe ledger: $config"
grep -q "min.insync.replicas=2" <<<"$config" || fail "ledger's min.insync.replicas: $config"
ok "Topic ledger Ready: 6 partitions, RF 3, min.insync.replicas=2 in the cluster ($(kubectl -n "$NS" get topic ledger -o jsonpath='{.status.assignment}'))"

work="$OXBOW_K8S_STATE/upgrade"
mkdir -p "$work"
python3 "$REPO/e2e/operator/upgrade_watch.py" record "$NS" "$CLUSTER" "$work/watch" "$work/watch.stop" &
watcher=$!
load produce-until "$BOOTSTRAP" ledger "$work/stop" "$work/acked" >"$work/producer.out" 2>"$work/producer.err" &
producer=$!
acked() { [ "$( { wc -l <"$work/acked"; } 2>/dev/null || echo 0)" -ge "$1" ]; }
until_true 60 acked 200 || fail "the producer got no acknowledgements before the upgrade: $(tail -n 3 "$work/producer.err")"
recorded() { [ -s "$work/watch/cluster.jsonl" ] && [ -s "$work/watch/pods.jsonl" ]; }
until_true 30 recorded || fail "the watches recorded nothing"

# --- spec.version: the roll ----------------------------------------------------------------
rolls_before="$(events_of RollingBroker)"
kubectl -n "$NS" patch cluster "$CLUSTER" --type merge -p "{\"spec\":{\"version\":\"$TO\"}}" >/dev/null
generation="$(kubectl -n "$NS" get cluster "$CLUSTER" -o jsonpath='{.metadata.generation}')"
t_patch=$SECONDS
rolled() {
  [ "$(status '{.status.observedGeneration}')" = "$generation" ] && [ "$(status '{.status.version}')" = "$TO" ] \
    && [ "$(cond Ready status)" = True ] && [ "$(cond Ready observedGeneration)" = "$generation" ]
}
until_true 600 rolled || fail "the roll to $TO did not finish: $(status '{.status.brokers}') $(cond Ready message)"
t_rolled=$SECONDS
to_images="$(pods_on "$TO")" || fail "broker pods after the roll: $to_images"
[ "$(status '{.status.brokers[*].version}')" = "$TO $TO $TO" ] || fail "status.brokers: $(status '{.status.brokers}')"
restarts=$(( $(events_of RollingBroker) - rolls_before ))
[ "$restarts" = 3 ] || fail "$restarts RollingBroker events for 3 brokers"
at_roll="$(wc -l <"$work/acked")"
until_true 60 acked $((at_roll + 100)) || fail "the producer stalled after the roll: $(tail -n 3 "$work/producer.err")"
touch "$work/watch.stop"
wait "$watcher" || fail "the watches failed"
report="$(python3 "$REPO/e2e/operator/upgrade_watch.py" report "$work/watch" "$FROM" "$TO" 2>&1)" || fail "the roll as watched: $report"
field() { # one field of the report: a list comma-joined, a map as "key value s, ..."
  python3 -c '
import json, sys
v = json.loads(sys.argv[1])[sys.argv[2]]
if isinstance(v, dict):
    v = ", ".join("%s %s s" % kv for kv in v.items())
elif isinstance(v, list):
    v = ",".join(map(str, v))
print(v)' "$report" "$1"
}
order="$(field order)"
most_down="$(field most_down)"
ready_reasons="$(field ready_reasons)"
degraded="$(field degraded)"
features="$(field features)"
per_broker="$(field per_broker_s)"
total="$(field total_s)"
[ "$most_down" = 1 ] || fail "$most_down broker pods were down at once during the roll: $report"
[ "$degraded" = False ] || fail "Degraded during the roll: $degraded"
[ "$features" = True ] || fail "FeaturesFinalized during the roll (the pinned levels should hold): $features"
for reason in ${ready_reasons//,/ }; do
  case "$reason" in Ready|Rolling|BrokersNotReady) ;; *) fail "Ready's reason during the roll was $reason: $ready_reasons" ;; esac
done
ok "spec.version $FROM -> $TO rolled one broker at a time (brokers reached $TO in the order $order; status.brokers[].version changed one broker at a time, never back; at most $most_down broker pod down at once); Ready reasons $ready_reasons, Degraded $degraded, FeaturesFinalized $features throughout"
ok "Ready on $TO $((t_rolled - t_patch)) s after the patch, status.version $TO; every broker runs the $TO image: $(paste -sd, <<<"$to_images" | sed 's/,/, /g')"
echo "# roll per broker (old pod deleted -> new pod Ready): $per_broker; first deletion -> last Ready: $total s; patch -> Ready: $((t_rolled - t_patch)) s"

touch "$work/stop"
wait "$producer" || fail "sends failed during the upgrade: $(cat "$work/producer.out") $(tail -n 5 "$work/producer.err")"
summary="$(cat "$work/acked.summary")"
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); sys.exit(s["failed"] != 0 or s["fatal"] != 0 or s["acked"] == 0 or s["acked"] != s["sent"])' \
  "$work/acked.summary" || fail "producer through the upgrade: $summary"
out="$(load read-back "$BOOTSTRAP" ledger "$work/acked")" || fail "read-back after the upgrade: $out"
ok "idempotent acks=all producer through the upgrade: $summary (0 failed sends); $out"
echo "# records acknowledged: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["acked"])' "$work/acked.summary"), failed sends: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["failed"])' "$work/acked.summary")"

# --- the pins removed: the rest finalized ----------------------------------------------
pinned_levels || fail "after the roll the pinned levels moved: finalized $(finalized), FeaturesFinalized $(cond FeaturesFinalized message)"
finalized_before="$(events_of FeaturesFinalized)"
kubectl -n "$NS" patch cluster "$CLUSTER" --type json -p '[{"op":"remove","path":"/spec/features"}]' >/dev/null
generation="$(kubectl -n "$NS" get cluster "$CLUSTER" -o jsonpath='{.metadata.generation}')"
newest_levels() {
  level_is metadata.version 25 && level_is group.version 1 && [ "$(cond FeaturesFinalized status)" = True ] \
    && [ "$(cond FeaturesFinalized observedGeneration)" = "$generation" ] \
    && case "$(status '{.status.pendingFeatures}')" in ""|"{}") true ;; *) false ;; esac
}
until_true 120 newest_levels || fail "the levels were not finalized: finalized $(finalized), pending $(status '{.status.pendingFeatures}'), FeaturesFinalized $(cond FeaturesFinalized message)"
# One successful UpdateFeatures is one FeaturesFinalized occurrence, and its Event tells
# what it finalized (a repeat is counted into an Event only when its note is the same);
# what it asked for is the operator's log line of it too.
[ "$(( $(events_of FeaturesFinalized) - finalized_before ))" = 1 ] || fail "$(( $(events_of FeaturesFinalized) - finalized_before )) FeaturesFinalized occurrences for one change"
notes="$(kubectl -n "$NS" get events.events.k8s.io --field-selector reason=FeaturesFinalized -o jsonpath='{range .items[*]}{.note}{"\n"}{end}')"
grep -q "metadata.version 25" <<<"$notes" || fail "no FeaturesFinalized Event tells of metadata.version 25: $notes"
told="$(sed 's/\x1b\[[0-9;]*m//g' "$OXBOW_K8S_STATE"/pods/"$NS".oxbow-*/operator.log | grep 'Finalized feature levels' | grep -o 'levels=.*')"
[ "$told" = "$(printf 'levels=group.version 0, metadata.version 21\nlevels=group.version 1, metadata.version 25')" ] \
  || fail "the operator's UpdateFeatures requests: $told"
described="$(features_describe)" || fail "kafka-features describe: $described"
grep -qP "Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.0-IV3\tFinalizedVersionLevel: 4.0-IV3\t" <<<"$described" \
  && grep -qP "Feature: group.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\t" <<<"$described" \
  || fail "kafka-features describe after the pins were removed: $described"
[ "$(cond Ready status)" = True ] && [ "$(cond Degraded status)" = False ] || fail "Ready $(cond Ready status), Degraded $(cond Degraded status)"
ok "pins removed: one UpdateFeatures (operator: '$(tail -n 1 <<<"$told")'); status.finalizedFeatures $(finalized), nothing pending; FeaturesFinalized: $(cond FeaturesFinalized message); kafka-features describe: metadata.version 4.0-IV3, group.version 1; Ready, not Degraded"

echo "operator-upgrade: $passed passed"
suite_done
