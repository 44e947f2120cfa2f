#!/usr/bin/env bash
# Installs the real Kafka clients of the client suite (idempotent, cached outside the clone):
# kcat and openssl (Debian), Python confluent-kafka and kafka-python with its codec libraries (a venv in
# ${OXBOW_CACHE}/clients/venv), and kafkajs with snappy (kafkajs-snappy), lz4 (lz4js) and zstd (@mongodb-js/zstd) codecs (npm, in
# ${OXBOW_CACHE}/clients/node). See e2e/clients/README.md.
set -euo pipefail
. "$(dirname "$0")/../lib/fetch.sh"
cache="${OXBOW_CACHE:-$HOME/.cache/oxbow}/clients"
mkdir -p "$cache"

if ! command -v kcat >/dev/null; then
  echo "Installing kcat"
  fetch "the Debian package index" "Debian's package mirrors" apt-get update -qq
  fetch "kcat" "Debian's package mirrors" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat
fi
# The TLS suite (30-tls) makes its CA and certificates with the openssl command.
if ! command -v openssl >/dev/null; then
  echo "Installing openssl"
  fetch "the Debian package index" "Debian's package mirrors" apt-get update -qq
  fetch "openssl" "Debian's package mirrors" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl
fi

python_packages=(confluent-kafka==2.16.1 kafka-python==3.0.12 python-snappy lz4 zstandard crc32c)
stamp="$cache/venv/.installed"
if [ "$(cat "$stamp" 2>/dev/null)" != "${python_packages[*]}" ]; then
  echo "Installing ${python_packages[*]} into $cache/venv"
  python3 -m venv "$cache/venv"
  fetch "${python_packages[*]}" "PyPI" "$cache/venv/bin/pip" install -q "${python_packages[@]}"
  echo "${python_packages[*]}" >"$stamp"
fi

node_packages=(kafkajs@2.2.4 kafkajs-snappy@1.1.0 lz4js@0.2.0 @mongodb-js/zstd@1.2.2)
stamp="$cache/node/.installed"
if [ "$(cat "$stamp" 2>/dev/null)" != "${node_packages[*]}" ]; then
  echo "Installing ${node_packages[*]} into $cache/node"
  mkdir -p "$cache/node"
  (cd "$cache/node" && [ -e package.json ] || echo '{"private": true}' >package.json)
  fetch "${node_packages[*]}" "the npm registry" npm install --prefix "$cache/node" --silent --no-audit --no-fund "${node_packages[@]}"
  echo "${node_packages[*]}" >"$stamp"
fi
