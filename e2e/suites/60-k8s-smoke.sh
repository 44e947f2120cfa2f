#!/usr/bin/env bash
# Smoke test of the e2e Kubernetes control plane (e2e/k8s): a real API server, controller
# manager and scheduler, kwok nodes in three zones, and the pod runner (the kubelet stand-in).
#   up -> namespace -> 3-replica StatefulSet with volume claims, spread over zone-a/b/c,
#   Ready, each pod's process serving its ConfigMap on its pod IP (its own network namespace,
#   an address from its node's podCIDR) -> scale to 1 ->
#   the StatefulSet controller deletes 2 pods and the runner stops their processes -> the
#   garbage collector removes the last pod with its StatefulSet -> down (always, via trap).
# Every wait is on a condition (kubectl wait, rollout status, or a bounded poll of a check).
# Beside others: yes (its own testbed: control plane on e2e/lib/ports.py ports, its own 10.<k> pod network; no timing asserted)
# Expected time: 60 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
K8S="$PWD/e2e/k8s"
# OXBOW_K8S_EXTERNAL=1: run against the cluster of $KUBECONFIG (kind, k3d, cloud) instead of
# starting one; its kubelets run the pods, so the pod-runner checks are skipped.
. "$K8S/lib.sh"
. "$PWD/e2e/lib/suite.sh"
NS=oxbow-smoke

passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $*"; }
fail() {
  echo "not ok - $*" >&2
  {
    kubectl get nodes,pods,pvc -A -o wide
    kubectl -n "$NS" describe pods | grep -A8 '^Events:'
    tail -n 30 "$OXBOW_K8S_STATE/pod-runner.log"
    tail -n 5 "$OXBOW_K8S_STATE"/logs/*.log
  } >&2 2>/dev/null || true
  echo "k8s-smoke: $passed passed, 1 failed"
  exit 1
}
k8s_cluster_up
version="$(kubectl version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')"
ok "control plane up: kube-apiserver $version"

zones="$(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.labels.topology\.kubernetes\.io/zone}{"\n"}{end}' | sort | tr '\n' ' ')"
[ "$zones" = "zone-a zone-b zone-c " ] || fail "node zones: $zones"
if k8s_local; then
  . "$OXBOW_K8S_STATE/env"   # OXBOW_K8S_PODNET: this cluster's 10.<k>.0.0/16
  node_ips="$(kubectl get nodes -o jsonpath='{.items[*].status.addresses[?(@.type=="InternalIP")].address}')"
  for ip in $node_ips; do case "$ip" in "$OXBOW_K8S_PODNET".0.*) ;; *) fail "node IP $ip outside $OXBOW_K8S_PODNET.0.0/24" ;; esac; done
  ok "3 kwok nodes in zone-a/b/c, node IPs $node_ips"
fi

k8s_namespace "$NS"
ok "namespace $NS with its default service account"

# Its image (python:3-slim) cannot be had here: the command runs on the host (named opt-in).
k8s_pod_runner --selector app=smoke --namespace "$NS" --host-processes
kubectl -n "$NS" apply -f "$K8S/smoke/statefulset.yaml" >/dev/null
kubectl -n "$NS" rollout status statefulset/smoke --timeout=120s >/dev/null || fail "rollout of 3 replicas"
kubectl -n "$NS" wait --for=condition=Ready pod -l app=smoke --timeout=60s >/dev/null
[ "$(kubectl -n "$NS" get pods -l app=smoke -o name | wc -l)" = 3 ] || fail "3 pods"
[ "$(kubectl -n "$NS" get pvc -o jsonpath='{.items[*].status.phase}')" = "Bound Bound Bound" ] || fail "3 bound claims"
ok "StatefulSet smoke: 3 claims bound, 3 pods scheduled and Ready"

pod_zones="$(for n in $(kubectl -n "$NS" get pods -l app=smoke -o jsonpath='{.items[*].spec.nodeName}'); do
  kubectl get node "$n" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}{"\n"}'; done | sort | tr '\n' ' ')"
[ "$pod_zones" = "zone-a zone-b zone-c " ] || fail "pods spread over zones: $pod_zones"
ok "the scheduler spread the pods over zones: $pod_zones"

declare -A IP
for p in smoke-0 smoke-1 smoke-2; do
  IP[$p]="$(kubectl -n "$NS" get pod "$p" -o jsonpath='{.status.podIP}')"
  k8s_local || continue
  cidr="$(kubectl get node "$(kubectl -n "$NS" get pod "$p" -o jsonpath='{.spec.nodeName}')" -o jsonpath='{.spec.podCIDR}')"
  case "${IP[$p]}" in "${cidr%.0/24}".*) ;; *) fail "pod IP of $p is ${IP[$p]}, outside its node's podCIDR $cidr" ;; esac
done
k8s_local && ok "pod IPs from their nodes' podCIDRs: ${IP[*]}"

serves() {
  local body
  body="$(curl -fsS --max-time 2 "http://$1:8080/index.html" 2>/dev/null)" && [[ $body == *"served from the ConfigMap"* ]]
}
k8s_local && for p in smoke-0 smoke-1 smoke-2; do
  until_true 60 serves "${IP[$p]}" || fail "$p's process does not serve its ConfigMap on ${IP[$p]}:8080"
done
if k8s_local; then
  paths="$(curl -fsS "http://${IP[smoke-0]}:8080/paths.txt")"
  case "$paths" in *"$OXBOW_K8S_STATE/volumes/$NS/data-smoke-0/data"*) ;; *) fail "mount path not rewritten: $paths" ;; esac
  ok "the pod runner runs each pod's process on its pod IP with its ConfigMap and its volume"
fi

kubectl -n "$NS" scale statefulset/smoke --replicas=1 >/dev/null
kubectl -n "$NS" wait --for=delete pod/smoke-1 pod/smoke-2 --timeout=120s >/dev/null || fail "scale-down deletes 2 pods"
deletes="$(kubectl -n "$NS" get events --field-selector reason=SuccessfulDelete,involvedObject.kind=StatefulSet -o name | wc -l)"
[ "$deletes" -ge 2 ] || fail "SuccessfulDelete events from the StatefulSet controller: $deletes"
kubectl -n "$NS" rollout status statefulset/smoke --timeout=60s >/dev/null
[ "$(kubectl -n "$NS" get pods -l app=smoke -o name)" = "pod/smoke-0" ] || fail "only smoke-0 remains"
ok "scaled to 1: the StatefulSet controller deleted smoke-1 and smoke-2"

stopped() { ! curl -sS --max-time 2 "http://$1:8080/" >/dev/null 2>&1; }
if k8s_local; then
  until_true 30 stopped "${IP[smoke-1]}" || fail "smoke-1's process still serves"
  until_true 30 stopped "${IP[smoke-2]}" || fail "smoke-2's process still serves"
  serves "${IP[smoke-0]}" || fail "smoke-0's process stopped"
  ok "the pod runner stopped the deleted pods' processes; smoke-0 still serves"
fi

kubectl -n "$NS" delete statefulset/smoke --wait=true >/dev/null
kubectl -n "$NS" wait --for=delete pod/smoke-0 --timeout=120s >/dev/null || fail "garbage collection of smoke-0"
! k8s_local || until_true 30 stopped "${IP[smoke-0]}" || fail "smoke-0's process still serves"
ok "the garbage collector deleted the StatefulSet's last pod"

# helm against the real API server: CRD registration, schema + CEL validation, RBAC.
helm install smoke "$K8S/smoke/chart" --namespace "$NS" --wait --timeout 60s >/dev/null
kubectl wait --for=condition=Established crd/widgets.smoke.oxbow.dev --timeout=60s >/dev/null
ok "helm $(helm version --short) installed a chart: CRD established"

widget() { printf 'apiVersion: smoke.oxbow.dev/v1alpha1\nkind: Widget\nmetadata: {name: %s}\nspec: %s\n' "$1" "$2"; }
widget good '{replicas: 3, maxReplicas: 5}' | kubectl -n "$NS" apply -f - >/dev/null || fail "valid Widget"
out="$(widget too-many '{replicas: 9, maxReplicas: 5}' | kubectl -n "$NS" apply -f - 2>&1)" && fail "CEL rule not enforced"
case "$out" in *"replicas must not exceed maxReplicas"*) ;; *) fail "CEL rejection: $out" ;; esac
out="$(widget typo '{replicas: 1, replicaz: 2}' | kubectl -n "$NS" apply --validate=strict -f - 2>&1)" && fail "unknown field accepted"
case "$out" in *'unknown field "spec.replicaz"'*) ;; *) fail "strict field validation: $out" ;; esac
kubectl -n "$NS" scale widget/good --replicas=4 >/dev/null || fail "scale subresource"
ok "the API server validates the CRD schema and its CEL rule; /scale works"

token="$(kubectl -n "$NS" create token smoke-reader)"
reader() { kubectl --token="$token" -n "$NS" "$@"; }
reader get widget good >/dev/null || fail "the reader ServiceAccount cannot read widgets"
out="$(widget sneaky '{replicas: 1}' | reader apply -f - 2>&1)" && fail "RBAC allowed a create"
case "$out" in *Forbidden*|*forbidden*) ;; *) fail "RBAC rejection: $out" ;; esac
reader get pods >/dev/null 2>&1 && fail "RBAC allowed listing pods"
ok "RBAC: the chart's ServiceAccount token reads widgets and is forbidden the rest"

k8s_local || kubectl delete crd widgets.smoke.oxbow.dev --wait=false >/dev/null   # cluster-scoped
k8s_local || suite_skip_check "pod-runner checks (node and pod IPs, processes serving their ConfigMap and volume, stopped on delete): OXBOW_K8S_EXTERNAL=1, the cluster's kubelets run the pods"
echo "k8s-smoke: $passed passed, 0 failed, $SUITE_SKIPPED skipped"
suite_done
