#!/usr/bin/env bash
# Python tools of the operator suites: offline validation of rendered objects
# (kubernetes-validate, PyYAML, jsonschema), the API-server test double (kmock==0.8) and
# a real Kafka client for the operator flow (kafka-python).
set -euo pipefail
want=(kubernetes-validate PyYAML jsonschema "kmock==0.8" kafka-python)
if python3 -c 'import kubernetes_validate, yaml, jsonschema, kmock, kafka' 2>/dev/null \
    && python3 -c 'import importlib.metadata as m, sys; sys.exit(m.version("kmock") != "0.8")' 2>/dev/null; then
  echo "operator python tools present"; exit 0
fi
pip install --quiet --disable-pip-version-check --break-system-packages "${want[@]}" 2>/dev/null \
  || pip install --quiet --disable-pip-version-check "${want[@]}"
