#!/usr/bin/env bash
# Installs the reference peers (idempotent, cached outside the clone; see e2e/peers/):
# Apache Kafka from Maven Central, the franz-go and differential programs (Go modules),
# and iperf3 (Debian) for the benchmark's loopback ceiling.
set -euo pipefail
peers="$(cd "$(dirname "$0")/../peers" && pwd)"
bash "$peers/kafka/install"
bash "$peers/franz-go/run" --build-only
bash "$peers/differential/run" --build-only
if ! command -v iperf3 >/dev/null; then
  echo "Installing iperf3"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3 >/dev/null
fi
