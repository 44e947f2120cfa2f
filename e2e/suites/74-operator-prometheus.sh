#!/usr/bin/env bash
# Real Prometheus (e2e/k8s/prometheus: Kubernetes service discovery against the testbed's API
# server; brokers and operator run from their images by the pod runner; scrape jobs from the cluster's ServiceMonitors as the Prometheus Operator writes
# them) scraping the brokers and the operator the way the chart's and the operator's
# ServiceMonitors say, on the e2e testbed:
#   ServiceMonitor and PrometheusRule CRDs -> helm install with the chart's ServiceMonitor and
#   PrometheusRule -> the example Cluster with metrics.serviceMonitor: true -> Prometheus, its
#   rule files from the PrometheusRules -> every target up with the operator's target labels;
#   every alert of the chart loaded and evaluating without error -> produce/consume load, a
#   consumer group lagging on purpose, a request of an unsupported version -> PromQL shows the
#   group's lag, bytes in and out by topic, request rates by API, errors by Kafka error name;
#   every query of the chart's Grafana dashboard returns data; exactly one active controller,
#   OxbowNoActiveController inactive -> a broker stopped (SIGSTOP) -> under-replicated
#   partitions > 0, OxbowUnderReplicatedPartitions and OxbowBrokerDown (that broker) pending or
#   firing. The rules' `for` (minutes) is longer than the suite waits: pending proves that the
#   chart's expression held on the real series.
# Waits are on conditions (kubectl wait, or a bounded poll of a PromQL result).
# Beside others: yes (its own testbed: control plane on e2e/lib/ports.py ports, its own 10.<k> pod network; no timing asserted)
# Expected time: 110 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
REPO="$PWD"
. e2e/k8s/lib.sh
. e2e/lib/suite.sh
NS=default
BOOTSTRAP=events-bootstrap.default.svc:9092

passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $*"; }
fail() {
  echo "not ok - $*" >&2
  {
    kubectl get clusters,topics,servicemonitors,pods,svc -A -o wide
    curl -fsS "$PROM/api/v1/targets?state=active" | python3 -c 'import json,sys; [print(t["labels"].get("job"), t["labels"].get("pod"), t["health"], t["lastError"]) for t in json.load(sys.stdin)["data"]["activeTargets"]]'
    tail -n 20 "$OXBOW_K8S_STATE/logs/prometheus.log"
    tail -n 30 "$OXBOW_K8S_STATE/pod-runner.log"
  } >&2 2>/dev/null || true
  echo "operator-prometheus: $passed passed, 1 failed"
  exit 1
}
k8s_local || suite_skip "Prometheus on the testbed (e2e/k8s/prometheus) with clients in a pod: OXBOW_K8S_EXTERNAL=1"

k8s_images
k8s_cluster_up
kubectl apply --server-side -f "$OXBOW_CACHE/k8s/bin/servicemonitor-crd.yaml" -f "$OXBOW_CACHE/k8s/bin/prometheusrule-crd.yaml" >/dev/null
kubectl wait --for=condition=Established crd/servicemonitors.monitoring.coreos.com crd/prometheusrules.monitoring.coreos.com --timeout=60s >/dev/null
k8s_pod_runner --selector app.kubernetes.io/name=oxbow-operator --namespace "$NS"
k8s_pod_runner --selector app.kubernetes.io/name=oxbow --namespace "$NS"
# The clients' pod: kafka-python and kcat of the host, in the pod's network namespace (no
# client image can be had here), hence the named opt-in.
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
example() { k8s_pod_exec "$NS" kafka-client python3 "$REPO/e2e/operator/example_client.py" "$@"; }

helm install oxbow charts/oxbow --set metrics.serviceMonitor.enabled=true --set metrics.prometheusRule.enabled=true \
  --wait --timeout 120s >/dev/null \
  || fail "helm install with metrics.serviceMonitor.enabled=true, metrics.prometheusRule.enabled=true"
python3 - manifests/cluster.yaml > "$OXBOW_K8S_STATE/cluster.yaml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
doc["spec"]["metrics"]["serviceMonitor"] = True
print(yaml.safe_dump(doc))
PY
kubectl apply -f "$OXBOW_K8S_STATE/cluster.yaml" -f manifests/topic.yaml >/dev/null
kubectl -n "$NS" wait --for=condition=Ready cluster/events --timeout=300s >/dev/null || fail "Cluster Ready"
kubectl -n "$NS" wait --for=condition=Ready topic/orders --timeout=120s >/dev/null || fail "Topic Ready"
kubectl -n "$NS" wait --for=create servicemonitor/events --timeout=60s >/dev/null || fail "the operator made no ServiceMonitor"
[ "$(kubectl -n "$NS" get servicemonitors -o name | sort | tr '\n' ' ')" = "servicemonitor.monitoring.coreos.com/events servicemonitor.monitoring.coreos.com/oxbow-operator " ] \
  || fail "ServiceMonitors: $(kubectl -n "$NS" get servicemonitors -o name | tr '\n' ' ')"
ok "ServiceMonitors from the chart (oxbow-operator) and the operator (events) exist"
# The chart's alert names, from the object the API server accepted (the Prometheus Operator's CRD schema).
chart_alerts="$(kubectl -n "$NS" get prometheusrule oxbow -o json | python3 -c '
import json, sys
print(" ".join(sorted(r["alert"] for g in json.load(sys.stdin)["spec"]["groups"] for r in g["rules"] if "alert" in r)))')" \
  || fail "the chart made no PrometheusRule"
for a in OxbowOfflinePartitions OxbowUnderMinIsrPartitions OxbowUnderReplicatedPartitions OxbowNoActiveController \
         OxbowBrokerFenced OxbowLogDirNearlyFull OxbowOfflineLogDir OxbowBrokerDown; do
  grep -qw "$a" <<<"$chart_alerts" || fail "the chart's PrometheusRule lacks $a: $chart_alerts"
done
ok "PrometheusRule from the chart (oxbow) accepted by the API server: $chart_alerts"

PROM="$("$REPO/e2e/k8s/prometheus" start)" || fail "e2e/k8s/prometheus start"
# q EXPR: the instant query's result as JSON lines {"metric": {...}, "value": V}
q() {
  curl -fsS --max-time 10 "$PROM/api/v1/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["status"] == "success", d
for r in d["data"]["result"]:
    print(json.dumps({"metric": r["metric"], "value": float(r["value"][1])}))'
}
has_data() { [ -n "$(q "$1")" ]; }
# alert_rules: "NAME STATE HEALTH [ERROR]" of every alerting rule Prometheus loaded from the chart's
# PrometheusRule (rule file default-oxbow.yaml, written by e2e/k8s/prometheus).
alert_rules() {
  curl -fsS --max-time 10 "$PROM/api/v1/rules?type=alert" | python3 -c '
import json, sys
for g in json.load(sys.stdin)["data"]["groups"]:
    if g["file"].endswith("/default-oxbow.yaml"):
        for r in g["rules"]:
            print(r["name"], r["state"], r["health"], r.get("lastError", ""))'
}
rule_query() {  # rule_query NAME: the loaded rule's PromQL
  curl -fsS --max-time 10 "$PROM/api/v1/rules?type=alert" | python3 -c '
import json, sys
print(*[r["query"] for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"] if r["name"] == sys.argv[1]], sep="")' "$1"
}
# alert_active NAME [LABEL=VALUE...]: the alert is pending or firing, with those labels
alert_active() {
  curl -fsS --max-time 10 "$PROM/api/v1/alerts" | python3 -c '
import json, sys
name, want = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
sys.exit(0 if any(a["labels"].get("alertname") == name and a["state"] in ("pending", "firing")
                  and all(a["labels"].get(k) == v for k, v in want.items())
                  for a in json.load(sys.stdin)["data"]["alerts"]) else 1)' "$@"
}
rules_evaluated() {
  local rules
  rules="$(alert_rules)" || return 1
  [ "$(awk '{print $1}' <<<"$rules" | LC_ALL=C sort | tr '\n' ' ')" = "$chart_alerts " ] && [ -z "$(awk '$3 != "ok"' <<<"$rules")" ]
}
positive() { q "$1" | python3 -c 'import json,sys; rs=[json.loads(l) for l in sys.stdin]; sys.exit(0 if rs and all(r["value"] > 0 for r in rs) else 1)'; }
labels_of() { q "$1" | python3 -c 'import json,sys; print(" ".join(sorted(json.loads(l)["metric"].get(sys.argv[1], "-") for l in sys.stdin)))' "$2"; }

targets_up() {
  [ "$(labels_of 'up{job="events-headless"} == 1' pod)" = "events-0 events-1 events-2" ] &&
    [ -n "$(labels_of 'up{job="oxbow-operator-metrics"} == 1' pod)" ]
}
until_true 90 targets_up || fail "targets: $(q up)"
row="$(q 'up{job="events-headless",pod="events-0"}')"
for l in '"namespace": "default"' '"service": "events-headless"' '"endpoint": "metrics"' '"container": "broker"'; do
  grep -qF "$l" <<<"$row" || fail "target labels of events-0 lack $l: $row"
done
ok "Prometheus (Kubernetes SD, role endpointslice) scrapes brokers $(labels_of 'up{job="events-headless"}' pod) and the operator $(labels_of 'up{job="oxbow-operator-metrics"}' pod), with namespace/service/pod/container/endpoint labels"
until_true 60 rules_evaluated || fail "the chart's alerting rules, loaded and evaluated (NAME STATE HEALTH ERROR): $(alert_rules | tr '\n' ';')"
ok "Prometheus loaded the chart's PrometheusRule as a rule file; every alert evaluates without error: $(alert_rules | awk '{print $1 "=" $2}' | tr '\n' ' ')"

# --- load, and a group that lags on purpose ------------------------------------------------------
work="$OXBOW_K8S_STATE/load"
mkdir -p "$work"
out="$(k8s_pod_exec "$NS" kafka-client python3 "$REPO/e2e/operator/kafka_client.py" "$BOOTSTRAP" produce-consume orders 300)" || fail "load: $out"
example consume-some "$BOOTSTRAP" orders lagging 50 >/dev/null || fail "the lagging group's consumer"
example produce-until "$BOOTSTRAP" orders "$work/stop" "$work/acked" 2>"$work/producer.err" &
producer=$!
# A consumer that keeps reading, so the bytes-out rate of the last minute is not zero by the time
# it is queried (ci55: the only fetches had been more than a minute before).
example consume-follow "$BOOTSTRAP" orders readers "$work/stop" 2>"$work/consumer.err" &
trap 'touch "$work/stop"; k8s_cleanup' EXIT
# A Topic of a Cluster that does not exist: the operator's reconcile fails, with back-off.
kubectl -n "$NS" apply -f - >/dev/null <<'EOF'
apiVersion: oxbow.dev/v1alpha1
kind: Topic
metadata: {name: ghost}
spec: {cluster: no-such-cluster, partitions: 1, replicationFactor: 1}
EOF

# A request of a version no broker serves (Metadata v99): refused with UNSUPPORTED_VERSION,
# counted in oxbow_server_request_errors_total under the Kafka error name.
k8s_pod_exec "$NS" kafka-client python3 -c '
import socket, struct, sys
host, port = sys.argv[1].rsplit(":", 1)
request = struct.pack(">hhih", 3, 99, 1, -1)
with socket.create_connection((host, int(port)), timeout=10) as sock:
    sock.sendall(struct.pack(">i", len(request)) + request)
    while sock.recv(4096):
        pass' "$BOOTSTRAP" || fail "a Metadata v99 request"
until_true 60 has_data 'oxbow_server_request_errors_total{api="Metadata",error="UNSUPPORTED_VERSION"}' \
  || fail "errors by name: $(q 'oxbow_server_request_errors_total')"
ok "errors by Kafka error name: $(labels_of 'oxbow_server_request_errors_total' error | tr ' ' '\n' | sort -u | tr '\n' ' ')"

until_true 90 positive 'oxbow_group_lag_messages{group="lagging"}' || fail "group lag: $(q 'oxbow_group_lag_messages')"
ok "consumer group lag: $(q 'oxbow_group_lag_messages{group="lagging"}' | head -n 1)"
until_true 90 positive 'sum by (topic) (rate(oxbow_server_bytes_in_total{topic="orders"}[1m]))' || fail "bytes in: $(q 'oxbow_server_bytes_in_total')"
until_true 90 positive 'sum by (topic) (rate(oxbow_server_bytes_out_total{topic="orders"}[1m]))' || fail "bytes out: $(q 'oxbow_server_bytes_out_total')"
ok "bytes in/out by topic: $(q 'sum by (topic) (rate(oxbow_server_bytes_in_total{topic="orders"}[1m]))') / $(q 'sum by (topic) (rate(oxbow_server_bytes_out_total{topic="orders"}[1m]))')"
until_true 90 positive 'sum by (api) (rate(oxbow_server_requests_total{api=~"Produce|Fetch"}[1m]))' || fail "request rates: $(q 'sum by (api) (rate(oxbow_server_requests_total[1m]))')"
ok "request rates by API: $(labels_of 'sum by (api) (rate(oxbow_server_requests_total[1m])) > 0' api)"

# --- every query of the chart's dashboard ----------------------------------------------------------
python3 - charts/oxbow/dashboards/oxbow.json > "$work/queries" <<'PY'
import json, sys
for panel in json.load(open(sys.argv[1]))["panels"]:
    for target in panel.get("targets", []):
        print("%s\t%s" % (panel["title"], target["expr"].replace("$__rate_interval", "1m")))
PY
[ "$(wc -l <"$work/queries")" -ge 10 ] || fail "dashboard queries: $(cat "$work/queries")"
while IFS=$'\t' read -r title expr; do
  until_true 120 has_data "$expr" || fail "dashboard panel '$title': no data for $expr"
done <"$work/queries"
ok "all $(wc -l <"$work/queries") queries of the chart's dashboard (charts/oxbow/dashboards/oxbow.json) return data"

# --- a healthy cluster: one active controller, OxbowNoActiveController quiet -------------------------
[ "$(q 'sum by (namespace, job) (oxbow_controller_active)' | python3 -c 'import json,sys; print(" ".join("%s/%s=%g" % (r["metric"].get("namespace"), r["metric"].get("job"), r["value"]) for r in map(json.loads, sys.stdin)))')" = "default/events-headless=1" ] \
  || fail "active controllers: $(q 'oxbow_controller_active')"
no_controller="$(rule_query OxbowNoActiveController)"
[ -n "$no_controller" ] || fail "OxbowNoActiveController not loaded"
[ -z "$(q "$no_controller")" ] || fail "OxbowNoActiveController's expression holds on a healthy cluster: $no_controller: $(q "$no_controller")"
[ -n "$(alert_rules | awk '$1 == "OxbowNoActiveController" && $2 == "inactive" && $3 == "ok"')" ] || fail "OxbowNoActiveController: $(alert_rules | grep OxbowNoActiveController)"
ok "healthy cluster: $(labels_of 'oxbow_controller_active == 1' pod) is the one active controller; OxbowNoActiveController ($no_controller) is empty and inactive"

# --- a stopped broker: under-replicated partitions, their alert, the broker down ------------------
# OxbowBrokerDown first: its scrapes time out at once, and the failing liveness probe (6 x 10s)
# has the pod runner restart the stopped container a minute or two later; the ISR shrinks
# after replica.lag.time.max.ms (30s).
pid="$(cat "$(ls "$OXBOW_K8S_STATE"/pods/"$NS".events-2.*/broker.log.pid | head -n 1)")"
kill -STOP "$pid"
until_true 45 alert_active OxbowBrokerDown namespace=default pod=events-2 \
  || { kill -CONT "$pid"; fail "OxbowBrokerDown for events-2 neither pending nor firing: $(q 'up{job="events-headless"}')"; }
ok "events-2 stopped (SIGSTOP): OxbowBrokerDown{pod=\"events-2\"} pending or firing"
until_true 150 positive 'sum(oxbow_replication_under_replicated_partitions) > 0' \
  || { kill -CONT "$pid"; fail "no under-replicated partitions with events-2 stopped: $(q 'oxbow_replication_under_replicated_partitions')"; }
urp="$(q 'sum(oxbow_replication_under_replicated_partitions)')"
ok "events-2 stopped: under-replicated partitions $urp"
until_true 60 alert_active OxbowUnderReplicatedPartitions namespace=default job=events-headless \
  || { kill -CONT "$pid"; fail "OxbowUnderReplicatedPartitions neither pending nor firing: $(alert_rules | tr '\n' ';')"; }
kill -CONT "$pid" 2>/dev/null || true
ok "events-2 stopped: OxbowUnderReplicatedPartitions pending or firing (alerts: $(alert_rules | awk '$2 != "inactive" {print $1 "=" $2}' | tr '\n' ' '))"

touch "$work/stop"
wait "$producer" || true   # the load generator; acks=all across a broker failure is 73-operator-example's check
echo "operator-prometheus: $passed passed, 0 failed, $SUITE_SKIPPED skipped"
suite_done
