#!/usr/bin/env bash
# Installs the reference peers (idempotent, cached outside the clone; see e2e/peers/):
# Apache Kafka from Maven Central, the franz-go and differential programs (Go modules),
# and iperf3 (Debian) for the benchmark's loopback ceiling.
set -euo pipefail
. "$(dirname "$0")/../lib/fetch.sh"
peers="$(cd "$(dirname "$0")/../peers" && pwd)"
bash "$peers/kafka/install"
fetch "or build the franz-go programs (e2e/peers/franz-go/go.mod)" "the Go module proxy" \
  bash "$peers/franz-go/run" --build-only
fetch "or build the differential check (e2e/peers/differential/go.mod)" "the Go module proxy" \
  bash "$peers/differential/run" --build-only
if ! command -v iperf3 >/dev/null; then
  echo "Installing iperf3"
  fetch "the Debian package index" "Debian's package mirrors" apt-get update -qq
  fetch "iperf3" "Debian's package mirrors" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3
fi
