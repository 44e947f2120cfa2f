#!/usr/bin/env bash
# The shipped external-access example, unmodified, on the e2e Kubernetes testbed:
#   helm install oxbow charts/oxbow
#   kubectl apply -f manifests/cluster-external.yaml
# -> the Cluster (3 brokers, NodePort listener on 30094 + N, no advertisedHost) becomes Ready
# -> from a network namespace outside the pods' network, which routes only to the nodes'
#    addresses (no route to any pod IP: checked), Metadata through any node's port names
#    every broker at the address of the node its pod runs on and its own node port ->
#    kafka-python and kcat produce with acks=all and consume every record there, through
#    kube-proxy's NodePort rules alone -> inside the cluster the internal listener still
#    advertises the brokers' DNS names.
# Waits are on conditions (kubectl wait, or a bounded poll of a check).
# Beside others: yes (its own testbed: control plane on e2e/lib/ports.py ports, its own 10.<k> pod network; no timing asserted)
# Expected time: 70 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
REPO="$PWD"
. e2e/k8s/lib.sh
. e2e/lib/suite.sh
NS=default   # the manifest's namespace
NAME=edge
BASE_PORT=30094

passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $*"; }
fail() {
  echo "not ok - $*" >&2
  {
    kubectl get clusters,sts,pods,svc,endpointslices -A -o wide
    kubectl -n "$NS" get cluster "$NAME" -o yaml | sed -n '/^status:/,$p'
    for log in "$OXBOW_K8S_STATE"/pods/*/*.log; do echo "== $log"; tail -n 25 "$log"; done
    tail -n 30 "$OXBOW_K8S_STATE/pod-runner.log"
  } >&2 2>/dev/null || true
  echo "operator-external: $passed passed, 1 failed"
  exit 1
}
# Outside the pods' network on the testbed is a namespace of its own; on a real cluster it is
# this machine, if it reaches the nodes' addresses.
k8s_local || suite_skip "a client namespace outside the testbed's pod network (ip netns): on a real cluster, run kcat -b NODE:$BASE_PORT from a machine that reaches the nodes"
command -v kcat >/dev/null || fail "kcat missing (e2e/setup.d/10-clients.sh installs it)"

k8s_images
k8s_cluster_up
k8s_pod_runner --selector app.kubernetes.io/name=oxbow-operator --namespace "$NS"
k8s_pod_runner --selector app.kubernetes.io/name=oxbow --namespace "$NS"

helm install oxbow charts/oxbow --wait --timeout 120s >/dev/null || fail "helm install oxbow charts/oxbow"
kubectl apply -f manifests/cluster-external.yaml >/dev/null || fail "kubectl apply -f manifests/cluster-external.yaml"
kubectl -n "$NS" wait --for=condition=Ready "cluster/$NAME" --timeout=300s >/dev/null || fail "Cluster $NAME Ready"
ok "helm install, kubectl apply -f manifests/cluster-external.yaml: Cluster $NAME Ready"

declare -a NODE_IP POD_IP
for i in 0 1 2; do
  NODE_IP[$i]="$(kubectl -n "$NS" get pod "$NAME-$i" -o jsonpath='{.status.hostIP}')"
  POD_IP[$i]="$(kubectl -n "$NS" get pod "$NAME-$i" -o jsonpath='{.status.podIP}')"
  [ -n "${NODE_IP[$i]}" ] || fail "$NAME-$i has no status.hostIP"
  port="$(kubectl -n "$NS" get service "$NAME-$i-external" -o jsonpath='{.spec.type} {.spec.ports[0].nodePort}')" \
    || fail "no Service $NAME-$i-external"
  [ "$port" = "NodePort $((BASE_PORT + i))" ] || fail "Service $NAME-$i-external: $port"
done
ok "one NodePort Service per broker on ports $BASE_PORT-$((BASE_PORT + 2)); brokers on nodes ${NODE_IP[*]}"

# --- a client outside the pods' network ----------------------------------------------------------
netid="$(sed -n 's/^OXBOW_K8S_NETID=//p' "$OXBOW_K8S_STATE/env")"
podnet="$(sed -n 's/^OXBOW_K8S_PODNET=//p' "$OXBOW_K8S_STATE/env")"
[ -n "$netid" ] && [ -n "$podnet" ] || fail "no testbed network id in $OXBOW_K8S_STATE/env"
OUT="ox$netid-outside"   # e2e/k8s/down removes every ox<id>-* namespace, this one too
ip netns add "$OUT"
ip link add "ox${netid}o" netns "$OUT" type veth peer name outside netns "ox$netid-node"
ip -n "$OUT" link set lo up
ip -n "$OUT" addr add "$podnet.254.1/30" dev "ox${netid}o"
ip -n "$OUT" link set "ox${netid}o" up
ip -n "ox$netid-node" addr add "$podnet.254.2/30" dev outside
ip -n "ox$netid-node" link set outside up
for ip in $(printf '%s\n' "${NODE_IP[@]}" | sort -u); do
  ip -n "$OUT" route add "$ip/32" via "$podnet.254.2"
done
outside() { ip netns exec "$OUT" "$@"; }
reach() { outside timeout 3 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }
for i in 0 1 2; do
  ! reach "${POD_IP[$i]}" 9092 || fail "the outside namespace reaches pod $NAME-$i at ${POD_IP[$i]}:9092 directly"
done
ok "namespace $OUT routes only to the nodes (${NODE_IP[*]}): pod IPs ${POD_IP[*]} are unreachable from it"

bootstrap="${NODE_IP[1]}:$BASE_PORT,${NODE_IP[2]}:$((BASE_PORT + 1)),${NODE_IP[0]}:$((BASE_PORT + 2))"
meta() { outside python3 "$REPO/e2e/operator/example_client.py" metadata "$1"; }
until_true 60 meta "${NODE_IP[1]}:$BASE_PORT" >/dev/null || fail "Metadata through ${NODE_IP[1]}:$BASE_PORT from outside"
# Each broker's node port answers once that broker serves its listener (after it is unfenced)
# and kube-proxy has the port's rules: waited for like the first.
until_true 60 meta "${NODE_IP[2]}:$((BASE_PORT + 1))" >/dev/null || fail "Metadata through ${NODE_IP[2]}:$((BASE_PORT + 1)) from outside"
view="$(meta "${NODE_IP[2]}:$((BASE_PORT + 1))")" || fail "Metadata through ${NODE_IP[2]}:$((BASE_PORT + 1))"
expected="$(for i in 0 1 2; do echo "$i ${NODE_IP[$i]} $((BASE_PORT + i))"; done)"
got="$(python3 -c 'import json,sys; b=json.loads(sys.argv[1])["brokers"]; [print(k, v["host"], v["port"]) for k, v in sorted(b.items(), key=lambda kv: int(kv[0]))]' "$view")"
[ "$got" = "$expected" ] || fail "brokers advertised on the external listener: $got, expected $expected"
ok "Metadata from outside, through any node's port: every broker at its own node's address and node port ($(paste -sd, <<<"$got"))"

out="$(outside python3 "$REPO/e2e/operator/kafka_client.py" "$bootstrap" produce-consume outside-in 300)" \
  || fail "kafka-python from outside: $out"
ok "kafka-python from outside via $bootstrap, acks=all: $out"
marker="kcat-$(date +%s%N)"
seq 1 200 | sed "s/^/$marker-/" | outside kcat -P -b "$bootstrap" -t outside-in -X acks=all -X message.timeout.ms=30000 \
  || fail "kcat produce from outside"
got="$(outside kcat -C -b "$bootstrap" -t outside-in -o beginning -e -q 2>/dev/null | grep -c "^$marker-")" || true
[ "$got" = 200 ] || fail "kcat from outside consumed $got of 200 records"
leaders="$(python3 -c 'import json,sys; t=json.loads(sys.argv[1])["topics"].get("outside-in"); print(sorted({p["leader"] for p in t["partitions"]}) if t else "none")' "$(meta "${NODE_IP[0]}:$BASE_PORT")")"
ok "kcat (librdkafka) from outside: 200 records produced with acks=all, 200 consumed (partition leaders $leaders)"

# --- the internal listener is unchanged -----------------------------------------------------------
internal="$(python3 "$REPO/e2e/operator/example_client.py" metadata "${POD_IP[0]}:9092")" || fail "Metadata on the internal listener"
hosts="$(python3 -c 'import json,sys; b=json.loads(sys.argv[1])["brokers"]; print(" ".join(sorted("%s:%s" % (v["host"], v["port"]) for v in b.values())))' "$internal")"
want="$(for i in 0 1 2; do printf '%s ' "$NAME-$i.$NAME-headless.$NS.svc:9092"; done)"
[ "$hosts " = "$want" ] || fail "internal listener advertises $hosts, expected $want"
ok "the internal listener still advertises the brokers' DNS names: $hosts"

echo "operator-external: $passed passed, 0 failed, $SUITE_SKIPPED skipped"
suite_done
