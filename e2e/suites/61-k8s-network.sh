#!/usr/bin/env bash
# Smoke test of the e2e Kubernetes testbed's network (e2e/k8s: pod network namespaces on a
# per-cluster bridge, kube-proxy, CoreDNS, probes run by the pod runner):
#   two namespaces -> a 3-pod StatefulSet "echo" behind a ClusterIP and a headless Service in
#   one, a client pod in the other -> the client reaches the echo pods by pod IP, by Service
#   name and ClusterIP (which balances over the ready pods), by per-pod DNS names; the host
#   reaches pods and the ClusterIP -> a pod failing its readiness probe leaves the Service's
#   endpoints and gets no traffic, and comes back -> a failing liveness probe restarts the
#   container -> `down` leaves no namespace, link, route or rule behind.
# Every wait is on a condition (kubectl wait, rollout status, or a bounded poll of a check).
# Beside others: yes (its own testbed: control plane on e2e/lib/ports.py ports, its own 10.<k> pod network; no timing asserted)
# Expected time: 60 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
K8S="$PWD/e2e/k8s"
. "$K8S/lib.sh"
. "$PWD/e2e/lib/suite.sh"
A=oxbow-net-a   # the echo servers
B=oxbow-net-b   # the client

passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $*"; }
fail() {
  echo "not ok - $*" >&2
  {
    kubectl get pods,svc,endpointslices -A -o wide
    tail -n 40 "$OXBOW_K8S_STATE/pod-runner.log"
    tail -n 5 "$OXBOW_K8S_STATE"/logs/*.log
  } >&2 2>/dev/null || true
  echo "k8s-network: $passed passed, 1 failed"
  exit 1
}
if ! k8s_local; then
  suite_skip "the testbed's own network (pod namespaces, bridge, probes by the pod runner, down leaves nothing): OXBOW_K8S_EXTERNAL=1"
fi
k8s_cluster_up
. "$OXBOW_K8S_STATE/env"
k8s_namespace "$A"
k8s_namespace "$B"
# Its image (python:3-slim) cannot be had here: the command runs on the host (named opt-in).
k8s_pod_runner --selector app=net-echo --host-processes
kubectl -n "$A" apply -f "$K8S/smoke/network.yaml" >/dev/null
kubectl -n "$B" create configmap echo-server \
  --from-literal=server.py="$(kubectl -n "$A" get configmap echo-server -o jsonpath='{.data.server\.py}')" >/dev/null
kubectl -n "$B" apply -f "$K8S/smoke/client.yaml" >/dev/null
kubectl -n "$A" rollout status statefulset/echo --timeout=120s >/dev/null || fail "echo: 3 pods Ready"
kubectl -n "$B" wait --for=condition=Ready pod/client --timeout=60s >/dev/null || fail "client Ready"

# --- pod network ----------------------------------------------------------------------------
declare -A IP
for p in echo-0 echo-1 echo-2; do IP[$p]="$(kubectl -n "$A" get pod "$p" -o jsonpath='{.status.podIP}')"; done
client_ip="$(kubectl -n "$B" get pod client -o jsonpath='{.status.podIP}')"
for p in echo-0 echo-1 echo-2; do
  cidr="$(kubectl get node "$(kubectl -n "$A" get pod "$p" -o jsonpath='{.spec.nodeName}')" -o jsonpath='{.spec.podCIDR}')"
  case "${IP[$p]}" in "${cidr%.0/24}".*) ;; *) fail "$p's IP ${IP[$p]} is not in its node's podCIDR $cidr" ;; esac
  own="$(k8s_pod_exec "$A" "$p" ip -o -4 addr show dev eth0 | awk '{print $4}')"
  [ "$own" = "${IP[$p]}/32" ] || fail "$p's network namespace has $own on eth0, its status says ${IP[$p]}"
done
ok "each pod has its own network namespace with its status.podIP from its node's podCIDR: ${IP[*]} (client $client_ip)"

get() { k8s_pod_exec "$B" client curl -fsS --max-time 3 "$@"; }
for p in echo-0 echo-1 echo-2; do
  [ "$(get "http://${IP[$p]}:8080/")" = "$p" ] || fail "client -> $p by pod IP ${IP[$p]}"
  [ "$(curl -fsS --max-time 3 "http://${IP[$p]}:8080/")" = "$p" ] || fail "host -> $p by pod IP"
done
back="$(k8s_pod_exec "$A" echo-0 curl -fsS --max-time 3 "http://$client_ip:8080/")" || fail "echo-0 -> client by pod IP"
[ "$back" = client ] || fail "echo-0 -> client answered $back"
ok "pods in $A and $B reach each other by pod IP, across nodes; the host reaches them too"

# --- Services (kube-proxy) -----------------------------------------------------------------------
cluster_ip="$(kubectl -n "$A" get service echo -o jsonpath='{.spec.clusterIP}')"
case "$cluster_ip" in "$OXBOW_K8S_PODNET".*) ;; *) fail "ClusterIP $cluster_ip outside $OXBOW_K8S_SERVICE_CIDR" ;; esac
# answered_by URL N: the sorted set of pod names that answered N requests to URL from the client
answered_by() {
  local i
  for i in $(seq 1 "$2"); do get "$1" || echo "(failed)"; done | sort -u | tr '\n' ' '
}
all_three() { [ "$(answered_by "http://$cluster_ip/" 30)" = "echo-0 echo-1 echo-2 " ]; }
until_true 30 all_three || fail "ClusterIP $cluster_ip from the client: $(answered_by "http://$cluster_ip/" 30)"
host_hits="$(for i in $(seq 1 30); do curl -fsS --max-time 3 "http://$cluster_ip/"; done | sort -u | tr '\n' ' ')"
[ "$host_hits" = "echo-0 echo-1 echo-2 " ] || fail "ClusterIP from the host: $host_hits"
ok "ClusterIP $cluster_ip:80 balances over the 3 ready pods, from a pod in another namespace and from the host"

# --- DNS (CoreDNS) ------------------------------------------------------------------------------------
resolve() { k8s_pod_exec "$1" "$2" getent ahostsv4 "$3" | awk '{print $1}' | sort -u | tr '\n' ' '; }
sorted_ips() { printf '%s\n' "$@" | sort -u | tr '\n' ' '; }
grep -qx "search $B.svc.cluster.local svc.cluster.local cluster.local" <(k8s_pod_exec "$B" client cat /etc/resolv.conf) \
  || fail "client's resolv.conf: $(k8s_pod_exec "$B" client cat /etc/resolv.conf)"
for name in "echo.$A" "echo.$A.svc" "echo.$A.svc.cluster.local"; do
  [ "$(resolve "$B" client "$name")" = "$cluster_ip " ] || fail "$name resolves to '$(resolve "$B" client "$name")', not $cluster_ip"
done
[ "$(resolve "$A" echo-0 echo)" = "$cluster_ip " ] || fail "echo from its own namespace: $(resolve "$A" echo-0 echo)"
headless="$(sorted_ips "${IP[echo-0]}" "${IP[echo-1]}" "${IP[echo-2]}")"
[ "$(resolve "$B" client "echo-headless.$A")" = "$headless" ] || fail "headless echo-headless.$A: $(resolve "$B" client "echo-headless.$A")"
for p in echo-0 echo-1 echo-2; do
  name="$p.echo-headless.$A.svc.cluster.local"
  [ "$(resolve "$B" client "$name")" = "${IP[$p]} " ] || fail "$name: $(resolve "$B" client "$name")"
done
[ "$(resolve "$B" client kubernetes.default)" = "$(kubectl get service kubernetes -o jsonpath='{.spec.clusterIP}') " ] \
  || fail "kubernetes.default: $(resolve "$B" client kubernetes.default)"
by_name() { [ "$(answered_by "http://echo.$A/" 30)" = "echo-0 echo-1 echo-2 " ]; }
until_true 30 by_name || fail "http://echo.$A/ from the client: $(answered_by "http://echo.$A/" 30)"
ok "CoreDNS: echo.$A[.svc[.cluster.local]] -> ClusterIP, echo-headless.$A -> the 3 pod IPs, echo-N.echo-headless.$A.svc.cluster.local -> its pod; http://echo.$A/ reaches all 3"

# --- readiness: a pod failing its probe leaves the endpoints -------------------------------------
ready_endpoints() {
  kubectl -n "$A" get endpointslices -l kubernetes.io/service-name=echo \
    -o jsonpath='{range .items[*].endpoints[?(@.conditions.ready==true)]}{.targetRef.name}{"\n"}{end}' | sort | tr '\n' ' '
}
get "http://${IP[echo-1]}:8080/fail" >/dev/null || fail "could not fail echo-1's readiness"
kubectl -n "$A" wait --for=condition=Ready=false pod/echo-1 --timeout=30s >/dev/null || fail "echo-1 still Ready after failing /ready"
without_1() { [ "$(ready_endpoints)" = "echo-0 echo-2 " ]; }
until_true 30 without_1 || fail "ready endpoints with echo-1 unready: $(ready_endpoints)"
two() { [ "$(answered_by "http://$cluster_ip/" 30)" = "echo-0 echo-2 " ]; }
until_true 30 two || fail "the ClusterIP still routes to the unready echo-1: $(answered_by "http://$cluster_ip/" 30)"
[ "$(get "http://${IP[echo-1]}:8080/")" = echo-1 ] || fail "unready echo-1 no longer serves by pod IP"
two_names() { [ "$(resolve "$B" client "echo-headless.$A")" = "$(sorted_ips "${IP[echo-0]}" "${IP[echo-2]}")" ]; }
until_true 30 two_names || fail "echo-headless.$A still resolves to unready echo-1: $(resolve "$B" client "echo-headless.$A")"
ok "echo-1 failing its readiness probe: pod not Ready, out of the EndpointSlice's ready endpoints, no ClusterIP traffic, not in the headless Service's DNS answer (still serving on its IP)"
get "http://${IP[echo-1]}:8080/unfail" >/dev/null
kubectl -n "$A" wait --for=condition=Ready pod/echo-1 --timeout=30s >/dev/null || fail "echo-1 not Ready again"
until_true 30 all_three || fail "echo-1 back: $(answered_by "http://$cluster_ip/" 30)"
ok "echo-1 passing again: Ready, back in the endpoints and the ClusterIP's rotation"

# --- liveness: a failing probe restarts the container --------------------------------------------
restarts() { kubectl -n "$A" get pod echo-2 -o jsonpath='{.status.containerStatuses[0].restartCount}'; }
[ "$(restarts)" = 0 ] || fail "echo-2 restarted before its liveness probe failed: $(restarts)"
get "http://${IP[echo-2]}:8080/sick" >/dev/null
restarted() { [ "$(restarts)" = 1 ]; }
until_true 30 restarted || fail "echo-2's failing liveness probe did not restart it (restartCount $(restarts))"
kubectl -n "$A" wait --for=condition=Ready pod/echo-2 --timeout=30s >/dev/null || fail "echo-2 not Ready after its restart"
[ "$(get "http://${IP[echo-2]}:8080/healthz")" = echo-2 ] || fail "echo-2 unhealthy after its restart"
ok "echo-2 failing its liveness probe: container restarted (restartCount 1), healthy and Ready again"

# --- down leaves nothing ----------------------------------------------------------------------------
"$K8S/down" 2>/dev/null
left="$(ip netns list | grep "^ox$OXBOW_K8S_NETID-" || true)"
[ -z "$left" ] || fail "network namespaces left after down: $left"
ip link show "$OXBOW_K8S_HOST_LINK" >/dev/null 2>&1 && fail "link $OXBOW_K8S_HOST_LINK left after down"
routes="$(ip route show | grep -F "$OXBOW_K8S_PODNET." || true)"
[ -z "$routes" ] || fail "routes left after down: $routes"
# kube-proxy's rules lived in the node namespace; the host's rule set never had any
rules="$( (iptables-save 2>/dev/null; nft list ruleset 2>/dev/null) | grep -F -e "$OXBOW_K8S_PODNET." -e KUBE- || true)"
[ -z "$rules" ] || fail "packet-filter rules left after down: $rules"
etc="$(ls -d /etc/netns/ox"$OXBOW_K8S_NETID"-* 2>/dev/null || true)"
[ -z "$etc" ] || fail "resolv.conf dirs left after down: $etc"
ok "down left no network namespace (ox$OXBOW_K8S_NETID-*), link, route, packet-filter rule or /etc/netns dir"

echo "k8s-network: $passed passed, 0 failed, $SUITE_SKIPPED skipped"
suite_done
