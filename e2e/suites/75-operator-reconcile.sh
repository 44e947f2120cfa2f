#!/usr/bin/env bash
# The operator's reconcile() against a real API server (operator/tests/reconcile_api): the
# e2e/k8s testbed (real kube-apiserver, controller manager, scheduler; kwok nodes), the
# Cluster and Topic reconcilers called directly, a fake Kafka cluster on loopback standing
# in for the brokers' admin API. Checks every reconcile step through the API server and the
# fake: finalizers, owned objects (owner references, spec from the CR), status conditions
# and observedGeneration, events, idempotence (no resourceVersion moves), spec changes,
# the roll one broker at a time, the roll gate closed while partitions are under-replicated,
# topic create/grow/config/delete, deletion with finalizers and garbage collection, and an
# upgrade (spec.version rolled behind the gate, then every feature level finalized in one
# UpdateFeatures, held by spec.features, a refusal shown as a condition, a release below the
# finalized levels refused).
#
# The tests are #[ignore]d in `cargo test` (they need an API server) and fail without
# KUBECONFIG; this suite is what runs them. No pod runner: the brokers are the fake.
# Beside others: yes (its own testbed: control plane on e2e/lib/ports.py ports, its own 10.<k> pod network; no timing asserted)
# Expected time: 90 s (warm, 2-core machine; e2e/run warns past twice that)
set -euo pipefail
cd "$(dirname "$0")/../.."
export OXBOW_CACHE="${OXBOW_CACHE:-$HOME/.cache/oxbow}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$OXBOW_CACHE/target}"
. e2e/k8s/lib.sh
. e2e/lib/suite.sh

# The test reports the fake brokers' pods Ready itself, as the kubelet would; on a real
# cluster the kubelet owns that status (and cannot run the test's image), so only the
# testbed's kwok nodes can host the scenario. Under CI=true e2e/run fails on this skip.
k8s_local || suite_skip "reconcile_api on an external cluster (OXBOW_K8S_EXTERNAL=1): its kubelets own pod readiness, which the test stands in for"

# Built before the testbed starts, so the control plane does not idle through a compile.
cargo test --locked --workspace --test reconcile_api --no-run

k8s_cluster_up
# The tests create (and delete) these; listed so that an external cluster keeps none.
K8S_NAMESPACES+=(oxbow-reconcile-healthy oxbow-reconcile-under-replicated oxbow-reconcile-secured oxbow-reconcile-upgrade)
t0=$SECONDS
cargo test --locked --workspace --test reconcile_api -- --ignored --test-threads 2
echo "ok operator-reconcile: reconcile() against the API server, every scenario, in $((SECONDS - t0)) s"
