#!/usr/bin/env bash
# Builds (cold) or reuses (warm) the e2e Kubernetes control plane; see e2e/k8s/README.md.
set -euo pipefail
exec bash "$(dirname "$0")/../k8s/install"
