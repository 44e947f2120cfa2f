#!/usr/bin/env bash
# The operator end to end on the e2e Kubernetes control plane (e2e/k8s: real API server,
# controller manager and scheduler; kwok nodes in three zones; the pod runner, a stand-in
# for the kubelet, runs the pods' containers from the images e2e/images/build makes, with
# podman: the chart as shipped, no image overrides).
#   helm install (2 operator replicas, Lease leader election, RBAC held to the chart) ->
#   Cluster from manifests/cluster.yaml (1 broker until the broker forms clusters) -> Ready ->
#   Topic from manifests/topic.yaml -> produce and consume with a real client (kafka-python)
#   -> change a topic config -> bad CRs refused or Degraded -> scale out (replicas move to the
#   new broker) -> a refused scale-in (an RF=2 topic) -> scale in (drained first, nothing
#   lost) -> a config change rolls the broker -> storage grows (and a shrink is refused) ->
#   many Topics -> delete the Topic ->
#   topic gone -> leader failover -> operator metrics.
# Waits are on conditions (kubectl wait, or a bounded poll of a check).
# Beside others: yes (its own testbed: control plane on e2e/lib/ports.py ports, its own 10.<k> pod network; no timing asserted)
# Expected time: 180 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
REPO="$PWD"
. e2e/k8s/lib.sh
NS=oxbow-op-e2e
SYS=oxbow-system
client() { python3 "$REPO/e2e/operator/kafka_client.py" "$@"; }

. e2e/lib/suite.sh
passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $*"; }
fail() {
  echo "not ok - $*" >&2
  {
    kubectl get clusters,topics,sts,pods,svc,pvc,lease -A -o wide
    kubectl -n "$NS" get cluster events -o yaml | sed -n '/^status:/,$p'
    kubectl -n "$NS" get topics -o yaml | grep -A30 '^  status:'
    kubectl -n "$NS" get events.events.k8s.io --sort-by=.metadata.creationTimestamp | tail -20
    for log in "$OXBOW_K8S_STATE"/pods/*/*.log; do echo "== $log"; tail -n 25 "$log"; done
    tail -n 20 "$OXBOW_K8S_STATE/pod-runner.log"
  } >&2 2>/dev/null || true
  echo "operator-k8s: $passed passed, 1 failed"
  exit 1
}

k8s_images
k8s_cluster_up
k8s_namespace "$SYS"
k8s_namespace "$NS"
k8s_pod_runner --selector app.kubernetes.io/name=oxbow-operator --namespace "$SYS"
k8s_pod_runner --selector app.kubernetes.io/name=oxbow --namespace "$NS"

# --- install -------------------------------------------------------------------------
helm install oxbow charts/oxbow --namespace "$SYS" --set operator.replicas=2 --wait --timeout 120s >/dev/null \
  || fail "helm install"
kubectl wait --for=condition=Established crd/clusters.oxbow.dev crd/topics.oxbow.dev --timeout=60s >/dev/null
ok "helm install: CRDs established, operator Deployment available with 2 replicas"

holder() { kubectl -n "$SYS" get lease oxbow-operator -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
has_holder() { [ -n "$(holder)" ]; }
until_true 60 has_holder || fail "no operator took the leader Lease"
leader="$(holder)"
ok "leader election: $leader holds Lease $SYS/oxbow-operator"

# --- Cluster -------------------------------------------------------------------------
rack=true
if k8s_local && ! grep -q initContainers e2e/k8s/pod-runner; then
  rack=false   # the pod runner does not run init containers (rack-init) yet
fi
python3 - manifests/cluster.yaml "$NS" "$rack" > "$OXBOW_K8S_STATE/cluster.yaml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1])); spec = doc["spec"]
doc["metadata"]["namespace"] = sys.argv[2]
# One broker (the 3-broker example is 73-operator-example). PodIP: this suite's clients run on
# the host, which routes to pod IPs but does not resolve cluster DNS names.
spec.update(replicas=1, controllerVoters=1)
spec["listeners"] = {"advertise": "PodIP"}
spec["storage"]["size"] = "1Gi"
spec.pop("resources", None)
spec["config"].update({"default.replication.factor": 1, "min.insync.replicas": 1})
spec["rack"]["enabled"] = sys.argv[3] == "true"
print(yaml.safe_dump(doc))
PY
kubectl apply -f "$OXBOW_K8S_STATE/cluster.yaml" >/dev/null
t0=$SECONDS
kubectl -n "$NS" wait --for=condition=Ready cluster/events --timeout=180s >/dev/null || fail "Cluster Ready"
for object in statefulset/events configmap/events service/events-headless service/events-bootstrap \
              poddisruptionbudget/events serviceaccount/events-broker; do
  owner="$(kubectl -n "$NS" get "$object" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')"
  [ "$owner" = "Cluster/events" ] || fail "$object owned by $owner"
done
[ "$(kubectl -n "$NS" get sts events -o jsonpath='{.spec.podManagementPolicy}/{.spec.updateStrategy.type}')" = "Parallel/OnDelete" ] \
  || fail "StatefulSet policy"
ok "Cluster Ready after $((SECONDS - t0)) s: StatefulSet (Parallel, OnDelete), ConfigMap, Services, PDB, ServiceAccount owned by the Cluster"

pod_ip="$(kubectl -n "$NS" get pod events-0 -o jsonpath='{.status.podIP}')"
bootstrap="$pod_ip:9092"
node_zone="$(kubectl get node "$(kubectl -n "$NS" get pod events-0 -o jsonpath='{.spec.nodeName}')" \
  -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}')"
status_rack="$(kubectl -n "$NS" get cluster events -o jsonpath='{.status.brokers[0].rack}')"
[ "$status_rack" = "$node_zone" ] || fail "status rack $status_rack, node zone $node_zone"
ok "status: broker 0 on a node in $node_zone, bootstrap $(kubectl -n "$NS" get cluster events -o jsonpath='{.status.bootstrap}')"
[ "$rack" = true ] || suite_skip_check "rack-init as an init container: the pod runner does not run init containers"

# rack-init with the broker ServiceAccount of a rack-aware Cluster, in a namespace without a
# pod runner (its pods are scheduled, their processes never start): the operator's
# ClusterRoleBinding must let exactly that token read the node.
RACK_NS=oxbow-op-rack
k8s_namespace "$RACK_NS"
python3 - "$OXBOW_K8S_STATE/cluster.yaml" "$RACK_NS" > "$OXBOW_K8S_STATE/racked.yaml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1])); doc["metadata"]["namespace"] = sys.argv[2]
doc["spec"]["rack"]["enabled"] = True
print(yaml.safe_dump(doc))
PY
kubectl apply -f "$OXBOW_K8S_STATE/racked.yaml" >/dev/null
scheduled() { [ -n "$(kubectl -n "$RACK_NS" get pod events-0 -o jsonpath='{.spec.nodeName}' 2>/dev/null)" ]; }
until_true 120 scheduled || fail "rack-aware Cluster: events-0 not scheduled"
kubectl -n "$RACK_NS" get sts events -o jsonpath='{.spec.template.spec.initContainers[0].args}' | grep -q rack-init \
  || fail "no rack-init init container"
kubectl get clusterrolebinding "oxbow-rack-$RACK_NS-events" >/dev/null || fail "no rack ClusterRoleBinding"
rack_node="$(kubectl -n "$RACK_NS" get pod events-0 -o jsonpath='{.spec.nodeName}')"
rack_zone="$(kubectl get node "$rack_node" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}')"
cp "$KUBECONFIG" "$OXBOW_K8S_STATE/rack-kubeconfig"
mkdir -p "$OXBOW_K8S_STATE/rack" && chown 65532 "$OXBOW_K8S_STATE/rack"   # the emptyDir it writes
( export KUBECONFIG="$OXBOW_K8S_STATE/rack-kubeconfig"
  kubectl config set-credentials rack-init --token="$(kubectl -n "$RACK_NS" create token events-broker)" >/dev/null
  kubectl config set-context --current --user=rack-init >/dev/null
  # CA and token inline, readable by the image's user
  kubectl config view --raw --flatten --minify >"$OXBOW_K8S_STATE/rack-kubeconfig.flat"
  chmod 0644 "$OXBOW_K8S_STATE/rack-kubeconfig.flat"
  podman run --rm --network host --read-only --user 65532 --cap-drop ALL \
    -v "$OXBOW_K8S_STATE/rack-kubeconfig.flat:/kubeconfig:ro" -e KUBECONFIG=/kubeconfig \
    -v "$OXBOW_K8S_STATE/rack:/var/run/oxbow" "$K8S_OPERATOR_IMAGE" \
    rack-init --node "$rack_node" --out /var/run/oxbow/rack.yaml >/dev/null 2>&1
  ! kubectl get nodes >/dev/null 2>&1 ) || fail "rack-init with the broker token (or the token may list nodes)"
grep -qx "broker.rack: \"$rack_zone\"" "$OXBOW_K8S_STATE/rack/rack.yaml" || fail "rack file: $(cat "$OXBOW_K8S_STATE/rack/rack.yaml")"
ok "rack-init with the broker ServiceAccount token wrote broker.rack: $rack_zone for node $rack_node (and the token cannot list nodes)"
kubectl -n "$RACK_NS" delete cluster events --wait=true --timeout=60s >/dev/null || fail "deleting the rack-aware Cluster"
gone_binding() { ! kubectl get clusterrolebinding "oxbow-rack-$RACK_NS-events" >/dev/null 2>&1; }
until_true 60 gone_binding || fail "the Cluster finalizer left the rack ClusterRoleBinding"
ok "deleting a Cluster removes its cluster-scoped rack binding (finalizer)"

listening() { python3 -c "import socket,sys; socket.create_connection(('$pod_ip', 9092), timeout=1)" 2>/dev/null; }
until_true 60 listening || fail "the broker does not listen on $bootstrap"
ok "the broker listens on $bootstrap"
if k8s_local; then
  # The containers ran from the chart's images (podman's ids), as the chart's securityContext
  # and the StatefulSet's ask: uid 65532, no capabilities, read-only root.
  [ "$(kubectl -n "$NS" get pod events-0 -o jsonpath='{.spec.containers[0].image}')" = "$K8S_BROKER_IMAGE" ] \
    || fail "events-0 does not name $K8S_BROKER_IMAGE"
  brokers="$(k8s_pods_from_images "$NS" app.kubernetes.io/name=oxbow)" || fail "broker pods from images: $brokers"
  operators="$(k8s_pods_from_images "$SYS" app.kubernetes.io/name=oxbow-operator)" || fail "operator pods from images: $operators"
  pid="$(cat "$OXBOW_K8S_STATE"/pods/"$NS".events-0.*/broker.log.pid)"
  grep -q "^Uid:[[:space:]]*65532[[:space:]]" "/proc/$pid/status" && grep -q "^CapEff:[[:space:]]*0*$" "/proc/$pid/status" \
    || fail "broker process $pid: $(grep -E '^(Uid|CapEff)' "/proc/$pid/status" | tr '\n' ' ')"
  awk '$5 == "/" { split($6, o, ","); if (o[1] == "ro") found = 1 } END { exit !found }' "/proc/$pid/mountinfo" \
    || fail "broker process $pid: its root is not mounted read-only"
  ok "from images: $(printf '%s\n%s\n' "$brokers" "$operators" | paste -sd, | sed 's/,/, /g'); the broker runs as uid 65532 with no capabilities on a read-only root"

  # An image the testbed does not hold: the pod waits as on a node that cannot pull it, and
  # nothing runs (no fallback to a host binary).
  kubectl -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: absent-image, labels: {app.kubernetes.io/name: oxbow}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: broker, image: "${K8S_BROKER_IMAGE%:*}:0.0.0-absent", command: [oxbow]}
EOF
  waiting() { [ "$(kubectl -n "$NS" get pod absent-image -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')" = ImagePullBackOff ]; }
  until_true 60 waiting || fail "a pod with an absent image: $(kubectl -n "$NS" get pod absent-image -o jsonpath='{.status}')"
  [ -z "$(podman ps -a -q --filter "label=dev.oxbow.k8s.pod=$NS/absent-image")" ] || fail "a container runs for absent-image"
  [ "$(kubectl -n "$NS" get pod absent-image -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = False ] \
    || fail "absent-image is Ready"
  ok "a pod whose image the testbed does not hold waits in ImagePullBackOff, nothing started"
  kubectl -n "$NS" delete pod absent-image --wait=false >/dev/null
fi
if [ "$rack" = true ] && k8s_local; then
  rack_file="$(ls "$OXBOW_K8S_STATE"/pods/"$NS".events-0.*/volumes/rack/rack.yaml 2>/dev/null | head -n 1)"
  grep -qx "broker.rack: \"$node_zone\"" "$rack_file" 2>/dev/null || fail "rack-init of events-0 wrote: $(cat "$rack_file" 2>&1)"
  ok "the rack-init init container gave broker 0 broker.rack: $node_zone (its node's zone)"
fi

# --- Topic ---------------------------------------------------------------------------
python3 - manifests/topic.yaml "$NS" > "$OXBOW_K8S_STATE/topic.yaml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
doc["metadata"]["namespace"] = sys.argv[2]
doc["spec"]["replicationFactor"] = 1
print(yaml.safe_dump(doc))
PY
kubectl apply -f "$OXBOW_K8S_STATE/topic.yaml" >/dev/null
t0=$SECONDS
kubectl -n "$NS" wait --for=condition=Ready topic/orders --timeout=120s >/dev/null || fail "Topic Ready"
client "$bootstrap" topics | grep -qx orders || fail "topic orders missing from the cluster"
[ "$(kubectl -n "$NS" get topic orders -o jsonpath='{.status.partitions}')" = 6 ] || fail "status partitions"
ok "Topic Ready after $((SECONDS - t0)) s: orders exists in the cluster with 6 partitions ($(kubectl -n "$NS" get topic orders -o jsonpath='{.status.assignment}'))"

out="$(client "$bootstrap" produce-consume orders 200)" || fail "produce/consume: $out"
ok "kafka-python through the bootstrap: $out"

# --- change a topic config -----------------------------------------------------------
kubectl -n "$NS" patch topic orders --type merge -p '{"spec":{"config":{"retention.ms":3600000}}}' >/dev/null
generation="$(kubectl -n "$NS" get topic orders -o jsonpath='{.metadata.generation}')"
observed() { [ "$(kubectl -n "$NS" get topic orders -o jsonpath='{.status.observedGeneration}')" = "$generation" ]; }
until_true 60 observed || fail "the operator did not observe generation $generation"
client "$bootstrap" supports 44 || fail "the broker does not list IncrementalAlterConfigs (API 44) in ApiVersions"
kubectl -n "$NS" wait --for=condition=Ready topic/orders --timeout=60s >/dev/null || fail "Topic Ready after config change"
client "$bootstrap" config orders retention.ms | grep -q 3600000 || fail "retention.ms not changed in the cluster"
ok "topic config change applied: retention.ms=3600000 in the cluster"

# --- bad custom resources ------------------------------------------------------------
expect_refused() {  # expect_refused PATTERN KUBECTL-ARGS...
  local pattern="$1"; shift
  local out
  out="$(kubectl "$@" 2>&1)" && fail "accepted: kubectl $*"
  case "$out" in *$pattern*) ;; *) fail "refusal of kubectl $* does not mention '$pattern': $out" ;; esac
}
expect_refused "spec.replicas" -n "$NS" patch cluster events --type merge -p '{"spec":{"replicas":-1}}'
expect_refused "partitions can only grow" -n "$NS" patch topic orders --type merge -p '{"spec":{"partitions":2}}'
expect_refused "managed by the operator" -n "$NS" patch cluster events --type merge -p '{"spec":{"config":{"node.id":7}}}'
expect_refused "controllerVoters must be 1, 3 or 5" -n "$NS" patch cluster events --type merge -p '{"spec":{"controllerVoters":2}}'
expect_refused "controllerVoters must be 1, 3 or 5" -n "$NS" patch cluster events --type merge -p '{"spec":{"controllerVoters":4}}'
expect_refused "replicas must be at least controllerVoters" -n "$NS" patch cluster events --type merge -p '{"spec":{"controllerVoters":3}}'
ok "the API server refuses negative replicas, fewer partitions, managed config keys, an even voter count or more voters than brokers"
kubectl -n "$NS" patch cluster events --type merge -p '{"spec":{"config":{"log.retention.hourz":1}}}' >/dev/null
degraded_invalid() { [ "$(kubectl -n "$NS" get cluster events -o jsonpath='{.status.conditions[?(@.type=="Degraded")].reason}')" = InvalidConfig ]; }
until_true 60 degraded_invalid || fail "unknown config key did not give Degraded/InvalidConfig"
kubectl -n "$NS" patch cluster events --type json -p '[{"op":"remove","path":"/spec/config/log.retention.hourz"}]' >/dev/null
kubectl -n "$NS" wait --for=condition=Ready cluster/events --timeout=60s >/dev/null || fail "Ready again after fixing the spec"
ok "an unknown broker config key gives Degraded/InvalidConfig; fixing the spec makes the Cluster Ready again"

# --- scale ---------------------------------------------------------------------------
# orders: 6 partitions, one replica each, all on broker 0. Scaling out moves half of them to
# the new broker; scaling in moves them back before its pod goes; an RF=2 topic refuses a
# scale-in to one broker until it is gone. Records written first are all read back last.
example() { python3 "$REPO/e2e/operator/example_client.py" "$@"; }
replicas_on() {  # replicas_on BROKER TOPIC: how many of TOPIC's replicas BROKER holds
  example metadata "$bootstrap" | python3 -c '
import json, sys
topic = json.load(sys.stdin)["topics"].get(sys.argv[2], {"partitions": []})
print(sum(p["replicas"].count(int(sys.argv[1])) for p in topic["partitions"]))' "$1" "$2"
}
seq 1 300 | sed 's/^/before-scale-/' | kcat -P -b "$bootstrap" -t orders -X acks=all 2>/dev/null \
  || fail "producing the records to keep across the scale"
# Sustained load through every move below: an acks=all producer with retries, one send in flight
# (every acknowledged value recorded) and a consumer group member following the topic.
kubectl -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: oxbow.dev/v1alpha1
kind: Topic
metadata: {name: load, namespace: $NS}
spec: {cluster: events, partitions: 2, replicationFactor: 1}
EOF
kubectl -n "$NS" wait --for=condition=Ready topic/load --timeout=120s >/dev/null || fail "Topic load Ready"
load="$OXBOW_K8S_STATE/load"; rm -rf "$load"; mkdir -p "$load"
example produce-until "$bootstrap" load "$load/stop" "$load/acked" 2>"$load/producer.log" & load_producer=$!
example consume-follow "$bootstrap" load load-followers "$load/stop" 2>"$load/consumer.log" & load_consumer=$!
t_load=$SECONDS
# 12 MB more, and moves throttled to 1 MiB/s per broker: the balance copies for seconds, and
# the operator leader is SIGKILLed while it does. The next leader must finish the scale
# without a second plan (one Balancing Event) and end it once (one Balanced Event).
head -c 12000000 /dev/urandom | base64 -w 1000 | kcat -P -b "$bootstrap" -t orders -X acks=all 2>/dev/null \
  || fail "producing the bulk to move"
kubectl -n "$NS" patch cluster events --type merge -p '{"spec":{"moveThrottleBytesPerSecond":1048576}}' >/dev/null
kubectl -n "$NS" scale cluster/events --replicas=2 >/dev/null
sts_replicas() { [ "$(kubectl -n "$NS" get sts events -o jsonpath='{.spec.replicas}')" = "$1" ]; }
until_true 60 sts_replicas 2 || fail "kubectl scale did not reach the StatefulSet"
kubectl -n "$NS" get configmap events -o jsonpath='{.data.events-1\.yaml}' | grep -q 'node.id: 1' || fail "no config for broker 1"
events_of() { # how many times an Event of reason $1 was emitted (a repeated one is a series)
  kubectl -n "$NS" get events.events.k8s.io --field-selector reason="$1" \
    -o jsonpath='{range .items[*]}{.series.count}{"\n"}{end}' | awk '{ n += ($1 == "" ? 1 : $1) } END { print n + 0 }'
}
balancing() { [ "$(events_of Balancing)" -ge 1 ]; }
until_true 180 balancing || fail "no Balancing event: $(kubectl -n "$NS" get cluster events -o jsonpath='{.status.scaling}')"
phase_at_kill="$(kubectl -n "$NS" get cluster events -o jsonpath='{.status.scaling.phase}')"
kill_leader() { # SIGKILLs the operator holding the Lease; sets victim
  victim="$(holder)"
  if k8s_local; then
    kill -KILL "$(cat "$(ls "$OXBOW_K8S_STATE"/pods/"$SYS"."$victim".*/operator.log.pid | head -n 1)")" \
      || fail "SIGKILL of operator $victim"
  else
    kubectl -n "$SYS" delete pod "$victim" --grace-period=0 --force >/dev/null 2>&1 || fail "killing operator $victim"
  fi
}
kill_leader
t_kill=$SECONDS
# The Balanced event ends the scale (Ready alone may still be the one from before it).
balanced() { [ "$(events_of Balanced)" -ge 1 ]; }
until_true 240 balanced || fail "no Balanced event after the operator was killed: $(kubectl -n "$NS" get cluster events -o jsonpath='{.status.scaling}')"
[ "$(events_of Balancing)" = 1 ] || fail "the balance was planned $(events_of Balancing) times: a finished move was asked for again"
[ "$(events_of Balanced)" = 1 ] || fail "$(events_of Balanced) Balanced events"
for reason in Balancing Balanced; do
  series="$(kubectl -n "$NS" get events.events.k8s.io --field-selector reason=$reason -o jsonpath='{.items[0].series.count}')"
  [ -z "$series" ] || [ "$series" = 1 ] || fail "the $reason event repeated $series times"
done
[ -z "$(kubectl -n "$NS" get cluster events -o jsonpath='{.status.scaling}')" ] \
  || fail "status.scaling stays after the scale: $(kubectl -n "$NS" get cluster events -o jsonpath='{.status.scaling}')"
ok "operator leader $victim SIGKILLed during the balance (phase $phase_at_kill, moves throttled to 1 MiB/s); $(holder) finished it $((SECONDS - t_kill)) s later with no second plan: one Balancing and one Balanced event"
kubectl -n "$NS" wait --for=condition=Ready cluster/events --timeout=60s >/dev/null || fail "Ready with 2 brokers"
on1="$(replicas_on 1 orders)"
[ "$on1" = 3 ] || fail "after scaling out to 2 brokers, broker 1 holds $on1 of orders' 6 replicas, not 3"
ok "kubectl scale cluster/events --replicas=2: the new broker got 3 of orders' 6 replicas, in one reassignment; Balanced event"

# A Topic's replication factor: above the broker count is a condition, not a half-done
# move; 1 -> 2 and back are throttled reassignments the Topic reports until they are done.
kubectl -n "$NS" patch topic orders --type merge -p '{"spec":{"replicationFactor":3}}' >/dev/null
too_large() { [ "$(kubectl -n "$NS" get topic orders -o jsonpath='{.status.conditions[?(@.type=="Degraded")].reason}')" = ReplicationFactorTooLarge ]; }
until_true 60 too_large || fail "RF 3 on 2 brokers did not give Degraded/ReplicationFactorTooLarge"
[ "$(( $(replicas_on 0 orders) + $(replicas_on 1 orders) ))" = 6 ] || fail "an impossible RF change moved replicas"
kubectl -n "$NS" patch topic orders --type merge -p '{"spec":{"replicationFactor":2}}' >/dev/null
rf_is() { [ "$(kubectl -n "$NS" get topic orders -o jsonpath='{.status.replicationFactor}')" = "$1" ] \
  && [ "$(kubectl -n "$NS" get topic orders -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
t0=$SECONDS
until_true 120 rf_is 2 || fail "orders did not reach RF 2: $(kubectl -n "$NS" get topic orders -o jsonpath='{.status.conditions}')"
[ "$(replicas_on 0 orders)" = 6 ] && [ "$(replicas_on 1 orders)" = 6 ] || fail "RF 2 on 2 brokers: not every partition on both"
kubectl -n "$NS" get events.events.k8s.io --field-selector reason=ReplicationFactorChanging -o name | grep -q . \
  || fail "no ReplicationFactorChanging event"
throttles="$(client "$bootstrap" config orders leader.replication.throttled.replicas)"
! echo "$throttles" | grep -qE "'[0-9]+:[0-9]+[,']" || fail "the move's throttle is still on orders: $throttles"
ok "Topic RF 3 on 2 brokers: Degraded/ReplicationFactorTooLarge, nothing moved; RF 1 -> 2 in $((SECONDS - t0)) s by a throttled reassignment (every partition on both brokers, throttles removed after)"
kubectl -n "$NS" patch topic orders --type merge -p '{"spec":{"replicationFactor":1}}' >/dev/null
until_true 120 rf_is 1 || fail "orders did not go back to RF 1"
[ "$(replicas_on 1 orders)" = 3 ] || fail "RF 2 -> 1 did not keep each partition's preferred leader: broker 1 holds $(replicas_on 1 orders)"
ok "Topic RF 2 -> 1: each partition kept its preferred replica (3 of 6 on each broker)"

kubectl -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: oxbow.dev/v1alpha1
kind: Topic
metadata: {name: pinned, namespace: $NS}
spec: {cluster: events, partitions: 1, replicationFactor: 2}
EOF
kubectl -n "$NS" wait --for=condition=Ready topic/pinned --timeout=120s >/dev/null || fail "Topic pinned (RF 2) Ready"
kubectl -n "$NS" scale cluster/events --replicas=1 >/dev/null
refused() { [ "$(kubectl -n "$NS" get cluster events -o jsonpath='{.status.conditions[?(@.type=="Degraded")].reason}')" = ScaleInRefused ]; }
until_true 60 refused || fail "a scale-in below pinned's replication factor was not refused"
message="$(kubectl -n "$NS" get cluster events -o jsonpath='{.status.scaling.message}')"
case "$message" in *"pinned-0 has 2 replicas"*) ;; *) fail "refusal message: $message" ;; esac
sts_replicas 2 || fail "a refused scale-in shrank the StatefulSet"
[ "$(replicas_on 1 orders)" = 3 ] || fail "a refused scale-in moved replicas"
ok "scale to 1 with an RF=2 topic: refused (Degraded/ScaleInRefused: $message); StatefulSet and replicas untouched"

uncordoned="$(client "$bootstrap" broker-config 1 cordoned.log.dirs)" || fail "describing broker 1's configs: $uncordoned"
! grep -q "'\*'" <<<"$uncordoned" || fail "a refused scale-in cordoned broker 1: $uncordoned"
# Broker 1 is cordoned for as long as it drains (seconds at 1 MiB/s): a client asks it five
# times a second from before the drain can start, so a drain quicker than a client's start-up
# is still seen.
client "$bootstrap" await-broker-config 1 cordoned.log.dirs '*' 150 >"$OXBOW_K8S_STATE/cordon" 2>&1 &
cordon_watch=$!
kubectl -n "$NS" delete topic pinned --timeout=60s >/dev/null || fail "deleting Topic pinned"
# The drain copies broker 1's share of orders at 1 MiB/s; broker 1 is cordoned throughout (a
# topic created meanwhile lands on broker 0), and the operator leader is SIGKILLed mid-drain:
# the next leader finishes it with no second plan.
draining() { [ "$(events_of Draining)" -ge 1 ]; }
until_true 120 draining || fail "no Draining event once pinned was gone: $(kubectl -n "$NS" get cluster events -o jsonpath='{.status.scaling}')"
wait "$cordon_watch" || fail "broker 1 was not seen cordoned while it drained: $(cat "$OXBOW_K8S_STATE/cordon")"
phase_at_kill="$(kubectl -n "$NS" get cluster events -o jsonpath='{.status.scaling.phase}')"
kill_leader
t_kill=$SECONDS
until_true 180 sts_replicas 1 || fail "the scale-in did not go on once pinned was gone: $(kubectl -n "$NS" get cluster events -o jsonpath='{.status.scaling}')"
[ "$(replicas_on 1 orders)" = 0 ] || fail "the StatefulSet shrank while broker 1 held replicas"
kubectl -n "$NS" wait --for=delete pod/events-1 --timeout=120s >/dev/null || fail "events-1 not removed"
kubectl -n "$NS" wait --for=condition=Ready cluster/events --timeout=120s >/dev/null || fail "Ready with 1 broker"
scaled_in() { kubectl -n "$NS" get events.events.k8s.io --field-selector reason=ScaledIn -o name | grep -q .; }
until_true 60 scaled_in || fail "no ScaledIn event"
for reason in Draining Drained ScaledIn; do
  [ "$(events_of $reason)" = 1 ] || fail "$(events_of $reason) $reason events: the drain was planned or ended more than once"
done
ok "operator leader $victim SIGKILLed mid-drain (phase $phase_at_kill, broker 1 cordoned: cordoned.log.dirs=*); $(holder) finished it $((SECONDS - t_kill)) s later: one Draining, one Drained, one ScaledIn event"
got="$(kcat -C -b "$bootstrap" -t orders -o beginning -e -q 2>/dev/null | grep -c '^before-scale-')" || true
[ "$got" = 300 ] || fail "after scaling out and in, $got of the 300 records written before are left"
ok "then the scale-in drained broker 1 before its pod went (orders all on broker 0) and unregistered it (ScaledIn); all 300 records written before the scale read back"
touch "$load/stop"
wait "$load_producer" || fail "the producer under load had sends that failed for good: $(tail -n 5 "$load/producer.log")"
wait "$load_consumer" || fail "the following consumer failed: $(tail -n 5 "$load/consumer.log")"
out="$(example consume-all "$bootstrap" load "$load/acked")" || fail "records acknowledged under load are missing: $out"
produced="$(cat "$load/acked.summary")"; stall="$(cat "$load/stop.stall")"
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); sys.exit(s["failed"] != 0 or s["acked"] == 0)' "$load/acked.summary" \
  || fail "under load: $produced"
ok "under load for $((SECONDS - t_load)) s (scale-out with an operator kill, RF 1->2->1, a refused and a done scale-in): producer $produced; consumer group $stall; $out"

# --- config change rolls the broker ---------------------------------------------------
uid_before="$(kubectl -n "$NS" get pod events-0 -o jsonpath='{.metadata.uid}')"
rolls_before="$(events_of RollingBroker)"
kubectl -n "$NS" patch cluster events --type merge -p '{"spec":{"config":{"num.partitions":4}}}' >/dev/null
# The operator leader is SIGKILLed as soon as the roll starts; the next one must not restart
# the broker a second time.
rolling() { [ "$(events_of RollingBroker)" -gt "$rolls_before" ]; }
until_true 120 rolling || fail "no RollingBroker event after a config change"
kill_leader
t_kill_epoch="$(date +%s)"
replaced() { local uid; uid="$(kubectl -n "$NS" get pod events-0 -o jsonpath='{.metadata.uid}' 2>/dev/null)"; [ -n "$uid" ] && [ "$uid" != "$uid_before" ]; }
t0=$SECONDS
until_true 120 replaced || fail "the operator did not restart events-0 after a config change"
kubectl -n "$NS" wait --for=condition=Ready cluster/events --timeout=120s >/dev/null || fail "Ready after the roll"
revision="$(kubectl -n "$NS" get sts events -o jsonpath='{.status.updateRevision}')"
[ "$(kubectl -n "$NS" get pod events-0 -o jsonpath='{.metadata.labels.controller-revision-hash}')" = "$revision" ] \
  || fail "events-0 not on revision $revision"
# Long enough for the next leader (the other replica, or the killed one's restarted process,
# which holds the same identity) to have renewed the Lease and looked at the roll.
renewed() {
  local at; at="$(kubectl -n "$SYS" get lease oxbow-operator -o jsonpath='{.spec.renewTime}')"
  [ -n "$at" ] && [ "$(date -d "$at" +%s)" -gt $((t_kill_epoch + 1)) ]
}
until_true 90 renewed || fail "no operator renewed the Lease after $victim was killed mid-roll"
sleep 15   # two of the next leader's busy requeues: a second restart would show here
[ "$(events_of RollingBroker)" = $((rolls_before + 1)) ] || fail "$(events_of RollingBroker) RollingBroker events ($rolls_before before): the broker was restarted again"
uid_after="$(kubectl -n "$NS" get pod events-0 -o jsonpath='{.metadata.uid}')"
kubectl -n "$NS" wait --for=condition=Ready cluster/events --timeout=120s >/dev/null || fail "Ready after the roll"
pod_ip="$(kubectl -n "$NS" get pod events-0 -o jsonpath='{.status.podIP}')"; bootstrap="$pod_ip:9092"
until_true 60 listening || fail "the restarted broker does not listen on $bootstrap"
[ "$(kubectl -n "$NS" get pod events-0 -o jsonpath='{.metadata.uid}')" = "$uid_after" ] || fail "events-0 restarted twice"
ok "a broker config change rolled events-0 (OnDelete, one at a time) onto revision $revision in $((SECONDS - t0)) s; operator $victim SIGKILLed mid-roll, $(holder) did not restart it again (one RollingBroker event)"

# --- storage grows --------------------------------------------------------------------
# spec.storage.size grows the claims in place (the StatefulSet's claim template cannot change);
# the testbed's StorageClass allows expansion and its volume stand-in grows the volume.
uid_before="$(kubectl -n "$NS" get pod events-0 -o jsonpath='{.metadata.uid}')"
claim_size() { kubectl -n "$NS" get pvc data-events-0 -o jsonpath="{.$1.${2}.storage}"; }
sized() { # sized STATUS REASON: the StorageResized condition
  [ "$(kubectl -n "$NS" get cluster events -o jsonpath='{.status.conditions[?(@.type=="StorageResized")].status}/{.status.conditions[?(@.type=="StorageResized")].reason}')" = "$1/$2" ]
}
kubectl -n "$NS" patch cluster events --type merge -p '{"spec":{"storage":{"size":"2Gi"}}}' >/dev/null
t0=$SECONDS
at_2gi() { [ "$(claim_size status capacity)" = 2Gi ] && sized True AtSize; }
until_true 90 at_2gi || fail "claim data-events-0 not expanded to 2Gi (request $(claim_size spec resources.requests), capacity $(claim_size status capacity))"
[ "$(kubectl -n "$NS" get sts events -o jsonpath='{.spec.volumeClaimTemplates[0].spec.resources.requests.storage}')" = 1Gi ] \
  || fail "the StatefulSet's claim template changed"
[ "$(kubectl -n "$NS" get pod events-0 -o jsonpath='{.metadata.uid}')" = "$uid_before" ] || fail "growing storage restarted events-0"
ok "storage 1Gi -> 2Gi: claim data-events-0 expanded in place in $((SECONDS - t0)) s (StorageResized True), no broker restarted"
out="$(kubectl -n "$NS" patch cluster events --type merge -p '{"spec":{"storage":{"size":"1Gi"}}}' 2>&1)" \
  && fail "a smaller storage.size was accepted"
grep -q "can only grow" <<<"$out" || fail "shrink refused without the reason: $out"
ok "a smaller storage.size is refused by the CRD: $(grep -o 'storage.size can only grow[^"]*' <<<"$out" | head -n 1)"
if k8s_local; then
  # The testbed's own class: a class that does not allow expansion is named in the condition.
  kubectl patch storageclass oxbow-e2e-local --type merge -p '{"allowVolumeExpansion":false}' >/dev/null
  kubectl -n "$NS" patch cluster events --type merge -p '{"spec":{"storage":{"size":"3Gi"}}}' >/dev/null
  refused() { sized False ExpansionNotSupported; }
  until_true 60 refused || fail "no ExpansionNotSupported condition"
  [ "$(claim_size spec resources.requests)" = 2Gi ] || fail "the claim was asked for more although its class does not allow it"
  message="$(kubectl -n "$NS" get cluster events -o jsonpath='{.status.conditions[?(@.type=="StorageResized")].message}')"
  kubectl patch storageclass oxbow-e2e-local --type merge -p '{"allowVolumeExpansion":true}' >/dev/null
  at_3gi() { [ "$(claim_size status capacity)" = 3Gi ] && sized True AtSize; }
  until_true 90 at_3gi || fail "claim not expanded to 3Gi once the class allowed it"
  ok "a class without volume expansion: StorageResized False ($message); allowed again, the claim grew to 3Gi"
else
  suite_skip_check "a StorageClass without expansion: the suite does not change a real cluster's classes"
fi

# --- many Topics ---------------------------------------------------------------------
# OXBOW_TOPICS_AT_SCALE=10000 for the full size (docs/kubernetes.md); CI runs a reduced one.
out="$("$REPO/e2e/operator/topics-at-scale" "$NS" events "${OXBOW_TOPICS_AT_SCALE:-300}" "$bootstrap" 2>&1)" \
  || fail "topics at scale: $out"
ok "$out"

# --- delete the Topic ----------------------------------------------------------------
kubectl -n "$NS" delete topic orders --timeout=60s >/dev/null || fail "Topic deletion (finalizer)"
client "$bootstrap" supports 20 || fail "the broker does not list DeleteTopics (API 20) in ApiVersions"
gone() { ! client "$bootstrap" topics | grep -qx orders; }
until_true 60 gone || fail "topic orders still in the cluster"
ok "Topic deleted: the finalizer deleted orders from the cluster"

# --- leader failover and metrics -----------------------------------------------------
leader_ip="$(kubectl -n "$SYS" get pod "$leader" -o jsonpath='{.status.podIP}')"
metrics="$(curl -fsS --max-time 5 "http://$leader_ip:8080/metrics")" || fail "operator /metrics"
for name in 'oxbow_operator_reconciles_total{controller="cluster"}' 'oxbow_operator_reconciles_total{controller="topic"}' \
            'oxbow_operator_reconcile_duration_seconds_bucket' 'oxbow_operator_leader 1'; do
  grep -qF "$name" <<<"$metrics" || fail "metric $name missing"
done
curl -fsS --max-time 5 "http://$leader_ip:8080/readyz" >/dev/null || fail "/readyz"
ok "operator /metrics: reconciles $(grep -F 'oxbow_operator_reconciles_total{' <<<"$metrics" | tr '\n' ' ')"

kubectl -n "$SYS" delete pod "$leader" --wait=false >/dev/null
t0=$SECONDS
new_leader() { local h; h="$(holder)"; [ -n "$h" ] && [ "$h" != "$leader" ]; }
until_true 90 new_leader || fail "no new leader after deleting $leader"
ok "failover: $(holder) took the Lease $((SECONDS - t0)) s after $leader was deleted (Lease duration 15 s)"

k8s_local || suite_skip_check "the rack file rack-init wrote for events-0 (pod-runner volumes): OXBOW_K8S_EXTERNAL=1"
echo "operator-k8s: $passed passed, 0 failed, $SUITE_SKIPPED skipped"
suite_done
