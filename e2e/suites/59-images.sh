#!/usr/bin/env bash
# The container images (e2e/images/build), run with rootful podman + runc as a user would:
#   build both images -> their references are the chart's defaults (helm template) and the
#   operator's -> the images hold no shell, run as uid 65532, broker ≤ 40 MB compressed ->
#   broker with a named data volume, --read-only --user 65532 --cap-drop ALL (the
#   securityContext the chart and the operator's StatefulSet ask for): kcat produces and
#   consumes through the published port -> SIGTERM: exit 0 and the clean-shutdown marker on
#   the volume -> a new container on the same volume: the same records, no recovery ->
#   a log dir outside the volume fails on the read-only root -> operator image: --version,
#   crdgen equals crds/, render names the built images, /healthz answers and /readyz
#   refuses while the API server does not answer -> against the e2e control plane's real
#   kube-apiserver: ready, takes the Lease, reconciles a Cluster into a StatefulSet running
#   the built images; its rack-init writes a node's zone.
# Every wait is a bounded poll of a condition. Ports (Kafka, broker metrics, operator metrics,
# an API server that never answers) come from e2e/lib/free-port: fixed ones in the ephemeral
# range collided with other sockets ("Address already in use" for the operator's metrics).
# Expected time: 100 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
. e2e/lib/suite.sh
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export PATH="$OXBOW_CACHE/bin:$PATH"   # helm (e2e/setup.d/20-helm.sh)

if ! command -v podman >/dev/null; then
  case "${CI:-}" in
    "" | false | 0) suite_skip "podman not installed (e2e/setup.d/15-podman.sh installs it)" ;;
    *) echo "images: podman not installed under CI=$CI (e2e/setup.d/15-podman.sh installs it)" >&2; exit 1 ;;
  esac
fi

read -r KAFKA_PORT METRICS_PORT OPERATOR_PORT STALL_PORT < <(e2e/lib/free-port 4)
RUN_AS=65532:65532
tag="oxbow-e2e-images-$$"
broker="$tag-broker" operator="$tag-operator" volume="$tag-data"
work="$(mktemp -d "${TMPDIR:-/tmp}/oxbow-images.XXXXXX")"
stall_pid=""
cleanup() {
  # --ignore: a container that never started is no error, and the others still go; -v:
  # their anonymous volumes (the image declares VOLUME /var/lib/oxbow) go with them.
  podman rm -f -v --ignore -t 0 "$broker" "$broker-ro" "$operator" >/dev/null 2>&1 || true
  podman volume rm -f "$volume" >/dev/null 2>&1 || true
  [ -z "$stall_pid" ] || kill "$stall_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $*"; }
fail() {
  echo "not ok - $*" >&2
  for c in "$broker" "$broker-ro" "$operator"; do
    # The processes log to stderr; podman logs replays it on its stderr.
    podman container exists "$c" || continue
    podman logs "$c" 2>&1 | tail -n 20 | sed "s/^/[$c] /" >&2 || true
  done
  echo "images: $passed passed, 1 failed"
  exit 1
}
wait_for() {   # wait_for SECONDS CHECK ARGS...: bounded poll of a condition
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

# --- build -----------------------------------------------------------------------------------
t0=$(date +%s)
bash e2e/images/build | tee "$work/build.log"
mapfile -t refs < <(tail -n 2 "$work/build.log")
BROKER_IMAGE="${refs[0]}" OPERATOR_IMAGE="${refs[1]}"
for ref in "$BROKER_IMAGE" "$OPERATOR_IMAGE"; do
  podman image exists "$ref" || fail "images/build printed $ref, which podman does not have"
done
ok "built $BROKER_IMAGE and $OPERATOR_IMAGE in $(( $(date +%s) - t0 ))s"

revision="$(git rev-parse --short=12 HEAD)"
for ref in "$BROKER_IMAGE" "$OPERATOR_IMAGE"; do
  podman image inspect --format '{{join .RepoTags "\n"}}' "$ref" | grep -c -- "-g$revision" >/dev/null \
    || fail "$ref has no tag naming revision $revision"
done
ok "both images also tagged with the git revision $revision"

# The chart as shipped (no overrides) pulls exactly these, for the operator and for brokers.
helm template oxbow charts/oxbow >"$work/chart.yaml"
grep -q "image: \"$OPERATOR_IMAGE\"" "$work/chart.yaml" || fail "the chart's operator image is not $OPERATOR_IMAGE"
grep -A1 -- '- name: OXBOW_BROKER_IMAGE' "$work/chart.yaml" | grep -c "value: \"$BROKER_IMAGE\"" >/dev/null \
  || fail "the chart's broker image is not $BROKER_IMAGE"
grep -A1 -- '- name: OXBOW_OPERATOR_IMAGE' "$work/chart.yaml" | grep -c "value: \"$OPERATOR_IMAGE\"" >/dev/null \
  || fail "the chart's rack-init image is not $OPERATOR_IMAGE"
ok "helm template charts/oxbow (defaults) names exactly the built images"

# --- what the images hold --------------------------------------------------------------------
for ref in "$BROKER_IMAGE" "$OPERATOR_IMAGE"; do
  user="$(podman image inspect --format '{{.Config.User}}' "$ref")"
  [ "$user" = "$RUN_AS" ] || fail "$ref runs as '$user', not $RUN_AS"
  for shell in /bin/sh /bin/bash /usr/bin/sh; do
    # 127: podman's "command not found" (the runtime found no such file in the image).
    status=0
    podman run --rm --entrypoint "$shell" "$ref" -c true >/dev/null 2>&1 || status=$?
    [ "$status" = 127 ] || fail "$ref: running $shell gave exit $status, not 127 (not found)"
  done
done
ok "both images run as $RUN_AS by default and hold no shell"

archive="$OXBOW_CACHE/images/oxbow-${BROKER_IMAGE##*:}.tar"
[ -s "$archive" ] || fail "no archive $archive"
compressed=$(gzip -6 -c "$archive" | wc -c)
[ "$compressed" -le $((40 * 1000 * 1000)) ] || fail "broker image archive is $compressed bytes gzip-compressed, over 40 MB"
# The archive loads as an image of the same name (what kind load / k3d import do).
podman image inspect --format '{{.Id}}' "$BROKER_IMAGE" >"$work/id"
loaded="$(podman load -q -i "$archive")"
case "$loaded" in *"$BROKER_IMAGE"*) ;; *) fail "podman load of $archive gave: $loaded" ;; esac
[ "$(podman image inspect --format '{{.Id}}' "$BROKER_IMAGE")" = "$(cat "$work/id")" ] || fail "the archive holds a different image"
ok "broker archive $archive: $((compressed / 1000)) kB gzip-compressed (≤ 40 MB), loads as $BROKER_IMAGE"

# --- the broker image with a data volume, as the StatefulSet runs it -------------------------
podman volume create "$volume" >/dev/null
data="$(podman volume inspect --format '{{.Mountpoint}}' "$volume")"
# The securityContext of the operator's StatefulSet: non-root uid/gid 65532, read-only root,
# all capabilities dropped, no privilege escalation. log.dirs as the operator renders it.
start_broker() {
  podman run -d --name "$broker" --read-only --user "$RUN_AS" --cap-drop ALL \
    --security-opt no-new-privileges -v "$volume:/var/lib/oxbow" \
    -p "127.0.0.1:$KAFKA_PORT:9092" -p "127.0.0.1:$METRICS_PORT:9644" "$BROKER_IMAGE" \
    --override node.id=0 --override listeners=PLAINTEXT://0.0.0.0:9092 \
    --override "advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT" \
    --override metrics.listener=0.0.0.0:9644 --override log.dirs=/var/lib/oxbow/data >/dev/null
}
ready() { curl -fsS --max-time 2 "http://127.0.0.1:$METRICS_PORT/readyz" >/dev/null 2>&1; }
start_broker
wait_for 60 ready || fail "the broker container never became ready"
pid="$(podman inspect --format '{{.State.Pid}}' "$broker")"
uids="$(awk '/^Uid:/ {print $2, $3, $4, $5}' "/proc/$pid/status")"
[ "$uids" = "65532 65532 65532 65532" ] || fail "broker process uids: $uids"
caps="$(awk '/^CapEff:/ {print $2}' "/proc/$pid/status")"
[ "$caps" = 0000000000000000 ] || fail "broker process effective capabilities: $caps"
ok "broker container ready: --read-only, uid/gid 65532, no capabilities"

for i in $(seq 1 500); do printf 'key-%d:value-%d-%s\n' "$i" "$i" "$(printf '%0*d' $((i % 97)) 0)"; done >"$work/sent"
kcat -b "127.0.0.1:$KAFKA_PORT" -t images -K: -P -X acks=all -l "$work/sent" \
  || fail "kcat could not produce through the container"
consume() {
  kcat -b "127.0.0.1:$KAFKA_PORT" -t images -C -o beginning -e -q -f '%o %k:%s\n' >"$work/got" 2>"$work/kcat.err"
}
expected() { awk '{print NR - 1, $0}' "$work/sent"; }
consume || fail "kcat could not consume: $(cat "$work/kcat.err")"
diff <(expected) "$work/got" >/dev/null || fail "consumed records differ from produced ($(wc -l <"$work/got") lines)"
ok "kcat produced 500 records through the published port and read them back at offsets 0-499"

# SIGTERM (podman stop's signal) -> controlled shutdown -> the clean-shutdown marker.
[ "$(podman inspect --format '{{.Config.StopSignal}}' "$broker")" = 15 ] \
  || [ "$(podman inspect --format '{{.Config.StopSignal}}' "$broker")" = SIGTERM ] \
  || fail "stop signal is $(podman inspect --format '{{.Config.StopSignal}}' "$broker")"
podman stop -t 60 "$broker" >/dev/null
status="$(podman inspect --format '{{.State.ExitCode}}' "$broker")"
[ "$status" = 0 ] || fail "broker exited $status after SIGTERM"
podman logs "$broker" 2>&1 | grep -c "SIGTERM received" >/dev/null || fail "the broker did not log the SIGTERM"
[ -f "$data/data/.oxbow-clean-shutdown" ] || fail "no clean-shutdown marker in the volume: $(ls -a "$data/data")"
[ -d "$data/data/images-0" ] || fail "no partition directory images-0 in the volume"
foreign="$(find "$data" ! -uid 65532 -print -quit)"
[ -z "$foreign" ] || fail "$foreign on the volume is not owned by uid 65532"
ok "SIGTERM: exit 0, .oxbow-clean-shutdown and the partition on the volume, every file owned by 65532"

podman rm "$broker" >/dev/null
start_broker
wait_for 60 ready || fail "the broker did not become ready again on the same volume"
podman logs "$broker" 2>&1 | grep -c "unclean shutdown" >/dev/null && fail "the restarted broker recovered as after an unclean shutdown"
consume || fail "kcat could not consume after the restart: $(cat "$work/kcat.err")"
diff <(expected) "$work/got" >/dev/null || fail "records after the restart differ ($(wc -l <"$work/got") lines)"
printf 'after:restart\n' | kcat -b "127.0.0.1:$KAFKA_PORT" -t images -K: -P -X acks=all || fail "produce after restart"
consume
[ "$(tail -n 1 "$work/got")" = "500 after:restart" ] || fail "the next record after the restart: $(tail -n 1 "$work/got")"
ok "a new container on the same volume: the 500 records intact, no recovery, the next one at offset 500"
podman stop -t 60 "$broker" >/dev/null

# (Pipelines into grep use -c, not -q: -q exits at the first match and, under pipefail, the
# writer's SIGPIPE would fail the check.)
# The root filesystem is really read-only: a log dir outside the volume cannot be created.
status=0
podman run --name "$broker-ro" --read-only --user "$RUN_AS" --cap-drop ALL "$BROKER_IMAGE" \
  --override log.dirs=/srv/oxbow-data --override metrics.listener= >/dev/null 2>&1 || status=$?
[ "$status" != 0 ] || fail "the broker started with a log dir on the read-only root"
podman logs "$broker-ro" 2>&1 | grep -ci "read-only file system" >/dev/null || fail "no read-only error: $(podman logs "$broker-ro" 2>&1 | tail -n 3)"
ok "a log dir outside the volume fails on the read-only root (exit $status, 'Read-only file system')"

# --- the operator image ----------------------------------------------------------------------
op() { podman run --rm --read-only --user "$RUN_AS" --cap-drop ALL "$@"; }
version="$(op "$OPERATOR_IMAGE" --version)"
[ "$version" = "oxbow-operator ${OPERATOR_IMAGE##*:}" ] || fail "operator --version: $version"
op "$OPERATOR_IMAGE" --help | grep -c "rack-init" >/dev/null || fail "operator --help lists no rack-init"
op "$OPERATOR_IMAGE" crdgen >"$work/crds.yaml"
cmp -s "$work/crds.yaml" crds/oxbow.dev.yaml || fail "crdgen in the image differs from crds/oxbow.dev.yaml"
op -v "$PWD/manifests/cluster.yaml:/cluster.yaml:ro" "$OPERATOR_IMAGE" render /cluster.yaml >"$work/rendered.yaml" \
  || fail "render in the image"
grep -q "image: $BROKER_IMAGE\$" "$work/rendered.yaml" || fail "rendered StatefulSet does not run $BROKER_IMAGE"
grep -q "image: $OPERATOR_IMAGE\$" "$work/rendered.yaml" || fail "rendered rack-init does not run $OPERATOR_IMAGE"
ok "operator image: --version ${OPERATOR_IMAGE##*:}, crdgen equals crds/, render names the built images"

# `run` serves /healthz before it reaches the API server and /readyz only once it has listed
# Clusters. An API server that accepts connections and never answers holds it in between.
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
held = []
while True:
    held.append(s.accept()[0])   # keep every connection open, say nothing
' "$STALL_PORT" &
stall_pid=$!
stall_listening() { [ -n "$(ss -Hltn "sport = :$STALL_PORT")" ]; }
wait_for 10 stall_listening || fail "the silent API server never listened on $STALL_PORT"
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: stall, cluster: {server: "https://127.0.0.1:$STALL_PORT", insecure-skip-tls-verify: true}}]
users: [{name: nobody, user: {token: none}}]
contexts: [{name: stall, context: {cluster: stall, user: nobody}}]
current-context: stall
EOF
chmod 0644 "$work/kubeconfig"
podman run -d --name "$operator" --read-only --user "$RUN_AS" --cap-drop ALL --network host \
  -v "$work/kubeconfig:/kubeconfig:ro" -e KUBECONFIG=/kubeconfig "$OPERATOR_IMAGE" \
  run --metrics-addr "127.0.0.1:$OPERATOR_PORT" --leader-election false >/dev/null
healthy() { curl -fsS --max-time 2 "http://127.0.0.1:$OPERATOR_PORT/healthz" >/dev/null 2>&1; }
wait_for 30 healthy || fail "the operator container never answered /healthz"
code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$OPERATOR_PORT/readyz")"
[ "$code" = 503 ] || fail "operator /readyz answered $code while the API server is silent"
curl -fsS --max-time 2 "http://127.0.0.1:$OPERATOR_PORT/metrics" | grep -c '^oxbow_operator_leader 0' >/dev/null || fail "operator /metrics: no oxbow_operator_leader 0 before it reached the API server"
[ "$(podman inspect --format '{{.State.Running}}' "$operator")" = true ] || fail "the operator exited"
ok "operator container (--read-only, uid 65532): /healthz 200, /readyz 503 and /metrics while the API server is silent"

podman rm -f -t 0 "$operator" >/dev/null

# --- the operator image against a real API server (e2e/k8s: kube-apiserver, kwok nodes) -----
# No pod runner here: the StatefulSet's pods are scheduled and never run; what is tested is
# the image's operator talking to the API server (TLS, token, watch, server-side apply,
# Lease) and the image's rack-init writing a node's zone, both read-only as uid 65532.
if [ ! -x "$OXBOW_CACHE/k8s/bin/kube-apiserver" ]; then
  suite_skip_check "operator image against an API server: the e2e control plane is not built (e2e/setup.d/30-k8s.sh)"
else
  . e2e/k8s/lib.sh
  k8s_cluster_up
  trap 'cleanup; k8s_cleanup' EXIT   # k8s_cluster_up set its own EXIT trap: keep both
  NS=oxbow-images
  k8s_namespace "$NS"
  kubectl apply --server-side -f crds/oxbow.dev.yaml >/dev/null
  kubectl wait --for=condition=Established crd/clusters.oxbow.dev crd/topics.oxbow.dev --timeout=60s >/dev/null
  # One file with the CA and token inline, readable by uid 65532 inside the container.
  kubectl config view --raw --flatten --minify >"$work/kubeconfig.api"
  chmod 0644 "$work/kubeconfig.api"
  api=(--read-only --user "$RUN_AS" --cap-drop ALL --network host
       -v "$work/kubeconfig.api:/kubeconfig:ro" -e KUBECONFIG=/kubeconfig)
  podman run -d --name "$operator" "${api[@]}" -e POD_NAMESPACE="$NS" -e POD_NAME=operator-from-image \
    "$OPERATOR_IMAGE" run --metrics-addr "127.0.0.1:$OPERATOR_PORT" >/dev/null
  operator_ready() { curl -fsS --max-time 2 "http://127.0.0.1:$OPERATOR_PORT/readyz" >/dev/null 2>&1; }
  wait_for 60 operator_ready || fail "the operator container never became ready against the API server"
  holder() { kubectl -n "$NS" get lease oxbow-operator -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
  holds() { [ "$(holder)" = operator-from-image ]; }
  wait_for 60 holds || fail "the operator container did not take the Lease (holder: $(holder))"
  ok "operator container against kube-apiserver: /readyz 200, holds Lease $NS/oxbow-operator"

  printf '%s\n' "apiVersion: oxbow.dev/v1alpha1" "kind: Cluster" \
    "metadata: {name: images, namespace: $NS}" \
    "spec: {replicas: 1, controllerVoters: 1, storage: {size: 1Gi}, rack: {enabled: true}}" \
    | kubectl apply -f - >/dev/null
  sts_exists() { kubectl -n "$NS" get statefulset images >/dev/null 2>&1; }
  wait_for 60 sts_exists || fail "the operator container built no StatefulSet for Cluster images"
  image="$(kubectl -n "$NS" get sts images -o jsonpath='{.spec.template.spec.containers[0].image}')"
  [ "$image" = "$BROKER_IMAGE" ] || fail "the StatefulSet runs $image, not $BROKER_IMAGE"
  image="$(kubectl -n "$NS" get sts images -o jsonpath='{.spec.template.spec.initContainers[0].image}')"
  [ "$image" = "$OPERATOR_IMAGE" ] || fail "rack-init runs $image, not $OPERATOR_IMAGE"
  owner="$(kubectl -n "$NS" get sts images -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')"
  [ "$owner" = Cluster/images ] || fail "StatefulSet owned by $owner"
  ok "the operator container reconciled a Cluster: StatefulSet owned by it, running $BROKER_IMAGE, rack-init $OPERATOR_IMAGE"

  node="$(kubectl get nodes -o jsonpath='{.items[0].metadata.name}')"
  zone="$(kubectl get node "$node" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}')"
  mkdir "$work/rack" && chown "$RUN_AS" "$work/rack"   # the emptyDir the init container writes
  podman run --rm "${api[@]}" -v "$work/rack:/var/run/oxbow" "$OPERATOR_IMAGE" \
    rack-init --node "$node" --out /var/run/oxbow/rack.yaml >/dev/null 2>&1 || fail "rack-init in the image failed"
  grep -qx "broker.rack: \"$zone\"" "$work/rack/rack.yaml" || fail "rack-init wrote: $(cat "$work/rack/rack.yaml")"
  ok "rack-init from the image (read-only, uid 65532) wrote broker.rack: $zone for node $node"
fi

echo "images: $passed passed, 0 failed"
suite_done
