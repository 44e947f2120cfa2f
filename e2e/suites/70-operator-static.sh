#!/usr/bin/env bash
# Operator packaging, offline: helm lint --strict, schema validation of every rendered
# object (kubernetes-validate --strict for built-in kinds, ../shared/tools/validate_cr.py for
# Cluster/Topic against the generated CRDs), bad CRs refused by the CRD schema, and the
# committed all-in-one install.yaml current with the chart.
# Beside others: yes (offline: helm and schema checks, no ports, no timing)
# Expected time: 60 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
export PATH="$OXBOW_CACHE/bin:$PATH"
VALIDATE_CR=../shared/tools/validate_cr.py
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
passed=0; failed=0
check() {  # check NAME COMMAND...: runs one check, counts it
  local name="$1"; shift
  if "$@" >"$work/out" 2>&1; then passed=$((passed + 1)); echo "ok   $name"
  else failed=$((failed + 1)); echo "FAIL $name"; sed 's/^/     /' "$work/out" | tail -40; fi
}
# refuse EXPECTED COMMAND...: the command must fail, and say EXPECTED (a crash, a missing
# file or a refusal for another reason is not the refusal this check is about).
refuse() {
  local expected="$1"; shift
  local out status=0
  out="$("$@" 2>&1)" || status=$?
  printf '%s\n' "$out"
  if [ "$status" -eq 0 ]; then echo "accepted: exit 0"; return 1; fi
  if grep -q '^Traceback ' <<<"$out"; then echo "the command crashed (exit $status)"; return 1; fi
  if ! grep -qF -- "$expected" <<<"$out"; then echo "refused (exit $status), but not with: $expected"; return 1; fi
}
# refuse_cr EXPECTED CR_FILE: validate_cr.py refuses the CR with exactly one error, EXPECTED.
refuse_cr() {
  local expected="$1" file="$2" errors
  refuse "$expected" python3 "$VALIDATE_CR" crds/oxbow.dev.yaml "$file" || return 1
  errors="$(python3 "$VALIDATE_CR" crds/oxbow.dev.yaml "$file" 2>&1 | grep -c '^ERROR ' || true)"
  if [ "$errors" != 1 ]; then echo "refused with $errors errors, expected exactly one: $expected"; return 1; fi
}

e2e/lib/build >/dev/null
operator="$CARGO_TARGET_DIR/debug/oxbow-operator"

all_on=(--set cluster.enabled=true --set metrics.serviceMonitor.enabled=true
        --set metrics.podMonitor.enabled=true --set metrics.dashboard.enabled=true
        --set metrics.prometheusRule.enabled=true
        --set 'topics[0].name=orders' --set 'topics[0].spec.partitions=3'
        --set 'users[0].name=orders-producer' --set 'users[0].spec.authentication.type=scram-sha-512'
        --set operator.replicas=2 --set 'operator.bootstrapOverrides[0]=ns/events=127.0.0.1:9092')
check "helm lint --strict (defaults)" helm lint --strict charts/oxbow
check "helm lint --strict (everything on)" helm lint --strict charts/oxbow "${all_on[@]}"
check "values.schema.json refuses a bad value" \
  refuse "at '/operator/replicas': minimum: got -1, want 0" helm template x charts/oxbow --set operator.replicas=-1
helm template oxbow charts/oxbow --namespace oxbow-system --include-crds "${all_on[@]}" > "$work/chart.yaml"
# ServiceMonitor/PodMonitor/PrometheusRule are Prometheus Operator kinds kubernetes-validate does
# not know (74-operator-prometheus applies them to the real API server with the operator's CRDs).
python3 - "$work/chart.yaml" "$work/chart-builtin.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
keep = [d for d in docs if not d["apiVersion"].startswith(("monitoring.coreos.com/", "oxbow.dev/"))]
yaml.safe_dump_all(keep, open(sys.argv[2], "w"))
PY
check "chart objects: kubernetes-validate --strict" kubernetes-validate --strict --quiet "$work/chart-builtin.yaml"
check "chart Cluster/Topic/User: validate_cr.py" python3 "$VALIDATE_CR" crds/oxbow.dev.yaml "$work/chart.yaml"
check "chart CRDs = crds/" cmp crds/oxbow.dev.yaml charts/oxbow/crds/oxbow.dev.yaml
check "manifests: validate_cr.py" python3 "$VALIDATE_CR" crds/oxbow.dev.yaml manifests/cluster.yaml manifests/topic.yaml manifests/cluster-secured.yaml manifests/users.yaml manifests/cluster-external.yaml
check "manifests/install.yaml: kubernetes-validate --strict" kubernetes-validate --strict --quiet manifests/install.yaml
bash manifests/generate.sh "$work/install.yaml"
check "manifests/install.yaml is current (manifests/generate.sh)" diff -u manifests/install.yaml "$work/install.yaml"

# Objects the operator builds, for the example and for variants covering every option.
variant() {  # variant NAME PYTHON-EXPR-ON-spec
  python3 - manifests/cluster.yaml "$work/cluster-$1.yaml" "$2" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1])); spec = doc["spec"]
exec(sys.argv[3])
yaml.safe_dump(doc, open(sys.argv[2], "w"))
PY
}
variant example "pass"
variant nodeport "spec['listeners'] = {'external': {'type': 'NodePort', 'nodePortBase': 31000, 'advertisedHost': 'kafka.example.com'}}"
variant loadbalancer "spec['listeners'] = {'external': {'type': 'LoadBalancer'}, 'advertise': 'PodIP'}; spec['metrics']['serviceMonitor'] = True"
variant norack "spec['rack'] = {'enabled': False}; spec['replicas'] = 1; spec['controllerVoters'] = 1"
variant scheduling "spec['podTemplate'] = {'tolerations': [{'key': 'dedicated', 'operator': 'Equal', 'value': 'kafka', 'effect': 'NoSchedule'}], 'nodeSelector': {'disk': 'ssd'}, 'priorityClassName': 'high', 'affinity': {'podAntiAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': [{'labelSelector': {'matchLabels': {'app.kubernetes.io/instance': 'events'}}, 'topologyKey': 'kubernetes.io/hostname'}]}}}"
for name in example nodeport loadbalancer norack scheduling; do
  check "variant $name: validate_cr.py" python3 "$VALIDATE_CR" crds/oxbow.dev.yaml "$work/cluster-$name.yaml"
  "$operator" render "$work/cluster-$name.yaml" > "$work/built-$name.yaml"
  python3 - "$work/built-$name.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d and not d["apiVersion"].startswith("monitoring.coreos.com/")]
yaml.safe_dump_all(docs, open(sys.argv[1], "w"))
PY
  check "variant $name: built objects pass kubernetes-validate --strict" kubernetes-validate --strict --quiet "$work/built-$name.yaml"
done

# Bad custom resources: each one alone must fail the CRD schema, for the reason its
# annotation e2e.oxbow.dev/refused-with names.
python3 - e2e/operator/bad-crs.yaml "$work" <<'PY'
import sys, yaml
for i, d in enumerate(d for d in yaml.safe_load_all(open(sys.argv[1])) if d):
    meta = d["metadata"]
    expected = meta.pop("annotations").pop("e2e.oxbow.dev/refused-with")
    base = f"{sys.argv[2]}/bad-{i}-{meta['name']}"
    yaml.safe_dump(d, open(base + ".yaml", "w"))
    open(base + ".expected", "w").write(f"{d['kind']}/{meta['name']}: {expected}")
PY
for bad in "$work"/bad-*.yaml; do
  check "refused by schema: $(basename "$bad" .yaml)" refuse_cr "$(cat "${bad%.yaml}.expected")" "$bad"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
