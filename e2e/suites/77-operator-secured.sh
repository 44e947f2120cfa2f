#!/usr/bin/env bash
# The secured example on the e2e Kubernetes testbed (issue 34; real control plane, pod network,
# CoreDNS, the pod runner running the chart's images): manifests/cluster-secured.yaml and
# manifests/users.yaml applied as written -> the operator issues the cluster and clients CAs
# and a key store per broker (Secrets), the brokers serve INTERNAL as SASL_SSL (SCRAM-SHA-512)
# under the StandardAuthorizer and REPLICATION and CONTROLLER over mutual TLS, the operator
# administers them over REPLICATION with its own certificate -> each User gets a Secret with
# its password, JAAS line and the cluster CA; librdkafka clients in a pod with those Secrets:
# the producer writes but cannot read, the consumer reads in its group only, a client without
# credentials or with a wrong password is refused, a plaintext client gets no Kafka answer ->
# a User's Secret deleted by hand comes back with a new password that works -> a forced
# certificate renewal under an acks=all load loses nothing and restarts no broker -> bad Users
# (an unknown ACL operation, a password Secret that does not exist) get conditions that say
# why and nothing in the cluster -> a second Cluster with the user's own CAs (cert-manager's
# Secret shape), a tls User and an external OAUTHBEARER listener (JWKS Secret) -> a deleted
# User's next login is refused.
# Beside others: yes (its own testbed: control plane on e2e/lib/ports.py ports, its own 10.<k> pod network; no timing asserted)
# Expected time: 180 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
. e2e/k8s/lib.sh
. e2e/lib/suite.sh
NS=default
BOOTSTRAP=ledger-bootstrap.default.svc:9092

passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $*"; }
fail() {
  echo "not ok - $*" >&2
  {
    kubectl get clusters,users,sts,pods,secrets -A -o wide
    kubectl -n "$NS" get cluster ledger -o yaml | sed -n '/^status:/,$p'
    kubectl -n "$NS" get users -o yaml | grep -A12 '^  status:'
    for log in "$OXBOW_K8S_STATE"/pods/*/*.log; do echo "== $log"; tail -n 25 "$log"; done
  } >&2 2>/dev/null || true
  echo "operator-secured: $passed passed, 1 failed"
  exit 1
}
k8s_local || suite_skip "librdkafka clients run from the host in a pod's network: OXBOW_K8S_EXTERNAL=1 needs a client image"

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
kubectl apply -f manifests/cluster-secured.yaml >/dev/null || fail "kubectl apply -f manifests/cluster-secured.yaml"
kubectl apply -f manifests/users.yaml >/dev/null || fail "kubectl apply -f manifests/users.yaml"
kubectl -n "$NS" wait --for=condition=Ready cluster/ledger --timeout=300s >/dev/null || fail "Cluster ledger Ready"
for secret in ledger-cluster-ca ledger-clients-ca ledger-broker-certs ledger-operator-cert; do
  kubectl -n "$NS" get secret "$secret" >/dev/null || fail "Secret $secret"
done
keys_of() { kubectl -n "$NS" get secret "$1" -o jsonpath='{.data}' | python3 -c 'import json,sys; print(" ".join(sorted(json.load(sys.stdin))))'; }
keys="$(keys_of ledger-broker-certs)"
[ "$keys" = "clients-ca.crt cluster-ca.crt ledger-0.pem ledger-1.pem ledger-2.pem" ] || fail "ledger-broker-certs holds: $keys"
ok "Cluster ledger Ready; CAs and key stores issued: ledger-broker-certs = $keys"
# The testbed's pod network does not enforce NetworkPolicies: the object is checked, not its effect.
np="$(kubectl -n "$NS" get networkpolicy ledger -o jsonpath='{range .spec.ingress[*]}{.ports[*].port}/{.from[*].podSelector.matchLabels.app\.kubernetes\.io/name};{end}')"
[ "$np" = "9092 9644/;9091/oxbow oxbow-operator;9093/oxbow;" ] || fail "NetworkPolicy ledger ingress (ports/from): $np"
ok "NetworkPolicy ledger: ingress (ports/from pods) $np"
# The operator's own admin requests go over REPLICATION with its certificate: the quorum it
# reads (DescribeQuorum) and the Topic it creates (CreateTopics) show that they got through.
voters() { [ "$(kubectl -n "$NS" get cluster ledger -o jsonpath='{.status.quorum.voters}')" = "[0,1,2]" ]; }
until_true 120 voters || fail "status.quorum.voters: $(kubectl -n "$NS" get cluster ledger -o jsonpath='{.status.quorum}')"
kubectl -n "$NS" wait --for=condition=Ready topic/payments --timeout=120s >/dev/null || fail "Topic payments Ready"
ok "the operator's admin requests over mutual TLS: status.quorum.voters [0,1,2] (DescribeQuorum), Topic payments created"

kubectl -n "$NS" wait --for=condition=Ready pod/kafka-client --timeout=60s >/dev/null || fail "client pod Ready"
kubectl -n "$NS" wait --for=condition=Ready user/payments-producer user/payments-consumer --timeout=120s >/dev/null \
  || fail "Users Ready"
for user in payments-producer payments-consumer; do
  keys="$(keys_of "$user")"
  [ "$keys" = "ca.crt password sasl.jaas.config sasl.mechanism username" ] || fail "Secret $user holds: $keys"
  principal="$(kubectl -n "$NS" get user "$user" -o jsonpath='{.status.principal} {.status.secret}')"
  [ "$principal" = "User:$user $user" ] || fail "User $user status principal/secret: $principal"
done
ok "Users Ready, status User:<name> and the Secret; each Secret holds: $keys"

work="$OXBOW_K8S_STATE/secured"
mkdir -p "$work"
secret_key() { kubectl -n "$NS" get secret "$1" -o jsonpath="{.data.${2//./\\.}}" | base64 -d; }
secret_key payments-producer ca.crt >"$work/ca.crt"
creds() { local user="$1"; shift; echo scram SCRAM-SHA-512 "$user" "$(secret_key "$user" password)" "$work/ca.crt"; }
client() { in_pod python3 e2e/operator/secured_client.py "$@"; }
field() { python3 -c 'import json,sys; r=json.loads(sys.stdin.read().strip().splitlines()[-1]); v=r[sys.argv[1]]; print(" ".join(v) if isinstance(v, list) else v)' "$1"; }

# Ready means the credential and the ACLs are in effect on every broker (the operator asks
# each one): the first write right after the Users turned Ready is authorized, not retried.
first_write() { client produce "$BOOTSTRAP" payments 1 $(creds payments-producer) >"$work/first.json" && [ "$(field ok <"$work/first.json")" = True ]; }
first_write || fail "payments-producer's first write right after Ready: $(cat "$work/first.json")"
ok "payments-producer's first write right after its User turned Ready is authorized"
out="$(client produce "$BOOTSTRAP" payments 200 $(creds payments-producer))"
[ "$(field ok <<<"$out")" = True ] || fail "payments-producer produce: $out"
ok "payments-producer (SCRAM-SHA-512 over TLS, its Secret's password and CA) wrote 200 records with acks=all"
out="$(client consume "$BOOTSTRAP" payments payments-audit 1 $(creds payments-producer))"
[ "$(field ok <<<"$out")" = False ] && grep -Eq 'GROUP_AUTHORIZATION_FAILED|TOPIC_AUTHORIZATION_FAILED' <<<"$out" \
  || fail "payments-producer read: $out"
ok "payments-producer cannot read: $(field errors <<<"$out")"
out="$(client consume "$BOOTSTRAP" payments payments-audit 201 $(creds payments-consumer))"
[ "$(field ok <<<"$out")" = True ] || fail "payments-consumer in group payments-audit: $out"
ok "payments-consumer read $(field count <<<"$out") records in group payments-audit and committed"
out="$(client consume "$BOOTSTRAP" payments another-group 1 $(creds payments-consumer))"
[ "$(field ok <<<"$out")" = False ] && grep -q GROUP_AUTHORIZATION_FAILED <<<"$out" || fail "payments-consumer in another group: $out"
out2="$(client produce "$BOOTSTRAP" payments 1 $(creds payments-consumer))"
[ "$(field ok <<<"$out2")" = False ] && grep -q TOPIC_AUTHORIZATION_FAILED <<<"$out2" || fail "payments-consumer write: $out2"
ok "payments-consumer is refused another group ($(field errors <<<"$out")) and writing ($(field errors <<<"$out2"))"
out="$(client produce "$BOOTSTRAP" payments 1 none "$work/ca.crt")"
[ "$(field ok <<<"$out")" = False ] && [ "$(field count <<<"$out")" = 0 ] || fail "a client without credentials: $out"
out2="$(client produce "$BOOTSTRAP" payments 1 scram SCRAM-SHA-512 payments-producer not-the-password "$work/ca.crt")"
[ "$(field ok <<<"$out2")" = False ] && grep -q AUTHENTICATION <<<"$out2" || fail "a wrong password: $out2"
ok "refused: a client without credentials (nothing acknowledged), a wrong password ($(field errors <<<"$out2"))"
if in_pod kcat -L -b "$BOOTSTRAP" -m 5 >"$work/plain.out" 2>&1; then
  fail "a plaintext client got metadata from the TLS listener: $(head -c 300 "$work/plain.out")"
fi
ok "a plaintext client gets no Kafka answer from the TLS listener"

# Drift: the producer's Secret deleted by hand is written again (a new password, set in the
# cluster too), and the old password stops working.
old="$(secret_key payments-producer password)"
kubectl -n "$NS" delete secret payments-producer >/dev/null
new_password() { p="$(secret_key payments-producer password 2>/dev/null)" && [ -n "$p" ] && [ "$p" != "$old" ]; }
until_true 60 new_password || fail "Secret payments-producer not written again"
until_true 60 first_write || fail "the new password of payments-producer never worked: $(cat "$work/first.json")"
out="$(client produce "$BOOTSTRAP" payments 1 scram SCRAM-SHA-512 payments-producer "$old" "$work/ca.crt")"
grep -q AUTHENTICATION <<<"$out" || fail "the old password still works: $out"
ok "a deleted User Secret comes back with a new password that works; the old one is refused"

# Renewal under load: the cluster CA Secret annotated oxbow.dev/force-renew -> the CA renewed
# with its key and every broker's key store issued again; the brokers (no restart) serve the
# new certificates to new connections while an acks=all producer, reconnecting every 2 s with
# the CA it was given before, loses nothing.
pod_uids() { kubectl -n "$NS" get pods -l app.kubernetes.io/instance=ledger -o jsonpath='{.items[*].metadata.uid}'; }
uids="$(pod_uids)"
store_fingerprint() { secret_key ledger-broker-certs "$1.pem" | openssl x509 -noout -fingerprint -sha256 2>/dev/null; }
served_fingerprint() {
  in_pod openssl s_client -connect "$1.ledger-headless.default.svc:9092" -servername "$1.ledger-headless.default.svc" </dev/null 2>/dev/null \
    | openssl x509 -noout -fingerprint -sha256 2>/dev/null || true
}
before="$(store_fingerprint ledger-0)"
[ -n "$before" ] && [ "$(served_fingerprint ledger-0)" = "$before" ] || fail "ledger-0 serves $(served_fingerprint ledger-0), its store holds $before"
rm -f "$work/renew-stop" "$work/renew-stop.progress"
client produce-until "$BOOTSTRAP" payments "$work/renew-stop" $(creds payments-producer) >"$work/renew.json" 2>"$work/renew.err" &
load=$!
progress() { cat "$work/renew-stop.progress" 2>/dev/null || echo 0; }
acked_some() { [ "$(progress)" -gt "${1:-0}" ]; }
until_true 60 acked_some || fail "the load never got an acknowledgement: $(cat "$work/renew.err")"
kubectl -n "$NS" annotate secret ledger-cluster-ca oxbow.dev/force-renew=true >/dev/null || fail "annotate ledger-cluster-ca"
renewed() { [ -n "$(store_fingerprint ledger-0)" ] && [ "$(store_fingerprint ledger-0)" != "$before" ]; }
until_true 120 renewed || fail "ledger-broker-certs not renewed: $(kubectl -n "$NS" get secret ledger-cluster-ca -o jsonpath='{.metadata.annotations}')"
request_gone() { [ -z "$(kubectl -n "$NS" get secret ledger-cluster-ca -o jsonpath='{.metadata.annotations.oxbow\.dev/force-renew}')" ]; }
until_true 60 request_gone || fail "the force-renew annotation stayed"
serves_new() { for b in ledger-0 ledger-1 ledger-2; do [ "$(served_fingerprint "$b")" = "$(store_fingerprint "$b")" ] || return 1; done; }
until_true 120 serves_new || fail "a broker serves an old certificate: ledger-0 $(served_fingerprint ledger-0) vs $(store_fingerprint ledger-0)"
after="$(progress)"
until_true 60 acked_some "$((after + 100))" || fail "the load stalled after the renewal at $(progress)"
touch "$work/renew-stop"
wait "$load" || true
out="$(cat "$work/renew.json")"
[ "$(field ok <<<"$out")" = True ] && [ "$(field failed <<<"$out")" = 0 ] || fail "produce under renewal: $out $(tail -3 "$work/renew.err")"
[ "$(pod_uids)" = "$uids" ] || fail "brokers were restarted for the renewal"
ok "forced renewal under load: every broker serves its new certificate without a restart; $(field count <<<"$out") of $(field sent <<<"$out") records acknowledged, $(field failed <<<"$out") failed"

# Bad Users: conditions that say why, and nothing written.
kubectl -n "$NS" apply -f - >/dev/null <<'YAML' || fail "kubectl apply the bad Users"
apiVersion: oxbow.dev/v1alpha1
kind: User
metadata: {name: bad-operation}
spec:
  cluster: ledger
  authentication: {type: scram-sha-512}
  authorization:
    acls:
      - resource: {type: topic, name: payments}
        operations: [Read, Frobnicate]
---
apiVersion: oxbow.dev/v1alpha1
kind: User
metadata: {name: bad-password}
spec:
  cluster: ledger
  authentication:
    type: scram-sha-512
    password: {valueFrom: {secretKeyRef: {name: no-such-secret, key: password}}}
YAML
reason_of() { kubectl -n "$NS" get user "$1" -o jsonpath='{.status.conditions[?(@.type=="Degraded")].reason}: {.status.conditions[?(@.type=="Degraded")].message}'; }
degraded_with() { reason_of "$1" | grep -q "^$2: .*$3"; }
until_true 60 degraded_with bad-operation InvalidAcl 'unknown operation "Frobnicate"' || fail "bad-operation: $(reason_of bad-operation)"
until_true 60 degraded_with bad-password PasswordSecretNotFound no-such-secret || fail "bad-password: $(reason_of bad-password)"
for user in bad-operation bad-password; do
  if kubectl -n "$NS" get secret "$user" >/dev/null 2>&1; then fail "Secret $user written for a refused User"; fi
done
ok "refused Users, nothing written: $(reason_of bad-operation | cut -c1-90); $(reason_of bad-password)"

# A tls User: a certificate of the clients CA whose CN is its name, on a Cluster whose
# listener asks for client certificates and whose two CAs are the user's own (Secrets in the
# shape a cert-manager CA Certificate writes: tls.crt, tls.key), not the operator's.
kubectl -n "$NS" apply -f - >/dev/null <<'YAML' || fail "kubectl apply Cluster vault, Topic audited, User auditor"
apiVersion: oxbow.dev/v1alpha1
kind: Cluster
metadata: {name: vault}
spec:
  replicas: 1
  controllerVoters: 1
  storage: {size: 1Gi}
  listeners:
    tls: true
    authentication: tls
    external: {type: LoadBalancer, tls: true, authentication: oauth}
    oauth: {jwks: {name: vault-idp, key: jwks.json}}
  authorization: {type: simple}
  certificates: {generateCertificateAuthority: false}
  config:
    sasl.oauthbearer.expected.audience: oxbow
    sasl.oauthbearer.expected.issuer: https://idp.test
---
apiVersion: oxbow.dev/v1alpha1
kind: Topic
metadata: {name: audited}
spec: {cluster: vault, partitions: 1, replicationFactor: 1}
---
apiVersion: oxbow.dev/v1alpha1
kind: User
metadata: {name: auditor}
spec:
  cluster: vault
  authentication: {type: tls}
  authorization:
    acls:
      - resource: {type: topic, name: audited}
        operations: [Write, Read, Describe]
      - resource: {type: group, name: auditors}
        operations: [Read]
---
apiVersion: oxbow.dev/v1alpha1
kind: User
metadata: {name: reporter}
spec:
  cluster: vault
  authorization:
    acls:
      - resource: {type: topic, name: audited}
        operations: [Write, Describe]
YAML
waiting_for_ca() {
  kubectl -n "$NS" get cluster vault -o jsonpath='{.status.conditions[?(@.reason=="CertificateAuthorityMissing")].message}' | grep -q "vault-cluster-ca"
}
until_true 60 waiting_for_ca || fail "Cluster vault without its CA Secrets: $(kubectl -n "$NS" get cluster vault -o jsonpath='{.status.conditions}')"
ok "Cluster vault waits for the user's CA: $(kubectl -n "$NS" get cluster vault -o jsonpath='{.status.conditions[?(@.reason=="CertificateAuthorityMissing")].message}' | cut -c1-110)"
# The identity provider of the external oauth listener: its key set in a Secret.
python3 e2e/operator/idp.py init "$work/idp" trusted rogue || fail "idp.py init"
kubectl -n "$NS" create secret generic vault-idp --from-file=jwks.json="$work/idp/jwks.json" >/dev/null || fail "Secret vault-idp"
for ca in cluster clients; do
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
    -keyout "$work/vault-$ca.key" -out "$work/vault-$ca.crt" -subj "/O=e2e/CN=vault $ca CA (the user's)" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null \
    || fail "openssl: the $ca CA"
  kubectl -n "$NS" create secret generic "vault-$ca-ca" --from-file=tls.crt="$work/vault-$ca.crt" \
    --from-file=tls.key="$work/vault-$ca.key" >/dev/null || fail "Secret vault-$ca-ca"
done
kubectl -n "$NS" wait --for=condition=Ready cluster/vault --timeout=300s >/dev/null || fail "Cluster vault Ready"
kubectl -n "$NS" wait --for=condition=Ready topic/audited user/auditor --timeout=120s >/dev/null || fail "Topic audited, User auditor Ready"
keys="$(keys_of auditor)"
[ "$keys" = "ca.crt user.crt user.key user.pem username" ] || fail "Secret auditor holds: $keys"
for key in ca.crt user.crt user.key; do secret_key auditor "$key" >"$work/auditor-$key"; done
subject="$(openssl x509 -in "$work/auditor-user.crt" -noout -subject -nameopt RFC2253)"
grep -q "CN=auditor,O=oxbow.dev clients" <<<"$subject" || fail "auditor's certificate: $subject"
openssl verify -CAfile "$work/vault-clients.crt" "$work/auditor-user.crt" >/dev/null 2>&1 \
  || fail "auditor's certificate is not signed by the user's clients CA"
# The listener asks for a client certificate: s_client fails the handshake after printing the
# broker's certificate, which is all this needs.
served_issuer="$({ in_pod openssl s_client -connect vault-0.vault-headless.default.svc:9092 </dev/null 2>/dev/null || true; } | openssl x509 -noout -issuer -nameopt RFC2253 2>/dev/null || true)"
grep -q "CN=vault cluster CA (the user's)" <<<"$served_issuer" || fail "vault-0 serves a certificate of: $served_issuer"
cmp -s "$work/auditor-ca.crt" "$work/vault-cluster.crt" || fail "auditor's ca.crt is not the user's cluster CA"
cert_auth=(tls "$work/auditor-user.crt" "$work/auditor-user.key" "$work/auditor-ca.crt")
VAULT=vault-bootstrap.default.svc:9092
tls_write() { client produce "$VAULT" audited 1 "${cert_auth[@]}" >"$work/tls-first.json" && [ "$(field ok <"$work/tls-first.json")" = True ]; }
until_true 120 tls_write || fail "auditor never wrote: $(cat "$work/tls-first.json")"
out="$(client produce "$VAULT" audited 50 "${cert_auth[@]}")"
[ "$(field ok <<<"$out")" = True ] || fail "auditor produce: $out"
out="$(client consume "$VAULT" audited auditors 51 "${cert_auth[@]}")"
[ "$(field ok <<<"$out")" = True ] || fail "auditor consume in group auditors: $out"
out="$(client consume "$VAULT" audited others 1 "${cert_auth[@]}")"
grep -q GROUP_AUTHORIZATION_FAILED <<<"$out" || fail "auditor in group others: $out"
out2="$(client produce "$VAULT" audited 1 none "$work/auditor-ca.crt")"
[ "$(field ok <<<"$out2")" = False ] && [ "$(field count <<<"$out2")" = 0 ] || fail "a client without a certificate: $out2"
# OAUTHBEARER on the external listener: a token of the trusted key for `reporter` (a User
# with ACLs and no credentials of its own) writes; another subject is refused by the ACLs; a
# token of a key the JWKS does not hold is refused at login.
VAULT_EXTERNAL=vault-0-external.default.svc:9094
for token in "trusted reporter" "trusted stranger" "rogue reporter"; do
  set -- $token
  python3 e2e/operator/idp.py token "$work/idp" "$1" "$2" >"$work/$1-$2.token" || fail "idp.py token $token"
done
oauth_write() { client produce "$VAULT_EXTERNAL" audited 20 oauth "$work/trusted-reporter.token" "$work/auditor-ca.crt" >"$work/oauth.json" && [ "$(field ok <"$work/oauth.json")" = True ]; }
until_true 120 oauth_write || fail "reporter over OAUTHBEARER: $(cat "$work/oauth.json")"
out3="$(client produce "$VAULT_EXTERNAL" audited 1 oauth "$work/trusted-stranger.token" "$work/auditor-ca.crt")"
grep -q TOPIC_AUTHORIZATION_FAILED <<<"$out3" || fail "stranger over OAUTHBEARER: $out3"
out4="$(client produce "$VAULT_EXTERNAL" audited 1 oauth "$work/rogue-reporter.token" "$work/auditor-ca.crt")"
[ "$(field ok <<<"$out4")" = False ] && grep -q AUTHENTICATION <<<"$out4" || fail "a token of an unknown key: $out4"
ok "external oauth listener (JWKS from Secret vault-idp): User:reporter's token wrote 20 records; User:stranger refused by the ACLs ($(field errors <<<"$out3")); a token of another key refused ($(field errors <<<"$out4"))"
ok "user-supplied CAs (cert-manager's tls.crt/tls.key): vault-0 serves a certificate of $served_issuer; tls User auditor ($subject, signed by the user's clients CA, Secret: $keys): wrote 50 and read 51 in group auditors; refused group others ($(field errors <<<"$out")); a client without a certificate is refused"

# A deleted User: its credential leaves the cluster (the next login is refused), its Secret goes.
kubectl -n "$NS" get secret payments-consumer -o jsonpath='{.data.password}' | base64 -d >"$work/consumer.password"
kubectl -n "$NS" delete user payments-consumer --timeout=60s >/dev/null || fail "kubectl delete user payments-consumer"
refused_login() {
  client consume "$BOOTSTRAP" payments payments-audit 1 scram SCRAM-SHA-512 payments-consumer "$(cat "$work/consumer.password")" "$work/ca.crt" >"$work/deleted.json" || true
  grep -q AUTHENTICATION "$work/deleted.json"
}
until_true 60 refused_login || fail "deleted payments-consumer still logs in: $(cat "$work/deleted.json")"
gone() { ! kubectl -n "$NS" get secret payments-consumer >/dev/null 2>&1; }
until_true 60 gone || fail "Secret payments-consumer outlived its User"
ok "User payments-consumer deleted: its next login is refused ($(field errors <"$work/deleted.json")), its Secret is gone"
echo "operator-secured: $passed passed, 0 failed"
