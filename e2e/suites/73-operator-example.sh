#!/usr/bin/env bash
# The shipped example, unmodified, on the e2e Kubernetes testbed (e2e/k8s: real control
# plane, pod network with CoreDNS and kube-proxy, probes run by the pod runner, which runs
# the pods' containers from the images e2e/images/build makes), exactly as README.md says,
# the chart and manifests as shipped (no image overrides):
#   helm install oxbow charts/oxbow
#   kubectl apply -f manifests/cluster.yaml -f manifests/topic.yaml
# -> the Cluster (3 brokers, 3 voters) becomes Ready with one quorum: every broker reports the
#    same cluster id and the same active controller; every pod ran from the chart's images
#    -> the Topic (6 partitions, RF 3) has its
#    3 replicas of each partition in the 3 zones -> from a pod, kafka-python and kcat produce
#    with acks=all and consume through the bootstrap Service's DNS name -> SIGKILL one
#    broker's container under an acks=all producer: every send is acknowledged, the pod
#    restarts, the broker rejoins every ISR, every acknowledged record is consumed -> the
#    controller voters go 3 -> 1 -> 3 (kubectl patch controllerVoters) under an acks=all
#    producer: every send acknowledged and consumed, the shared config unchanged.
# Waits are on conditions (kubectl wait, or a bounded poll of a check).
# Beside others: yes (its own testbed: control plane on e2e/lib/ports.py ports, its own 10.<k> pod network; no timing asserted)
# Expected time: 110 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
REPO="$PWD"
. e2e/k8s/lib.sh
. e2e/lib/suite.sh
NS=default   # the manifests' namespace, where README's commands put everything
BOOTSTRAP=events-bootstrap.default.svc:9092

passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $*"; }
fail() {
  echo "not ok - $*" >&2
  {
    kubectl get clusters,topics,sts,pods,svc,endpointslices,pvc -A -o wide
    kubectl -n "$NS" get cluster events -o yaml | sed -n '/^status:/,$p'
    kubectl -n "$NS" get topic orders -o yaml | sed -n '/^status:/,$p'
    for log in "$OXBOW_K8S_STATE"/pods/*/*.log; do echo "== $log"; tail -n 25 "$log"; done
    tail -n 30 "$OXBOW_K8S_STATE/pod-runner.log"
  } >&2 2>/dev/null || true
  echo "operator-example: $passed passed, 1 failed"
  exit 1
}
k8s_local || suite_skip "the shipped example from a client pod (k8s_pod_exec with the host's kafka-python and kcat): OXBOW_K8S_EXTERNAL=1 needs a client image"
command -v kcat >/dev/null || fail "kcat missing (e2e/setup.d/10-clients.sh installs it)"

k8s_images
k8s_cluster_up
k8s_pod_runner --selector app.kubernetes.io/name=oxbow-operator --namespace "$NS"
k8s_pod_runner --selector app.kubernetes.io/name=oxbow --namespace "$NS"
# The clients' pod: kafka-python and kcat of the host, in the pod's network namespace (no
# client image can be had here), hence the named opt-in.
k8s_pod_runner --selector app=oxbow-e2e-client --namespace "$NS" --host-processes
# The pod the Kafka clients run in: its network namespace, its resolv.conf (cluster DNS).
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
example() { in_pod python3 "$REPO/e2e/operator/example_client.py" "$@"; }

# --- README: helm install, kubectl apply -------------------------------------------------------
helm install oxbow charts/oxbow --wait --timeout 120s >/dev/null || fail "helm install oxbow charts/oxbow"
ok "helm install oxbow charts/oxbow: operator Available"
t_apply=$(date +%s.%N)
kubectl apply -f manifests/cluster.yaml -f manifests/topic.yaml >/dev/null || fail "kubectl apply -f manifests/cluster.yaml -f manifests/topic.yaml"
kubectl -n "$NS" wait --for=condition=Ready cluster/events --timeout=300s >/dev/null || fail "Cluster events Ready"
t_ready=$(date +%s.%N)
kubectl -n "$NS" wait --for=condition=Ready pod/kafka-client --timeout=60s >/dev/null || fail "client pod Ready"
# the first record acknowledged by acks=all, through the bootstrap Service's DNS name
first_ack() { echo "first-$(date +%s%N)" | in_pod kcat -P -b "$BOOTSTRAP" -t orders -X acks=all -X message.timeout.ms=5000 2>/dev/null; }
until_true 300 first_ack || fail "no acks=all record acknowledged through $BOOTSTRAP"
t_ack=$(date +%s.%N)
elapsed() { python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$2"; }
ok "kubectl apply -> Cluster Ready in $(elapsed "$t_apply" "$t_ready") s, -> first acks=all record acknowledged in $(elapsed "$t_apply" "$t_ack") s"
kubectl -n "$NS" wait --for=condition=Ready topic/orders --timeout=120s >/dev/null || fail "Topic orders Ready"
ok "Topic orders Ready: $(kubectl -n "$NS" get topic orders -o jsonpath='{.status.assignment}')"
from_images="$(k8s_pods_from_images "$NS" app.kubernetes.io/name=oxbow && k8s_pods_from_images "$NS" app.kubernetes.io/name=oxbow-operator)" \
  || fail "pods from images: $from_images"
ok "every broker and operator container ran from its image: $(paste -sd, <<<"$from_images" | sed 's/,/, /g')"

# --- one quorum ---------------------------------------------------------------------------------
metrics_port="$(kubectl -n "$NS" get sts events -o jsonpath='{.spec.template.spec.containers[0].ports[?(@.name=="metrics")].containerPort}')"
declare -A META
for i in 0 1 2; do
  META[$i]="$(example metadata "events-$i.events-headless.default.svc:9092")" || fail "Metadata from events-$i by its DNS name"
done
views="$(for i in 0 1 2; do
  node="$(in_pod curl -fsS --max-time 5 "http://events-$i.events-headless.default.svc:$metrics_port/metadata")" || exit 1
  python3 -c 'import json,sys; m=json.loads(sys.argv[1]); k=json.loads(sys.argv[2]); print(m["cluster_id"], m["controller_id"], k["cluster_id"], len(k["brokers"]))' "$node" "${META[$i]}"
done)" || fail "/metadata of a broker by its DNS name"
[ "$(sort -u <<<"$views" | wc -l)" = 1 ] || fail "the brokers disagree (cluster id, controller, Kafka cluster id, brokers): $views"
read -r cluster_id controller kafka_cluster_id brokers <<<"$(head -n 1 <<<"$views")"
[ "$cluster_id" = "$kafka_cluster_id" ] && [ "$brokers" = 3 ] && [ "$controller" -ge 0 ] && [ "$controller" -le 2 ] \
  || fail "quorum view: $views"
voters="$(kubectl -n "$NS" get configmap events -o jsonpath='{.data.broker\.yaml}' | sed -n 's/^controller.quorum.voters: //p')"
[ "$voters" = "0@events-0.events-headless.default.svc:9093,1@events-1.events-headless.default.svc:9093,2@events-2.events-headless.default.svc:9093" ] \
  || fail "voters are not the brokers' DNS names: $voters"
ok "one quorum: voters $voters; every broker reports cluster $cluster_id, active controller $controller, 3 brokers"

# --- rack-aware placement ------------------------------------------------------------------------
declare -A ZONE
for i in 0 1 2; do
  node="$(kubectl -n "$NS" get pod "events-$i" -o jsonpath='{.spec.nodeName}')"
  ZONE[$i]="$(kubectl get node "$node" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}')"
done
placement="$(python3 - "${META[0]}" "${ZONE[0]}" "${ZONE[1]}" "${ZONE[2]}" <<'PY'
import json, sys
meta, zones = json.loads(sys.argv[1]), sys.argv[2:]
racks = {int(b): v["rack"] for b, v in meta["brokers"].items()}
assert racks == {0: zones[0], 1: zones[1], 2: zones[2]}, "broker racks %s, node zones %s" % (racks, zones)
parts = meta["topics"]["orders"]["partitions"]
assert len(parts) == 6, "%d partitions" % len(parts)
for p in parts:
    spread = sorted(racks[r] for r in p["replicas"])
    assert spread == ["zone-a", "zone-b", "zone-c"], "partition %d replicas %s in %s" % (p["partition"], p["replicas"], spread)
print(" ".join("%d:%s" % (p["partition"], p["replicas"]) for p in parts).replace(" ", ""))
PY
)" || fail "placement: $placement"
ok "orders: 6 partitions, 3 replicas each, one in each of zone-a/b/c (broker racks = node zones): $placement"

# --- clients in a pod, through the bootstrap Service's DNS name --------------------------------------
out="$(in_pod python3 "$REPO/e2e/operator/kafka_client.py" "$BOOTSTRAP" produce-consume orders 300)" || fail "kafka-python: $out"
ok "kafka-python in a pod via $BOOTSTRAP, acks=all: $out"
marker="kcat-$(date +%s%N)"
seq 1 200 | sed "s/^/$marker-/" | in_pod kcat -P -b "$BOOTSTRAP" -t orders -X acks=all -X message.timeout.ms=30000 \
  || fail "kcat produce with acks=all"
got="$(in_pod kcat -C -b "$BOOTSTRAP" -t orders -o beginning -e -q 2>/dev/null | grep -c "^$marker-")" || true
[ "$got" = 200 ] || fail "kcat consumed $got of 200 records"
ok "kcat (librdkafka) in a pod via $BOOTSTRAP: 200 records produced with acks=all, 200 consumed"

# --- SIGKILL a broker under load -------------------------------------------------------------------
victim=events-1
work="$OXBOW_K8S_STATE/example"
mkdir -p "$work"
in_pod python3 "$REPO/e2e/operator/example_client.py" produce-until "$BOOTSTRAP" orders "$work/stop" "$work/acked" \
  2>"$work/producer.err" &
producer=$!
acked() { [ "$( { wc -l <"$work/acked"; } 2>/dev/null || echo 0)" -ge "$1" ]; }
until_true 60 acked 50 || fail "the producer got no acknowledgements before the kill: $(tail -n 3 "$work/producer.err")"
pid_file="$(ls "$OXBOW_K8S_STATE"/pods/"$NS"."$victim".*/broker.log.pid 2>/dev/null | head -n 1)"
[ -n "$pid_file" ] || fail "no pid file of $victim's broker container"
pid="$(cat "$pid_file")"
before_kill="$(wc -l <"$work/acked")"
kill -KILL "$pid"
restarted() { [ "$(kubectl -n "$NS" get pod "$victim" -o jsonpath='{.status.containerStatuses[0].restartCount}')" -ge 1 ]; }
until_true 60 restarted || fail "$victim's container was not restarted after SIGKILL"
kubectl -n "$NS" wait --for=condition=Ready "pod/$victim" --timeout=120s >/dev/null || fail "$victim not Ready after its restart"
in_isr() {
  example metadata "events-0.events-headless.default.svc:9092" | python3 -c '
import json, sys
parts = json.load(sys.stdin)["topics"]["orders"]["partitions"]
sys.exit(0 if all(sorted(p["isr"]) == [0, 1, 2] for p in parts) else 1)'
}
until_true 120 in_isr || fail "$victim did not rejoin every ISR of orders"
until_true 60 acked $((before_kill + 100)) || fail "the producer stalled after the kill: $(tail -n 3 "$work/producer.err")"
touch "$work/stop"
wait "$producer" || fail "acks=all sends failed for good across the kill: $(tail -n 5 "$work/producer.err")"
out="$(in_pod python3 "$REPO/e2e/operator/example_client.py" consume-all "$BOOTSTRAP" orders "$work/acked")" || fail "after the kill: $out"
ok "SIGKILL of $victim's broker under an acks=all producer: the pod restarted and rejoined every ISR; $(wc -l <"$work/acked") sends ($(( $(wc -l <"$work/acked") - before_kill )) after the kill) all acknowledged; $out"
kubectl -n "$NS" wait --for=condition=Ready cluster/events --timeout=120s >/dev/null || fail "Cluster Ready after the kill"

# --- controller voters 3 -> 1 -> 3 under load (KIP-853) -------------------------------------------
events_of() { # how many times an Event of reason $1 was emitted (a repeated one is a series)
  kubectl -n "$NS" get events.events.k8s.io --field-selector reason="$1" \
    -o jsonpath='{range .items[*]}{.series.count}{"\n"}{end}' | awk '{ n += ($1 == "" ? 1 : $1) } END { print n + 0 }'
}
quorum_is() { # the Cluster reports voters $1 (comma-separated) and no change in progress
  local got
  got="$(kubectl -n "$NS" get cluster events -o jsonpath='{.status.quorum.voters}|{.status.quorum.message}')"
  [ "$got" = "[$1]|" ]
}
rm -f "$work/stop" "$work/acked"
in_pod python3 "$REPO/e2e/operator/example_client.py" produce-until "$BOOTSTRAP" orders "$work/stop" "$work/acked" \
  2>"$work/producer.err" &
producer=$!
until_true 60 acked 50 || fail "the producer got no acknowledgements before the voter change: $(tail -n 3 "$work/producer.err")"
t0=$(date +%s)
kubectl -n "$NS" patch cluster events --type merge -p '{"spec":{"controllerVoters":1}}' >/dev/null
until_true 600 quorum_is 0 || fail "voters 3 -> 1 did not finish: $(kubectl -n "$NS" get cluster events -o jsonpath='{.status.quorum}')"
t1=$(date +%s)
[ "$(events_of VoterRemoved)" = 2 ] || fail "3 -> 1 removed $(events_of VoterRemoved) voters, not 2"
roles="$(kubectl -n "$NS" get configmap events -o jsonpath='{.data.events-2\.yaml}' | sed -n 's/^process.roles: //p')"
[ "$roles" = broker ] || fail "events-2's file still gives it the roles $roles"
acked_shrunk="$(wc -l <"$work/acked")"
kubectl -n "$NS" patch cluster events --type merge -p '{"spec":{"controllerVoters":3}}' >/dev/null
until_true 600 quorum_is 0,1,2 || fail "voters 1 -> 3 did not finish: $(kubectl -n "$NS" get cluster events -o jsonpath='{.status.quorum}')"
t2=$(date +%s)
[ "$(events_of VoterAdded)" = 2 ] || fail "1 -> 3 added $(events_of VoterAdded) voters, not 2"
until_true 60 acked $((acked_shrunk + 100)) || fail "the producer stalled during the voter change: $(tail -n 3 "$work/producer.err")"
touch "$work/stop"
wait "$producer" || fail "acks=all sends failed for good during the voter changes: $(tail -n 5 "$work/producer.err")"
out="$(in_pod python3 "$REPO/e2e/operator/example_client.py" consume-all "$BOOTSTRAP" orders "$work/acked")" || fail "after the voter changes: $out"
shared_after="$(kubectl -n "$NS" get configmap events -o jsonpath='{.data.broker\.yaml}' | sed -n 's/^controller.quorum.voters: //p')"
[ "$shared_after" = "$voters" ] || fail "a voter change changed the shared config: $shared_after"
ok "controllerVoters 3 -> 1 in $((t1 - t0)) s (2 VoterRemoved, brokers 2 and 1 restarted as brokers only), 1 -> 3 in $((t2 - t1)) s (2 VoterAdded), shared config unchanged; under an acks=all producer: $(wc -l <"$work/acked") sends all acknowledged; $out"
kubectl -n "$NS" wait --for=condition=Ready cluster/events --timeout=120s >/dev/null || fail "Cluster Ready after the voter changes"

echo "operator-example: $passed passed, 0 failed, $SUITE_SKIPPED skipped"
suite_done
