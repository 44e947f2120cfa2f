#!/usr/bin/env bash
# Python tools of the operator suites: offline validation of rendered objects
# (kubernetes-validate, PyYAML, jsonschema) and a real Kafka client for the operator flow
# on the Kubernetes testbed (kafka-python).
set -euo pipefail
. "$(dirname "$0")/../lib/fetch.sh"
want=(kubernetes-validate PyYAML jsonschema kafka-python)
if python3 -c 'import kubernetes_validate, yaml, jsonschema, kafka' 2>/dev/null; then
  echo "operator python tools present"; exit 0
fi
pip install --quiet --disable-pip-version-check --break-system-packages "${want[@]}" 2>/dev/null \
  || fetch "${want[*]}" "PyPI" pip install --quiet --disable-pip-version-check "${want[@]}"
