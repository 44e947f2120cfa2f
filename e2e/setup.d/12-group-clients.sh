#!/usr/bin/env bash
# Installs the client libraries of the consumer-group suites (idempotent, cached outside
# the clone): confluent-kafka (librdkafka) and kafka-python in a venv, kafkajs with npm.
set -euo pipefail
. "$(dirname "$0")/../lib/fetch.sh"
cache="${OXBOW_CACHE:-$HOME/.cache/oxbow}/group-clients"
mkdir -p "$cache"
venv="$cache/venv"
wanted="confluent-kafka==2.16.1 kafka-python==3.0.12"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$cache/venv.ok" 2>/dev/null)" != "$wanted" ]; then
  echo "Installing $wanted into $venv"
  python3 -m venv "$venv"
  fetch "$wanted" "PyPI" "$venv/bin/pip" install -q $wanted
  echo "$wanted" >"$cache/venv.ok"
fi
node_dir="$cache/node"
if [ ! -e "$node_dir/node_modules/kafkajs/package.json" ]; then
  echo "Installing kafkajs into $node_dir"
  mkdir -p "$node_dir"
  (cd "$node_dir" && { [ -e package.json ] || echo '{"private":true}' >package.json; })
  fetch "kafkajs@2.2.4" "the npm registry" npm install --prefix "$node_dir" --silent --no-audit --no-fund kafkajs@2.2.4
fi
