#!/usr/bin/env bash
# A secured Cluster on the e2e Kubernetes testbed (issue 34; real control plane, pod network,
# CoreDNS, the pod runner running the chart's images): `listeners.tls: true` ->
# the operator issues the cluster and clients CAs and a key store per broker (Secrets), the
# pods mount them, the brokers serve INTERNAL over TLS and REPLICATION and CONTROLLER over
# mutual TLS, the operator administers them over REPLICATION with its own certificate (the
# Cluster gets Ready only through it) -> kcat in a pod over TLS (the cluster CA from the
# brokers' Secret, the bootstrap Service's DNS name checked) produces with acks=all and
# consumes -> a plaintext client on the same port gets no Kafka answer -> a Cluster asking for
# listener authentication is refused with the reason (no User resource yet).
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
. e2e/k8s/lib.sh
. e2e/lib/suite.sh
NS=default
BOOTSTRAP=secure-bootstrap.default.svc:9092

passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $*"; }
fail() {
  echo "not ok - $*" >&2
  {
    kubectl get clusters,sts,pods,secrets -A -o wide
    kubectl -n "$NS" get cluster secure -o yaml | sed -n '/^status:/,$p'
    for log in "$OXBOW_K8S_STATE"/pods/*/*.log; do echo "== $log"; tail -n 25 "$log"; done
  } >&2 2>/dev/null || true
  echo "operator-secured: $passed passed, 1 failed"
  exit 1
}
k8s_local || suite_skip "kcat from a client pod with the host's kcat: OXBOW_K8S_EXTERNAL=1 needs a client image"

k8s_images
k8s_cluster_up
k8s_pod_runner --selector app.kubernetes.io/name=oxbow-operator --namespace "$NS"
k8s_pod_runner --selector app.kubernetes.io/name=oxbow --namespace "$NS"
k8s_pod_runner --selector app=oxbow-e2e-client --namespace "$NS" --host-processes
kubectl -n "$NS" apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: kafka-client, labels: {app: oxbow-e2e-client}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: client, image: python:3-slim, command: [python3, -c, "import time; time.sleep(10**9)"]}
YAML
in_pod() { k8s_pod_exec "$NS" kafka-client "$@"; }

helm install oxbow charts/oxbow --wait --timeout 120s >/dev/null || fail "helm install oxbow charts/oxbow"
kubectl -n "$NS" apply -f - >/dev/null <<'YAML' || fail "kubectl apply the secured Cluster"
apiVersion: oxbow.dev/v1alpha1
kind: Cluster
metadata: {name: secure}
spec:
  replicas: 3
  controllerVoters: 3
  storage: {size: 1Gi}
  listeners: {tls: true}
YAML
kubectl -n "$NS" wait --for=condition=Ready cluster/secure --timeout=300s >/dev/null || fail "Cluster secure Ready"
for secret in secure-cluster-ca secure-clients-ca secure-broker-certs secure-operator-cert; do
  kubectl -n "$NS" get secret "$secret" >/dev/null || fail "Secret $secret"
done
keys="$(kubectl -n "$NS" get secret secure-broker-certs -o jsonpath='{.data}' | python3 -c 'import json,sys; print(" ".join(sorted(json.load(sys.stdin))))')"
[ "$keys" = "clients-ca.crt cluster-ca.crt secure-0.pem secure-1.pem secure-2.pem" ] || fail "secure-broker-certs holds: $keys"
ok "Cluster Ready; CAs and key stores issued: secure-broker-certs = $keys"
# The operator's own admin requests go over REPLICATION with its certificate: the quorum it
# reads (DescribeQuorum) and a Topic it creates (CreateTopics) show that they got through.
voters() { [ "$(kubectl -n "$NS" get cluster secure -o jsonpath='{.status.quorum.voters}')" = "[0,1,2]" ]; }
until_true 120 voters || fail "status.quorum.voters: $(kubectl -n "$NS" get cluster secure -o jsonpath='{.status.quorum}')"
kubectl -n "$NS" apply -f - >/dev/null <<'YAML' || fail "kubectl apply the Topic"
apiVersion: oxbow.dev/v1alpha1
kind: Topic
metadata: {name: secured}
spec: {cluster: secure, partitions: 3, replicationFactor: 3}
YAML
kubectl -n "$NS" wait --for=condition=Ready topic/secured --timeout=120s >/dev/null || fail "Topic secured Ready"
ok "the operator's admin requests over mutual TLS: status.quorum.voters [0,1,2] (DescribeQuorum), Topic secured created (3 partitions, RF 3)"

work="$OXBOW_K8S_STATE/secured"
mkdir -p "$work"
kubectl -n "$NS" get secret secure-broker-certs -o jsonpath='{.data.cluster-ca\.crt}' | base64 -d >"$work/ca.crt"
kubectl -n "$NS" wait --for=condition=Ready pod/kafka-client --timeout=60s >/dev/null || fail "client pod Ready"
tls=(-X security.protocol=SSL -X "ssl.ca.location=$work/ca.crt")
marker="tls-$(date +%s%N)"
first_ack() { echo "$marker-first" | in_pod kcat -P -b "$BOOTSTRAP" "${tls[@]}" -t secured -X acks=all -X message.timeout.ms=5000 2>/dev/null; }
until_true 180 first_ack || fail "no acks=all record acknowledged over TLS through $BOOTSTRAP"
seq 1 200 | sed "s/^/$marker-/" | in_pod kcat -P -b "$BOOTSTRAP" "${tls[@]}" -t secured -X acks=all -X message.timeout.ms=30000 \
  || fail "kcat produce over TLS"
got="$(in_pod kcat -C -b "$BOOTSTRAP" "${tls[@]}" -t secured -o beginning -e -q 2>/dev/null | grep -c "^$marker-[0-9]")" || true
[ "$got" = 200 ] || fail "kcat consumed $got of 200 records over TLS"
ok "kcat in a pod over TLS via $BOOTSTRAP (cluster CA, the Service's name checked): 200 records produced with acks=all, 200 consumed"

if in_pod kcat -L -b "$BOOTSTRAP" -m 5 >"$work/plain.out" 2>&1; then
  fail "a plaintext client got metadata from the TLS listener: $(head -c 300 "$work/plain.out")"
fi
ok "a plaintext client gets no Kafka answer from the TLS listener"
kubectl -n "$NS" patch cluster secure --type merge -p '{"spec":{"listeners":{"authentication":"scram-sha-512"}}}' >/dev/null \
  || fail "patch listeners.authentication"
refused() { kubectl -n "$NS" get cluster secure -o jsonpath='{.status.conditions[?(@.reason=="InvalidConfig")].message}' | grep -q "User resources"; }
until_true 60 refused || fail "listener authentication not refused: $(kubectl -n "$NS" get cluster secure -o jsonpath='{.status.conditions}')"
ok "listener authentication refused until the User resource: $(kubectl -n "$NS" get cluster secure -o jsonpath='{.status.conditions[?(@.reason=="InvalidConfig")].message}' | cut -c1-120)"
echo "operator-secured: $passed passed, 0 failed"
