# Helpers for e2e suites that need a Kubernetes cluster. Source it from a suite:
#
#   . e2e/k8s/lib.sh
#   k8s_cluster_up                       # private local cluster (or $KUBECONFIG's with OXBOW_K8S_EXTERNAL=1)
#   k8s_images                           # the images pods run from: built if stale, loaded into podman
#   k8s_pod_runner --selector app=oxbow  # local cluster only: run those pods' containers from their
#                                        # images (--host-processes: test fixtures' commands on the host)
#   until_true 30 some_check ARGS...     # bounded poll of a condition kubectl cannot wait on
#   k8s_pod_exec NS POD CMD...           # run CMD in the pod's network namespace (its IP, its
#                                        # resolv.conf); kubectl exec on an external cluster
#
# k8s_cluster_up installs an EXIT trap that stops the pod runners and runs e2e/k8s/down
# (locally) or deletes the suite's namespaces listed in K8S_NAMESPACES (external cluster).
# shellcheck shell=bash

K8S_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export PATH="$OXBOW_CACHE/k8s/bin:$PATH"
K8S_EXTERNAL="${OXBOW_K8S_EXTERNAL:-}"
K8S_RUNNERS=()
K8S_NAMESPACES=()

k8s_local() { [ -z "$K8S_EXTERNAL" ]; }

k8s_cleanup() {
  if k8s_local; then
    local pid
    for pid in "${K8S_RUNNERS[@]}"; do kill "$pid" 2>/dev/null || true; done
    "$K8S_DIR/down"
  else
    local ns
    for ns in "${K8S_NAMESPACES[@]}"; do
      kubectl delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    done
    rm -rf "$OXBOW_K8S_STATE"
  fi
}

k8s_cluster_up() {
  # A private cluster state, so that a developer's own `e2e/k8s/up` is never touched.
  OXBOW_K8S_STATE="$(mktemp -d "${TMPDIR:-/tmp}/oxbow-k8s-suite.XXXXXX")"
  export OXBOW_K8S_STATE
  trap k8s_cleanup EXIT
  if k8s_local; then
    KUBECONFIG="$("$K8S_DIR/up" | tail -n 1)"
    export KUBECONFIG
  fi
}

# k8s_namespace NAME: creates it and waits for its default service account.
k8s_namespace() {
  K8S_NAMESPACES+=("$1")
  kubectl create namespace "$1" >/dev/null
  kubectl -n "$1" wait --for=create serviceaccount/default --timeout=60s >/dev/null
}

# Oxbow's images, built from this tree if stale (e2e/images/build, a release build) and loaded
# into podman from their docker-archives, so the pod runner finds what the chart names. Call
# it before k8s_cluster_up, so the control plane does not idle through a build. On an
# external cluster the user loads the images into it (e2e/images/README.md).
# Sets K8S_BROKER_IMAGE and K8S_OPERATOR_IMAGE (the chart's default references).
k8s_images() {
  local out
  out="$("$K8S_DIR/images" --build)" || { echo "k8s_images: e2e/k8s/images --build failed" >&2; return 1; }
  K8S_BROKER_IMAGE="$(sed -n '1s/ .*//p' <<<"$out")"
  K8S_OPERATOR_IMAGE="$(sed -n '2s/ .*//p' <<<"$out")"
  echo "images: $(tr '\n' ' ' <<<"$out")"
}

# k8s_pods_from_images NS SELECTOR: every container of those pods reports as its imageID the
# id podman holds for its image, i.e. the pod runner ran it from that image; prints one
# "pod/container image id" line each. Local cluster only (a real kubelet reports registry digests).
k8s_pods_from_images() {
  kubectl -n "$1" get pods -l "$2" -o json | python3 -c '
import json, subprocess, sys
pods = json.load(sys.stdin)["items"]
if not pods:
    sys.exit("no pods match")
for pod in pods:
    statuses = pod["status"].get("containerStatuses") or []
    if len(statuses) != len(pod["spec"]["containers"]):
        sys.exit("%s: %d container statuses for %d containers" % (pod["metadata"]["name"], len(statuses), len(pod["spec"]["containers"])))
    for st in statuses:
        held = subprocess.run(["podman", "image", "inspect", "--format", "{{.Id}}", st["image"]],
                              capture_output=True, text=True).stdout.strip()
        if not held or st.get("imageID") != "sha256:" + held:
            sys.exit("%s/%s: imageID %r, podman holds %s as %r" % (pod["metadata"]["name"], st["name"], st.get("imageID"), st["image"], held))
        print("%s/%s %s %s" % (pod["metadata"]["name"], st["name"], st["image"], held[:12]))'
}

k8s_pod_runner() {
  k8s_local || return 0
  "$K8S_DIR/pod-runner" "$@" >>"$OXBOW_K8S_STATE/pod-runner.log" 2>&1 &
  K8S_RUNNERS+=($!)
}

k8s_pod_exec() {
  local ns="$1" pod="$2"; shift 2
  if ! k8s_local; then kubectl -n "$ns" exec "$pod" -- "$@"; return; fi
  local uid netid
  uid="$(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.metadata.uid}' | tr -d -)"
  netid="$(sed -n 's/^OXBOW_K8S_NETID=//p' "$OXBOW_K8S_STATE/env")"
  [ -n "$uid" ] && [ -n "$netid" ] || { echo "k8s_pod_exec: no pod $ns/$pod or no pod network" >&2; return 1; }
  ip netns exec "ox$netid-p${uid:0:12}" "$@"
}

until_true() {
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.2   # poll interval of a condition check
  done
}
